//! A crawl outlives its scheduler. While a daemon runs it, the crawl is
//! listed under `crawling/` with what it was asked (its fetch options'
//! credentials taken out); a scheduler that starts, or a crawl whose
//! queue or store failed, takes it up from the store: the frontier is
//! rebuilt by replaying the manifest in the order its lines were written,
//! following each page's stored links again, so every page is taken at
//! the depth and in the order it was before. A page with a line is not
//! fetched again; a page in a logged round of releases is in flight, its
//! report on its way; any other page taken may have been published in
//! the moment before its round was logged, so its job goes out again
//! under the same id marked as such, and a worker answers it from its
//! stored result when there is one.

use std::collections::HashSet;
use std::sync::Arc;

use bytes::Bytes;
use oxwright_artifacts::{ArtifactError, ArtifactStore};
use oxwright_jobs::{CrawlOptions, Job, JobId, JobSpec, ReportStatus, keys};
use oxwright_robots::RobotsCache;
use serde::{Deserialize, Serialize};
use tokio::time::Instant;
use url::Url;

use super::frontier::{Taken, page_job_id, url_hash};
use super::run::{Crawl, CrawlError, CrawlRequest};
use crate::batch::ManifestWriter;
use crate::batch::gate::read_released;
use crate::hooks::BatchWebhook;
use crate::politeness::host_key;
use crate::submit::StoredJob;

/// A manifest line, as a take-up reads it.
#[derive(Debug, Deserialize)]
struct DoneLine {
    job_id: JobId,
    url: String,
    status: ReportStatus,
    #[serde(default)]
    depth: u32,
    #[serde(default)]
    parent: Option<String>,
}

impl Crawl {
    /// The crawl `req` as an earlier scheduler left it: its manifest
    /// replayed, the pages without a line waiting again, its list of URLs
    /// not taken written again whole.
    pub(super) async fn take_up(
        store: Arc<dyn ArtifactStore>,
        robots: Option<RobotsCache>,
        req: &CrawlRequest,
    ) -> Result<Self, CrawlError> {
        let manifest = ManifestWriter::resume(store.clone(), &req.batch_id, 0).await?;
        let lines = manifest.lines().map(<[u8]>::to_vec).unwrap_or_default();
        let mut crawl = Crawl::new(store, robots, req, manifest.appending())?;
        crawl.skip_buffer = Some(Vec::new());
        crawl.offer_starts(req).await?;
        let mut done = HashSet::new();
        for line in lines.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
            let Ok(line) = serde_json::from_slice::<DoneLine>(line) else {
                continue;
            };
            let Ok(url) = Url::parse(&line.url) else {
                continue;
            };
            let url = crawl.frontier.normalise(&url);
            done.insert(url_hash(url.as_str()));
            if line.status == ReportStatus::Ok {
                let taken = Taken {
                    url,
                    depth: line.depth,
                    parent: line.parent,
                };
                crawl.discover(line.job_id, &taken).await?;
            }
        }
        // Without a queue that outlives its daemon, nothing published
        // before is on its way: every page without a line goes out again.
        let (released, seq) = if req.resumable {
            read_released(crawl.store.as_ref(), &req.batch_id).await?
        } else {
            Default::default()
        };
        crawl.log_rounds = req.resumable.then_some(seq);
        let now = Instant::now();
        let waiting = crawl.frontier.hosts().drain();
        for taken in waiting {
            if done.contains(&url_hash(taken.url.as_str())) {
                continue;
            }
            let id = page_job_id(&crawl.batch_id, &taken.url);
            let key = host_key(&taken.url);
            if released.contains(&id) {
                // Published and not reported: its report is on its way.
                crawl.frontier.hosts().occupy(&key, now);
                crawl.in_flight_before.insert(id, (key, taken));
            } else {
                // Perhaps published in the moment before its round was logged.
                crawl.again.insert(id, taken.clone());
                crawl.frontier.hosts().push(&key, taken, now);
            }
        }
        let skipped = crawl.skip_buffer.take().unwrap_or_default();
        crawl
            .store
            .put(&crawl.skipped_key, Bytes::from(skipped), "application/x-ndjson")
            .await?;
        tracing::info!(
            batch_id = %crawl.batch_id,
            done = done.len(),
            in_flight = crawl.in_flight_before.len(),
            waiting = crawl.again.len(),
            "crawl taken up from its manifest"
        );
        Ok(crawl)
    }
}

/// A crawl a scheduler daemon runs, as listed under `crawling/`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CrawlListing {
    /// The crawl's batch id.
    pub batch_id: String,
    /// Where it starts.
    pub starts: Vec<Url>,
    /// URLs taken at depth 1 (a sitemap's).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub seeds: Vec<Url>,
    /// What it follows and how politely.
    pub options: CrawlOptions,
    /// Every page's fetch options (`{"kind": "fetch", "spec": {…}}`),
    /// credentials taken out.
    pub template: serde_json::Value,
    /// The credential fields taken out because they held something.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub withheld: Vec<String>,
    /// Where its events go.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook: Option<BatchWebhook>,
}

impl CrawlListing {
    /// The listing of `req`.
    pub fn of(req: &CrawlRequest, webhook: Option<BatchWebhook>) -> Self {
        let stored = StoredJob::of(&Job::new(JobSpec::Fetch(req.template.clone()), None));
        Self {
            batch_id: req.batch_id.clone(),
            starts: req.starts.clone(),
            seeds: req.seeds.clone(),
            options: req.options.clone(),
            template: stored.spec,
            withheld: stored.withheld,
            webhook,
        }
    }

    /// Lists the crawl in `store`.
    pub async fn put(&self, store: &dyn ArtifactStore) -> Result<(), ArtifactError> {
        let body = serde_json::to_vec_pretty(self).expect("listings serialise");
        store
            .put(
                &keys::crawl_listing(&self.batch_id),
                Bytes::from(body),
                "application/json",
            )
            .await
    }

    /// The crawl to take up, holding `window` pages in flight (without
    /// the credentials [`Self::withheld`] names), on a queue that outlives
    /// its daemon when `resumable`; `None` when its options cannot be read.
    pub fn request(&self, window: usize, resumable: bool) -> Option<CrawlRequest> {
        let JobSpec::Fetch(template) = serde_json::from_value::<JobSpec>(self.template.clone()).ok()? else {
            return None;
        };
        Some(CrawlRequest {
            batch_id: self.batch_id.clone(),
            starts: self.starts.clone(),
            seeds: self.seeds.clone(),
            template,
            options: self.options.clone(),
            window,
            taken_up: true,
            resumable,
        })
    }

    /// Every crawl listed in `store`; an unreadable entry is left alone.
    pub async fn listed(store: &dyn ArtifactStore) -> Result<Vec<Self>, ArtifactError> {
        let mut listed = Vec::new();
        for key in store.list(keys::CRAWLING_PREFIX).await? {
            let body = match store.get(&key).await {
                Ok(body) => body,
                Err(ArtifactError::NotFound { .. }) => continue,
                Err(err) => return Err(err),
            };
            match serde_json::from_slice(&body) {
                Ok(listing) => listed.push(listing),
                Err(err) => tracing::warn!(%key, error = %err, "unreadable crawl listing left alone"),
            }
        }
        Ok(listed)
    }
}
