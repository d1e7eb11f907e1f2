//! The long-lived worker: one consumer per job kind over a shared store,
//! queue and browser pool, drained on shutdown. `oxwright worker` and any
//! other entrypoint (a Lambda runtime) share it.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use oxwright_jobs::JobKind;
use oxwright_queue::JobQueue;
use tokio_util::sync::CancellationToken;

use oxwright_config::Setup;

use crate::{BrowserSetup, ConsumerOptions, HandlerContext, run_consumer};

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

/// Returns the consumers a worker runs for `kinds`: one for every kind that
/// needs a browser (fetches and workflows lease pages from the same pool,
/// so they share its `capacity` as their permits and prefetch: the broker
/// never holds more of them unacked for this worker than it has pages), and
/// sitemap loads (no browser) on their own small limit.
pub fn consumer_plan(
    kinds: &[JobKind],
    capacity: usize,
    sitemap_concurrency: usize,
) -> Vec<(Vec<JobKind>, usize)> {
    let mut browser: Vec<JobKind> = Vec::new();
    let mut plan = Vec::new();
    for kind in kinds {
        match kind {
            JobKind::Fetch | JobKind::Workflow => {
                if !browser.contains(kind) {
                    browser.push(*kind);
                }
            }
            JobKind::Sitemap => {
                if !plan.iter().any(|(k, _): &(Vec<JobKind>, usize)| k.contains(kind)) {
                    plan.push((vec![JobKind::Sitemap], sitemap_concurrency.max(1)));
                }
            }
        }
    }
    if !browser.is_empty() {
        plan.insert(0, (browser, capacity.max(1)));
    }
    plan
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
    let consumed = run_consumers(setup, queue.clone(), store, opts, shutdown).await;
    // Closing the connection returns every unsettled delivery to its queue.
    queue.close().await;
    tracing::info!("worker stopped");
    consumed
}

/// Runs the consumers of a worker on `queue` (RabbitMQ, or the in-process
/// queue of an embedded scheduler) with a warm pool of its own, until
/// `shutdown` is cancelled or a consumer fails; returns once every
/// consumer drained and the browsers are closed.
pub async fn run_consumers(
    setup: &Setup,
    queue: Arc<dyn JobQueue>,
    store: Arc<dyn oxwright_artifacts::ArtifactStore>,
    opts: WorkerOptions,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    let retry_delay_ms = opts.retry_delay_ms.unwrap_or(setup.config.queue.retry_delay_ms);
    let pool = setup.pool().await?;
    crate::metrics::observe_pool(&pool);
    let mut ctx = HandlerContext::new(pool.clone(), setup.policy.clone(), store.clone());
    ctx.workflow =
        crate::handlers::workflow::WorkflowContext::from_env(&setup.env).map_err(anyhow::Error::msg)?;
    ctx.extract_model = crate::handlers::ExtractModel::from_section(&setup.config.llm, &setup.env);
    let queue_config = &setup.config.queue;
    let mut consumers = tokio::task::JoinSet::new();
    for (kinds, concurrency) in consumer_plan(&opts.kinds, pool.capacity(), opts.sitemap_concurrency) {
        let mut copts = ConsumerOptions::for_kinds(kinds, concurrency);
        copts.max_attempts = opts.max_attempts.unwrap_or(queue_config.max_attempts).max(1);
        copts.retry_delay = Duration::from_millis(retry_delay_ms);
        copts.drain_timeout = opts.drain_timeout;
        let (ctx, queue, shutdown) = (ctx.clone(), queue.clone(), shutdown.clone());
        let name = copts
            .kinds
            .iter()
            .map(|k| k.as_str())
            .collect::<Vec<_>>()
            .join("+");
        consumers.spawn(async move { (name, run_consumer(ctx, queue, copts, shutdown).await) });
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
        let (kinds, result) = joined.context("consumer task")?;
        if let Err(err) = result {
            tracing::error!(%kinds, error = %err, "consumer stopped");
            failure.get_or_insert(anyhow::anyhow!("{kinds} consumer: {err}"));
            // One dead consumer stops the worker: a supervisor restarts it.
            shutdown.cancel();
        }
    }
    pool.shutdown().await;
    match failure {
        Some(err) => Err(err),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn browser_kinds_share_one_consumer_and_sitemaps_have_their_own() {
        use JobKind::{Fetch, Sitemap, Workflow};
        assert_eq!(
            consumer_plan(&[Fetch, Sitemap, Workflow], 8, 4),
            vec![(vec![Fetch, Workflow], 8), (vec![Sitemap], 4)]
        );
        assert_eq!(consumer_plan(&[Workflow], 8, 4), vec![(vec![Workflow], 8)]);
        assert_eq!(consumer_plan(&[Sitemap], 8, 0), vec![(vec![Sitemap], 1)]);
        assert_eq!(
            consumer_plan(&[Fetch, Fetch, Sitemap, Sitemap], 2, 4),
            vec![(vec![Fetch], 2), (vec![Sitemap], 4)],
            "a kind given twice is consumed once"
        );
    }
}
