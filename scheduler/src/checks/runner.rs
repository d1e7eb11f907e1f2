//! Runs checks in the fleet: a trigger (a schedule's tick, the API, a
//! deploy webhook) publishes the check's workflow as an ordinary job; the
//! job's report comes back through the daemon's report loop, a failed
//! attempt is published again as a new session while the check's
//! `retries` allow, and the last attempt's report closes the run: its
//! record is appended to the run log, its state folded in, and an alert
//! the change raises written to the outbox before the state, then sent.
//!
//! A run in flight is kept in the store (`checks/<name>/inflight.json`),
//! so a restarted daemon takes up the reports of the runs it published
//! before, and a check never runs twice at once: a tick that finds its
//! last run still going is skipped and counted in the check's state.
//!
//! Schedulers sharing a store (a daemon, the functions) agree through
//! conditional writes: a run in flight is created only where none is,
//! and a state is written only over the version it was folded from; a
//! scheduler that loses reads again and folds again.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use chrono::{DateTime, Utc};
use oxwright_artifacts::{ArtifactError, ArtifactStore, Expect};
use oxwright_checks::{AttemptOutcome, Check, CheckRun, RunContext, Trigger, run_key};
use oxwright_jobs::{Job, JobError, JobId, JobKind, JobReport, JobSpec, ReportStatus, WorkflowResult, keys};
use oxwright_queue::JobQueue;
use serde::{Deserialize, Serialize};
use tokio::sync::{Mutex, oneshot};

use super::outbox::Outbox;

mod stored_state;

/// A run in flight, as `checks/<name>/inflight.json` keeps it.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct InFlight {
    check: String,
    run_id: String,
    /// The job of the attempt in flight.
    job_id: JobId,
    trigger: Trigger,
    #[serde(default)]
    metadata: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    url_override: Option<url::Url>,
    started_at: DateTime<Utc>,
    /// The attempts that ended (failed), in order.
    #[serde(default)]
    ended: Vec<EndedAttempt>,
}

/// An attempt that ended, enough to rebuild its outcome.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct EndedAttempt {
    session_id: String,
    duration_ms: u64,
    job_id: JobId,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error: Option<JobError>,
}

/// How long past the last attempt's deadline a run waits for its report
/// before [`CheckRunner`] closes it as failed.
const OVERDUE_GRACE: Duration = Duration::from_secs(5 * 60);

fn inflight_key(check: &str) -> String {
    format!("checks/{check}/inflight.json")
}

/// Why a check could not be started.
#[derive(Debug, thiserror::Error)]
pub enum TriggerError {
    /// No check has this name.
    #[error("no check is named {0:?}")]
    Unknown(String),
    /// Its last run is still going.
    #[error("check {0:?} is still running")]
    Running(String),
    /// The queue or the store failed.
    #[error("{0}")]
    Failed(String),
}

/// A run started: its id, and when asked for, the way to wait for its record.
#[derive(Debug)]
pub struct Started {
    /// The run.
    pub run_id: String,
    /// The job of its first attempt.
    pub job_id: JobId,
    /// Resolves with the run's record when it ends.
    pub done: Option<oneshot::Receiver<CheckRun>>,
}

/// The checks a daemon runs, and their runs in flight.
pub struct CheckRunner {
    checks: BTreeMap<String, Check>,
    store: Arc<dyn ArtifactStore>,
    queue: Arc<dyn JobQueue>,
    outbox: Outbox,
    inflight: Mutex<HashMap<String, InFlight>>,
    waiters: Mutex<HashMap<String, Vec<oneshot::Sender<CheckRun>>>>,
    overdue_grace: Duration,
    /// Sealed login states by check name.
    states: BTreeMap<String, String>,
    /// Whether a run's alert is delivered before the run's record is
    /// handed back (a function that may be frozen once it answers),
    /// rather than in a task of its own.
    alerts_inline: bool,
}

impl std::fmt::Debug for CheckRunner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CheckRunner")
            .field("checks", &self.checks.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl CheckRunner {
    /// A runner of `checks`, publishing to `queue` and keeping state in
    /// `store`; alerts are signed with `secret`.
    pub fn new(
        checks: Vec<Check>,
        store: Arc<dyn ArtifactStore>,
        queue: Arc<dyn JobQueue>,
        secret: Option<String>,
    ) -> Self {
        Self {
            checks: checks.into_iter().map(|c| (c.name.clone(), c)).collect(),
            outbox: Outbox::new(store.clone(), secret),
            store,
            queue,
            inflight: Mutex::new(HashMap::new()),
            waiters: Mutex::new(HashMap::new()),
            overdue_grace: OVERDUE_GRACE,
            states: BTreeMap::new(),
            alerts_inline: false,
        }
    }

    /// Delivers each run's alert before the run's record is handed back,
    /// for a caller that may be frozen as soon as it answers (a Lambda
    /// function); left undelivered, it stays in the outbox.
    pub fn with_inline_alerts(mut self) -> Self {
        self.alerts_inline = true;
        self
    }

    /// Gives the sealed login states of the checks that start from one
    /// (by check name); each run's job carries its check's.
    pub fn with_states(mut self, states: BTreeMap<String, String>) -> Self {
        self.states = states;
        self
    }

    /// The checks, by name.
    pub fn checks(&self) -> &BTreeMap<String, Check> {
        &self.checks
    }

    /// Takes up the runs a previous daemon left in flight and delivers
    /// the alerts it left in the outbox.
    pub async fn recover(&self) {
        self.take_up_runs().await;
        self.outbox.sweep().await;
    }

    /// Takes up the runs left in flight in the store by a previous daemon
    /// (or by another function still running them), so a check is not
    /// started twice at once.
    pub async fn take_up_runs(&self) {
        for name in self.checks.keys() {
            if let Ok(Some(run)) = self.stored_inflight(name).await {
                tracing::info!(check = %name, run_id = %run.run_id, "run in flight taken up");
                self.inflight.lock().await.insert(name.to_owned(), run);
            }
        }
    }

    /// The run of `name` the store has in flight, if it has one; an
    /// unreadable one is an error (and left alone).
    async fn stored_inflight(&self, name: &str) -> Result<Option<InFlight>, ArtifactError> {
        let read = match self.store.get(&inflight_key(name)).await {
            Ok(bytes) => serde_json::from_slice::<InFlight>(&bytes)
                .map(Some)
                .map_err(|err| ArtifactError::Backend {
                    key: inflight_key(name),
                    message: format!("unreadable run in flight: {err}"),
                    retryable: false,
                    source: None,
                }),
            Err(ArtifactError::NotFound { .. }) => Ok(None),
            Err(err) => Err(err),
        };
        if let Err(err) = &read {
            tracing::warn!(check = %name, error = %err, "run in flight not read");
        }
        read
    }

    /// Forgets `name`'s run in flight when the store says it ended: another
    /// scheduler sharing the store took its report and closed it.
    async fn forget_if_closed_elsewhere(&self, name: &str) {
        let mut inflight = self.inflight.lock().await;
        let Some(run) = inflight.get(name) else {
            return;
        };
        if let Ok(stored) = self.stored_inflight(name).await
            && stored.is_none_or(|stored| stored.run_id != run.run_id)
        {
            tracing::info!(check = %name, run_id = %run.run_id, "run closed by another scheduler forgotten");
            inflight.remove(name);
        }
    }

    /// Starts a run of `name` now, unless its last run is still going.
    pub async fn trigger(
        &self,
        name: &str,
        trigger: Trigger,
        url_override: Option<url::Url>,
        metadata: BTreeMap<String, String>,
        wait: bool,
    ) -> Result<Started, TriggerError> {
        let check = self
            .checks
            .get(name)
            .ok_or_else(|| TriggerError::Unknown(name.to_string()))?;
        self.forget_if_closed_elsewhere(name).await;
        self.abandon_if_overdue(check).await;
        let mut inflight = self.inflight.lock().await;
        if inflight.contains_key(name) {
            drop(inflight);
            self.count_skipped(name).await;
            return Err(TriggerError::Running(name.to_string()));
        }
        let run_id = uuid::Uuid::now_v7().to_string();
        let mut run = InFlight {
            check: name.to_string(),
            run_id: run_id.clone(),
            job_id: JobId::new(),
            trigger,
            metadata,
            url_override,
            started_at: Utc::now(),
            ended: Vec::new(),
        };
        let job = self.attempt_job(check, &run);
        run.job_id = job.id;
        let body = serde_json::to_vec(&run).expect("runs serialise");
        match self
            .store
            .put_if(
                &inflight_key(name),
                Bytes::from(body),
                "application/json",
                &Expect::Absent,
            )
            .await
        {
            Ok(_) => {}
            Err(ArtifactError::Conflict { .. }) => {
                // Another scheduler started a run meanwhile: it is in flight
                // here too, so it is closed if its report never comes.
                if let Ok(Some(theirs)) = self.stored_inflight(name).await {
                    tracing::info!(check = %name, run_id = %theirs.run_id, "run started by another scheduler taken up");
                    inflight.insert(name.to_owned(), theirs);
                }
                drop(inflight);
                self.count_skipped(name).await;
                return Err(TriggerError::Running(name.to_string()));
            }
            Err(err) => return Err(TriggerError::Failed(err.to_string())),
        }
        crate::submit::publish_job(self.queue.as_ref(), &job)
            .await
            .map_err(|e| TriggerError::Failed(e.to_string()))?;
        let done = if wait {
            let (tx, rx) = oneshot::channel();
            self.waiters
                .lock()
                .await
                .entry(run_id.clone())
                .or_default()
                .push(tx);
            Some(rx)
        } else {
            None
        };
        tracing::info!(check = %name, %run_id, job_id = %job.id, ?trigger, "check run started");
        let job_id = job.id;
        inflight.insert(name.to_string(), run);
        Ok(Started { run_id, job_id, done })
    }

    /// Closes `check`'s run in flight as failed when no report came back
    /// long after every attempt's deadline (its job lost with a worker or
    /// a purged queue), so the check runs again instead of being skipped
    /// for ever.
    async fn abandon_if_overdue(&self, check: &Check) {
        let mut inflight = self.inflight.lock().await;
        let Some(run) = inflight.get(&check.name) else {
            return;
        };
        let attempts = check.retries.saturating_add(1);
        let mut longest = check.timeout.saturating_mul(attempts) + self.overdue_grace;
        for retry in 1..attempts {
            longest += check.retry_wait(retry);
        }
        let overdue = chrono::Duration::from_std(longest)
            .ok()
            .and_then(|d| run.started_at.checked_add_signed(d))
            .is_some_and(|at| at < Utc::now());
        if !overdue {
            return;
        }
        let mut run = inflight.remove(&check.name).expect("found above");
        drop(inflight);
        let message = format!(
            "no report of attempt {} came back within {} of the run's start; the run is closed as failed",
            run.ended.len() + 1,
            humantime::format_duration(longest)
        );
        tracing::warn!(check = %check.name, run_id = %run.run_id, "{message}");
        run.ended.push(EndedAttempt {
            session_id: format!("check-{}-{}-{}", check.name, run.run_id, run.ended.len() + 1),
            duration_ms: 0,
            job_id: run.job_id,
            error: Some(JobError::new(oxwright_jobs::ErrorKind::Timeout, message)),
        });
        let record = self.close(check, run).await;
        self.wake(record).await;
    }

    async fn wake(&self, record: CheckRun) {
        if let Some(waiters) = self.waiters.lock().await.remove(&record.run_id) {
            for waiter in waiters {
                let _ = waiter.send(record.clone());
            }
        }
    }

    /// The job of `run`'s next attempt: the check's workflow in a session
    /// of its own, due within the check's timeout.
    fn attempt_job(&self, check: &Check, run: &InFlight) -> Job {
        let mut spec = check.workflow_spec(run.url_override.as_ref());
        let attempt = run.ended.len() + 1;
        spec.session_id = Some(format!("check-{}-{}-{attempt}", check.name, run.run_id));
        spec.sealed_storage_state = self.states.get(&check.name).cloned();
        let mut job = Job::new(JobSpec::Workflow(Box::new(spec)), None);
        job.deadline = chrono::Duration::from_std(check.timeout)
            .ok()
            .and_then(|d| Utc::now().checked_add_signed(d));
        job
    }

    async fn put_inflight(&self, run: &InFlight) -> Result<(), ArtifactError> {
        let body = serde_json::to_vec(run).expect("runs serialise");
        self.store
            .put(&inflight_key(&run.check), Bytes::from(body), "application/json")
            .await
    }

    /// Takes `report` when it is of a check's run in flight; says whether
    /// it was. Returns once everything the report decides is stored, so
    /// the caller acks it then.
    pub async fn take(&self, report: &JobReport) -> bool {
        if report.kind != JobKind::Workflow || report.batch_id.is_some() {
            return false;
        }
        let mut inflight = self.inflight.lock().await;
        let Some(name) = inflight
            .iter()
            .find(|(_, run)| run.job_id == report.job_id)
            .map(|(name, _)| name.clone())
        else {
            return false;
        };
        let Some(check) = self.checks.get(&name) else {
            return false;
        };
        let run = inflight.get_mut(&name).expect("found above");
        let ended = EndedAttempt {
            session_id: format!("check-{}-{}-{}", name, run.run_id, run.ended.len() + 1),
            duration_ms: report.duration_ms as u64,
            job_id: report.job_id,
            error: report.error.clone(),
        };
        let failed = report.status != ReportStatus::Ok;
        run.ended.push(ended);
        let retries_used = u32::try_from(run.ended.len() - 1).unwrap_or(u32::MAX);
        if failed && check.may_retry() && retries_used < check.retries {
            let wait = check.retry_wait(retries_used + 1);
            let job = self.attempt_job(check, run);
            run.job_id = job.id;
            if let Err(err) = self.put_inflight(run).await {
                tracing::warn!(check = %name, error = %err, "retry not recorded");
            }
            tracing::info!(check = %name, run_id = %run.run_id, retry = retries_used + 1, "check run failed; retrying");
            let queue = self.queue.clone();
            tokio::spawn(async move {
                tokio::time::sleep(wait).await;
                if let Err(err) = crate::submit::publish_job(queue.as_ref(), &job).await {
                    tracing::warn!(error = %err, "check retry not published");
                }
            });
            return true;
        }
        let run = inflight.remove(&name).expect("found above");
        drop(inflight);
        let record = self.close(check, run).await;
        self.wake(record).await;
        true
    }

    /// Ends `run`: its record in the run log, its state folded, its alert
    /// in the outbox (before the state) and then sent.
    async fn close(&self, check: &Check, run: InFlight) -> CheckRun {
        let started = Instant::now();
        let mut outcomes = Vec::new();
        for attempt in &run.ended {
            outcomes.push(self.outcome(attempt).await);
        }
        let ctx = RunContext {
            run_id: run.run_id.clone(),
            trigger: run.trigger,
            metadata: run.metadata.clone(),
            url: check.start_url(run.url_override.as_ref()),
            started_at: run.started_at,
        };
        let elapsed = (Utc::now() - run.started_at).to_std().unwrap_or_default();
        let record = CheckRun::from_attempts(check, ctx, &outcomes, elapsed);
        let body = serde_json::to_vec(&record).expect("records serialise");
        if let Err(err) = self
            .store
            .put(
                &run_key(&check.name, &run.run_id),
                Bytes::from(body),
                "application/json",
            )
            .await
        {
            tracing::warn!(check = %check.name, error = %err, "run record not written");
        }
        let (state, alert) = self.fold_run(check, &run.run_id, &record).await;
        super::metrics::record_run(&record, state.health);
        if let Err(err) = self.store.delete(&inflight_key(&check.name)).await {
            tracing::debug!(check = %check.name, error = %err, "run in flight not removed");
        }
        match alert {
            Some(alert) if self.alerts_inline => {
                self.outbox.deliver(&alert).await;
            }
            Some(alert) => {
                let outbox = self.outbox.clone();
                tokio::spawn(async move { outbox.deliver(&alert).await });
            }
            None => {}
        }
        tracing::info!(
            check = %check.name, run_id = %run.run_id, status = record.status.as_str(),
            health = ?state.health, took_ms = started.elapsed().as_millis() as u64,
            "check run ended"
        );
        record
    }

    /// What one ended attempt came to, read back from its artefacts.
    async fn outcome(&self, attempt: &EndedAttempt) -> AttemptOutcome {
        let result: Option<WorkflowResult> = self
            .store
            .get(&keys::job_result(JobKind::Workflow, attempt.job_id))
            .await
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok());
        let error_artefact = match result.as_ref() {
            Some(result) => self.error_artefact(&result.artifacts).await,
            None => None,
        };
        AttemptOutcome {
            session_id: attempt.session_id.clone(),
            duration: Duration::from_millis(attempt.duration_ms),
            result,
            error: attempt.error.clone(),
            error_artefact,
        }
    }

    async fn error_artefact(&self, artifacts: &[String]) -> Option<serde_json::Value> {
        let key = artifacts.iter().rev().find(|k| k.contains("/errors/"))?;
        let bytes = self.store.get(key).await.ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    /// The stored runs of `name`, newest first, at most `limit`.
    pub async fn runs(&self, name: &str, limit: usize) -> Result<Vec<CheckRun>, ArtifactError> {
        super::history::read_runs(self.store.as_ref(), name, limit).await
    }

    /// Whether `name` has a run in flight.
    pub async fn running(&self, name: &str) -> bool {
        self.inflight.lock().await.contains_key(name)
    }
}

#[cfg(test)]
mod tests;
