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

/// Writes manifest lines as reports arrive and counts them.
#[derive(Debug)]
pub struct ManifestWriter {
    store: Arc<dyn ArtifactStore>,
    key: String,
    seen: HashSet<JobId>,
    summary: BatchSummary,
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
        }
    }

    /// Records `report` unless its job already has a line; returns whether
    /// it was new.
    pub async fn record(&mut self, report: &JobReport) -> Result<bool, ArtifactError> {
        if self.seen.contains(&report.job_id) {
            return Ok(false);
        }
        let mut line = serde_json::to_vec(report).expect("reports serialise");
        line.push(b'\n');
        self.store.append(&self.key, Bytes::from(line)).await?;
        self.seen.insert(report.job_id);
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
        Ok(true)
    }

    /// Returns how many jobs have a line.
    pub fn done(&self) -> usize {
        self.seen.len()
    }

    /// Says whether `id` already has a line.
    pub fn has(&self, id: &JobId) -> bool {
        self.seen.contains(id)
    }

    /// Writes `summary.json` and returns the summary.
    pub async fn finish(mut self, interrupted: bool, elapsed_s: f64) -> Result<BatchSummary, ArtifactError> {
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
        Ok(self.summary)
    }
}
