//! `oxwright dashboard`: the dashboard over the artefact store alone (the
//! `--out` directory, or the `--s3` bucket), with no broker and no
//! browser: the batches, jobs and workflow sessions that `batch`, `run`
//! and the workers wrote, to look at. It acts on nothing (no cancel, no
//! re-submit); the dashboard of `oxwright scheduler` does.

use std::time::Duration;

use clap::Args;
use oxwright_config::Setup;
use oxwright_scheduler::{ApiOptions, SchedulerOptions, run_scheduler};

use crate::commands::scheduler::bind_api;
use crate::signals::shutdown_on_signals;

/// Arguments of `oxwright dashboard`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  oxwright batch urls.txt && oxwright dashboard                    # then open http://127.0.0.1:8080/ui
  oxwright --s3 s3://bucket/oxwright dashboard --listen 127.0.0.1:9090
  OXWRIGHT_API_TOKEN=… oxwright dashboard --listen 0.0.0.0:8080     # off loopback: a login")]
pub struct DashboardCmd {
    /// Address to serve on (port 0 picks one). Off loopback it needs the
    /// API token (`[scheduler] api_token_env`, default OXWRIGHT_API_TOKEN).
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub listen: String,
}

/// Serves the dashboard until SIGTERM / Ctrl-C; returns the exit code.
pub async fn run(setup: Setup, cmd: DashboardCmd) -> anyhow::Result<i32> {
    let shutdown = shutdown_on_signals();
    let section = &setup.config.scheduler;
    let token = setup
        .env
        .get(&section.api_token_env)
        .filter(|s| !s.is_empty())
        .cloned();
    let store = setup.store().await?;
    let listener = bind_api(&cmd.listen, token.is_some(), &section.api_token_env).await?;
    let addr = listener.local_addr()?;
    // Scripts and tests read this line to find the dashboard.
    println!("listening on http://{addr}");
    eprintln!("dashboard of {} at http://{addr}/ui", store.describe());
    let opts = SchedulerOptions {
        flush_interval: Duration::from_millis(section.flush_interval_ms.max(50)),
        api: ApiOptions {
            token,
            max_body_bytes: section.max_body_bytes,
            signing_secret: None,
            view_only: true,
        },
        ..SchedulerOptions::new(setup.policy.clone())
    };
    // Nothing is queued: a queue no one consumes, for the daemon's shape.
    let queue = std::sync::Arc::new(oxwright_queue::MemoryQueue::new());
    run_scheduler(queue, store, opts, Some(listener), shutdown).await?;
    Ok(crate::exit::OK)
}
