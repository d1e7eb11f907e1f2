//! The worker side of oxwright: job handlers over the warm browser pool and
//! the consumer loop that feeds them from a job queue.

pub mod consumer;
pub mod handlers;
pub mod metrics;

pub use consumer::{ConsumerOptions, run_consumer};
pub use handlers::{HandlerContext, run_job};
