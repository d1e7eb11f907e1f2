//! Runs a batch through a job queue: publishes jobs a window ahead of the
//! reports, writes the manifest as reports arrive, and on interruption
//! records every job that never ran, so the manifest always has one line
//! per job.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::Utc;
use oxwright_artifacts::{ArtifactError, ArtifactStore};
use oxwright_jobs::{ErrorKind, FetchSpec, Job, JobError, JobId, JobReport, JobSpec};
use oxwright_queue::{JobQueue, QueueError};
use tokio_util::sync::CancellationToken;
use url::Url;

use super::input::{BatchLine, failed_report, too_large_error};
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
/// What was submitted, as the distributed mode records it (the jobs are
/// made as they are published): a dashboard shows the batch's progress
/// from it while it runs.
async fn write_record(store: &dyn ArtifactStore, req: &BatchRequest) -> Result<(), BatchError> {
    let record = crate::submit::BatchRecord {
        batch_id: req.batch_id.clone(),
        created_at: Utc::now(),
        total: req.lines.len(),
        jobs: Vec::new(),
        refused: req
            .lines
            .iter()
            .filter(|l| matches!(l, BatchLine::Invalid { .. }))
            .count(),
        source: "batch".to_owned(),
        webhook: None,
        resubmit_of: None,
    };
    record.put(store).await?;
    Ok(())
}

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
    write_record(store.as_ref(), &req).await?;
    let mut manifest = ManifestWriter::new(store, &req.batch_id, total);
    let mut reports = queue.reports().await?;
    // Lines wait as URLs. A job, with its copy of the template, is made
    // when it is published, and only published jobs without a line yet are
    // remembered: a batch holds its input, not a job per line, and what it
    // holds does not grow as it runs.
    let mut pending: VecDeque<Url> = VecDeque::new();
    for line in req.lines {
        match line {
            BatchLine::Url(url) => pending.push_back(url),
            BatchLine::Invalid { text, error } => {
                let report = failed_report(JobId::new(), &req.batch_id, &text, error);
                manifest.record(&report).await?;
                on_report(&report, manifest.done(), total);
            }
        }
    }
    // Published jobs without a manifest line: id → (publish order, URL).
    let mut in_flight: HashMap<JobId, (usize, String)> = HashMap::new();
    let mut published = 0;
    let window = req.window.max(1);
    let mut interrupted = false;
    while manifest.done() < total {
        while published < manifest.done() + window
            && !shutdown.is_cancelled()
            && let Some(url) = pending.pop_front()
        {
            let mut spec = req.template.clone();
            spec.url = url;
            let job = Job::new(JobSpec::Fetch(spec), Some(req.batch_id.clone()));
            match queue.publish(&job).await {
                Ok(()) => {
                    in_flight.insert(job.id, (published, job.url().to_string()));
                    published += 1;
                }
                // A job the queue refuses as too large is this line's failure, not the batch's.
                Err(err @ QueueError::TooLarge { .. }) => {
                    let error = too_large_error(job.url(), &err);
                    let report = failed_report(job.id, &req.batch_id, job.url(), error);
                    manifest.record(&report).await?;
                    on_report(&report, manifest.done(), total);
                }
                Err(err) => return Err(err.into()),
            }
        }
        // The last lines may all have been refused just now: no report is coming.
        if manifest.done() >= total {
            break;
        }
        tokio::select! {
            _ = shutdown.cancelled(), if !interrupted => {
                interrupted = true;
                break;
            }
            next = reports.next() => match next {
                Some(Ok(report)) => {
                    if report.batch_id.as_deref() == Some(req.batch_id.as_str()) && manifest.record(&report).await? {
                        in_flight.remove(&report.job_id);
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
                in_flight.remove(&report.job_id);
                on_report(&report, manifest.done(), total);
            }
        }
        let mut never_ran = in_flight.into_iter().collect::<Vec<_>>();
        never_ran.sort_by_key(|(_, (order, _))| *order);
        let never_ran = never_ran
            .into_iter()
            .map(|(id, (_, url))| (id, url))
            .chain(pending.into_iter().map(|url| (JobId::new(), url.to_string())))
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

#[cfg(test)]
mod tests {
    use oxwright_artifacts::MemoryStore;
    use oxwright_queue::{MemoryQueue, MemoryQueueOptions};

    use super::*;

    /// A batch whose last line becomes a job too large for the queue ends
    /// with that line refused; it does not wait for a report that never comes.
    #[tokio::test]
    async fn a_batch_whose_last_lines_are_refused_ends() {
        let queue = MemoryQueue::with_options(MemoryQueueOptions {
            max_message_bytes: 2_000,
            ..MemoryQueueOptions::default()
        });
        let long = format!("https://example.com/{}", "a".repeat(4_000));
        let req = BatchRequest {
            batch_id: "b1".into(),
            lines: vec![BatchLine::Url(long.parse().unwrap())],
            template: FetchSpec::new("https://example.com/".parse().unwrap()),
            window: 4,
        };
        let summary = tokio::time::timeout(
            Duration::from_secs(10),
            run_batch(
                Arc::new(queue),
                Arc::new(MemoryStore::new()),
                req,
                |_, _, _| {},
                CancellationToken::new(),
                std::future::pending(),
            ),
        )
        .await
        .expect("the batch ends")
        .unwrap();
        assert_eq!((summary.total, summary.failed), (1, 1));
        assert_eq!(summary.failed_by_kind.get("invalid_input"), Some(&1));
    }
}
