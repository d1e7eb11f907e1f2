//! `oxwright scheduler`: the daemon of the distributed mode. It consumes
//! job reports and writes each batch's manifest and summary, serves the
//! HTTP API, and submits the configured schedules and webhooks.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use oxwright_scheduler::{ApiOptions, SchedulerOptions, SchedulerSection, run_scheduler};

use oxwright_config::Setup;

use crate::signals::shutdown_on_signals;

/// Arguments of `oxwright scheduler`.
#[derive(Debug, Args)]
#[command(
    after_help = "Without a broker (no --amqp) the daemon runs its jobs itself, on its own browsers.

Examples:
  oxwright scheduler                                                                       # embedded: API on 127.0.0.1:8080
  curl -s localhost:8080/v1/fetch -d '{\"url\":\"https://example.com/\"}' -H 'content-type: application/json'
  oxwright --amqp amqp://127.0.0.1:5672/%2f --s3 s3://bucket/oxwright scheduler              # distributed
  OXWRIGHT_API_TOKEN=… oxwright --amqp amqp://127.0.0.1:5672/%2f scheduler --listen 0.0.0.0:8080"
)]
pub struct SchedulerCmd {
    /// Address of the HTTP API (overrides `[scheduler] listen`; port 0 picks one).
    #[arg(long)]
    pub listen: Option<String>,
    /// Serve no HTTP API.
    #[arg(long, conflicts_with = "listen")]
    pub no_api: bool,
    /// A directory of check files (`NAME.check.toml`) to run on their
    /// schedules and on triggers (overrides `[scheduler] checks`).
    #[arg(long, value_name = "DIR")]
    pub checks: Option<std::path::PathBuf>,
}

/// Reads and seals the saved login state of each check that names one,
/// before anything starts: it travels to the workers in the run's job,
/// sealed with their checkpoint key, so the scheduler needs that key.
fn sealed_states(
    setup: &Setup,
    checks: &[oxwright_checks::Check],
) -> anyhow::Result<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    for check in checks {
        if let Some(sealed) = check
            .sealed_storage_state(&setup.env)
            .map_err(crate::exit::usage)?
        {
            out.insert(check.name.clone(), sealed);
        }
    }
    Ok(out)
}

/// Runs the daemon until SIGTERM / Ctrl-C; returns the exit code.
pub async fn run(setup: Setup, cmd: SchedulerCmd) -> anyhow::Result<i32> {
    let shutdown = shutdown_on_signals();
    let section = &setup.config.scheduler;
    let webhook_secrets = webhook_secrets(&setup, section)?;
    let secret_of = |var: &str| setup.env.get(var).filter(|s| !s.is_empty()).cloned();
    let api = ApiOptions {
        token: secret_of(&section.api_token_env),
        max_body_bytes: section.max_body_bytes,
        signing_secret: secret_of(&section.webhook_signing_secret_env),
        view_only: false,
    };
    // Read (and refused when bad) before anything starts.
    let checks = match cmd.checks.as_ref().or(section.checks.as_ref()) {
        Some(dir) => {
            let checks = oxwright_checks::load_dir(dir).map_err(crate::exit::usage)?;
            for check in &checks {
                check.admit(&setup.policy).map_err(crate::exit::usage)?;
            }
            checks
        }
        None => Vec::new(),
    };
    let check_states = sealed_states(&setup, &checks)?;
    for hook in &section.webhooks {
        hook.validate(|name| checks.iter().any(|c| c.name == name))
            .map_err(crate::exit::usage)?;
    }
    let store = setup.store().await?;
    let listener = if cmd.no_api {
        None
    } else {
        let addr = cmd.listen.clone().unwrap_or_else(|| section.listen.clone());
        Some(bind_api(&addr, api.token.is_some(), &section.api_token_env).await?)
    };
    // With a broker the daemon only schedules; without one it runs the
    // jobs itself, on an in-process queue and its own browsers.
    let embedded = setup.config.queue.amqp_url.is_none();
    let amqp = if embedded {
        None
    } else {
        // Started before the broker (or while it restarts), it waits for it.
        let Some(queue) = setup.queue_patiently(&shutdown).await? else {
            tracing::info!("scheduler stopped before the broker answered");
            return Ok(crate::exit::OK);
        };
        Some(std::sync::Arc::new(queue))
    };
    if let Some(listener) = &listener {
        // Scripts and tests read this line to find the API.
        println!("listening on http://{}", listener.local_addr()?);
    }
    tracing::info!(
        store = %store.describe(),
        queue_prefix = %setup.config.queue.prefix,
        schedules = section.schedules.len(),
        webhooks = section.webhooks.len(),
        checks = checks.len(),
        embedded,
        "scheduler ready"
    );
    let opts = SchedulerOptions {
        flush_interval: Duration::from_millis(section.flush_interval_ms.max(50)),
        schedules: section.schedules.clone(),
        webhooks: section.webhooks.clone(),
        webhook_secrets,
        api,
        checks,
        check_states,
        crawl_window: section.crawl_window,
        ..SchedulerOptions::new(setup.policy.clone())
    };
    if let Some(queue) = amqp {
        let result = run_scheduler(queue.clone(), store, opts, listener, shutdown).await;
        queue.close().await;
        result?;
        return Ok(crate::exit::OK);
    }
    #[cfg(feature = "browser")]
    return run_embedded(&setup, store, opts, listener, shutdown).await;
    #[cfg(not(feature = "browser"))]
    Err(crate::exit::usage(
        "this build of oxwright runs no jobs itself: give the scheduler a broker \
         (--amqp URL, OXWRIGHT_AMQP_URL or [queue] amqp_url)",
    ))
}

/// Each webhook's secret from the variable it names.
fn webhook_secrets(setup: &Setup, section: &SchedulerSection) -> anyhow::Result<BTreeMap<String, String>> {
    let mut secrets = BTreeMap::new();
    for hook in &section.webhooks {
        if let Some(var) = &hook.secret_env {
            let secret =
                setup.env.get(var).filter(|s| !s.is_empty()).with_context(|| {
                    format!("webhook {:?}: environment variable {var} is not set", hook.name)
                })?;
            secrets.insert(hook.name.clone(), secret.clone());
        }
    }
    Ok(secrets)
}

/// The daemon without a broker: the scheduler and the workers in this
/// process, on an in-process queue and its own browsers.
#[cfg(feature = "browser")]
async fn run_embedded(
    setup: &Setup,
    store: std::sync::Arc<dyn oxwright_artifacts::ArtifactStore>,
    opts: SchedulerOptions,
    listener: Option<tokio::net::TcpListener>,
    shutdown: tokio_util::sync::CancellationToken,
) -> anyhow::Result<i32> {
    let queue = std::sync::Arc::new(oxwright_queue::MemoryQueue::new());
    // The in-process queue ends with the process: a crawl cannot wait in it.
    let opts = SchedulerOptions {
        durable_queue: false,
        ..opts
    };
    // Stopping goes in order: the workers finish what they run, the jobs
    // they never started get a `cancelled` line, then the scheduler
    // records the last reports and writes the manifests.
    let workers_stop = tokio_util::sync::CancellationToken::new();
    let scheduler_stop = tokio_util::sync::CancellationToken::new();
    tokio::spawn({
        let (signal, workers_stop) = (shutdown.clone(), workers_stop.clone());
        async move {
            signal.cancelled().await;
            workers_stop.cancel();
        }
    });
    let (scheduled, worked) = tokio::join!(
        async {
            let result = run_scheduler(
                queue.clone(),
                store.clone(),
                opts,
                listener,
                scheduler_stop.clone(),
            )
            .await;
            // Without its scheduler the workers' reports go nowhere.
            workers_stop.cancel();
            result
        },
        async {
            let result = oxwright_worker::run_consumers(
                setup,
                queue.clone(),
                store.clone(),
                Default::default(),
                workers_stop.clone(),
            )
            .await;
            workers_stop.cancel();
            cancel_queued(queue.as_ref()).await;
            scheduler_stop.cancel();
            result
        }
    );
    queue.close();
    scheduled?;
    worked?;
    Ok(crate::exit::OK)
}

/// Binds the HTTP API to `addr`; off loopback only with a token.
pub async fn bind_api(
    addr: &str,
    has_token: bool,
    token_env: &str,
) -> anyhow::Result<tokio::net::TcpListener> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("binding the HTTP API to {addr}"))?;
    let bound = listener.local_addr()?;
    if !bound.ip().is_loopback() && !has_token {
        return Err(crate::exit::usage(format!(
            "the API would listen on {bound}, off loopback, with no token: set {token_env} (clients then send \
             `Authorization: Bearer <token>`), or listen on 127.0.0.1"
        )));
    }
    Ok(listener)
}

/// Gives every job still queued in an embedded daemon that stops a
/// `cancelled` report, so its batch's manifest still gets one line per job.
#[cfg(feature = "browser")]
async fn cancel_queued(queue: &oxwright_queue::MemoryQueue) {
    use oxwright_jobs::{ErrorKind, JobError, JobKind, JobReport, ReportStatus};
    use oxwright_queue::JobQueue;
    let kinds = [JobKind::Fetch, JobKind::Sitemap, JobKind::Workflow];
    let Ok(mut consumer) = queue.consume_many(&kinds, 64).await else {
        return;
    };
    let mut cancelled = 0;
    while let Ok(Some(delivery)) = tokio::time::timeout(Duration::from_millis(100), consumer.next()).await {
        if let Ok(job) = delivery.job() {
            let report = JobReport {
                job_id: job.id,
                kind: job.kind(),
                batch_id: job.batch_id.clone(),
                url: job.url().to_owned(),
                status: ReportStatus::Failed,
                error: Some(JobError::new(
                    ErrorKind::Cancelled,
                    "not run: the daemon stopped before it ran",
                )),
                artifacts: Vec::new(),
                attempt: job.attempt,
                duration_ms: 0.0,
                finished_at: chrono::Utc::now(),
            };
            if queue.publish_report(&report).await.is_ok() {
                cancelled += 1;
            }
        }
        let _ = delivery.ack().await;
    }
    if cancelled > 0 {
        tracing::info!(cancelled, "jobs never started recorded as cancelled");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_example_config_documents_the_scheduler_section() {
        let example = include_str!("../../../oxwright.example.toml");
        let cfg: oxwright_config::Config = toml::from_str(example).unwrap();
        assert_eq!(cfg.scheduler, SchedulerSection::default());
        // The commented-out schedule and webhook are valid as written.
        let on: String = example
            .lines()
            .map(|l| {
                let block = [
                    "# [[scheduler.",
                    "# name = ",
                    "# cron = ",
                    "# job = ",
                    "# secret_env = ",
                ];
                if block.iter().any(|p| l.starts_with(p)) {
                    &l[2..]
                } else {
                    l
                }
            })
            .collect::<Vec<_>>()
            .join("\n");
        let cfg: oxwright_config::Config = toml::from_str(&on).unwrap();
        let section = cfg.scheduler;
        assert_eq!(section.schedules.len(), 1);
        assert_eq!(section.webhooks[0].secret_env.as_deref(), Some("DEPLOY_SECRET"));
    }
}
