//! The scheduler daemon: consumes job reports and keeps batch manifests,
//! serves the HTTP API (`crate::api`), and submits the configured
//! schedules on their cron expressions.

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use oxwright_artifacts::ArtifactStore;
use oxwright_queue::JobQueue;
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

use crate::api::{AppState, UiAuth, Waiters, router};
use crate::batch::{BatchError, new_batch_id};
use crate::config::{ScheduleConfig, SchedulerOptions};
use crate::tracker::BatchTracker;

/// Why the daemon stopped or could not start.
#[derive(Debug, thiserror::Error)]
pub enum SchedulerError {
    /// A queue or store failure.
    #[error(transparent)]
    Batch(#[from] BatchError),
    /// A schedule's cron expression is invalid.
    #[error("schedule {name:?}: invalid cron expression {cron:?}: {message}")]
    Cron {
        /// The schedule.
        name: String,
        /// The expression.
        cron: String,
        /// Why.
        message: String,
    },
    /// A webhook does nothing or names a check not loaded.
    #[error("{0}")]
    Webhook(String),
    /// robots.txt could not be set up.
    #[error("robots.txt: {0}")]
    Robots(String),
    /// The HTTP server failed.
    #[error("HTTP API: {0}")]
    Http(#[from] std::io::Error),
}

/// Runs the daemon until `shutdown`: the report loop, the HTTP API on
/// `listener` (when given) and the schedules. Flushes every manifest
/// before returning.
pub async fn run_scheduler(
    queue: Arc<dyn JobQueue>,
    store: Arc<dyn ArtifactStore>,
    opts: SchedulerOptions,
    listener: Option<tokio::net::TcpListener>,
    shutdown: CancellationToken,
) -> Result<(), SchedulerError> {
    let schedules = opts
        .schedules
        .iter()
        .map(|s| {
            cron::Schedule::from_str(&s.cron)
                .map(|cron| (s.clone(), cron))
                .map_err(|e| SchedulerError::Cron {
                    name: s.name.clone(),
                    cron: s.cron.clone(),
                    message: e.to_string(),
                })
        })
        .collect::<Result<Vec<_>, _>>()?;
    for hook in &opts.webhooks {
        hook.validate(|name| opts.checks.iter().any(|c| c.name == name))
            .map_err(SchedulerError::Webhook)?;
    }
    let checks = Arc::new(
        crate::checks::CheckRunner::new(
            opts.checks.clone(),
            store.clone(),
            queue.clone(),
            opts.api.signing_secret.clone(),
        )
        .with_states(opts.check_states.clone()),
    );
    checks.recover().await;
    let gate = Arc::new(crate::batch::Gate::new(robots_cache(&opts)?));
    let crawls = Arc::new(crate::crawl::LiveCrawls::new(
        Some(robots_cache(&opts)?),
        shutdown.clone(),
        opts.durable_queue,
    ));
    let state = Arc::new(AppState {
        tracker: Mutex::new(BatchTracker::new(store.clone())),
        queue: queue.clone(),
        store,
        checks: checks.clone(),
        gate: gate.clone(),
        crawls: crawls.clone(),
        hooks: crate::hooks::Hooks::new(opts.api.signing_secret.clone()),
        waiters: Waiters::default(),
        ui: UiAuth::new(opts.api.token.as_deref()),
        opts,
    });
    let tasks = tokio_util::task::TaskTracker::new();
    for (config, cron) in schedules {
        tasks.spawn(run_schedule(state.clone(), config, cron, shutdown.clone()));
    }
    crate::checks::run_schedules(&checks, &tasks, &shutdown);
    tasks.spawn(crate::batch::gate::run_gate(
        gate,
        state.queue.clone(),
        state.store.clone(),
        shutdown.clone(),
    ));
    if let Some(listener) = listener {
        let app = router(state.clone());
        let stop = shutdown.clone();
        tasks.spawn(async move {
            let served = axum::serve(listener, app)
                .with_graceful_shutdown(stop.cancelled_owned())
                .await;
            if let Err(err) = served {
                tracing::error!(error = %err, "HTTP API stopped");
            }
        });
    }
    // Before any report is read: a report of a batch the gate takes up
    // frees its host's slot only once the gate counts the job in flight.
    recover_gate(&state, &shutdown).await;
    // And before any report is read: a report of a crawl an earlier
    // scheduler ran goes to the crawl, not to a batch's manifest.
    take_up_crawls(&state, &shutdown).await;
    tasks.spawn(take_up_listed(
        state.gate.clone(),
        state.queue.clone(),
        state.store.clone(),
        shutdown.clone(),
    ));
    tasks.close();
    let result = report_loop(&state, &shutdown).await;
    shutdown.cancel();
    tasks.wait().await;
    crawls.wait().await;
    let flushed = state.tracker.lock().await.flush().await;
    if let Ok(summaries) = &flushed {
        finished(&state, summaries).await;
    }
    result?;
    flushed.map_err(BatchError::from)?;
    Ok(())
}

/// Takes up the batches released host by host that an earlier scheduler
/// left running, trying again while the store or the queue fails.
async fn recover_gate(state: &AppState, shutdown: &CancellationToken) {
    loop {
        match crate::batch::gate::recover(&state.gate, state.queue.as_ref(), &state.store).await {
            Ok(0) => return,
            Ok(n) => {
                tracing::info!(batches = n, "batches released host by host taken up again");
                return;
            }
            Err(err) => {
                tracing::warn!(error = %err, "batches released host by host not taken up yet; trying again")
            }
        }
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep(Duration::from_secs(1)) => {}
        }
    }
}

/// Takes up the crawls an earlier scheduler left running, trying again
/// while the store fails.
async fn take_up_crawls(state: &Arc<AppState>, shutdown: &CancellationToken) {
    loop {
        match crate::api::crawls::take_up(state).await {
            Ok(0) => return,
            Ok(n) => {
                tracing::info!(crawls = n, "crawls taken up again");
                return;
            }
            Err(err) => tracing::warn!(error = %err, "crawls not taken up yet; trying again"),
        }
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep(Duration::from_secs(1)) => {}
        }
    }
}

/// How often the store is looked at for batches listed for release that
/// the gate does not hold (submitted from outside the daemon).
const TAKE_UP_EVERY: Duration = Duration::from_secs(2);

/// Takes up, every [`TAKE_UP_EVERY`], the batches listed under `gated/`
/// since the daemon started (`oxwright submit` with per-host limits).
async fn take_up_listed(
    gate: Arc<crate::batch::Gate>,
    queue: Arc<dyn JobQueue>,
    store: Arc<dyn ArtifactStore>,
    shutdown: CancellationToken,
) {
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep(TAKE_UP_EVERY) => {}
        }
        match crate::batch::gate::recover(&gate, queue.as_ref(), &store).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(batches = n, "batches listed for release taken up"),
            Err(err) => tracing::warn!(error = %err, "batches listed for release not taken up yet"),
        }
    }
}

/// robots.txt for the batches that respect it, read over the
/// policy-judged client with the default token.
fn robots_cache(opts: &SchedulerOptions) -> Result<oxwright_robots::RobotsCache, SchedulerError> {
    let fetcher =
        oxwright_robots::HttpRobotsFetcher::new(oxwright_http::HttpClient::new(), opts.policy.clone());
    oxwright_robots::RobotsCache::new(Arc::new(fetcher), oxwright_robots::RobotsConfig::default())
        .map_err(|e| SchedulerError::Robots(e.to_string()))
}

/// Reports held unacked (recorded, their manifests not yet written) that
/// make the report loop write the manifests before the next tick, well
/// below the broker's report prefetch, so reports keep flowing.
pub const FLUSH_AT_HELD: usize = 256;

async fn report_loop(state: &AppState, shutdown: &CancellationToken) -> Result<(), SchedulerError> {
    let mut reports = state.queue.reports().await.map_err(BatchError::from)?;
    let every = state.opts.flush_interval;
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // While the store fails only the tick tries again.
    let mut written = true;
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => {
                // Reports already waiting are recorded before the last
                // flush (an embedded daemon's in-process queue would lose
                // them); a broker would hand them to the next scheduler.
                while let Ok(Some(next)) =
                    tokio::time::timeout(REPORT_DRAIN_WAIT, reports.next_unacked()).await
                {
                    take_report(state, next, &mut written).await;
                }
                // While the subscription lives, so the held reports can be acked.
                flush(state).await;
                return Ok(());
            }
            _ = tick.tick() => written = flush(state).await,
            // Each report is acked once the manifest holding its line is
            // written (`BatchTracker::hold`), not when it is read.
            next = reports.next_unacked() => match next {
                Some(next) => take_report(state, next, &mut written).await,
                None => return Err(BatchError::Queue(oxwright_queue::QueueError::Closed).into()),
            },
        }
    }
}

/// How long a stopping report loop waits for one more waiting report.
const REPORT_DRAIN_WAIT: Duration = Duration::from_millis(200);

/// Records one report (its ack held until its line is written), tells its
/// waiter and its batch's webhook; flushes when many reports are held.
async fn take_report(
    state: &AppState,
    (report, ack): (
        Result<oxwright_jobs::JobReport, oxwright_queue::QueueError>,
        oxwright_queue::ReportAck,
    ),
    written: &mut bool,
) {
    let report = match report {
        Ok(report) => report,
        Err(err) => {
            tracing::warn!(error = %err, "unreadable report dropped");
            if let Err(err) = ack.ack().await {
                tracing::debug!(error = %err, "ack of an unreadable report failed");
            }
            return;
        }
    };
    let job_id = report.job_id;
    state.gate.finished(&report);
    // A crawl's page: the crawl writes its line and acks it.
    let Some((report, ack)) = state.crawls.route(report, ack) else {
        return;
    };
    // A check's run: its record, state and alert are stored before the ack.
    if state.checks.take(&report).await {
        if let Err(err) = ack.ack().await {
            tracing::debug!(%job_id, error = %err, "ack of a check report failed");
        }
        return;
    }
    let mut tracker = state.tracker.lock().await;
    match tracker.hold(report.clone(), ack).await {
        Ok(outcome) => {
            tracing::debug!(%job_id, ?outcome, "report");
            if outcome == crate::tracker::Recorded::New {
                state.waiters.notify(&report);
                if let Some(batch_id) = report.batch_id.as_deref()
                    && !state.hooks.knows(batch_id)
                {
                    let hook = tracker.record_of(batch_id).and_then(|r| r.webhook.clone());
                    state.hooks.register(batch_id, hook);
                }
                state.hooks.page(&report);
            }
        }
        Err(err) => tracing::warn!(
            %job_id, error = %err,
            "report not recorded yet; kept unacked, tried again at the next flush"
        ),
    }
    let held = tracker.held();
    drop(tracker);
    if held >= FLUSH_AT_HELD && *written {
        *written = flush(state).await;
    }
}

/// Writes the manifests with new lines; on failure the lines and their
/// reports stay held for the next try. Says whether it succeeded.
async fn flush(state: &AppState) -> bool {
    let flushed = state.tracker.lock().await.flush().await;
    match flushed {
        Ok(summaries) => {
            finished(state, &summaries).await;
            true
        }
        Err(err) => {
            tracing::warn!(error = %err, "writing manifests failed; the next flush tries again");
            false
        }
    }
}

/// Sends the last webhook event of every batch just completed.
async fn finished(state: &AppState, summaries: &[crate::batch::BatchSummary]) {
    for summary in summaries {
        if state.gate.holds(&summary.batch_id) {
            state.gate.forget(&summary.batch_id);
            let key = oxwright_jobs::keys::gated_batch(&summary.batch_id);
            if let Err(err) = state.store.delete(&key).await {
                tracing::warn!(batch_id = %summary.batch_id, error = %err, "a completed batch stays listed under gated/");
            }
        }
        if !state.hooks.has_webhook(&summary.batch_id) {
            state.hooks.forget(&summary.batch_id);
            continue;
        }
        let cancelled = state
            .store
            .exists(&oxwright_jobs::keys::batch_cancelled(&summary.batch_id))
            .await
            .unwrap_or(false);
        state.hooks.finished(summary, cancelled);
    }
}

async fn run_schedule(
    state: Arc<AppState>,
    config: ScheduleConfig,
    cron: cron::Schedule,
    shutdown: CancellationToken,
) {
    tracing::info!(schedule = %config.name, cron = %config.cron, "schedule armed");
    loop {
        let Some(next) = cron.upcoming(Utc).next() else {
            tracing::info!(schedule = %config.name, "schedule has no further ticks");
            return;
        };
        let wait = (next - Utc::now()).to_std().unwrap_or_default();
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep(wait) => {}
        }
        let batch_id = format!("{}-{}", config.name, new_batch_id());
        let source = format!("schedule:{}", config.name);
        match state.submit_template(&batch_id, &config.job, &source).await {
            Ok(receipt) => {
                tracing::info!(schedule = %config.name, batch_id = %receipt.batch_id, jobs = receipt.published, "schedule fired")
            }
            Err(err) => {
                tracing::warn!(schedule = %config.name, error = %err.message, "schedule could not submit")
            }
        }
    }
}
