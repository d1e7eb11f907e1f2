//! Batch progress in the scheduler daemon: every report from the results
//! queue is recorded in its batch's manifest (once per job, whatever the
//! redeliveries), manifests are flushed to the store periodically, and a
//! batch whose every job has a line gets its `summary.json`.
//!
//! A report leaves the results queue only once the manifest holding its
//! line is in the store: [`BatchTracker::hold`] keeps its ack until the
//! flush that wrote it. A scheduler killed between a report and the next
//! flush loses nothing: the broker hands the unacked reports to the next
//! scheduler, which resumes the stored manifest and records them.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;

use chrono::Utc;
use oxwright_artifacts::{ArtifactError, ArtifactStore};
use oxwright_jobs::{JobReport, keys};
use oxwright_queue::ReportAck;
use serde::{Deserialize, Serialize};

use crate::batch::{BatchError, BatchSummary, ManifestWriter};
use crate::submit::{BatchRecord, read_batch_record};

/// A batch's progress as the API reports it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BatchStatus {
    /// The batch id.
    pub batch_id: String,
    /// Manifest lines expected.
    pub total: usize,
    /// Lines written so far.
    pub done: usize,
    /// Jobs that produced their result.
    pub ok: usize,
    /// Jobs that failed for good.
    pub failed: usize,
    /// Failures by error kind.
    pub failed_by_kind: BTreeMap<String, usize>,
    /// Whether every job has its line (and `summary.json` is written).
    pub complete: bool,
    /// Where the manifest is.
    pub manifest: String,
}

impl BatchStatus {
    pub(crate) fn of(summary: &BatchSummary, complete: bool) -> Self {
        Self {
            batch_id: summary.batch_id.clone(),
            total: summary.total,
            done: summary.ok + summary.failed,
            ok: summary.ok,
            failed: summary.failed,
            failed_by_kind: summary.failed_by_kind.clone(),
            complete,
            manifest: summary.manifest.clone(),
        }
    }
}

/// What happened to one report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recorded {
    /// A new manifest line.
    New,
    /// The job already had its line (a redelivery); nothing written.
    Duplicate,
    /// The report names no batch, or one this deployment never submitted.
    NoBatch,
}

#[derive(Debug)]
struct OpenBatch {
    record: BatchRecord,
    manifest: ManifestWriter,
    /// Acks of the reports recorded since the last flush, sent once the
    /// manifest holding their lines is written.
    held: Vec<ReportAck>,
}

/// The batches in progress, loaded from the store on first sight.
#[derive(Debug)]
pub struct BatchTracker {
    store: Arc<dyn ArtifactStore>,
    open: HashMap<String, OpenBatch>,
    finished: HashMap<String, BatchStatus>,
    /// Reports whose batch could not be loaded (the store failed), kept
    /// unacked and recorded again at the next flush.
    unrecorded: VecDeque<(JobReport, ReportAck)>,
}

impl BatchTracker {
    /// Creates a tracker writing to `store`.
    pub fn new(store: Arc<dyn ArtifactStore>) -> Self {
        Self {
            store,
            open: HashMap::new(),
            finished: HashMap::new(),
            unrecorded: VecDeque::new(),
        }
    }

    /// Records `report` in its batch's manifest (in memory until
    /// [`Self::flush`]); the caller has taken it off the queue already.
    pub async fn record(&mut self, report: &JobReport) -> Result<Recorded, BatchError> {
        self.record_with(report, None).await.map_err(|(err, _)| err)
    }

    /// Records `report` like [`Self::record`] and holds `ack` until the
    /// flush that writes the manifest with its line (a report that adds no
    /// line is acked with the lines it duplicates, or at once when there is
    /// nothing to write). When the batch cannot be loaded because the store
    /// failed, the report is kept, unacked, and recorded at the next
    /// [`Self::flush`]; the error is returned for the log.
    pub async fn hold(&mut self, report: JobReport, ack: ReportAck) -> Result<Recorded, BatchError> {
        match self.record_with(&report, Some(ack)).await {
            Ok(recorded) => Ok(recorded),
            Err((err, ack)) => {
                if let Some(ack) = ack {
                    self.unrecorded.push_back((report, ack));
                }
                Err(err)
            }
        }
    }

    /// Says how many reports are held unacked: recorded but not yet
    /// written, or waiting to be recorded.
    pub fn held(&self) -> usize {
        self.unrecorded.len() + self.open.values().map(|b| b.held.len()).sum::<usize>()
    }

    async fn record_with(
        &mut self,
        report: &JobReport,
        ack: Option<ReportAck>,
    ) -> Result<Recorded, (BatchError, Option<ReportAck>)> {
        let Some(batch_id) = report.batch_id.as_deref() else {
            ack_now(ack).await;
            return Ok(Recorded::NoBatch);
        };
        if self.finished.contains_key(batch_id) {
            ack_now(ack).await;
            return Ok(Recorded::Duplicate);
        }
        if !self.open.contains_key(batch_id) {
            match self.load(batch_id).await {
                Ok(true) => {}
                Ok(false) => {
                    // Never dropped: kept where whoever looks for it can find it.
                    let key = keys::orphan_report(batch_id, report.job_id);
                    let body = serde_json::to_vec_pretty(report).expect("reports serialise");
                    if let Err(err) = self
                        .store
                        .put(&key, bytes::Bytes::from(body), "application/json")
                        .await
                    {
                        return Err((err.into(), ack));
                    }
                    tracing::warn!(
                        batch_id,
                        job_id = %report.job_id,
                        store = %self.store.describe(),
                        kept = %key,
                        "report for a batch this scheduler's store has no record of: kept under orphans/; \
                         is its submitter writing to another store?"
                    );
                    ack_now(ack).await;
                    return Ok(Recorded::NoBatch);
                }
                Err(err) => return Err((err, ack)),
            }
            if self.finished.contains_key(batch_id) {
                ack_now(ack).await;
                return Ok(Recorded::Duplicate);
            }
        }
        let batch = self.open.get_mut(batch_id).expect("loaded above");
        let recorded = match batch.manifest.record(report).await {
            Ok(true) => Recorded::New,
            Ok(false) => Recorded::Duplicate,
            Err(err) => return Err((err.into(), ack)),
        };
        // A duplicate's line may not be written yet either: its ack waits
        // for the same flush.
        batch.held.extend(ack);
        Ok(recorded)
    }

    /// Opens `batch_id` from its record and any manifest already stored,
    /// or counts it finished when its summary is stored; returns false
    /// when no record exists.
    async fn load(&mut self, batch_id: &str) -> Result<bool, BatchError> {
        // A batch whose summary is stored is complete: a late report (a
        // redelivery, a crawl's page that ended after the crawl) changes
        // nothing of it.
        match self.store.get(&keys::batch_summary(batch_id)).await {
            Ok(body) => {
                if let Ok(summary) = serde_json::from_slice::<BatchSummary>(&body) {
                    self.finished
                        .insert(batch_id.to_owned(), BatchStatus::of(&summary, true));
                    return Ok(true);
                }
            }
            Err(ArtifactError::NotFound { .. }) => {}
            Err(err) => return Err(err.into()),
        }
        let Some(record) = read_batch_record(self.store.as_ref(), batch_id).await? else {
            return Ok(false);
        };
        let manifest = ManifestWriter::resume(self.store.clone(), batch_id, record.total).await?;
        self.open.insert(
            batch_id.to_owned(),
            OpenBatch {
                record,
                manifest,
                held: Vec::new(),
            },
        );
        Ok(true)
    }

    /// Records the reports kept by [`Self::hold`] while the store failed,
    /// writes every manifest with new lines and acks the reports those
    /// lines came from; completes batches whose every job has a line
    /// (writing `summary.json`) and returns their summaries. A failed
    /// write leaves its batch's lines and acks for the next flush, and the
    /// other batches are still written; the first error is returned.
    pub async fn flush(&mut self) -> Result<Vec<BatchSummary>, ArtifactError> {
        let mut first_error: Option<ArtifactError> = None;
        let mut keep = |err: ArtifactError| {
            tracing::debug!(error = %err, "manifest write failed");
            first_error.get_or_insert(err);
        };
        for _ in 0..self.unrecorded.len() {
            let Some((report, ack)) = self.unrecorded.pop_front() else {
                break;
            };
            if let Err((err, ack)) = self.record_with(&report, Some(ack)).await {
                if let Some(ack) = ack {
                    self.unrecorded.push_back((report, ack));
                }
                if let BatchError::Store(err) = err {
                    keep(err);
                }
            }
        }
        let mut completed = Vec::new();
        for (id, batch) in &mut self.open {
            match batch.manifest.flush().await {
                Ok(()) => ack_all(std::mem::take(&mut batch.held)).await,
                Err(err) => {
                    keep(err);
                    continue;
                }
            }
            if batch.manifest.is_complete() {
                completed.push(id.clone());
            }
        }
        let mut summaries = Vec::new();
        for id in completed {
            let batch = self.open.get_mut(&id).expect("listed above");
            let elapsed = (Utc::now() - batch.record.created_at).num_milliseconds() as f64 / 1000.0;
            // A summary that cannot be written is tried again at the next flush.
            let summary = match batch.manifest.finish(false, elapsed.max(0.0)).await {
                Ok(summary) => summary,
                Err(err) => {
                    keep(err);
                    continue;
                }
            };
            let batch = self.open.remove(&id).expect("listed above");
            ack_all(batch.held).await;
            tracing::info!(
                batch_id = %id, total = summary.total, ok = summary.ok, failed = summary.failed,
                "batch complete"
            );
            self.finished.insert(id, BatchStatus::of(&summary, true));
            summaries.push(summary);
        }
        match first_error {
            Some(err) => Err(err),
            None => Ok(summaries),
        }
    }

    /// Returns the progress of `batch_id`, loading it from the store when
    /// this scheduler has not seen it; `None` for an unknown batch.
    pub async fn status(&mut self, batch_id: &str) -> Result<Option<BatchStatus>, BatchError> {
        if let Some(done) = self.finished.get(batch_id) {
            return Ok(Some(done.clone()));
        }
        if let Some(batch) = self.open.get(batch_id) {
            return Ok(Some(BatchStatus::of(batch.manifest.summary(), false)));
        }
        // A batch completed by an earlier scheduler has its summary stored.
        match self.store.get(&keys::batch_summary(batch_id)).await {
            Ok(body) => {
                if let Ok(summary) = serde_json::from_slice::<BatchSummary>(&body) {
                    return Ok(Some(BatchStatus::of(&summary, true)));
                }
            }
            Err(ArtifactError::NotFound { .. }) => {}
            Err(err) => return Err(err.into()),
        }
        if self.load(batch_id).await? {
            if let Some(done) = self.finished.get(batch_id) {
                return Ok(Some(done.clone()));
            }
            let batch = &self.open[batch_id];
            return Ok(Some(BatchStatus::of(batch.manifest.summary(), false)));
        }
        Ok(None)
    }

    /// Returns the manifest lines of a batch in progress (written or not).
    pub fn manifest_lines(&self, batch_id: &str) -> Option<Vec<u8>> {
        self.open.get(batch_id)?.manifest.lines().map(<[u8]>::to_vec)
    }

    /// Returns the record of a batch in progress.
    pub fn record_of(&self, batch_id: &str) -> Option<&BatchRecord> {
        self.open.get(batch_id).map(|b| &b.record)
    }

    /// Says how many batches are in progress.
    pub fn open_batches(&self) -> usize {
        self.open.len()
    }
}

/// Acks a report that needs no manifest write.
async fn ack_now(ack: Option<ReportAck>) {
    if let Some(ack) = ack {
        ack_all(vec![ack]).await;
    }
}

/// Acks reports whose lines are written. A failed ack means the
/// subscription that handed them out is gone: the broker hands them out
/// again and they are recorded as duplicates.
async fn ack_all(acks: Vec<ReportAck>) {
    for ack in acks {
        if let Err(err) = ack.ack().await {
            tracing::debug!(error = %err, "report ack failed; it comes back as a duplicate");
        }
    }
}
