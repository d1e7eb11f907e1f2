//! Batch progress and the manifest: exactly one line per job, whatever the
//! redeliveries, then a summary of what failed and why.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use bytes::Bytes;
use oxwright_artifacts::{ArtifactError, ArtifactStore};
use oxwright_jobs::{JobId, JobReport, ReportStatus, keys};
use serde::{Deserialize, Serialize};

/// The end state of a batch.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BatchSummary {
    /// The batch id.
    pub batch_id: String,
    /// Jobs in the batch.
    pub total: usize,
    /// Jobs that produced their result.
    pub ok: usize,
    /// Jobs that failed for good.
    pub failed: usize,
    /// Failures by error kind.
    pub failed_by_kind: BTreeMap<String, usize>,
    /// Whether the batch was interrupted before every job ran.
    pub interrupted: bool,
    /// Wall time of the batch, in seconds.
    pub elapsed_s: f64,
    /// Where the manifest is.
    pub manifest: String,
}

/// Where a crawl found a page: how many links from a start URL, and the
/// page that linked to it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Place {
    /// Links followed from a start URL (a start URL is 0).
    pub depth: u32,
    /// The page that linked to it; absent for a start URL or a sitemap seed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
}

/// A manifest line with its place in a crawl.
#[derive(Serialize)]
struct PlacedLine<'a> {
    #[serde(flatten)]
    report: &'a JobReport,
    #[serde(flatten)]
    place: &'a Place,
}

/// Writes manifest lines as reports arrive and counts them.
///
/// Two modes: `new` appends each line to the store as it is recorded (the
/// embedded batch, on the file store); `buffered` and `resume` keep the
/// whole manifest in memory and `flush` writes it in one `put` (the
/// scheduler daemon, on S3, which has no append).
#[derive(Debug)]
pub struct ManifestWriter {
    store: Arc<dyn ArtifactStore>,
    key: String,
    seen: HashSet<JobId>,
    summary: BatchSummary,
    /// The whole manifest, in buffered mode.
    buffer: Option<Vec<u8>>,
    /// Lines recorded since the last flush.
    unflushed: usize,
}

impl ManifestWriter {
    /// Starts the manifest of `batch_id` with `total` jobs expected.
    pub fn new(store: Arc<dyn ArtifactStore>, batch_id: &str, total: usize) -> Self {
        let key = keys::batch_manifest(batch_id);
        Self {
            store,
            summary: BatchSummary {
                batch_id: batch_id.to_string(),
                total,
                manifest: key.clone(),
                ..BatchSummary::default()
            },
            key,
            seen: HashSet::new(),
            buffer: None,
            unflushed: 0,
        }
    }

    /// Starts an empty manifest kept in memory until [`Self::flush`].
    pub fn buffered(store: Arc<dyn ArtifactStore>, batch_id: &str, total: usize) -> Self {
        let mut writer = Self::new(store, batch_id, total);
        writer.buffer = Some(Vec::new());
        writer
    }

    /// Reopens the manifest of `batch_id` in buffered mode, counting the
    /// lines already stored (a restarted scheduler carries on where the
    /// last flush left it, without duplicating a line).
    pub async fn resume(
        store: Arc<dyn ArtifactStore>,
        batch_id: &str,
        total: usize,
    ) -> Result<Self, ArtifactError> {
        let mut writer = Self::buffered(store, batch_id, total);
        let existing = match writer.store.get(&writer.key).await {
            Ok(body) => body,
            Err(ArtifactError::NotFound { .. }) => return Ok(writer),
            Err(err) => return Err(err),
        };
        for line in existing.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
            match serde_json::from_slice::<JobReport>(line) {
                Ok(report) => {
                    writer.count(&report);
                    writer.buffer_line(line);
                }
                Err(err) => tracing::warn!(batch_id, error = %err, "unreadable manifest line dropped"),
            }
        }
        Ok(writer)
    }

    /// Appends each line to the store as it is recorded from now on (a
    /// crawl taken up again reads its manifest with [`Self::resume`], then
    /// appends, as it did before).
    pub fn appending(mut self) -> Self {
        self.buffer = None;
        self.unflushed = 0;
        self
    }

    /// Records `report` unless its job already has a line; returns whether
    /// it was new.
    pub async fn record(&mut self, report: &JobReport) -> Result<bool, ArtifactError> {
        self.record_line(report, None).await
    }

    /// Records `report` as [`Self::record`] does, with where a crawl found
    /// its page: the line also holds `depth` and `parent` (absent for a
    /// start URL).
    pub async fn record_placed(&mut self, report: &JobReport, place: &Place) -> Result<bool, ArtifactError> {
        self.record_line(report, Some(place)).await
    }

    async fn record_line(
        &mut self,
        report: &JobReport,
        place: Option<&Place>,
    ) -> Result<bool, ArtifactError> {
        if self.seen.contains(&report.job_id) {
            return Ok(false);
        }
        let line = match place {
            None => serde_json::to_vec(report),
            Some(place) => serde_json::to_vec(&PlacedLine { report, place }),
        }
        .expect("reports serialise");
        if self.buffer.is_some() {
            self.buffer_line(&line);
            self.unflushed += 1;
        } else {
            self.store.append(&self.key, Bytes::from(line)).await?;
        }
        self.count(report);
        Ok(true)
    }

    fn buffer_line(&mut self, line: &[u8]) {
        if let Some(buffer) = self.buffer.as_mut() {
            buffer.extend_from_slice(line);
            buffer.push(b'\n');
        }
    }

    fn count(&mut self, report: &JobReport) {
        if !self.seen.insert(report.job_id) {
            return;
        }
        match report.status {
            ReportStatus::Ok => self.summary.ok += 1,
            ReportStatus::Failed => {
                self.summary.failed += 1;
                let kind = report
                    .error
                    .as_ref()
                    .map(|e| e.kind.to_string())
                    .unwrap_or_default();
                *self.summary.failed_by_kind.entry(kind).or_default() += 1;
            }
        }
    }

    /// Writes the buffered manifest when lines were recorded since the
    /// last flush; a no-op in append mode.
    pub async fn flush(&mut self) -> Result<(), ArtifactError> {
        let Some(buffer) = self.buffer.as_ref() else {
            return Ok(());
        };
        if self.unflushed == 0 {
            return Ok(());
        }
        self.store
            .put(&self.key, Bytes::from(buffer.clone()), "application/x-ndjson")
            .await?;
        self.unflushed = 0;
        Ok(())
    }

    /// Returns the lines recorded so far (buffered mode only).
    pub fn lines(&self) -> Option<&[u8]> {
        self.buffer.as_deref()
    }

    /// Returns the counts so far.
    pub fn summary(&self) -> &BatchSummary {
        &self.summary
    }

    /// Counts `n` more jobs in the batch (a crawl grows as it finds pages).
    pub fn grow(&mut self, n: usize) {
        self.summary.total += n;
    }

    /// Says whether every job of the batch has a line.
    pub fn is_complete(&self) -> bool {
        self.seen.len() >= self.summary.total
    }

    /// Returns how many jobs have a line.
    pub fn done(&self) -> usize {
        self.seen.len()
    }

    /// Says whether `id` already has a line.
    pub fn has(&self, id: &JobId) -> bool {
        self.seen.contains(id)
    }

    /// Writes `summary.json` and returns the summary; after a failure it
    /// may be called again.
    pub async fn finish(&mut self, interrupted: bool, elapsed_s: f64) -> Result<BatchSummary, ArtifactError> {
        self.flush().await?;
        self.summary.interrupted = interrupted;
        self.summary.elapsed_s = elapsed_s;
        let body = serde_json::to_vec_pretty(&self.summary).expect("summary serialises");
        self.store
            .put(
                &keys::batch_summary(&self.summary.batch_id),
                Bytes::from(body),
                "application/json",
            )
            .await?;
        Ok(self.summary.clone())
    }
}
