//! What every route shares: the queue, the store, the batch tracker, the
//! options, the waiting `POST /v1/fetch` requests and the webhooks.

use std::sync::Arc;

use axum::http::StatusCode;
use oxwright_artifacts::ArtifactStore;
use oxwright_jobs::{JobError, JobId, JobReport};
use oxwright_queue::JobQueue;
use tokio::sync::Mutex;

use super::error::ApiError;
use crate::config::SchedulerOptions;
use crate::submit::{SubmitReceipt, submit_batch};
use crate::template::JobTemplate;
use crate::tracker::BatchTracker;

/// The daemon's shared state.
pub(crate) struct AppState {
    pub(crate) queue: Arc<dyn JobQueue>,
    pub(crate) store: Arc<dyn ArtifactStore>,
    pub(crate) tracker: Mutex<BatchTracker>,
    pub(crate) opts: SchedulerOptions,
    /// `POST /v1/fetch` requests waiting for their report.
    pub(crate) waiters: Waiters,
    /// Batch webhook deliveries.
    pub(crate) hooks: crate::hooks::Hooks,
    /// The dashboard's login and CSRF keys.
    pub(crate) ui: super::UiAuth,
    /// The checks and their runs in flight.
    pub(crate) checks: Arc<crate::checks::CheckRunner>,
    /// The batches released host by host.
    pub(crate) gate: Arc<crate::batch::Gate>,
    /// The crawls running here.
    pub(crate) crawls: Arc<crate::crawl::LiveCrawls>,
}

impl AppState {
    /// The batches this daemon sees, through its tracker or, when it only
    /// views, in the store.
    pub(crate) fn batches(&self) -> crate::batch::Batches<'_> {
        crate::batch::Batches {
            store: &self.store,
            tracker: &self.tracker,
            growing: self.crawls.as_ref(),
            view_only: self.opts.api.view_only,
        }
    }

    /// Submits `template` as batch `batch_id`; errors are typed job errors.
    pub(crate) async fn submit_template(
        &self,
        batch_id: &str,
        template: &JobTemplate,
        source: &str,
    ) -> Result<SubmitReceipt, JobError> {
        crate::template::submit_template(
            self.queue.as_ref(),
            self.store.as_ref(),
            &self.opts.policy,
            batch_id,
            template,
            source,
        )
        .await
    }

    /// Cancels batch `id`: jobs not yet started are skipped, and those
    /// the gate still holds are published at once, for workers to skip.
    pub(crate) async fn cancel_batch(&self, id: &str) -> Result<(), crate::batch::BatchFault> {
        self.batches().cancel(id).await?;
        for job in self.gate.cancel(id) {
            crate::submit::publish_job(self.queue.as_ref(), &job)
                .await
                .map_err(|e| crate::batch::BatchFault::Unavailable(e.to_string()))?;
        }
        Ok(())
    }

    /// Submits `job` as the one job of batch `batch_id`.
    pub(crate) async fn submit_one(
        &self,
        batch_id: &str,
        job: oxwright_jobs::Job,
        source: &str,
    ) -> Result<(), ApiError> {
        submit_batch(
            self.queue.as_ref(),
            self.store.as_ref(),
            batch_id,
            vec![job],
            Vec::new(),
            source,
        )
        .await
        .map(|_| ())
        .map_err(|e| ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "unavailable", e.to_string()))
    }
}

/// The `POST /v1/fetch` requests waiting for their job's report.
#[derive(Debug, Default)]
pub(crate) struct Waiters(
    std::sync::Mutex<std::collections::HashMap<JobId, tokio::sync::oneshot::Sender<JobReport>>>,
);

impl Waiters {
    pub(crate) fn wait_for(&self, job_id: JobId) -> tokio::sync::oneshot::Receiver<JobReport> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.0.lock().expect("waiters lock").insert(job_id, tx);
        rx
    }

    pub(crate) fn forget(&self, job_id: JobId) {
        self.0.lock().expect("waiters lock").remove(&job_id);
    }

    /// Hands `report` to the request waiting for it, if any.
    pub(crate) fn notify(&self, report: &JobReport) {
        if let Some(tx) = self.0.lock().expect("waiters lock").remove(&report.job_id) {
            let _ = tx.send(report.clone());
        }
    }
}
