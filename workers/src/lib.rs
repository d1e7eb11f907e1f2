//! The worker side of oxwright: job handlers over the warm browser pool and
//! the consumer loop that feeds them from a job queue.

pub mod config;
pub mod consumer;
pub mod fetch_defaults;
pub mod handlers;
pub mod heap;
pub mod metrics;
mod run;
mod setup;

pub use config::Config;
pub use consumer::{ConsumerOptions, handle_delivery, run_consumer};
pub use handlers::{HandlerContext, run_job, run_job_attempt, store_error};
pub use run::{WorkerOptions, run_consumers, run_worker};
pub use setup::{Overrides, Setup, UsageError, parse_s3_location};
