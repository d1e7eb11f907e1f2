//! The run record: what one run of a check (its attempts and retries)
//! came to, as `checks/<name>/runs/<run-id>.json` holds it, built from
//! each attempt's `WorkflowResult` and the failed step's error artefact.

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
use oxwright_jobs::{ErrorKind, JobError, RunStatus, WorkflowResult};
use oxwright_secrets::Sanitizer;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::Check;

/// Returns `checks/<name>/runs/<run-id>.json`: one run's record.
pub fn run_key(check: &str, run_id: &str) -> String {
    format!("checks/{check}/runs/{run_id}.json")
}

/// Returns `checks/<name>/runs/`: the prefix of a check's run records.
pub fn runs_prefix(check: &str) -> String {
    format!("checks/{check}/runs/")
}

/// Returns `checks/<name>/state.json`: a check's state.
pub fn state_key(check: &str) -> String {
    format!("checks/{check}/state.json")
}

/// How a run of a check ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckStatus {
    /// The first attempt passed.
    Passed,
    /// Every attempt failed.
    Failed,
    /// An attempt failed and a retry passed: a pass that needed a retry.
    Flaky,
}

impl CheckStatus {
    /// Tells whether the run counts as a pass (passed or flaky).
    pub fn is_pass(self) -> bool {
        self != CheckStatus::Failed
    }

    /// Returns the snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            CheckStatus::Passed => "passed",
            CheckStatus::Failed => "failed",
            CheckStatus::Flaky => "flaky",
        }
    }
}

/// What started a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Trigger {
    /// A person, by hand (`oxwright check run` outside CI).
    Manual,
    /// The check's own schedule (`every` or `cron`).
    Schedule,
    /// `POST /v1/checks/{name}/runs`.
    Api,
    /// A deploy webhook that names the check.
    Webhook,
    /// A cloud event (S3, EventBridge) mapped to the check.
    Event,
    /// A CI job (`oxwright check run` with `CI` set).
    Ci,
}

impl Trigger {
    /// Returns the snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Trigger::Manual => "manual",
            Trigger::Schedule => "schedule",
            Trigger::Api => "api",
            Trigger::Webhook => "webhook",
            Trigger::Event => "event",
            Trigger::Ci => "ci",
        }
    }
}

/// How one attempt ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AttemptStatus {
    /// Every step completed.
    Passed,
    /// A step or the run failed.
    Failed,
}

/// One attempt: a workflow run in its own session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Attempt {
    /// The session whose artefacts it left (`sessions/<id>/`).
    pub session_id: String,
    /// Passed or failed.
    pub status: AttemptStatus,
    /// Wall time of the attempt.
    pub duration_ms: u64,
}

/// The step a run failed at.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailedStep {
    /// 1-based position in the checklist.
    pub index: u32,
    /// The step as written (placeholders, never values).
    pub text: String,
    /// What kind of failure: the error artefact's type in snake_case
    /// (`assertion_failed`, `element_not_found` …) when one was written,
    /// else the run's error kind (`step_failed`, `timeout` …).
    pub error_kind: String,
    /// The last attempt's reason.
    pub message: String,
    /// A sentence a person can act on, from the error artefact.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

/// One run of a check: its attempts and what they came to. Holds
/// placeholders and sanitised text, never secret values.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckRun {
    /// The check's name.
    pub check: String,
    /// This run's id.
    pub run_id: String,
    /// Passed, failed or flaky.
    pub status: CheckStatus,
    /// When the first attempt started.
    pub started_at: DateTime<Utc>,
    /// Wall time from the first attempt's start to the last one's end,
    /// waits between attempts included.
    pub duration_ms: u64,
    /// Every attempt, in order; each kept its own session's artefacts.
    pub attempts: Vec<Attempt>,
    /// Where the run failed: for a failed run, the step its last attempt
    /// failed at; for a flaky one, the step the attempt before the pass
    /// failed at. `None` when no step failed (a pass, or a run that failed
    /// before or between steps: see `error`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_step: Option<FailedStep>,
    /// Why the last failed attempt failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<JobError>,
    /// What started the run.
    pub trigger: Trigger,
    /// What the trigger recorded with it (a commit sha, a deploy id …).
    #[serde(default)]
    pub metadata: BTreeMap<String, String>,
    /// The start URL the run used (after any `--url` override).
    pub url: String,
    /// The check's tags when it ran.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
}

/// What an attempt left for its record.
#[derive(Debug, Clone)]
pub struct AttemptOutcome {
    /// The attempt's session.
    pub session_id: String,
    /// Its wall time.
    pub duration: Duration,
    /// The workflow's result, when the run produced one.
    pub result: Option<WorkflowResult>,
    /// Why the run produced no result or did not finish (no browser, the
    /// check's `timeout`), when so.
    pub error: Option<JobError>,
    /// The failed step's error artefact (`sessions/<id>/errors/step-<n>-….json`), when read.
    pub error_artefact: Option<Value>,
}

impl AttemptOutcome {
    /// Tells whether the attempt passed: a result with every step completed.
    pub fn passed(&self) -> bool {
        self.error.is_none()
            && self
                .result
                .as_ref()
                .is_some_and(|r| r.status == RunStatus::Completed)
    }

    /// Returns the step the attempt failed at, when one did.
    pub fn failed_step(&self) -> Option<FailedStep> {
        let result = self.result.as_ref()?;
        let step = result.steps.iter().find(|s| s.status == RunStatus::Failed)?;
        let artefact = self
            .error_artefact
            .as_ref()
            .filter(|a| a["step"].as_u64() == Some(u64::from(step.step_number)));
        let error_kind = artefact
            .and_then(|a| a["errorType"].as_str())
            .map(str::to_ascii_lowercase)
            .or_else(|| result.error.as_ref().map(|e| e.kind.as_str().to_string()))
            .unwrap_or_else(|| ErrorKind::StepFailed.as_str().to_string());
        let message = step
            .reasons
            .last()
            .cloned()
            .or_else(|| result.error.as_ref().map(|e| e.message.clone()))
            .unwrap_or_else(|| "the step did not complete".into());
        Some(FailedStep {
            index: step.step_number,
            text: step.instruction.clone(),
            error_kind,
            message,
            hint: artefact.and_then(|a| a["hint"].as_str()).map(str::to_string),
        })
    }

    /// Returns why the attempt failed, when it did.
    pub fn failure(&self) -> Option<JobError> {
        if self.passed() {
            return None;
        }
        self.error
            .clone()
            .or_else(|| self.result.as_ref().and_then(|r| r.error.clone()))
            .or_else(|| Some(JobError::new(ErrorKind::StepFailed, "a step did not complete")))
    }
}

/// What a run was started with, for its record.
#[derive(Debug, Clone)]
pub struct RunContext {
    /// The run's id.
    pub run_id: String,
    /// What started it.
    pub trigger: Trigger,
    /// What the trigger recorded with it.
    pub metadata: BTreeMap<String, String>,
    /// The start URL used.
    pub url: url::Url,
    /// When the first attempt started.
    pub started_at: DateTime<Utc>,
}

impl CheckRun {
    /// Builds the record of a run of `check` from its attempts (in
    /// order; the last is the one that counts) and its wall time.
    pub fn from_attempts(
        check: &Check,
        ctx: RunContext,
        attempts: &[AttemptOutcome],
        duration: Duration,
    ) -> CheckRun {
        let passed = attempts.last().is_some_and(AttemptOutcome::passed);
        let status = match (passed, attempts.len()) {
            (true, 1) => CheckStatus::Passed,
            (true, _) => CheckStatus::Flaky,
            (false, _) => CheckStatus::Failed,
        };
        let last_failed = attempts.iter().rev().find(|a| !a.passed());
        CheckRun {
            check: check.name.clone(),
            run_id: ctx.run_id,
            status,
            started_at: ctx.started_at,
            duration_ms: millis(duration),
            attempts: attempts
                .iter()
                .map(|a| Attempt {
                    session_id: a.session_id.clone(),
                    status: if a.passed() {
                        AttemptStatus::Passed
                    } else {
                        AttemptStatus::Failed
                    },
                    duration_ms: millis(a.duration),
                })
                .collect(),
            failed_step: last_failed.and_then(AttemptOutcome::failed_step),
            error: last_failed.and_then(AttemptOutcome::failure),
            trigger: ctx.trigger,
            metadata: ctx.metadata,
            url: ctx.url.to_string(),
            tags: check.tags.clone(),
        }
    }

    /// Returns the record with every string passed through `sanitizer`
    /// (the run's: it knows each secret value typed), ready to store or print.
    pub fn sanitized(&self, sanitizer: &Sanitizer) -> CheckRun {
        let clean = |s: &str| sanitizer.clean(s);
        let mut run = self.clone();
        run.url = clean(&run.url);
        run.metadata = run.metadata.iter().map(|(k, v)| (clean(k), clean(v))).collect();
        if let Some(step) = &mut run.failed_step {
            step.text = clean(&step.text);
            step.message = clean(&step.message);
            step.hint = step.hint.as_deref().map(clean);
        }
        if let Some(error) = &mut run.error {
            error.message = clean(&error.message);
            error.url = error.url.as_deref().map(clean);
            error.content_type = error.content_type.as_deref().map(clean);
        }
        run.tags = run.tags.iter().map(|t| clean(t)).collect();
        run
    }

    /// Returns the session of the attempt that counts (the last).
    pub fn last_session(&self) -> Option<&str> {
        self.attempts.last().map(|a| a.session_id.as_str())
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
#[path = "record_tests.rs"]
pub(crate) mod tests;
