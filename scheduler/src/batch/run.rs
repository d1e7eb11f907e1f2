//! Runs a batch through a job queue: publishes jobs a window ahead of the
//! reports, writes the manifest as reports arrive, and on interruption
//! records every job that never ran, so the manifest always has one line
//! per job.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use oxwright_artifacts::{ArtifactError, ArtifactStore};
use oxwright_jobs::{ErrorKind, FetchSpec, Job, JobError, JobId, JobReport, JobSpec};
use oxwright_queue::{JobQueue, QueueError};
use oxwright_robots::RobotsCache;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use url::Url;

use super::input::{BatchLine, failed_report, too_large_error};
use super::manifest::{BatchSummary, ManifestWriter};
use crate::politeness::{Hosts, host_key};

/// Why a batch could not run.
#[derive(Debug, thiserror::Error)]
pub enum BatchError {
    /// The queue failed.
    #[error("queue: {0}")]
    Queue(#[from] QueueError),
    /// The artefact store failed.
    #[error("artefact store: {0}")]
    Store(#[from] ArtifactError),
    /// A batch of this id was submitted already.
    #[error("batch {0} is submitted already")]
    Duplicate(String),
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
    /// Per-host limits on releasing the jobs (none: input order, no limit).
    pub per_host: Option<PerHost>,
}

/// How politely a batch releases its jobs: per host (and port), at most
/// `concurrency` in flight and `delay` between releases; with `robots`,
/// lines robots.txt disallows fail as `policy_denied` and a host's
/// `Crawl-delay` is honoured.
#[derive(Debug, Clone)]
pub struct PerHost {
    /// Page loads in flight at once to one host.
    pub concurrency: usize,
    /// Least time between two releases at one host.
    pub delay: Duration,
    /// robots.txt, asked for every line.
    pub robots: Option<RobotsCache>,
}

/// The lines waiting to be published: in input order, or per host.
enum Pending {
    InOrder(VecDeque<Url>),
    PerHost(Hosts<Url>),
}

impl Pending {
    fn push(&mut self, url: Url) {
        match self {
            Self::InOrder(q) => q.push_back(url),
            Self::PerHost(hosts) => hosts.push(&host_key(&url), url, Instant::now()),
        }
    }

    /// The next line that may be published now, with its host key when counted per host.
    fn next(&mut self) -> Option<(Option<String>, Url)> {
        match self {
            Self::InOrder(q) => q.pop_front().map(|url| (None, url)),
            Self::PerHost(hosts) => hosts.release(Instant::now()).map(|(key, url)| (Some(key), url)),
        }
    }

    /// Frees a host's slot; `report` (absent for a line that never ran)
    /// says whether the host should slow down.
    fn finished(&mut self, key: Option<&str>, report: Option<&JobReport>) {
        if let (Self::PerHost(hosts), Some(key)) = (self, key) {
            match report {
                Some(report) => hosts.answered(key, report, Instant::now()),
                None => hosts.finished(key, false, Instant::now()),
            }
        }
    }

    /// When a host now at its pace may take its next line.
    fn wake(&self) -> Option<Instant> {
        match self {
            Self::InOrder(_) => None,
            Self::PerHost(hosts) => hosts.next_release(),
        }
    }

    fn drain(self) -> Vec<Url> {
        match self {
            Self::InOrder(q) => q.into(),
            Self::PerHost(mut hosts) => hosts.drain(),
        }
    }
}

/// Says whether robots.txt lets the line `url` run; notes its host's `Crawl-delay`.
async fn robots_allow(robots: &RobotsCache, pending: &mut Pending, url: &Url) -> Result<(), JobError> {
    match pending {
        Pending::PerHost(hosts) => crate::politeness::robots_allow(robots, hosts, url).await,
        // robots.txt comes with per-host limits, which release per host.
        Pending::InOrder(_) => Ok(()),
    }
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
        per_host: None,
    };
    record.put(store).await?;
    Ok(())
}

/// Puts the batch's lines in wait for publishing, in input order or per
/// host; a line refused already (or by robots.txt) gets its failed line now.
async fn intake(
    lines: Vec<BatchLine>,
    per_host: Option<&PerHost>,
    batch_id: &str,
    manifest: &mut ManifestWriter,
    on_report: &mut impl FnMut(&JobReport, usize, usize),
) -> Result<Pending, BatchError> {
    let total = lines.len();
    let robots = per_host.and_then(|p| p.robots.clone());
    let mut pending = match per_host {
        None => Pending::InOrder(VecDeque::new()),
        Some(p) => Pending::PerHost(Hosts::new(p.concurrency, p.delay)),
    };
    for line in lines {
        let line = match (line, &robots) {
            (BatchLine::Url(url), Some(robots)) => match robots_allow(robots, &mut pending, &url).await {
                Ok(()) => BatchLine::Url(url),
                Err(error) => BatchLine::Invalid {
                    text: url.to_string(),
                    error,
                },
            },
            (line, _) => line,
        };
        match line {
            BatchLine::Url(url) => pending.push(url),
            BatchLine::Invalid { text, error } => {
                let report = failed_report(JobId::new(), batch_id, &text, error);
                manifest.record(&report).await?;
                on_report(&report, manifest.done(), total);
            }
        }
    }
    Ok(pending)
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
    let mut pending = intake(
        req.lines,
        req.per_host.as_ref(),
        &req.batch_id,
        &mut manifest,
        &mut on_report,
    )
    .await?;
    // Published jobs without a manifest line: id → (publish order, URL, host key).
    let mut in_flight: HashMap<JobId, (usize, String, Option<String>)> = HashMap::new();
    let mut published = 0;
    let window = req.window.max(1);
    let mut interrupted = false;
    while manifest.done() < total {
        while published < manifest.done() + window
            && !shutdown.is_cancelled()
            && let Some((key, url)) = pending.next()
        {
            let mut spec = req.template.clone();
            spec.url = url;
            let job = Job::new(JobSpec::Fetch(spec), Some(req.batch_id.clone()));
            match queue.publish(&job).await {
                Ok(()) => {
                    in_flight.insert(job.id, (published, job.url().to_string(), key));
                    published += 1;
                }
                // A job the queue refuses as too large is this line's failure, not the batch's.
                Err(err @ QueueError::TooLarge { .. }) => {
                    pending.finished(key.as_deref(), None);
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
        let wake = pending.wake().filter(|_| published < manifest.done() + window);
        tokio::select! {
            _ = shutdown.cancelled(), if !interrupted => {
                interrupted = true;
                break;
            }
            _ = tokio::time::sleep_until(wake.unwrap_or_else(Instant::now)), if wake.is_some() => {}
            next = reports.next() => match next {
                Some(Ok(report)) => {
                    if report.batch_id.as_deref() == Some(req.batch_id.as_str()) && manifest.record(&report).await? {
                        if let Some((_, _, key)) = in_flight.remove(&report.job_id) {
                            pending.finished(key.as_deref(), Some(&report));
                        }
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
        never_ran.sort_by_key(|(_, (order, _, _))| *order);
        let never_ran = never_ran
            .into_iter()
            .map(|(id, (_, url, _))| (id, url))
            .chain(
                pending
                    .drain()
                    .into_iter()
                    .map(|url| (JobId::new(), url.to_string())),
            )
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
            per_host: None,
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
