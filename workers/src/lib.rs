//! The worker side of oxwright: job handlers over the warm browser pool and
//! the consumer loop that feeds them from a job queue. The configuration and
//! the browser-free half of a binary's setup are `oxwright-config`'s.

pub mod consumer;
pub mod handlers;
pub mod metrics;
mod run;
mod setup;

pub use consumer::{ConsumerOptions, handle_delivery, run_consumer};
pub use handlers::{HandlerContext, STORE_PATIENCE, run_job, run_job_attempt, store_error};
pub use run::{WorkerOptions, run_consumers, run_worker};
pub use setup::{BrowserSetup, pool_config};
