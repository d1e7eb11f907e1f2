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
use oxwright_checks::{AttemptOutcome, Check, CheckRun, RunContext, Trigger, run_key, state_key};
use oxwright_jobs::{Job, JobError, JobId, JobKind, JobReport, JobSpec, ReportStatus, WorkflowResult, keys};
use oxwright_queue::JobQueue;
use serde::{Deserialize, Serialize};
use tokio::sync::{Mutex, oneshot};

use super::outbox::{Outbox, PendingAlert};
use super::state::{AlertRule, CheckState};

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

/// How many times a state change is folded again after losing a
/// conditional write to another scheduler before it is given up.
const STATE_WRITE_TRIES: usize = 16;

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

    async fn count_skipped(&self, name: &str) {
        if let Err(err) = self.update_state(name, |state| state.skipped_ticks += 1).await {
            tracing::warn!(check = %name, error = %err, "skipped tick not counted");
        }
        super::metrics::record_skipped(name);
        tracing::info!(check = %name, "tick skipped: the last run is still going");
    }

    /// The state of `name` (a new one when none is stored).
    pub async fn state(&self, name: &str) -> CheckState {
        match self.store.get(&state_key(name)).await {
            Ok(bytes) => serde_json::from_slice(&bytes).unwrap_or_else(|_| CheckState::new(name)),
            Err(_) => CheckState::new(name),
        }
    }

    /// `name`'s stored state (a new one when none is stored) and what a
    /// write over it expects to find.
    async fn read_state(&self, name: &str) -> Result<(CheckState, Expect), ArtifactError> {
        match self.store.get_versioned(&state_key(name)).await {
            Ok((bytes, version)) => Ok((
                serde_json::from_slice(&bytes).unwrap_or_else(|_| CheckState::new(name)),
                Expect::Version(version),
            )),
            Err(ArtifactError::NotFound { .. }) => Ok((CheckState::new(name), Expect::Absent)),
            Err(err) => Err(err),
        }
    }

    /// Writes `state` over the version it was read at; a
    /// [`ArtifactError::Conflict`] says another scheduler wrote it meanwhile.
    async fn write_state(&self, state: &CheckState, expect: &Expect) -> Result<(), ArtifactError> {
        let body = serde_json::to_vec(state).expect("states serialise");
        self.store
            .put_if(
                &state_key(&state.check),
                Bytes::from(body),
                "application/json",
                expect,
            )
            .await
            .map(|_| ())
    }

    /// Applies `change` to `name`'s stored state and writes it over the
    /// version it read, reading and applying again when another scheduler
    /// wrote it meanwhile.
    async fn update_state(
        &self,
        name: &str,
        change: impl Fn(&mut CheckState),
    ) -> Result<CheckState, ArtifactError> {
        for _ in 0..STATE_WRITE_TRIES {
            let (mut state, expect) = self.read_state(name).await?;
            change(&mut state);
            match self.write_state(&state, &expect).await {
                Ok(()) => return Ok(state),
                Err(ArtifactError::Conflict { .. }) => {
                    tracing::debug!(check = %name, "check state written by another scheduler meanwhile; applying again");
                }
                Err(err) => return Err(err),
            }
        }
        Err(ArtifactError::Conflict { key: state_key(name) })
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

    /// Folds `record` into `check`'s state; the alert the change raises
    /// goes to the outbox before the state is written, so a scheduler
    /// that stops in between still sends it. A fold that loses its
    /// conditional write to another scheduler's takes its alert back and
    /// folds again over the state that won.
    async fn fold_run(
        &self,
        check: &Check,
        run_id: &str,
        record: &CheckRun,
    ) -> (CheckState, Option<PendingAlert>) {
        let rule = AlertRule {
            after: check.alert.after,
            reminder_every: check.alert.reminder_every,
        };
        let mut tries = 0;
        loop {
            tries += 1;
            let (mut state, expect) = match self.read_state(&check.name).await {
                Ok(read) => read,
                Err(err) => {
                    tracing::warn!(check = %check.name, error = %err, "check state not read; folding into a new one");
                    (CheckState::new(&check.name), Expect::Absent)
                }
            };
            let event = state.fold(run_id, record.status.is_pass(), Utc::now(), rule);
            let alert = match (event, &check.alert.webhook) {
                (Some(event), Some(webhook)) => Some(PendingAlert {
                    id: format!("{run_id}-{}", event.as_str().trim_start_matches("check.")),
                    check: check.name.clone(),
                    webhook: webhook.to_string(),
                    event: event.as_str().to_string(),
                    body: super::alert_body(event, record, &state),
                }),
                _ => None,
            };
            if let Some(alert) = &alert
                && let Err(err) = self.outbox.put(alert).await
            {
                tracing::warn!(check = %check.name, error = %err, "alert not written to the outbox");
            }
            match self.write_state(&state, &expect).await {
                Err(ArtifactError::Conflict { .. }) if tries < STATE_WRITE_TRIES => {
                    tracing::debug!(check = %check.name, "check state written by another scheduler meanwhile; folding again");
                    if let Some(alert) = &alert
                        && let Err(err) = self.outbox.withdraw(alert).await
                    {
                        tracing::warn!(check = %check.name, error = %err, "alert of a lost fold not withdrawn");
                    }
                }
                Err(err) => {
                    tracing::warn!(check = %check.name, error = %err, "check state not written");
                    return (state, alert);
                }
                Ok(()) => return (state, alert),
            }
        }
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
mod tests {
    use super::*;
    use oxwright_artifacts::MemoryStore;
    use oxwright_queue::MemoryQueue;

    fn runner(dir: &std::path::Path, grace: Duration) -> CheckRunner {
        let path = dir.join("login.check.toml");
        std::fs::write(
            &path,
            "url = \"http://a.test/app/login\"\nsteps = \"expect: text main = Pro\"\ntimeout = \"1s\"\n",
        )
        .unwrap();
        let check = oxwright_checks::load(&path).unwrap();
        let mut runner = CheckRunner::new(
            vec![check],
            Arc::new(MemoryStore::new()),
            Arc::new(MemoryQueue::new()),
            None,
        );
        runner.overdue_grace = grace;
        runner
    }

    #[tokio::test]
    async fn a_run_whose_report_never_comes_is_closed_after_its_deadline_and_the_check_runs_again() {
        let dir = tempfile::tempdir().unwrap();
        let runner = runner(dir.path(), Duration::from_millis(200));
        let first = runner
            .trigger("login", Trigger::Schedule, None, BTreeMap::new(), true)
            .await
            .unwrap();
        // Its report is lost: a tick while it is young is skipped and counted.
        let again = runner
            .trigger("login", Trigger::Schedule, None, BTreeMap::new(), false)
            .await;
        assert!(matches!(again, Err(TriggerError::Running(_))), "{again:?}");
        assert_eq!(runner.state("login").await.skipped_ticks, 1);
        tokio::time::sleep(Duration::from_millis(1300)).await;
        let second = runner
            .trigger("login", Trigger::Schedule, None, BTreeMap::new(), false)
            .await
            .expect("an overdue run no longer holds the check");
        assert_ne!(second.run_id, first.run_id);
        let record = first
            .done
            .unwrap()
            .await
            .expect("the waiter hears of the closed run");
        assert_eq!(record.run_id, first.run_id);
        assert!(!record.status.is_pass());
        let error = record.error.as_ref().expect("the run says why it failed");
        assert_eq!(error.kind, oxwright_jobs::ErrorKind::Timeout);
        assert!(
            error.message.contains("no report of attempt 1"),
            "{}",
            error.message
        );
        assert_eq!(runner.runs("login", 10).await.unwrap().len(), 1);
        assert!(runner.running("login").await);
        let state = runner.state("login").await;
        assert_eq!((state.runs, state.consecutive_failures), (1, 1));
        assert_eq!(state.skipped_ticks, 1);
    }

    /// A memory store whose writes take a while, so read-change-write
    /// steps of two schedulers overlap.
    #[derive(Debug, Clone)]
    struct SlowWrites(MemoryStore);

    #[async_trait::async_trait]
    impl ArtifactStore for SlowWrites {
        async fn put(&self, key: &str, body: Bytes, content_type: &str) -> Result<(), ArtifactError> {
            tokio::time::sleep(Duration::from_millis(5)).await;
            self.0.put(key, body, content_type).await
        }
        async fn get(&self, key: &str) -> Result<Bytes, ArtifactError> {
            self.0.get(key).await
        }
        async fn append(&self, key: &str, line: Bytes) -> Result<(), ArtifactError> {
            self.0.append(key, line).await
        }
        async fn list(&self, prefix: &str) -> Result<Vec<String>, ArtifactError> {
            self.0.list(prefix).await
        }
        async fn exists(&self, key: &str) -> Result<bool, ArtifactError> {
            self.0.exists(key).await
        }
        async fn delete(&self, key: &str) -> Result<(), ArtifactError> {
            self.0.delete(key).await
        }
        async fn get_versioned(
            &self,
            key: &str,
        ) -> Result<(Bytes, oxwright_artifacts::Version), ArtifactError> {
            self.0.get_versioned(key).await
        }
        async fn put_if(
            &self,
            key: &str,
            body: Bytes,
            content_type: &str,
            expect: &Expect,
        ) -> Result<oxwright_artifacts::Version, ArtifactError> {
            tokio::time::sleep(Duration::from_millis(5)).await;
            self.0.put_if(key, body, content_type, expect).await
        }
        fn describe(&self) -> String {
            "memory store with slow writes".into()
        }
    }

    #[tokio::test]
    async fn two_schedulers_over_one_store_run_a_check_once_at_a_time_and_count_every_skipped_tick() {
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn ArtifactStore> = Arc::new(SlowWrites(MemoryStore::new()));
        let queue = Arc::new(MemoryQueue::new());
        let scheduler = |store: &Arc<dyn ArtifactStore>| {
            let check = runner(dir.path(), OVERDUE_GRACE)
                .checks
                .into_values()
                .next()
                .unwrap();
            CheckRunner::new(vec![check], store.clone(), queue.clone(), None)
        };
        let (a, b) = (scheduler(&store), scheduler(&store));
        fn tick(r: &CheckRunner) -> impl Future<Output = Result<Started, TriggerError>> + '_ {
            r.trigger("login", Trigger::Schedule, None, BTreeMap::new(), false)
        }
        let (ta, tb) = tokio::join!(tick(&a), tick(&b));
        assert!(
            ta.is_ok() != tb.is_ok(),
            "exactly one starts the run: {ta:?} {tb:?}"
        );
        let started = ta.or(tb).unwrap();
        assert_eq!(
            queue.depth(JobKind::Workflow).await.unwrap(),
            1,
            "one job published"
        );
        assert!(a.running("login").await && b.running("login").await);

        // Ticks on both while it runs: each one counted, none lost.
        for _ in 0..10 {
            let (sa, sb) = tokio::join!(tick(&a), tick(&b));
            for skipped in [sa, sb] {
                assert!(matches!(skipped, Err(TriggerError::Running(_))), "{skipped:?}");
            }
        }
        assert_eq!(a.state("login").await.skipped_ticks, 21);

        // The run's report reaches one of them; the other starts the next run.
        let report = JobReport {
            job_id: started.job_id,
            kind: JobKind::Workflow,
            batch_id: None,
            url: "http://a.test/app/login".into(),
            status: ReportStatus::Failed,
            error: Some(JobError::new(oxwright_jobs::ErrorKind::Internal, "broken")),
            artifacts: Vec::new(),
            attempt: 1,
            duration_ms: 1.0,
            finished_at: Utc::now(),
        };
        let (took_a, took_b) = tokio::join!(a.take(&report), b.take(&report));
        assert!(took_a && took_b, "both had it in flight");
        let state = a.state("login").await;
        assert_eq!(
            (state.runs, state.consecutive_failures, state.skipped_ticks),
            (1, 1, 21)
        );
        assert_eq!(a.runs("login", 10).await.unwrap().len(), 1);
        let next = tick(&b).await.expect("the closed run no longer holds the check");
        assert_ne!(next.run_id, started.run_id);
        assert!(matches!(tick(&a).await, Err(TriggerError::Running(_))));
    }

    #[tokio::test]
    async fn a_run_within_its_deadline_keeps_the_check() {
        let dir = tempfile::tempdir().unwrap();
        let runner = runner(dir.path(), Duration::from_secs(300));
        runner
            .trigger("login", Trigger::Schedule, None, BTreeMap::new(), false)
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(1300)).await;
        let again = runner
            .trigger("login", Trigger::Schedule, None, BTreeMap::new(), false)
            .await;
        assert!(matches!(again, Err(TriggerError::Running(_))), "{again:?}");
        assert!(runner.runs("login", 10).await.unwrap().is_empty());
    }
}
