//! AWS Lambda entrypoints over the shared worker wiring: the worker
//! function (Amazon MQ for RabbitMQ events, SQS events, direct `Job`
//! invocations, and S3 and EventBridge events that start checks) and the scheduler function (EventBridge schedule →
//! confirmed publish). Configuration comes from the environment only.
//!
//! The worker function needs the `worker` feature (on by default), which
//! brings the browser stack; the scheduler function does not, and built
//! without it (`--no-default-features --features lambda`) links no
//! Chromium driver.

#[cfg(all(feature = "lambda", feature = "worker"))]
pub mod checks;
pub mod config;
pub mod error;
#[cfg(feature = "lambda")]
pub mod events;
#[cfg(feature = "lambda")]
pub mod process;
#[cfg(feature = "lambda")]
pub mod scheduler;
pub mod settle;
#[cfg(all(feature = "lambda", feature = "worker"))]
pub mod worker;

pub use config::setup_from_env;
pub use error::{FunctionError, error_type};
#[cfg(feature = "lambda")]
pub use process::FunctionProcess;
#[cfg(all(feature = "lambda", feature = "worker"))]
pub use worker::{LambdaWorker, Source};
