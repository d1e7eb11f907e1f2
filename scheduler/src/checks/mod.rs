//! Checks in the scheduler (the domain layer below `api/`): each check
//! file's schedule, the runs triggers start, the state their records fold
//! into, and the alerts a change of state sends through the outbox.

pub mod history;
pub mod inputs;
mod metrics;
pub mod outbox;
mod runner;
mod schedule;
pub mod state;

pub use runner::{CheckRunner, Started, TriggerError};
pub use schedule::run_schedules;
pub use state::{AlertEvent, CheckState, Health};

use oxwright_checks::CheckRun;

/// The body of an alert: the event, the check, the run and its failed
/// step, the consecutive failures, links to the failed session's
/// screenshot, report and result, and the run's metadata. Built from the
/// run's sanitised record, so no secret value is in it.
pub fn alert_body(event: AlertEvent, run: &CheckRun, state: &CheckState) -> serde_json::Value {
    let session = run.last_session().unwrap_or_default();
    let links = serde_json::json!({
        "report": format!("/v1/artifacts/sessions/{session}/report.html"),
        "session": format!("/ui/sessions/{session}"),
        "runs": format!("/v1/checks/{}/runs", run.check),
    });
    serde_json::json!({
        "event": event.as_str(),
        "check": run.check,
        "run_id": run.run_id,
        "status": run.status,
        "health": state.health,
        "consecutive_failures": state.consecutive_failures,
        "failed_step": run.failed_step,
        "error": run.error.as_ref().map(|e| serde_json::json!({"kind": e.kind, "message": e.message})),
        "url": run.url,
        "trigger": run.trigger,
        "metadata": run.metadata,
        "links": links,
        "created_at": chrono::Utc::now(),
    })
}
