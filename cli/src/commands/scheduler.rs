//! `oxwright scheduler`: the daemon of the distributed mode. It consumes
//! job reports and writes each batch's manifest and summary, serves the
//! HTTP API, and submits the configured schedules and webhooks.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use oxwright_scheduler::{SchedulerOptions, run_scheduler};

use crate::context::{Setup, shutdown_on_signals};

/// Arguments of `oxwright scheduler`.
#[derive(Debug, Args)]
pub struct SchedulerCmd {
    /// Address of the HTTP API (overrides `[scheduler] listen`; port 0 picks one).
    #[arg(long)]
    pub listen: Option<String>,
    /// Serve no HTTP API.
    #[arg(long, conflicts_with = "listen")]
    pub no_api: bool,
}

/// Runs the daemon until SIGTERM / Ctrl-C; returns the exit code.
pub async fn run(setup: Setup, cmd: SchedulerCmd) -> anyhow::Result<i32> {
    let shutdown = shutdown_on_signals();
    let section = &setup.config.scheduler;
    let mut webhook_secrets = BTreeMap::new();
    for hook in &section.webhooks {
        if let Some(var) = &hook.secret_env {
            let secret =
                setup.env.get(var).filter(|s| !s.is_empty()).with_context(|| {
                    format!("webhook {:?}: environment variable {var} is not set", hook.name)
                })?;
            webhook_secrets.insert(hook.name.clone(), secret.clone());
        }
    }
    let store = setup.store().await?;
    let queue = std::sync::Arc::new(setup.queue().await?);
    let listener = if cmd.no_api {
        None
    } else {
        let addr = cmd.listen.clone().unwrap_or_else(|| section.listen.clone());
        let listener = tokio::net::TcpListener::bind(&addr)
            .await
            .with_context(|| format!("binding the HTTP API to {addr}"))?;
        let bound = listener.local_addr()?;
        // Scripts and tests read this line to find the API.
        println!("listening on http://{bound}");
        Some(listener)
    };
    tracing::info!(
        store = %store.describe(),
        queue_prefix = %setup.config.queue.prefix,
        schedules = section.schedules.len(),
        webhooks = section.webhooks.len(),
        "scheduler ready"
    );
    let opts = SchedulerOptions {
        policy: setup.policy.clone(),
        flush_interval: Duration::from_millis(section.flush_interval_ms.max(50)),
        schedules: section.schedules.clone(),
        webhooks: section.webhooks.clone(),
        webhook_secrets,
    };
    let result = run_scheduler(queue.clone(), store, opts, listener, shutdown).await;
    queue.close().await;
    result?;
    Ok(0)
}
