//! Runs a batch through a job queue: publishes jobs a window ahead of the
//! reports, writes the manifest as reports arrive, and on interruption
//! records every job that never ran, so the manifest always has one line
//! per job.

use std::collections::VecDeque;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::Utc;
use oxwright_artifacts::{ArtifactError, ArtifactStore};
use oxwright_jobs::{ErrorKind, FetchSpec, Job, JobError, JobId, JobKind, JobReport, JobSpec, ReportStatus};
use oxwright_queue::{JobQueue, QueueError};
use tokio_util::sync::CancellationToken;

use super::input::{BatchLine, shorten, too_large_error};
use super::manifest::{BatchSummary, ManifestWriter};

/// Why a batch could not run.
#[derive(Debug, thiserror::Error)]
pub enum BatchError {
    /// The queue failed.
    #[error("queue: {0}")]
    Queue(#[from] QueueError),
    /// The artefact store failed.
    #[error("artefact store: {0}")]
    Store(#[from] ArtifactError),
}

/// A batch to run.
#[derive(Debug, Clone)]
pub struct BatchRequest {
    /// The batch id (also its folder under `batches/`).
    pub batch_id: String,
    /// The input lines.
    pub lines: Vec<BatchLine>,
    /// Options applied to every fetch (its URL is replaced per line).
    pub template: FetchSpec,
    /// Jobs published ahead of finished ones.
    pub window: usize,
}

/// Creates a batch id: time-ordered, readable in a folder listing.
pub fn new_batch_id() -> String {
    format!(
        "{}-{}",
        Utc::now().format("%Y%m%dT%H%M%SZ"),
        &uuid::Uuid::new_v4().simple().to_string()[..8]
    )
}

/// Runs `req`: `on_report` sees each manifest line with (done, total).
/// When `shutdown` fires, publishing stops; once `drained` resolves (the
/// workers finished their in-flight jobs) the remaining reports are
/// collected and every job that never ran gets a `cancelled` line.
pub async fn run_batch(
    queue: Arc<dyn JobQueue>,
    store: Arc<dyn ArtifactStore>,
    req: BatchRequest,
    mut on_report: impl FnMut(&JobReport, usize, usize),
    shutdown: CancellationToken,
    drained: impl Future<Output = ()>,
) -> Result<BatchSummary, BatchError> {
    let started = Instant::now();
    let total = req.lines.len();
    let mut manifest = ManifestWriter::new(store, &req.batch_id, total);
    let mut reports = queue.reports().await?;
    let mut pending: VecDeque<Job> = VecDeque::new();
    for line in req.lines {
        match line {
            BatchLine::Url(url) => {
                let mut spec = req.template.clone();
                spec.url = url;
                let job = Job::new(JobSpec::Fetch(spec), Some(req.batch_id.clone()));
                // A job the queue would refuse is this line's failure, not the batch's.
                match oxwright_queue::encode_job(&job, queue.max_message_bytes()) {
                    Ok(_) => pending.push_back(job),
                    Err(err) => {
                        let error = too_large_error(job.url(), &err);
                        let report = failed_report(job.id, &req.batch_id, job.url(), error);
                        manifest.record(&report).await?;
                        on_report(&report, manifest.done(), total);
                    }
                }
            }
            BatchLine::Invalid { text, error } => {
                let report = failed_report(JobId::new(), &req.batch_id, &text, error);
                manifest.record(&report).await?;
                on_report(&report, manifest.done(), total);
            }
        }
    }
    let mut published: Vec<(JobId, String)> = Vec::new();
    let window = req.window.max(1);
    let mut interrupted = false;
    while manifest.done() < total {
        while published.len() < manifest.done() + window
            && !shutdown.is_cancelled()
            && let Some(job) = pending.pop_front()
        {
            queue.publish(&job).await?;
            published.push((job.id, job.url().to_string()));
        }
        tokio::select! {
            _ = shutdown.cancelled(), if !interrupted => {
                interrupted = true;
                break;
            }
            next = reports.next() => match next {
                Some(Ok(report)) => {
                    if report.batch_id.as_deref() == Some(req.batch_id.as_str()) && manifest.record(&report).await? {
                        on_report(&report, manifest.done(), total);
                    }
                }
                Some(Err(err)) => tracing::warn!(error = %err, "unreadable report skipped"),
                None => return Err(QueueError::Closed.into()),
            },
        }
    }
    if interrupted {
        drained.await;
        // Reports of jobs that finished during the drain are already queued.
        while let Ok(Some(Ok(report))) =
            tokio::time::timeout(Duration::from_millis(200), reports.next()).await
        {
            if report.batch_id.as_deref() == Some(req.batch_id.as_str()) && manifest.record(&report).await? {
                on_report(&report, manifest.done(), total);
            }
        }
        let never_ran = published
            .into_iter()
            .filter(|(id, _)| !manifest.has(id))
            .chain(pending.into_iter().map(|j| (j.id, j.url().to_string())))
            .collect::<Vec<_>>();
        for (id, url) in never_ran {
            let error = JobError::new(ErrorKind::Cancelled, "not run: the batch was interrupted");
            let report = failed_report(id, &req.batch_id, &url, error);
            manifest.record(&report).await?;
            on_report(&report, manifest.done(), total);
        }
    }
    Ok(manifest
        .finish(interrupted, started.elapsed().as_secs_f64())
        .await?)
}

/// The manifest line of a fetch that never ran: refused input, or a job
/// an interrupted batch never reached.
pub fn failed_report(job_id: JobId, batch_id: &str, url: &str, error: JobError) -> JobReport {
    JobReport {
        job_id,
        kind: JobKind::Fetch,
        batch_id: Some(batch_id.to_string()),
        url: shorten(url),
        status: ReportStatus::Failed,
        error: Some(error),
        artifacts: Vec::new(),
        attempt: 0,
        duration_ms: 0.0,
        finished_at: Utc::now(),
    }
}
