//! Runs a crawl through a job queue: a batch that grows. Each page's
//! report is written to the manifest with its depth and parent, its
//! result's links go through the frontier (normalised, judged, robots.txt
//! asked), and what the frontier takes is released host by host as
//! politeness allows. What is not taken is written to `skipped.jsonl`
//! with the reason, each URL once.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use chrono::Utc;
use oxwright_artifacts::{ArtifactError, ArtifactStore};
use oxwright_jobs::{
    CrawlOptions, ErrorKind, FetchSpec, Job, JobError, JobId, JobKind, JobReport, JobSpec, PageLinks,
    ReportStatus, SkipReason, SkippedUrl, keys,
};
use oxwright_queue::{JobQueue, QueueError, ReportAck, ReportStream};
use oxwright_robots::RobotsCache;
use serde::{Deserialize, Serialize};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use url::Url;

use super::frontier::{Frontier, Judged, Taken, page_job_id};
use super::scope::PatternError;
use crate::batch::input::{failed_report, too_large_error};
use crate::batch::{BatchError, BatchSummary, ManifestWriter, Place};
use crate::politeness::host_key;

/// Why a crawl could not run.
#[derive(Debug, thiserror::Error)]
pub enum CrawlError {
    /// An include or exclude pattern could not be read.
    #[error("{0}")]
    Pattern(#[from] PatternError),
    /// The queue or the store failed.
    #[error(transparent)]
    Batch(#[from] BatchError),
}

impl From<QueueError> for CrawlError {
    fn from(err: QueueError) -> Self {
        Self::Batch(err.into())
    }
}

impl From<ArtifactError> for CrawlError {
    fn from(err: ArtifactError) -> Self {
        Self::Batch(err.into())
    }
}

/// A crawl to run.
#[derive(Debug, Clone)]
pub struct CrawlRequest {
    /// The batch id (also its folder under `batches/`).
    pub batch_id: String,
    /// Where it starts (depth 0).
    pub starts: Vec<Url>,
    /// Further URLs taken at depth 1 (a sitemap's).
    pub seeds: Vec<Url>,
    /// Options applied to every fetch (its URL is replaced per page).
    pub template: FetchSpec,
    /// What the crawl follows and how politely.
    pub options: CrawlOptions,
    /// Jobs in flight at most, across every host.
    pub window: usize,
    /// A scheduler takes the crawl up again (after a restart, or after
    /// the queue or the store failed): its manifest is replayed in order,
    /// each page's stored links followed again, and no page with a line
    /// is loaded again.
    pub taken_up: bool,
    /// The crawl can be taken up (a daemon's, listed under `crawling/`):
    /// each round of pages published is logged, so a take-up knows which
    /// are in flight.
    pub resumable: bool,
}

/// The end state of a crawl: the batch's, and what was not taken.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CrawlSummary {
    /// Pages taken and how they ended.
    #[serde(flatten)]
    pub batch: BatchSummary,
    /// URLs found and not taken, by reason.
    pub skipped: BTreeMap<String, usize>,
    /// Where they are listed.
    pub skipped_list: String,
    /// The crawl stopped with its scheduler and is listed for the next
    /// one to take up; its manifest is as it stood.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub suspended: bool,
}

/// What the crawl reads of a page's result.
#[derive(Debug, Deserialize)]
struct Found {
    final_url: String,
    #[serde(default)]
    links: PageLinks,
    #[serde(default)]
    metadata: FoundMeta,
}

#[derive(Debug, Default, Deserialize)]
struct FoundMeta {
    #[serde(default)]
    canonical: Option<String>,
    #[serde(default)]
    next: Option<String>,
}

/// The crawl's state besides the queue.
pub(super) struct Crawl {
    pub(super) batch_id: String,
    pub(super) store: Arc<dyn ArtifactStore>,
    pub(super) robots: Option<RobotsCache>,
    pub(super) frontier: Frontier,
    pub(super) manifest: ManifestWriter,
    pub(super) skipped: BTreeMap<String, usize>,
    pub(super) skipped_key: String,
    /// Skip lines held while a take-up replays, written in one `put`.
    pub(super) skip_buffer: Option<Vec<u8>>,
    /// Pages waiting when the crawl was taken up, by job id: an earlier
    /// scheduler may have published them, so their reports may come.
    pub(super) again: HashMap<JobId, Taken>,
    /// Those of them that reported before their release: not published.
    pub(super) settled: HashSet<JobId>,
    /// Whether rounds of pages published are logged, and the next round's number.
    pub(super) log_rounds: Option<u64>,
    /// Pages an earlier scheduler published that have not reported.
    pub(super) in_flight_before: HashMap<JobId, (String, Taken)>,
}

impl Crawl {
    /// The state of a crawl that has taken no page yet, writing `manifest`.
    pub(super) fn new(
        store: Arc<dyn ArtifactStore>,
        robots: Option<RobotsCache>,
        req: &CrawlRequest,
        manifest: ManifestWriter,
    ) -> Result<Self, CrawlError> {
        Ok(Crawl {
            batch_id: req.batch_id.clone(),
            frontier: Frontier::new(&req.starts, req.options.clone())?,
            manifest,
            skipped: BTreeMap::new(),
            skipped_key: keys::batch_skipped(&req.batch_id),
            store,
            robots: if req.options.ignore_robots { None } else { robots },
            skip_buffer: None,
            again: HashMap::new(),
            settled: HashSet::new(),
            log_rounds: req.resumable.then_some(0),
            in_flight_before: HashMap::new(),
        })
    }

    /// Starts the crawl's record and its (empty) list of URLs not taken.
    async fn open(
        store: Arc<dyn ArtifactStore>,
        robots: Option<RobotsCache>,
        req: &CrawlRequest,
        created_at: chrono::DateTime<Utc>,
    ) -> Result<Self, CrawlError> {
        let manifest = ManifestWriter::new(store.clone(), &req.batch_id, 0);
        let crawl = Crawl::new(store.clone(), robots, req, manifest)?;
        write_record(store.as_ref(), &req.batch_id, created_at, 0).await?;
        // An empty list, so a crawl that skips nothing still has one.
        store
            .put(&crawl.skipped_key, Bytes::new(), "application/x-ndjson")
            .await?;
        Ok(crawl)
    }

    async fn record_skip(&mut self, line: SkippedUrl) -> Result<(), ArtifactError> {
        let mut text = serde_json::to_vec(&line).expect("skip lines serialise");
        text.push(b'\n');
        match self.skip_buffer.as_mut() {
            Some(buffer) => buffer.extend_from_slice(&text),
            None => self.store.append(&self.skipped_key, Bytes::from(text)).await?,
        }
        *self.skipped.entry(line.reason.as_str().to_owned()).or_default() += 1;
        Ok(())
    }

    /// Whether robots.txt lets oxwright take `url`; notes the host's `Crawl-delay`.
    async fn robots_allow(&mut self, url: &Url) -> bool {
        let Some(robots) = &self.robots else {
            return true;
        };
        match robots.robots_for(url).await {
            Ok(rules) => {
                if let Some(delay) = rules.crawl_delay() {
                    self.frontier
                        .hosts()
                        .set_crawl_delay(&host_key(url), delay, Instant::now());
                }
                rules.allowed(url)
            }
            Err(err) => {
                tracing::warn!(url = %oxwright_telemetry::printable(url.as_str()), error = %err, "robots.txt could not be asked: not taken");
                false
            }
        }
    }

    /// Offers the start URLs (depth 0), then the seeds (depth 1).
    pub(super) async fn offer_starts(&mut self, req: &CrawlRequest) -> Result<(), ArtifactError> {
        for start in &req.starts {
            self.offer(start, 0, None).await?;
        }
        for seed in &req.seeds {
            self.offer(seed, 1, None).await?;
        }
        Ok(())
    }

    /// Offers a URL found at `depth` (linked from `parent`) to the frontier.
    async fn offer(&mut self, found: &Url, depth: u32, parent: Option<&str>) -> Result<(), ArtifactError> {
        let url = match self.frontier.judge(found, depth, parent) {
            Judged::Known => return Ok(()),
            Judged::Skipped(line) => return self.record_skip(line).await,
            Judged::Candidate(url) => url,
        };
        if !self.robots_allow(&url).await {
            if let Judged::Skipped(line) = self.frontier.skip_robots(found, depth, parent) {
                self.record_skip(line).await?;
            }
            return Ok(());
        }
        if let Some(line) = self.frontier.take(found, url, depth, parent, Instant::now()) {
            self.record_skip(line).await?;
        }
        let grown = self
            .frontier
            .taken()
            .saturating_sub(self.manifest.summary().total);
        self.manifest.grow(grown);
        Ok(())
    }

    /// Follows the links of the page `taken`, whose job ended well.
    pub(super) async fn discover(&mut self, job_id: JobId, taken: &Taken) -> Result<(), ArtifactError> {
        let body = match self.store.get(&keys::job_result(JobKind::Fetch, job_id)).await {
            Ok(body) => body,
            Err(ArtifactError::NotFound { .. }) => {
                tracing::warn!(job_id = %job_id, "a crawled page's result is missing: its links are not followed");
                return Ok(());
            }
            Err(err) => return Err(err),
        };
        let found: Found = match serde_json::from_slice(&body) {
            Ok(found) => found,
            Err(err) => {
                tracing::warn!(job_id = %job_id, error = %err, "a crawled page's result is unreadable: its links are not followed");
                return Ok(());
            }
        };
        let page = taken.url.as_str().to_owned();
        // A page that redirected to, or names as canonical, a page taken
        // already duplicates it: recorded as such, its links not followed.
        let others = [
            Some(found.final_url.as_str()),
            found.metadata.canonical.as_deref(),
        ];
        for other in others.into_iter().flatten() {
            let Ok(other) = Url::parse(other) else {
                continue;
            };
            let other = self.frontier.normalise(&other);
            if other == taken.url || !matches!(other.scheme(), "http" | "https") {
                continue;
            }
            if !self.frontier.claim(&other) {
                let line = SkippedUrl {
                    url: page.clone(),
                    reason: SkipReason::Duplicate,
                    parent: taken.parent.clone(),
                    depth: taken.depth,
                    same_as: Some(other.to_string()),
                };
                return self.record_skip(line).await;
            }
        }
        let depth = taken.depth + 1;
        let next = found.metadata.next.as_deref();
        for link in found.links.all().map(|l| l.url.as_str()).chain(next) {
            if let Ok(url) = Url::parse(link) {
                self.offer(&url, depth, Some(&page)).await?;
            }
        }
        Ok(())
    }

    async fn record(
        &mut self,
        report: &JobReport,
        taken: &Taken,
        on_report: &mut impl FnMut(Option<&JobReport>, &BatchSummary),
    ) -> Result<(), ArtifactError> {
        let place = Place {
            depth: taken.depth,
            parent: taken.parent.clone(),
        };
        if self.manifest.record_placed(report, &place).await? {
            on_report(Some(report), self.manifest.summary());
        }
        Ok(())
    }

    /// Publishes what politeness lets go now, up to `window` in flight.
    async fn release(
        &mut self,
        queue: &dyn JobQueue,
        template: &FetchSpec,
        in_flight: &mut HashMap<JobId, (String, Taken)>,
        window: usize,
        on_report: &mut impl FnMut(Option<&JobReport>, &BatchSummary),
    ) -> Result<(), CrawlError> {
        let now = Instant::now();
        let mut round = Vec::new();
        while in_flight.len() < window
            && let Some((key, taken)) = self.frontier.hosts().release(now)
        {
            let id = page_job_id(&self.batch_id, &taken.url);
            // It reported (published by an earlier scheduler) while it waited.
            if self.settled.remove(&id) {
                self.frontier.hosts().finished(&key, false, now);
                continue;
            }
            let mut spec = template.clone();
            spec.url = taken.url.clone();
            let mut job = Job::new(JobSpec::Fetch(spec), Some(self.batch_id.clone()));
            job.id = id;
            job.may_have_run = self.again.remove(&id).is_some();
            match queue.publish(&job).await {
                Ok(()) => {
                    in_flight.insert(job.id, (key, taken));
                    round.push(job.id);
                }
                // A job the queue refuses as too large is this page's failure, not the crawl's.
                Err(err @ QueueError::TooLarge { .. }) => {
                    let error = too_large_error(job.url(), &err);
                    let report = failed_report(job.id, &self.batch_id, job.url(), error);
                    self.frontier.hosts().finished(&key, false, now);
                    self.record(&report, &taken, on_report).await?;
                }
                Err(err) => return Err(err.into()),
            }
        }
        if let Some(seq) = self.log_rounds.as_mut()
            && !round.is_empty()
        {
            crate::batch::gate::log_released(self.store.as_ref(), &self.batch_id, *seq, &round).await;
            *seq += 1;
        }
        Ok(())
    }

    /// After an interrupt: the pages in flight report as they end (a
    /// worker skips those of a cancelled crawl) until `drained`, then what
    /// is already queued; every page taken that never reported gets a
    /// `cancelled` line.
    async fn wind_down(
        &mut self,
        reports: &mut dyn ReportStream,
        batch_id: &str,
        mut in_flight: HashMap<JobId, (String, Taken)>,
        drained: impl Future<Output = ()>,
        on_report: &mut impl FnMut(Option<&JobReport>, &BatchSummary),
    ) -> Result<(), CrawlError> {
        tokio::pin!(drained);
        let mut done_waiting = false;
        while !in_flight.is_empty() {
            let next = if done_waiting {
                match tokio::time::timeout(Duration::from_millis(200), reports.next_unacked()).await {
                    Ok(Some(next)) => next,
                    _ => break,
                }
            } else {
                tokio::select! {
                    () = &mut drained => {
                        done_waiting = true;
                        continue;
                    }
                    next = reports.next_unacked() => match next {
                        Some(next) => next,
                        None => break,
                    },
                }
            };
            let (report, ack) = next;
            let taken = match claim(report, batch_id, &mut in_flight) {
                Claimed::InFlight(report, _, taken) => Some((report, taken)),
                Claimed::Other(report) => self.again.remove(&report.job_id).map(|t| (report, t)),
                Claimed::Nothing => None,
            };
            if let Some((report, taken)) = taken {
                self.record(&report, &taken, on_report).await?;
            }
            settle(ack).await;
        }
        let never_ran = in_flight
            .into_values()
            .map(|(_, taken)| taken)
            .chain(self.frontier.hosts().drain())
            .collect::<Vec<_>>();
        for taken in never_ran {
            let report = self.not_run(&taken, "not run: the crawl was interrupted");
            self.record(&report, &taken, on_report).await?;
        }
        Ok(())
    }

    /// A line for a page that never ran.
    fn not_run(&self, taken: &Taken, why: &str) -> JobReport {
        let error = JobError::new(ErrorKind::Cancelled, why);
        let id = page_job_id(&self.batch_id, &taken.url);
        failed_report(id, &self.batch_id, taken.url.as_str(), error)
    }

    /// Records the report of one of this crawl's pages and follows its
    /// links: one in flight, or one an earlier scheduler published; any
    /// other report (another's, a duplicate) is passed over.
    async fn take_report(
        &mut self,
        report: Result<JobReport, QueueError>,
        in_flight: &mut HashMap<JobId, (String, Taken)>,
        on_report: &mut impl FnMut(Option<&JobReport>, &BatchSummary),
    ) -> Result<(), ArtifactError> {
        let taken = match claim(report, &self.batch_id, in_flight) {
            Claimed::InFlight(report, key, taken) => {
                self.frontier.hosts().answered(&key, &report, Instant::now());
                Some((report, taken))
            }
            Claimed::Other(report) => self.again.remove(&report.job_id).map(|taken| {
                self.settled.insert(report.job_id);
                (report, taken)
            }),
            Claimed::Nothing => None,
        };
        let Some((report, taken)) = taken else {
            return Ok(());
        };
        self.record(&report, &taken, on_report).await?;
        if report.status == ReportStatus::Ok {
            self.discover(report.job_id, &taken).await?;
        }
        Ok(())
    }
}

/// How a crawl is stopped: when `shutdown` fires, releasing stops; the
/// reports of the pages in flight are taken until `drained` resolves (the
/// workers done, or a grace period), and every page taken that never
/// reported gets a `cancelled` line. When `suspend` has fired too, the
/// crawl returns at once instead, its manifest as it stands, for a
/// scheduler to take up later.
pub struct CrawlStop<D> {
    /// Stops releasing pages.
    pub shutdown: CancellationToken,
    /// Resolves once no further report is worth waiting for.
    pub drained: D,
    /// Makes a stop a suspension (a scheduler daemon's own shutdown).
    pub suspend: Option<CancellationToken>,
}

/// Runs `req`: its pages go out on `queue`, their reports come from
/// `reports` (the queue's own, or those a daemon routes to the crawl),
/// each acked once its line is written; `on_report` sees each manifest
/// line with the crawl's summary so far (and, with no line, the summary a
/// take-up found). `robots` (absent when the crawl ignores robots.txt)
/// answers for every URL before it is taken. A crawl `taken_up` carries on
/// from its stored manifest.
pub async fn run_crawl(
    queue: Arc<dyn JobQueue>,
    store: Arc<dyn ArtifactStore>,
    robots: Option<RobotsCache>,
    req: CrawlRequest,
    reports: &mut dyn ReportStream,
    mut on_report: impl FnMut(Option<&JobReport>, &BatchSummary),
    stop: CrawlStop<impl Future<Output = ()>>,
) -> Result<CrawlSummary, CrawlError> {
    let CrawlStop {
        shutdown,
        drained,
        suspend,
    } = stop;
    let record = if req.taken_up {
        crate::submit::read_batch_record(store.as_ref(), &req.batch_id).await?
    } else {
        None
    };
    let (mut crawl, created_at) = match record {
        Some(record) => {
            let crawl = Crawl::take_up(store.clone(), robots, &req).await?;
            on_report(None, crawl.manifest.summary());
            (crawl, record.created_at)
        }
        None => {
            let created_at = Utc::now();
            let mut crawl = Crawl::open(store.clone(), robots, &req, created_at).await?;
            crawl.offer_starts(&req).await?;
            (crawl, created_at)
        }
    };

    let window = req.window.max(1);
    let mut in_flight = std::mem::take(&mut crawl.in_flight_before);
    let mut interrupted = false;
    loop {
        let now = Instant::now();
        if !shutdown.is_cancelled() {
            crawl
                .release(
                    queue.as_ref(),
                    &req.template,
                    &mut in_flight,
                    window,
                    &mut on_report,
                )
                .await?;
        }
        if in_flight.is_empty() && crawl.frontier.hosts().waiting() == 0 {
            break;
        }
        let wake = crawl
            .frontier
            .hosts()
            .next_release()
            .filter(|_| in_flight.len() < window);
        tokio::select! {
            _ = shutdown.cancelled(), if !interrupted => {
                interrupted = true;
                break;
            }
            _ = tokio::time::sleep_until(wake.unwrap_or(now)), if wake.is_some() => {}
            next = reports.next_unacked() => match next {
                Some((report, ack)) => {
                    crawl.take_report(report, &mut in_flight, &mut on_report).await?;
                    settle(ack).await;
                }
                None => return Err(QueueError::Closed.into()),
            },
        }
    }
    if interrupted {
        if suspend.as_ref().is_some_and(CancellationToken::is_cancelled) {
            tracing::info!(batch_id = %req.batch_id, in_flight = in_flight.len(), "crawl suspended with its scheduler; the next one takes it up");
            return Ok(CrawlSummary {
                batch: crawl.manifest.summary().clone(),
                skipped: crawl.skipped,
                skipped_list: crawl.skipped_key,
                suspended: true,
            });
        }
        crawl
            .wind_down(reports, &req.batch_id, in_flight, drained, &mut on_report)
            .await?;
    }
    let total = crawl.manifest.summary().total;
    write_record(store.as_ref(), &req.batch_id, created_at, total).await?;
    let elapsed = (Utc::now() - created_at).num_milliseconds().max(0) as f64 / 1000.0;
    let batch = crawl.manifest.finish(interrupted, elapsed).await?;
    Ok(CrawlSummary {
        batch,
        skipped: crawl.skipped,
        skipped_list: crawl.skipped_key,
        suspended: false,
    })
}

/// What a report is to the crawl.
enum Claimed {
    /// The report of a page it has in flight, with its host and place.
    InFlight(JobReport, String, Taken),
    /// A report of this crawl's that is not in flight.
    Other(JobReport),
    /// Unreadable, or another's.
    Nothing,
}

/// What `report` is to the crawl `batch_id`; one in flight is taken out
/// of `in_flight`.
fn claim(
    report: Result<JobReport, QueueError>,
    batch_id: &str,
    in_flight: &mut HashMap<JobId, (String, Taken)>,
) -> Claimed {
    let report = match report {
        Ok(report) => report,
        Err(err) => {
            tracing::warn!(error = %err, "unreadable report skipped");
            return Claimed::Nothing;
        }
    };
    if report.batch_id.as_deref() != Some(batch_id) {
        return Claimed::Nothing;
    }
    match in_flight.remove(&report.job_id) {
        Some((key, taken)) => Claimed::InFlight(report, key, taken),
        None => Claimed::Other(report),
    }
}

/// Acks a report the crawl has recorded (or that is not its own).
async fn settle(ack: ReportAck) {
    if let Err(err) = ack.ack().await {
        tracing::debug!(error = %err, "a crawl's report ack failed");
    }
}

/// What was submitted, as a batch records it: the dashboard shows the
/// crawl's progress from it while it runs; its total is the pages taken
/// when it ends.
async fn write_record(
    store: &dyn ArtifactStore,
    batch_id: &str,
    created_at: chrono::DateTime<Utc>,
    total: usize,
) -> Result<(), ArtifactError> {
    crate::submit::BatchRecord {
        batch_id: batch_id.to_owned(),
        created_at,
        total,
        jobs: Vec::new(),
        refused: 0,
        source: "crawl".to_owned(),
        webhook: None,
        resubmit_of: None,
        per_host: None,
    }
    .put(store)
    .await
}
