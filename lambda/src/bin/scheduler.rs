//! `oxwright-scheduler-lambda`: an EventBridge schedule's target. Submits
//! the job template in `OXWRIGHT_SCHEDULE_JOB` as a batch on each invocation.

#![recursion_limit = "256"]

use std::sync::Arc;

use lambda_runtime::{LambdaEvent, service_fn};
use oxwright_lambda::scheduler::LambdaScheduler;
use oxwright_lambda::{FunctionProcess, setup_from_env};
use serde_json::Value;

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    let process = FunctionProcess::start("oxwright-scheduler-lambda")?;
    let scheduler = Arc::new(LambdaScheduler::new(setup_from_env(process.env.clone())?).await?);
    let on_shutdown = scheduler.clone();
    process
        .on_shutdown(move || async move { on_shutdown.shutdown().await })
        .await;
    lambda_runtime::run(service_fn(move |event: LambdaEvent<Value>| {
        let scheduler = scheduler.clone();
        async move { scheduler.handle(event.payload).await }
    }))
    .await
}
