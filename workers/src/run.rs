//! The long-lived worker: one consumer per job kind over a shared store,
//! queue and browser pool, drained on shutdown. `oxwright worker` and any
//! other entrypoint (a Lambda runtime) share it.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use oxwright_jobs::JobKind;
use oxwright_queue::JobQueue;
use tokio_util::sync::CancellationToken;

use crate::{ConsumerOptions, HandlerContext, Setup, run_consumer};

/// How a worker runs.
#[derive(Debug, Clone)]
pub struct WorkerOptions {
    /// Job kinds to consume.
    pub kinds: Vec<JobKind>,
    /// Deliveries of a job before a transient failure is final (else `[queue] max_attempts`).
    pub max_attempts: Option<u32>,
    /// Delay before the first queue-level retry, ms (else `[queue] retry_delay_ms`).
    pub retry_delay_ms: Option<u64>,
    /// How long in-flight jobs may run on after shutdown is asked.
    pub drain_timeout: Duration,
    /// Sitemap jobs run at once (they use no browser).
    pub sitemap_concurrency: usize,
}

impl Default for WorkerOptions {
    fn default() -> Self {
        Self {
            kinds: vec![JobKind::Fetch, JobKind::Sitemap, JobKind::Workflow],
            max_attempts: None,
            retry_delay_ms: None,
            drain_timeout: Duration::from_secs(30),
            sitemap_concurrency: 4,
        }
    }
}

/// Runs a worker until `shutdown` is cancelled (or a consumer fails): jobs
/// from RabbitMQ, artefacts to the configured store, reports published
/// before each ack. Returns once every consumer drained and the browsers
/// are closed.
pub async fn run_worker(
    setup: &Setup,
    opts: WorkerOptions,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    // Refused before anything starts: an unbounded delay would park jobs for ever.
    let retry_delay_ms = opts.retry_delay_ms.unwrap_or(setup.config.queue.retry_delay_ms);
    oxwright_jobs::limits::check_range(
        "retry_delay_ms",
        retry_delay_ms,
        0,
        oxwright_jobs::limits::MAX_QUEUE_RETRY_DELAY_MS,
    )
    .map_err(|e| anyhow::anyhow!("[queue] {}", e.message))?;
    let store = setup.store().await?;
    // A worker started before the broker (or while it restarts) waits for it.
    let Some(queue) = setup.queue_patiently(&shutdown).await? else {
        tracing::info!("worker stopped before the broker answered");
        return Ok(());
    };
    let queue = Arc::new(queue);
    let pool = setup.pool().await?;
    crate::metrics::observe_pool(&pool);
    let mut ctx = HandlerContext::new(pool.clone(), setup.policy.clone(), store.clone());
    ctx.workflow = crate::handlers::workflow::WorkflowContext::from_env(&setup.env);
    let queue_config = &setup.config.queue;
    let mut consumers = tokio::task::JoinSet::new();
    for kind in &opts.kinds {
        let concurrency = match kind {
            JobKind::Sitemap => opts.sitemap_concurrency.max(1),
            // Fetches and workflows lease pages from the same pool.
            JobKind::Fetch | JobKind::Workflow => pool.capacity(),
        };
        let mut copts = ConsumerOptions::new(*kind, concurrency);
        copts.max_attempts = opts.max_attempts.unwrap_or(queue_config.max_attempts).max(1);
        copts.retry_delay = Duration::from_millis(retry_delay_ms);
        copts.drain_timeout = opts.drain_timeout;
        let (ctx, queue, shutdown, kind) = (
            ctx.clone(),
            queue.clone() as Arc<dyn JobQueue>,
            shutdown.clone(),
            *kind,
        );
        consumers.spawn(async move { (kind, run_consumer(ctx, queue, copts, shutdown).await) });
    }
    tracing::info!(
        pid = std::process::id(),
        kinds = ?opts.kinds,
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
        None => Ok(()),
    }
}
