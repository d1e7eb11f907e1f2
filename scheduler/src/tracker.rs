//! Batch progress in the scheduler daemon: every report from the results
//! queue is recorded in its batch's manifest (once per job, whatever the
//! redeliveries), manifests are flushed to the store periodically, and a
//! batch whose every job has a line gets its `summary.json`.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use chrono::Utc;
use oxwright_artifacts::{ArtifactError, ArtifactStore};
use oxwright_jobs::{JobReport, keys};
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
    fn of(summary: &BatchSummary, complete: bool) -> Self {
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
}

/// The batches in progress, loaded from the store on first sight.
#[derive(Debug)]
pub struct BatchTracker {
    store: Arc<dyn ArtifactStore>,
    open: HashMap<String, OpenBatch>,
    finished: HashMap<String, BatchStatus>,
}

impl BatchTracker {
    /// Creates a tracker writing to `store`.
    pub fn new(store: Arc<dyn ArtifactStore>) -> Self {
        Self {
            store,
            open: HashMap::new(),
            finished: HashMap::new(),
        }
    }

    /// Records `report` in its batch's manifest (in memory until
    /// [`Self::flush`]).
    pub async fn record(&mut self, report: &JobReport) -> Result<Recorded, BatchError> {
        let Some(batch_id) = report.batch_id.as_deref() else {
            return Ok(Recorded::NoBatch);
        };
        if self.finished.contains_key(batch_id) {
            return Ok(Recorded::Duplicate);
        }
        if !self.open.contains_key(batch_id) && !self.load(batch_id).await? {
            tracing::warn!(batch_id, job_id = %report.job_id, "report for an unknown batch ignored");
            return Ok(Recorded::NoBatch);
        }
        let batch = self.open.get_mut(batch_id).expect("loaded above");
        Ok(if batch.manifest.record(report).await? {
            Recorded::New
        } else {
            Recorded::Duplicate
        })
    }

    /// Opens `batch_id` from its record and any manifest already stored;
    /// returns false when no record exists.
    async fn load(&mut self, batch_id: &str) -> Result<bool, BatchError> {
        let Some(record) = read_batch_record(self.store.as_ref(), batch_id).await? else {
            return Ok(false);
        };
        let manifest = ManifestWriter::resume(self.store.clone(), batch_id, record.total).await?;
        self.open
            .insert(batch_id.to_owned(), OpenBatch { record, manifest });
        Ok(true)
    }

    /// Writes every manifest with new lines; completes batches whose every
    /// job has a line (writing `summary.json`) and returns their summaries.
    pub async fn flush(&mut self) -> Result<Vec<BatchSummary>, ArtifactError> {
        let mut completed = Vec::new();
        for (id, batch) in &mut self.open {
            batch.manifest.flush().await?;
            if batch.manifest.is_complete() {
                completed.push(id.clone());
            }
        }
        let mut summaries = Vec::new();
        for id in completed {
            let batch = self.open.remove(&id).expect("listed above");
            let elapsed = (Utc::now() - batch.record.created_at).num_milliseconds() as f64 / 1000.0;
            let summary = batch.manifest.finish(false, elapsed.max(0.0)).await?;
            tracing::info!(
                batch_id = %id, total = summary.total, ok = summary.ok, failed = summary.failed,
                "batch complete"
            );
            self.finished.insert(id, BatchStatus::of(&summary, true));
            summaries.push(summary);
        }
        Ok(summaries)
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
            let batch = &self.open[batch_id];
            return Ok(Some(BatchStatus::of(batch.manifest.summary(), false)));
        }
        Ok(None)
    }

    /// Says how many batches are in progress.
    pub fn open_batches(&self) -> usize {
        self.open.len()
    }
}
