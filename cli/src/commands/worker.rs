//! `oxwright worker`: the long-lived worker of the distributed mode. It
//! consumes jobs from RabbitMQ with a warm browser pool, writes artefacts
//! to S3 (or the file store), publishes each report, and only then acks.
//! SIGTERM stops consuming, lets in-flight jobs finish within the drain
//! limit, and returns everything else to the queue.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use oxwright_jobs::JobKind;
use oxwright_queue::JobQueue;
use oxwright_worker::{ConsumerOptions, run_consumer};

use crate::context::{Setup, shutdown_on_signals};

/// Arguments of `oxwright worker`.
#[derive(Debug, Args)]
pub struct WorkerCmd {
    /// Job kinds to consume (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "fetch,sitemap,workflow")]
    pub kinds: Vec<KindArg>,
    /// Deliveries of a job before a transient failure is final (overrides
    /// `[queue] max_attempts`).
    #[arg(long)]
    pub max_attempts: Option<u32>,
    /// Delay before the first queue-level retry in ms, doubled each time
    /// (overrides `[queue] retry_delay_ms`).
    #[arg(long)]
    pub retry_delay_ms: Option<u64>,
    /// How long in-flight jobs may run on after SIGTERM, in seconds.
    #[arg(long, default_value_t = 30)]
    pub drain_timeout_s: u64,
    /// Sitemap jobs run at once (they use no browser).
    #[arg(long, default_value_t = 4)]
    pub sitemap_concurrency: usize,
}

/// Job kinds as typed on the command line.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum KindArg {
    /// Page fetches.
    Fetch,
    /// Sitemap loads.
    Sitemap,
    /// Workflow runs.
    Workflow,
}

/// Runs the worker until SIGTERM / Ctrl-C; returns the exit code.
pub async fn run(setup: Setup, cmd: WorkerCmd) -> anyhow::Result<i32> {
    let shutdown = shutdown_on_signals();
    let store = setup.store().await?;
    let queue = Arc::new(setup.queue().await?);
    let pool = setup.pool().await?;
    oxwright_worker::metrics::observe_pool(&pool);
    let ctx = oxwright_worker::HandlerContext::new(pool.clone(), setup.policy.clone(), store.clone());
    let queue_config = &setup.config.queue;
    let mut consumers = tokio::task::JoinSet::new();
    for kind in &cmd.kinds {
        let (kind, concurrency) = match kind {
            KindArg::Fetch => (JobKind::Fetch, pool.capacity()),
            KindArg::Sitemap => (JobKind::Sitemap, cmd.sitemap_concurrency.max(1)),
            // Workflows lease pages from the same pool as fetches.
            KindArg::Workflow => (JobKind::Workflow, pool.capacity()),
        };
        let mut opts = ConsumerOptions::new(kind, concurrency);
        opts.max_attempts = cmd.max_attempts.unwrap_or(queue_config.max_attempts).max(1);
        opts.retry_delay = Duration::from_millis(cmd.retry_delay_ms.unwrap_or(queue_config.retry_delay_ms));
        opts.drain_timeout = Duration::from_secs(cmd.drain_timeout_s);
        let (ctx, queue, shutdown) = (ctx.clone(), queue.clone() as Arc<dyn JobQueue>, shutdown.clone());
        consumers.spawn(async move { (kind, run_consumer(ctx, queue, opts, shutdown).await) });
    }
    tracing::info!(
        pid = std::process::id(),
        kinds = ?cmd.kinds,
        capacity = pool.capacity(),
        store = %store.describe(),
        queue_prefix = %queue_config.prefix,
        "worker ready"
    );
    let mut failure = None;
    while let Some(joined) = consumers.join_next().await {
        let (kind, result) = joined.context("consumer task")?;
        if let Err(err) = result {
            tracing::error!(%kind, error = %err, "consumer stopped");
            failure.get_or_insert(anyhow::anyhow!("{kind} consumer: {err}"));
            // One dead consumer stops the worker: a supervisor restarts it.
            shutdown.cancel();
        }
    }
    // Closing the connection returns every unsettled delivery to its queue.
    queue.close().await;
    pool.shutdown().await;
    tracing::info!("worker stopped");
    match failure {
        Some(err) => Err(err),
        None => Ok(0),
    }
}
