//! The consumer loop: take a permit, then a message; run the job; publish
//! its report; only then settle the delivery. Undecodable messages and
//! failed jobs go to the dead-letter queue with their reason. One loop may
//! serve several kinds: their jobs then share its permits and its prefetch
//! (a worker's fetches and workflows share one pool of browser pages).

use std::sync::Arc;
use std::time::Duration;

use oxwright_jobs::{JobKind, JobReport, ReportStatus};
use oxwright_queue::{DeadLetterReason, Delivery, JobQueue, QueueError};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::Instrument;

use crate::handlers::{HandlerContext, run_job_attempt};
use crate::metrics::{self, Outcome};

/// How a consumer behaves.
#[derive(Debug, Clone)]
pub struct ConsumerOptions {
    /// The job kinds consumed, sharing `concurrency`.
    pub kinds: Vec<JobKind>,
    /// Jobs of all `kinds` run at once; also the prefetch (the broker holds
    /// no more unacked for this consumer). For the kinds that need a browser
    /// it is the pool's capacity.
    pub concurrency: usize,
    /// Deliveries of one job before a retryable failure is final.
    pub max_attempts: u32,
    /// Base delay of queue-level retries (doubled each attempt).
    pub retry_delay: Duration,
    /// How long in-flight jobs may run on after shutdown starts.
    pub drain_timeout: Duration,
}

impl ConsumerOptions {
    /// Returns options for `kind` with `concurrency`, one attempt per job.
    pub fn new(kind: JobKind, concurrency: usize) -> Self {
        Self::for_kinds(vec![kind], concurrency)
    }

    /// Returns options for one consumer of every kind of `kinds`, sharing
    /// `concurrency`, one attempt per job.
    pub fn for_kinds(kinds: Vec<JobKind>, concurrency: usize) -> Self {
        Self {
            kinds,
            concurrency: concurrency.max(1),
            max_attempts: 1,
            retry_delay: Duration::from_secs(5),
            drain_timeout: Duration::from_secs(60),
        }
    }
}

/// Consumes `opts.kinds` jobs until `shutdown` fires or the queue closes,
/// then waits (bounded) for in-flight jobs. Unsettled deliveries left at the
/// end return to the queue.
pub async fn run_consumer(
    ctx: HandlerContext,
    queue: Arc<dyn JobQueue>,
    opts: ConsumerOptions,
    shutdown: CancellationToken,
) -> Result<(), QueueError> {
    let permits = Arc::new(Semaphore::new(opts.concurrency));
    let mut consumer = queue.consume_many(&opts.kinds, opts.concurrency).await?;
    let tracker = TaskTracker::new();
    loop {
        // The permit comes first: a message is only taken when it can run.
        let permit = tokio::select! {
            _ = shutdown.cancelled() => break,
            p = permits.clone().acquire_owned() => p.expect("semaphore never closes"),
        };
        let delivery = tokio::select! {
            _ = shutdown.cancelled() => break,
            d = consumer.next() => match d {
                Some(d) => d,
                None => break,
            },
        };
        let (ctx, queue, opts) = (ctx.clone(), queue.clone(), opts.clone());
        // One span per delivery, continuing the submitter's trace.
        let span = tracing::info_span!(
            "delivery",
            kind = %delivery.kind(),
            message_id = delivery.message_id().unwrap_or(""),
            redelivered = delivery.redelivered(),
        );
        oxwright_telemetry::set_parent_from_headers(&span, delivery.headers());
        tracker.spawn(
            async move {
                if let Err(err) = handle_delivery(&ctx, queue.as_ref(), &opts, delivery).await {
                    tracing::warn!(error = %err, "settling a delivery failed");
                }
                drop(permit);
            }
            .instrument(span),
        );
    }
    tracker.close();
    if tokio::time::timeout(opts.drain_timeout, tracker.wait())
        .await
        .is_err()
    {
        tracing::warn!(
            in_flight = tracker.len(),
            "drain timed out; unfinished jobs return to the queue"
        );
    }
    Ok(())
}

/// Longest wait before a queue-level retry, whatever the base delay.
pub const MAX_RETRY_DELAY: Duration = Duration::from_millis(oxwright_jobs::limits::MAX_QUEUE_RETRY_DELAY_MS);

/// Returns the wait before retrying a job whose `attempt` failed: `base ×
/// 2^(attempt-1)`, saturating, capped at [`MAX_RETRY_DELAY`].
pub fn retry_delay(base: Duration, attempt: u32) -> Duration {
    base.saturating_mul(2u32.saturating_pow(attempt.saturating_sub(1).min(16)))
        .min(MAX_RETRY_DELAY)
}

/// Runs the job of one delivery and settles it: the path every delivery
/// takes, whoever received it (this loop, or a Lambda event). Returns the
/// job's report (`None` for an undecodable message, dead-lettered); the
/// report is published before an ack or a dead-letter, not before a retry.
pub async fn handle_delivery(
    ctx: &HandlerContext,
    queue: &dyn JobQueue,
    opts: &ConsumerOptions,
    delivery: Delivery,
) -> Result<Option<JobReport>, QueueError> {
    let started = std::time::Instant::now();
    let job = match delivery.job() {
        Ok(job) => job.clone(),
        Err(decode) => {
            let reason = decode.dead_letter_reason();
            tracing::warn!(reason = %reason.message, "undecodable message dead-lettered");
            metrics::record_job(None, Outcome::Undecodable, started.elapsed().as_secs_f64());
            return delivery.dead_letter(reason).await.map(|()| None);
        }
    };
    let lag = (chrono::Utc::now() - job.created_at).num_milliseconds() as f64 / 1000.0;
    metrics::record_lag(job.kind(), lag);
    // Before the last attempt a failed job whose error.json the store could
    // not take comes back as a retryable storage failure.
    let retry_possible = job.attempt < opts.max_attempts;
    let delivered_before = delivery.redelivered();
    let report: JobReport = run_job_attempt(ctx, &job, retry_possible, delivered_before).await;
    let done = |outcome| metrics::record_job(Some(job.kind()), outcome, started.elapsed().as_secs_f64());
    if let Some(err) = &report.error
        && err.kind == oxwright_jobs::ErrorKind::HandedOver
    {
        tracing::info!(job_id = %job.id, "{err}; the job goes on in a fresh invocation");
        let settled = delivery.hand_over().await;
        done(Outcome::Retried);
        return settled.map(|()| Some(report));
    }
    if let Some(err) = &report.error
        && err.is_retryable()
        && job.attempt < opts.max_attempts
    {
        let delay = retry_delay(opts.retry_delay, job.attempt);
        tracing::info!(
            job_id = %job.id, attempt = job.attempt, error = %err, delay_ms = delay.as_millis() as u64,
            "transient failure, retrying later"
        );
        let settled = delivery.retry(delay).await;
        done(Outcome::Retried);
        return settled.map(|()| Some(report));
    }
    queue.publish_report(&report).await?;
    let settled = match (report.status, report.error.clone()) {
        (ReportStatus::Ok, _) => {
            done(Outcome::Ok);
            delivery.ack().await
        }
        // A job of a cancelled batch is settled, not dead-lettered.
        (ReportStatus::Failed, Some(err)) if err.kind == oxwright_jobs::ErrorKind::Cancelled => {
            done(Outcome::Failed);
            delivery.ack().await
        }
        (ReportStatus::Failed, Some(err)) => {
            tracing::info!(job_id = %job.id, attempt = job.attempt, error = %err, "job failed, dead-lettered");
            done(Outcome::Failed);
            delivery
                .dead_letter(DeadLetterReason {
                    kind: err.kind.to_string(),
                    message: err.to_string(),
                })
                .await
        }
        (ReportStatus::Failed, None) => {
            done(Outcome::Failed);
            delivery.ack().await
        }
    };
    settled.map(|()| Some(report))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_delay_doubles_and_is_bounded() {
        let base = Duration::from_millis(100);
        assert_eq!(retry_delay(base, 1), Duration::from_millis(100));
        assert_eq!(retry_delay(base, 3), Duration::from_millis(400));
        assert_eq!(retry_delay(Duration::from_millis(u64::MAX), 1), MAX_RETRY_DELAY);
        assert_eq!(
            retry_delay(Duration::from_millis(u64::MAX), u32::MAX),
            MAX_RETRY_DELAY
        );
        assert_eq!(retry_delay(Duration::MAX, 5), MAX_RETRY_DELAY);
    }
}
