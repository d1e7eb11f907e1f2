//! `oxwright-lambda`: the worker as an AWS Lambda function. Reads its
//! configuration from the environment, sets up telemetry, and serves
//! invocations from the shared worker wiring until the runtime's shutdown
//! signal, which closes the browsers and flushes telemetry.

#![recursion_limit = "256"]

use std::sync::Arc;

use lambda_runtime::{LambdaEvent, service_fn};
use oxwright_lambda::{FunctionError, FunctionProcess, LambdaWorker, setup_from_env};
use serde_json::Value;

#[global_allocator]
static ALLOCATOR: oxwright_config::heap::Allocator = oxwright_config::heap::Allocator;

/// jemalloc's options (see `oxwright_config::heap`).
#[unsafe(export_name = "_rjem_malloc_conf")]
static MALLOC_CONF: &[u8] = oxwright_config::heap::MALLOC_CONF;

fn main() -> Result<(), lambda_runtime::Error> {
    oxwright_config::heap::runtime()?.block_on(serve())
}

async fn serve() -> Result<(), lambda_runtime::Error> {
    let process = FunctionProcess::start("oxwright-lambda")?;
    let worker = Arc::new(LambdaWorker::new(setup_from_env(process.env.clone())?).await?);
    let on_shutdown = worker.clone();
    process
        .on_shutdown(move || async move { on_shutdown.shutdown().await })
        .await;
    lambda_runtime::run(service_fn(move |event: LambdaEvent<Value>| {
        let worker = worker.clone();
        async move {
            let deadline = Some(event.context.deadline());
            worker.handle(event.payload, deadline).await.inspect_err(|err: &FunctionError| {
                tracing::info!(error_type = %oxwright_lambda::error_type(err), error = %err, "invocation failed");
            })
        }
    }))
    .await
}
