//! What the HTTP API and the dashboard read of a batch and do to it: its
//! progress, its manifest and its cancellation. A daemon that tracks
//! batches answers from its tracker (lines not yet written included); one
//! that only views them (it gets no reports) answers from the store.

use std::sync::Arc;

use bytes::Bytes;
use oxwright_artifacts::{ArtifactError, ArtifactStore};
use oxwright_jobs::keys;
use serde::{Deserialize, Serialize};
use tokio::sync::Mutex;

use super::{BatchSummary, ManifestWriter};
use crate::submit::{BatchRecord, read_batch_record};
use crate::tracker::{BatchStatus, BatchTracker};

/// Why a batch could not be read or acted on.
#[derive(Debug, thiserror::Error)]
pub enum BatchFault {
    /// The id cannot name a batch.
    #[error("bad batch id")]
    BadId,
    /// No batch has this id.
    #[error("no batch {0}")]
    Unknown(String),
    /// The batch is complete: nothing is left to cancel.
    #[error("batch {0} is complete: nothing to cancel")]
    Complete(String),
    /// The store or the tracker failed.
    #[error("{0}")]
    Unavailable(String),
}

impl From<ArtifactError> for BatchFault {
    fn from(err: ArtifactError) -> Self {
        Self::Unavailable(err.to_string())
    }
}

impl From<super::BatchError> for BatchFault {
    fn from(err: super::BatchError) -> Self {
        Self::Unavailable(err.to_string())
    }
}

/// Refuses an id that cannot name a batch's folder.
pub fn check_batch_id(id: &str) -> Result<(), BatchFault> {
    if oxwright_artifacts::validate_key(&keys::batch_record(id)).is_err() || id.contains('/') {
        return Err(BatchFault::BadId);
    }
    Ok(())
}

/// Batches that grow while they run (crawls): their runner, not the
/// tracker, knows their progress, and cancelling one also stops it.
pub trait Growing: Send + Sync {
    /// The progress of batch `id` when it is one still growing here.
    fn status(&self, id: &str) -> Option<BatchStatus>;
    /// Stops batch `id` growing; says whether it was one.
    fn stop(&self, id: &str) -> bool;
}

/// The batches one daemon can see: through its tracker, or only in the
/// store when `view_only`.
pub struct Batches<'a> {
    /// Where batches are kept.
    pub store: &'a Arc<dyn ArtifactStore>,
    /// The daemon's tracker of batches in progress.
    pub tracker: &'a Mutex<BatchTracker>,
    /// The batches still growing here.
    pub growing: &'a dyn Growing,
    /// The daemon gets no reports: the store is all it knows.
    pub view_only: bool,
}

/// What cancelling a batch writes.
#[derive(Debug, Serialize, Deserialize)]
struct Cancelled {
    batch_id: String,
    cancelled_at: chrono::DateTime<chrono::Utc>,
}

impl Batches<'_> {
    /// The written manifest of batch `id`; empty before its first flush.
    pub async fn stored_manifest(&self, id: &str) -> Result<Vec<u8>, BatchFault> {
        match self.store.get(&keys::batch_manifest(id)).await {
            Ok(body) => Ok(body.to_vec()),
            Err(ArtifactError::NotFound { .. }) => Ok(Vec::new()),
            Err(err) => Err(err.into()),
        }
    }

    /// The manifest of batch `id` as the tracker holds it (lines not yet
    /// written included), or as written.
    pub async fn manifest(&self, id: &str) -> Result<Vec<u8>, BatchFault> {
        if self.view_only || self.growing.status(id).is_some() {
            return self.stored_manifest(id).await;
        }
        let held = self.tracker.lock().await.manifest_lines(id);
        match held {
            Some(lines) => Ok(lines),
            None => self.stored_manifest(id).await,
        }
    }

    /// The progress of batch `id`: the tracker's, or, on a daemon that
    /// only views, the store's: its summary, or its manifest counted as
    /// the batch's runner has written it so far. `record` is the batch's
    /// record when the caller has read it; `None` for an unknown batch.
    pub async fn status(
        &self,
        id: &str,
        record: Option<&BatchRecord>,
    ) -> Result<Option<BatchStatus>, BatchFault> {
        if let Some(status) = self.growing.status(id) {
            return Ok(Some(status));
        }
        if !self.view_only {
            return Ok(self.tracker.lock().await.status(id).await?);
        }
        match self.store.get(&keys::batch_summary(id)).await {
            Ok(body) => {
                if let Ok(summary) = serde_json::from_slice::<BatchSummary>(&body) {
                    return Ok(Some(BatchStatus::of(&summary, true)));
                }
            }
            Err(ArtifactError::NotFound { .. }) => {}
            Err(err) => return Err(err.into()),
        }
        let read;
        let record = match record {
            Some(record) => record,
            None => {
                read = read_batch_record(self.store.as_ref(), id).await?;
                let Some(record) = read.as_ref() else {
                    return Ok(None);
                };
                record
            }
        };
        let manifest = ManifestWriter::resume(self.store.clone(), id, record.total).await?;
        Ok(Some(BatchStatus::of(manifest.summary(), false)))
    }

    /// Whether batch `id` was cancelled.
    pub async fn is_cancelled(&self, id: &str) -> Result<bool, BatchFault> {
        Ok(self.store.exists(&keys::batch_cancelled(id)).await?)
    }

    /// Cancels batch `id`: its jobs not yet started are skipped, running
    /// ones finish.
    pub async fn cancel(&self, id: &str) -> Result<(), BatchFault> {
        check_batch_id(id)?;
        let status = match self.growing.status(id) {
            Some(status) => Some(status),
            None => self.tracker.lock().await.status(id).await?,
        };
        let Some(status) = status else {
            return Err(BatchFault::Unknown(id.to_owned()));
        };
        if status.complete {
            return Err(BatchFault::Complete(id.to_owned()));
        }
        mark_cancelled(self.store.as_ref(), id).await?;
        self.growing.stop(id);
        tracing::info!(batch_id = %id, "batch cancelled: its jobs not yet started are skipped");
        Ok(())
    }
}

/// Marks batch `id` cancelled: workers skip its jobs not yet started.
pub async fn mark_cancelled(store: &dyn ArtifactStore, id: &str) -> Result<(), ArtifactError> {
    let marker = Cancelled {
        batch_id: id.to_owned(),
        cancelled_at: chrono::Utc::now(),
    };
    let body = serde_json::to_vec_pretty(&marker).expect("markers serialise");
    store
        .put(&keys::batch_cancelled(id), Bytes::from(body), "application/json")
        .await
}
