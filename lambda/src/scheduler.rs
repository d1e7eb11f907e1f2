//! The scheduler function: an EventBridge schedule invokes it, and it
//! submits its configured job template as a new batch through the same
//! code as a schedule tick of `oxwright scheduler` and `oxwright submit`
//! (batch record in the store, publishes confirmed by the broker, one
//! `traceparent` per job).

use std::sync::Arc;

use oxwright_artifacts::ArtifactStore;
use oxwright_config::{Setup, UsageError};
use oxwright_jobs::{ErrorKind, JobError};
use oxwright_queue::AmqpQueue;
use oxwright_scheduler::JobTemplate;
use serde_json::Value;

use crate::FunctionError;

/// `OXWRIGHT_SCHEDULE_JOB`: the job template (JSON, as a schedule's `job`).
pub const SCHEDULE_JOB: &str = "OXWRIGHT_SCHEDULE_JOB";
/// `OXWRIGHT_SCHEDULE_NAME`: the schedule's name; batch ids start with it.
pub const SCHEDULE_NAME: &str = "OXWRIGHT_SCHEDULE_NAME";

/// The scheduler function's state.
#[derive(Debug)]
pub struct LambdaScheduler {
    setup: Setup,
    name: String,
    template: JobTemplate,
    store: Arc<dyn ArtifactStore>,
    queue: AmqpQueue,
}

impl LambdaScheduler {
    /// Reads the template and name from the setup's environment, opens
    /// the store and connects to the broker (required).
    pub async fn new(setup: Setup) -> anyhow::Result<Self> {
        let raw = setup.env.get(SCHEDULE_JOB).ok_or_else(|| {
            UsageError::from_any(format!("{SCHEDULE_JOB} is not set: the job template to submit"))
        })?;
        let template: JobTemplate =
            serde_json::from_str(raw).map_err(|e| UsageError::from_any(format!("{SCHEDULE_JOB}: {e}")))?;
        let name = setup
            .env
            .get(SCHEDULE_NAME)
            .map(|n| n.trim().to_owned())
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| "lambda".to_owned());
        let store = setup.store().await?;
        let queue = setup.queue().await?;
        Ok(Self {
            setup,
            name,
            template,
            store,
            queue,
        })
    }

    /// Submits the template as a new batch; `event` (an EventBridge
    /// scheduled event, or anything an EventBridge Scheduler sends) only
    /// names the tick in the log.
    #[tracing::instrument(skip_all, fields(schedule = %self.name))]
    pub async fn handle(&self, event: Value) -> Result<Value, FunctionError> {
        let tick = event.get("id").and_then(Value::as_str).unwrap_or("").to_owned();
        let batch_id = format!("{}-{}", self.name, oxwright_scheduler::new_batch_id());
        let source = format!("schedule:{}", self.name);
        let receipt = oxwright_scheduler::submit_template(
            &self.queue,
            self.store.as_ref(),
            &self.setup.policy,
            &batch_id,
            &self.template,
            &source,
        )
        .await
        .map_err(|error| FunctionError::Job {
            job_id: batch_id.clone(),
            error: Box::new(error),
        })?;
        tracing::info!(%tick, batch_id = %receipt.batch_id, jobs = receipt.published, "schedule fired");
        serde_json::to_value(receipt).map_err(|e| FunctionError::Job {
            job_id: batch_id,
            error: Box::new(JobError::new(ErrorKind::Internal, e.to_string())),
        })
    }

    /// Closes the broker connection.
    pub async fn shutdown(&self) {
        self.queue.close().await;
    }
}
