//! `sessions/<id>/report.html`: one self-contained page a person reads at a
//! glance — final status, the workflow, each step with its decision,
//! attempts, before/after screenshots, timings, tokens and failures. Built
//! from the session's artefacts alone (`result.json`, `steps.jsonl`, the
//! keys under `sessions/<id>/`), so `oxwright report` can write it again
//! from any store. Every text shown passes the sanitiser, then HTML escaping.

mod html;

use bytes::Bytes;
use oxwright_artifacts::ArtifactStore;
use oxwright_jobs::{StepRecord, keys};
use serde_json::Value;

use crate::{Sanitizer, WorkflowError};

pub use html::escape;

/// The report's file name under `sessions/<id>/`.
pub const REPORT_HTML: &str = "report.html";

/// What a report is made of, read from a session's artefacts.
#[derive(Debug, Clone, Default)]
pub struct SessionArtefacts {
    /// The session.
    pub session_id: String,
    /// `result.json` as stored; fields added later (a step's `source`,
    /// `cache_hits`) are read when present.
    pub result: Option<Value>,
    /// `steps.jsonl`, one record per attempt (unreadable lines skipped).
    pub records: Vec<StepRecord>,
    /// Every key under `sessions/<id>/`, relative to that folder.
    pub files: Vec<String>,
}

impl SessionArtefacts {
    /// Whether the session folder holds `name` (relative).
    pub fn has(&self, name: &str) -> bool {
        self.files.iter().any(|f| f == name)
    }
}

/// Reads a session's artefacts from `store`. A session with neither a
/// result nor a step record is an error: there is nothing to report.
pub async fn load_session(
    store: &dyn ArtifactStore,
    session_id: &str,
) -> Result<SessionArtefacts, WorkflowError> {
    let prefix = keys::session_artifact(session_id, "");
    let mut files: Vec<String> = store
        .list(&prefix)
        .await
        .map_err(|e| WorkflowError::store(&e))?
        .into_iter()
        .filter_map(|k| k.strip_prefix(&prefix).map(str::to_owned))
        .collect();
    files.sort();
    let result = match store
        .get(&keys::session_artifact(session_id, "result.json"))
        .await
    {
        Ok(body) => serde_json::from_slice::<Value>(&body).ok(),
        Err(_) => None,
    };
    let records = match store.get(&keys::session_steps(session_id)).await {
        Ok(body) => parse_records(&body),
        Err(_) => Vec::new(),
    };
    if result.is_none() && records.is_empty() {
        return Err(WorkflowError::Config(format!(
            "session {session_id} has no result.json nor steps.jsonl in {}",
            store.describe()
        )));
    }
    Ok(SessionArtefacts {
        session_id: session_id.to_string(),
        result,
        records,
        files,
    })
}

/// Parses `steps.jsonl`, skipping lines that are not step records.
pub fn parse_records(body: &[u8]) -> Vec<StepRecord> {
    String::from_utf8_lossy(body)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// Returns the report's HTML for `session`.
pub fn render_report(session: &SessionArtefacts, sanitizer: &Sanitizer) -> String {
    html::render(session, sanitizer)
}

/// Writes `sessions/<id>/report.html` from the store's artefacts and
/// returns its key.
pub async fn write_report(
    store: &dyn ArtifactStore,
    session_id: &str,
    sanitizer: &Sanitizer,
) -> Result<String, WorkflowError> {
    let mut session = load_session(store, session_id).await?;
    if !session.has(REPORT_HTML) {
        session.files.push(REPORT_HTML.to_string());
    }
    let page = render_report(&session, sanitizer);
    let key = keys::session_artifact(session_id, REPORT_HTML);
    store
        .put(&key, Bytes::from(page), "text/html; charset=utf-8")
        .await
        .map_err(|e| WorkflowError::store(&e))?;
    Ok(key)
}

#[cfg(test)]
mod tests;
