//! The crawls a scheduler daemon runs (`POST /v1/crawls`): each one a
//! task that releases its pages on the queue, takes the reports the
//! daemon's report loop hands it, and answers for its progress while it
//! grows. Cancelling it ends it interrupted; stopping the daemon suspends
//! it, listed for the next scheduler to take up; a queue or store failure
//! has it taken up again from the store once they answer.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use oxwright_artifacts::ArtifactStore;
use oxwright_jobs::JobReport;
use oxwright_queue::{JobQueue, QueueError, ReportAck, ReportStream};
use oxwright_robots::RobotsCache;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::run::{CrawlError, CrawlRequest, CrawlStop, CrawlSummary, run_crawl};
use crate::batch::{BatchSummary, Growing};
use crate::tracker::BatchStatus;

/// How long a cancelled crawl waits for the reports of its pages in
/// flight (a worker skips those not started; a page loading finishes)
/// before it writes `cancelled` lines for the rest.
pub const CANCEL_GRACE: Duration = Duration::from_secs(60);

/// How long a crawl whose queue or store failed waits before it is taken
/// up again from the store.
pub const RETAKE_AFTER: Duration = Duration::from_secs(1);

type Routed = (Result<JobReport, QueueError>, ReportAck);

/// One crawl in progress.
struct Live {
    reports: mpsc::UnboundedSender<Routed>,
    stop: CancellationToken,
    status: Arc<Mutex<BatchStatus>>,
}

/// The crawls this daemon runs, by batch id.
#[derive(Debug)]
pub struct LiveCrawls {
    crawls: Mutex<HashMap<String, Live>>,
    /// Reports of suspended crawls, never acked.
    held: Mutex<Vec<Routed>>,
    /// The queue outlives the daemon: its crawls are suspended, not ended, when it stops.
    durable: bool,
    robots: Option<RobotsCache>,
    shutdown: CancellationToken,
    tasks: TaskTracker,
}

impl std::fmt::Debug for Live {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Live").finish_non_exhaustive()
    }
}

/// What a crawl the daemon runs needs: where its jobs go and its
/// artefacts live.
#[derive(Clone)]
pub struct CrawlServices {
    /// Where its pages are published.
    pub queue: Arc<dyn JobQueue>,
    /// Where its manifest, pages and list of URLs not taken are written.
    pub store: Arc<dyn ArtifactStore>,
}

impl LiveCrawls {
    /// No crawl yet. `robots` answers for every crawl that obeys
    /// robots.txt (one cache, so a host's file is read once); `shutdown`
    /// is the daemon's, which suspends every crawl when the queue is
    /// `durable` (outlives the daemon), and otherwise interrupts it.
    pub fn new(robots: Option<RobotsCache>, shutdown: CancellationToken, durable: bool) -> Self {
        Self {
            crawls: Mutex::new(HashMap::new()),
            held: Mutex::new(Vec::new()),
            durable,
            robots,
            shutdown,
            tasks: TaskTracker::new(),
        }
    }

    /// Starts `req` as a task (listed under `crawling/` already).
    /// `on_report` sees each manifest line; `on_end` the crawl's summary
    /// or why it failed, and the daemon waits for what it returns before
    /// it stops. The listing is removed when the crawl ends, not when it
    /// is suspended.
    pub fn start<E>(
        self: &Arc<Self>,
        services: CrawlServices,
        mut req: CrawlRequest,
        mut on_report: impl FnMut(&JobReport) + Send + 'static,
        on_end: impl FnOnce(Result<CrawlSummary, CrawlError>) -> E + Send + 'static,
    ) where
        E: std::future::Future<Output = ()> + Send,
    {
        let batch_id = req.batch_id.clone();
        let (tx, rx) = mpsc::unbounded_channel();
        let stop = self.shutdown.child_token();
        let status = Arc::new(Mutex::new(BatchStatus::of(
            &BatchSummary {
                batch_id: batch_id.clone(),
                manifest: oxwright_jobs::keys::batch_manifest(&batch_id),
                ..BatchSummary::default()
            },
            false,
        )));
        self.crawls.lock().expect("crawls lock").insert(
            batch_id.clone(),
            Live {
                reports: tx,
                stop: stop.clone(),
                status: status.clone(),
            },
        );
        let robots = if req.options.ignore_robots {
            None
        } else {
            self.robots.clone()
        };
        let daemon = self.shutdown.clone();
        let drained = move || {
            let daemon = daemon.clone();
            async move {
                tokio::select! {
                    () = daemon.cancelled() => {}
                    () = tokio::time::sleep(CANCEL_GRACE) => {}
                }
            }
        };
        let crawls = self.clone();
        self.tasks.spawn(async move {
            let mut reports = RoutedReports(rx);
            let mut on_line = |report: Option<&JobReport>, so_far: &BatchSummary| {
                *status.lock().expect("crawl status lock") = BatchStatus::of(so_far, false);
                if let Some(report) = report {
                    on_report(report);
                }
            };
            let result = loop {
                let result = run_crawl(
                    services.queue.clone(),
                    services.store.clone(),
                    robots.clone(),
                    req.clone(),
                    &mut reports,
                    &mut on_line,
                    CrawlStop {
                        shutdown: stop.clone(),
                        drained: drained(),
                        suspend: crawls.durable.then(|| crawls.shutdown.clone()),
                    },
                )
                .await;
                match result {
                    Err(err) if !stop.is_cancelled() => {
                        tracing::warn!(%batch_id, error = %err, "a crawl's queue or store failed; it is taken up again from the store");
                        tokio::select! {
                            () = stop.cancelled() => {}
                            () = tokio::time::sleep(RETAKE_AFTER) => {}
                        }
                        req.taken_up = true;
                    }
                    result => break result,
                }
            };
            let suspended =
                crawls.shutdown.is_cancelled() && !result.as_ref().is_ok_and(|s| !s.suspended);
            // A suspended crawl stays known, so its late reports are left
            // for the next scheduler rather than taken as a batch's.
            if !suspended {
                crawls.crawls.lock().expect("crawls lock").remove(&batch_id);
                let listing = oxwright_jobs::keys::crawl_listing(&batch_id);
                if let Err(err) = services.store.delete(&listing).await {
                    tracing::warn!(%batch_id, error = %err, "an ended crawl stays listed; the next scheduler removes it");
                }
            }
            on_end(result).await;
        });
    }

    /// Hands a report of a running crawl's page to it (which acks it once
    /// its line is written); gives back any other.
    pub fn route(&self, report: JobReport, ack: ReportAck) -> Option<(JobReport, ReportAck)> {
        let crawls = self.crawls.lock().expect("crawls lock");
        let Some(live) = report.batch_id.as_deref().and_then(|id| crawls.get(id)) else {
            return Some((report, ack));
        };
        match live.reports.send((Ok(report), ack)) {
            Ok(()) => None,
            // The crawl is suspended with the daemon: the report is held
            // unacked, and goes back to the queue, for the scheduler that
            // takes the crawl up, when the daemon lets its queue go.
            Err(mpsc::error::SendError(held)) if self.durable && self.shutdown.is_cancelled() => {
                self.held.lock().expect("held lock").push(held);
                None
            }
            // The crawl just ended: the report goes where late ones go.
            Err(mpsc::error::SendError((report, ack))) => Some((report.expect("sent as Ok"), ack)),
        }
    }

    /// Waits for every crawl's task to end (after the daemon's shutdown).
    pub async fn wait(&self) {
        self.tasks.close();
        self.tasks.wait().await;
    }
}

impl Growing for LiveCrawls {
    fn status(&self, id: &str) -> Option<BatchStatus> {
        let crawls = self.crawls.lock().expect("crawls lock");
        let live = crawls.get(id)?;
        Some(live.status.lock().expect("crawl status lock").clone())
    }

    fn stop(&self, id: &str) -> bool {
        match self.crawls.lock().expect("crawls lock").get(id) {
            Some(live) => {
                live.stop.cancel();
                true
            }
            None => false,
        }
    }
}

/// The reports the report loop routes to one crawl.
#[derive(Debug)]
struct RoutedReports(mpsc::UnboundedReceiver<Routed>);

#[async_trait]
impl ReportStream for RoutedReports {
    async fn next(&mut self) -> Option<Result<JobReport, QueueError>> {
        let (report, ack) = self.0.recv().await?;
        if let Err(err) = ack.ack().await {
            tracing::debug!(error = %err, "a crawl's report ack failed");
        }
        Some(report)
    }

    async fn next_unacked(&mut self) -> Option<Routed> {
        self.0.recv().await
    }
}
