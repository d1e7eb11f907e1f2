use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use chrono::Utc;
use oxwright_jobs::{
    ErrorKind, JobError, RunStatus, StepOutcome, WorkflowMode, WorkflowResult, WorkflowTotals,
};
use serde_json::json;

use super::*;

pub(crate) fn check(tags: &[&str]) -> Check {
    let text = format!(
        "url = \"http://a.test/app/login\"\nsteps = '''\nfill: textbox \"Password\" = {{{{PASSWORD}}}}\nexpect: text \"Plan: Pro\"\n'''\nretries = 1\ntags = {tags:?}\n"
    );
    crate::file::parse_in(
        Path::new("/c/login.check.toml"),
        "login",
        &text,
        Path::new("/c"),
        &|_| Err(std::io::Error::other("no files")),
    )
    .unwrap()
}

fn step(n: u32, text: &str, status: RunStatus, reasons: &[&str]) -> StepOutcome {
    StepOutcome {
        step_number: n,
        instruction: text.into(),
        status,
        attempts: if status == RunStatus::Failed { 3 } else { 1 },
        reasons: reasons.iter().map(|r| r.to_string()).collect(),
        prompt_tokens: 0,
        completion_tokens: 0,
        duration_ms: 5.0,
        screenshot: None,
        source: None,
        else_reason: None,
        output: None,
    }
}

/// A result whose second step passed or failed.
pub(crate) fn result(session: &str, pass: bool) -> WorkflowResult {
    let second = if pass {
        step(2, "expect: text \"Plan: Pro\"", RunStatus::Completed, &[])
    } else {
        step(
            2,
            "expect: text \"Plan: Pro\"",
            RunStatus::Failed,
            &["no match", "text \"Plan: Pro\" is not on the page"],
        )
    };
    WorkflowResult {
        session_id: session.into(),
        name: Some("login".into()),
        workflow_id: None,
        mode: WorkflowMode::Structured,
        status: if pass {
            RunStatus::Completed
        } else {
            RunStatus::Failed
        },
        start_url: "http://a.test/app/login".into(),
        final_url: None,
        checklist: vec![],
        steps: vec![
            step(
                1,
                "fill: textbox \"Password\" = {{PASSWORD}}",
                RunStatus::Completed,
                &[],
            ),
            second,
        ],
        totals: WorkflowTotals::default(),
        error: (!pass).then(|| {
            JobError::new(
                ErrorKind::StepFailed,
                "step 2 (expect: text \"Plan: Pro\") failed after 3 attempts: not on the page",
            )
        }),
        artifacts: vec![],
        started_at: Utc::now(),
        finished_at: Utc::now(),
        resumed: vec![],
        outputs: Default::default(),
    }
}

pub(crate) fn outcome(session: &str, pass: bool) -> AttemptOutcome {
    AttemptOutcome {
        session_id: session.into(),
        duration: Duration::from_millis(1500),
        result: Some(result(session, pass)),
        error: None,
        error_artefact: (!pass).then(|| {
            json!({
                "sessionId": session,
                "step": 2,
                "errorType": "ASSERTION_FAILED",
                "hint": "Expected text \"Plan: Pro\" on http://a.test/app/account, and it is not there.",
            })
        }),
    }
}

pub(crate) fn ctx() -> RunContext {
    RunContext {
        run_id: "run-1".into(),
        trigger: Trigger::Ci,
        metadata: BTreeMap::from([("commit".to_string(), "abc123".to_string())]),
        url: url::Url::parse("http://a.test/app/login").unwrap(),
        started_at: Utc::now(),
    }
}

#[test]
fn one_passing_attempt_is_passed() {
    let run = CheckRun::from_attempts(&check(&[]), ctx(), &[outcome("s1", true)], Duration::from_secs(2));
    assert_eq!(run.status, CheckStatus::Passed);
    assert_eq!(run.failed_step, None);
    assert_eq!(run.error, None);
    assert_eq!(run.duration_ms, 2000);
    assert_eq!(run.attempts.len(), 1);
    assert_eq!(run.attempts[0].status, AttemptStatus::Passed);
    assert_eq!(run.attempts[0].duration_ms, 1500);
    assert_eq!(run.trigger, Trigger::Ci);
    assert_eq!(run.metadata["commit"], "abc123");
}

#[test]
fn a_failed_run_names_its_step_kind_and_hint() {
    let attempts = [outcome("s1", false), outcome("s2", false)];
    let run = CheckRun::from_attempts(&check(&["smoke"]), ctx(), &attempts, Duration::from_secs(4));
    assert_eq!(run.status, CheckStatus::Failed);
    let step = run.failed_step.clone().expect("a failed step");
    assert_eq!(step.index, 2);
    assert_eq!(step.text, "expect: text \"Plan: Pro\"");
    assert_eq!(step.error_kind, "assertion_failed");
    assert_eq!(step.message, "text \"Plan: Pro\" is not on the page");
    assert!(step.hint.unwrap().starts_with("Expected text"));
    assert_eq!(run.error.as_ref().unwrap().kind, ErrorKind::StepFailed);
    assert_eq!(run.last_session(), Some("s2"));
    // Serialised with its documented names.
    let v = serde_json::to_value(&run).unwrap();
    assert_eq!(v["status"], "failed");
    assert_eq!(v["trigger"], "ci");
    assert_eq!(v["attempts"][1]["status"], "failed");
    assert_eq!(v["failed_step"]["error_kind"], "assertion_failed");
    assert_eq!(v["tags"], json!(["smoke"]));
    let back: CheckRun = serde_json::from_value(v).unwrap();
    assert_eq!(back, run);
}

#[test]
fn a_pass_on_retry_is_flaky_and_keeps_the_failure() {
    let attempts = [outcome("s1", false), outcome("s2", true)];
    let run = CheckRun::from_attempts(&check(&[]), ctx(), &attempts, Duration::from_secs(4));
    assert_eq!(run.status, CheckStatus::Flaky);
    assert!(run.status.is_pass());
    assert_eq!(run.failed_step.as_ref().map(|s| s.index), Some(2));
    assert_eq!(
        run.attempts.iter().map(|a| a.status).collect::<Vec<_>>(),
        [AttemptStatus::Failed, AttemptStatus::Passed]
    );
}

#[test]
fn a_run_with_no_result_fails_with_its_error() {
    let attempt = AttemptOutcome {
        session_id: "s1".into(),
        duration: Duration::from_secs(120),
        result: None,
        error: Some(JobError::new(
            ErrorKind::Timeout,
            "the run took longer than its timeout (2m)",
        )),
        error_artefact: None,
    };
    let run = CheckRun::from_attempts(&check(&[]), ctx(), &[attempt], Duration::from_secs(120));
    assert_eq!(run.status, CheckStatus::Failed);
    assert_eq!(run.failed_step, None);
    assert_eq!(run.error.unwrap().kind, ErrorKind::Timeout);
}

#[test]
fn the_sanitised_record_holds_no_secret_value() {
    let sanitizer = oxwright_secrets::Sanitizer::new();
    sanitizer.register("PASSWORD", "hunter2-pw");
    let mut attempt = outcome("s1", false);
    if let Some(r) = &mut attempt.result {
        r.steps[1].reasons.push("typed hunter2-pw into the box".into());
    }
    let mut context = ctx();
    context.metadata.insert("note".into(), "pw hunter2-pw".into());
    let run = CheckRun::from_attempts(&check(&[]), context, &[attempt], Duration::from_secs(1));
    assert!(serde_json::to_string(&run).unwrap().contains("hunter2-pw"));
    let clean = serde_json::to_string(&run.sanitized(&sanitizer)).unwrap();
    assert!(!clean.contains("hunter2-pw"), "{clean}");
    assert!(clean.contains("{{PASSWORD}}"), "{clean}");
    // Ids are ours, kept as they are.
    assert!(clean.contains("\"session_id\":\"s1\""), "{clean}");
}

#[test]
fn keys() {
    assert_eq!(run_key("login", "r1"), "checks/login/runs/r1.json");
    assert_eq!(runs_prefix("login"), "checks/login/runs/");
    assert_eq!(state_key("login"), "checks/login/state.json");
}
