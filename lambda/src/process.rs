//! What both function binaries do around the runtime: read the
//! environment once, start telemetry, and on the runtime's shutdown signal
//! run their own clean-up, then flush telemetry (the runtime's handler
//! exits the process right after).

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Arc, Mutex};

use oxwright_telemetry::{TelemetryGuard, TelemetryOptions};

/// The process environment and the telemetry guard of a function.
#[derive(Debug)]
pub struct FunctionProcess {
    /// The process environment, read once.
    pub env: BTreeMap<String, String>,
    telemetry: Arc<Mutex<Option<TelemetryGuard>>>,
}

impl FunctionProcess {
    /// Reads the environment and starts telemetry as `service`.
    pub fn start(service: &str) -> anyhow::Result<Self> {
        let env: BTreeMap<String, String> = std::env::vars().collect();
        let guard = oxwright_telemetry::init(
            service,
            TelemetryOptions {
                env: env.clone(),
                ..TelemetryOptions::default()
            },
        )?;
        Ok(Self {
            env,
            telemetry: Arc::new(Mutex::new(Some(guard))),
        })
    }

    /// Registers the graceful-shutdown extension: on SIGTERM (what Lambda
    /// sends once an extension is registered) `hook` runs, then telemetry
    /// flushes. Must be called before `lambda_runtime::run`.
    pub async fn on_shutdown<F, Fut>(&self, hook: F)
    where
        F: FnOnce() -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let telemetry = self.telemetry.clone();
        lambda_runtime::spawn_graceful_shutdown_handler(move || async move {
            hook().await;
            drop(telemetry.lock().ok().and_then(|mut g| g.take()));
        })
        .await;
    }
}
