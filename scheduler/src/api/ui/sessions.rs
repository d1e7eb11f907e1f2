//! Workflow sessions: the list with outcome and where each step's action
//! came from (LLM, cache, healed, structured), and a session's steps with
//! the page before and after each, its report, spec and error artefacts.

use std::collections::{BTreeSet, HashMap};
use std::fmt::Write as _;
use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::response::Response;
use oxwright_jobs::keys;
use serde_json::Value;

use super::html::{self, Nav, enc, esc, link, short};
use super::page;
use crate::api::error::{ApiError, invalid, not_found, unavailable};
use crate::api::state::AppState;

const SESSIONS_PER_PAGE: usize = 25;

async fn result(state: &AppState, id: &str) -> Result<Option<Value>, ApiError> {
    match state.store.get(&keys::session_artifact(id, "result.json")).await {
        Ok(body) => Ok(serde_json::from_slice(&body).ok()),
        Err(oxwright_artifacts::ArtifactError::NotFound { .. }) => Ok(None),
        Err(err) => Err(unavailable(err)),
    }
}

fn check_session_id(id: &str) -> Result<(), ApiError> {
    let ok = !id.is_empty()
        && id.len() <= 128
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && id != "."
        && id != "..";
    if ok {
        Ok(())
    } else {
        Err(invalid("bad session id"))
    }
}

/// `GET /ui/sessions`: the sessions, newest first (ids are time-ordered
/// unless named), a page at a time.
pub(super) async fn list(
    State(state): State<Arc<AppState>>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    match list_sessions(&state, &query).await {
        Ok(body) => page(&state, "Workflow sessions", Nav::Sessions, &body),
        Err(err) => err.page(&state),
    }
}

async fn list_sessions(state: &AppState, query: &HashMap<String, String>) -> Result<String, ApiError> {
    let keys = state.store.list("sessions/").await.map_err(unavailable)?;
    let ids: BTreeSet<&str> = keys
        .iter()
        .filter_map(|k| k.strip_prefix("sessions/")?.split_once('/'))
        .map(|(id, _)| id)
        .collect();
    let page_no: usize = query.get("page").and_then(|p| p.parse().ok()).unwrap_or(0);
    let mut body = String::new();
    if ids.is_empty() {
        body.push_str("<p>No workflow session yet: run one with <code>oxwright run</code> or submit a workflow job.</p>");
        return Ok(body);
    }
    body.push_str(
        "<table class=\"sessions\"><thead><tr><th>Session</th><th>Name</th><th>Outcome</th><th>Steps ok</th>\
         <th>LLM</th><th>Cache</th><th>Healed</th><th>Structured</th><th>Duration</th><th>Started</th><th></th></tr></thead><tbody>",
    );
    let start = page_no * SESSIONS_PER_PAGE;
    for id in ids.iter().rev().skip(start).take(SESSIONS_PER_PAGE) {
        let result = result(state, id).await?.unwrap_or(Value::Null);
        let sources = sources(&result);
        let count = |s: &str| sources.get(s).copied().unwrap_or(0);
        let _ = write!(
            body,
            "<tr class=\"{status}\"><td>{session}</td><td>{name}</td><td>{status}</td><td>{ok}/{steps}</td>\
             <td>{llm}</td><td>{cache}</td><td>{healed}</td><td>{structured}</td><td>{duration}</td><td>{started}</td>\
             <td>{report}</td></tr>",
            status = esc(result["status"].as_str().unwrap_or("running")),
            session = link(&format!("/ui/sessions/{}", enc(id)), id),
            name = esc(result["name"].as_str().unwrap_or("")),
            ok = result["totals"]["steps_ok"].as_u64().unwrap_or(0),
            steps = result["totals"]["steps"].as_u64().unwrap_or(0),
            llm = count("llm"),
            cache = count("cache"),
            healed = count("healed"),
            structured = count("structured"),
            duration = html::ms(result["totals"]["duration_ms"].as_f64().unwrap_or(0.0)),
            started = esc(result["started_at"].as_str().unwrap_or("")),
            report = file_link(id, "report.html", "report"),
        );
    }
    body.push_str("</tbody></table><nav class=\"pager\">");
    if page_no > 0 {
        let _ = write!(body, "<a href=\"/ui/sessions?page={}\">← newer</a>", page_no - 1);
    }
    if start + SESSIONS_PER_PAGE < ids.len() {
        let _ = write!(body, "<a href=\"/ui/sessions?page={}\">older →</a>", page_no + 1);
    }
    body.push_str("</nav>");
    Ok(body)
}

/// How many steps each source decided.
fn sources(result: &Value) -> HashMap<String, usize> {
    let mut out = HashMap::new();
    for step in result["steps"].as_array().into_iter().flatten() {
        if let Some(source) = step["source"].as_str() {
            *out.entry(source.to_owned()).or_insert(0) += 1;
        }
    }
    out
}

fn file_link(session: &str, name: &str, label: &str) -> String {
    format!(
        "<a href=\"/ui/files/{}\">{}</a>",
        esc(&keys::session_artifact(session, name)),
        esc(label)
    )
}

/// The picture of the page at `name` (under `screenshots/`), or of a
/// failed step's error artefact (`screenshots/step-N-…`).
fn picture(session: &str, names: &[String], keys_present: &BTreeSet<String>, alt: &str) -> String {
    let found = names.iter().find_map(|name| {
        let key = keys::session_artifact(session, &format!("screenshots/{name}"));
        if name.ends_with('-') {
            keys_present.iter().find(|k| k.starts_with(&key)).cloned()
        } else {
            keys_present.contains(&key).then_some(key)
        }
    });
    match found {
        Some(key) => format!(
            "<a href=\"/ui/files/{k}\"><img class=\"thumb\" loading=\"lazy\" alt=\"{alt}\" src=\"/ui/files/{k}\"></a>",
            k = esc(&key),
            alt = esc(alt)
        ),
        None => String::new(),
    }
}

/// `GET /ui/sessions/{id}`.
pub(super) async fn show(State(state): State<Arc<AppState>>, Path(id): Path<String>) -> Response {
    match show_session(&state, &id).await {
        Ok(body) => page(&state, &format!("Session {id}"), Nav::Sessions, &body),
        Err(err) => err.page(&state),
    }
}

async fn show_session(state: &AppState, id: &str) -> Result<String, ApiError> {
    check_session_id(id)?;
    let present: BTreeSet<String> = state
        .store
        .list(&keys::session_artifact(id, ""))
        .await
        .map_err(unavailable)?
        .into_iter()
        .collect();
    if present.is_empty() {
        return Err(not_found(format!("no session {id}")));
    }
    let result = result(state, id).await?.unwrap_or(Value::Null);
    let mut body = String::new();
    let _ = write!(
        body,
        "<dl class=\"meta\"><dt>outcome</dt><dd>{}</dd><dt>name</dt><dd>{}</dd><dt>start URL</dt><dd>{}</dd>\
         <dt>final URL</dt><dd>{}</dd><dt>mode</dt><dd>{}</dd></dl>",
        esc(result["status"].as_str().unwrap_or("running (no result yet)")),
        esc(result["name"].as_str().unwrap_or("")),
        esc(result["start_url"].as_str().unwrap_or("")),
        esc(result["final_url"].as_str().unwrap_or("")),
        esc(result["mode"].as_str().unwrap_or("")),
    );
    if let Some(err) = result["error"].as_object() {
        let _ = write!(
            body,
            "<div class=\"failure\"><p><strong>{}</strong>: {}</p></div>",
            esc(err.get("kind").and_then(Value::as_str).unwrap_or("")),
            esc(err.get("message").and_then(Value::as_str).unwrap_or(""))
        );
    }
    body.push_str("<p class=\"actions\">");
    body.push_str(&file_link(id, "report.html", "The report"));
    if let Some(workflow) = result["workflow_id"].as_str() {
        let _ = write!(
            body,
            " · {}",
            link(
                &format!("/ui/workflows/{}", enc(workflow)),
                "the workflow's action cache"
            )
        );
    }
    for key in present.iter().filter(|k| k.ends_with(".spec.ts")) {
        let name = key.rsplit('/').next().unwrap_or(key);
        let _ = write!(body, " · <a href=\"/ui/files/{}\">{}</a>", esc(key), esc(name));
    }
    body.push_str("</p>");
    steps(id, &result, &present, &mut body);
    let present: Vec<String> = present.into_iter().collect();
    html::file_list(&mut body, &present, &keys::session_artifact(id, ""));
    Ok(body)
}

/// A checklist item without its `[ ]` box.
fn instruction(text: &str) -> &str {
    ["[] ", "[ ] ", "[x] "]
        .iter()
        .find_map(|b| text.strip_prefix(b))
        .unwrap_or(text)
}

fn steps(id: &str, result: &Value, present: &BTreeSet<String>, body: &mut String) {
    let Some(steps) = result["steps"].as_array() else {
        return;
    };
    body.push_str(
        "<h2>Steps</h2><table class=\"steps\"><thead><tr><th>#</th><th>Step</th><th>Outcome</th><th>Source</th>\
         <th>Attempts</th><th>Why</th><th>Duration</th><th>Before</th><th>After</th></tr></thead><tbody>",
    );
    for step in steps {
        let n = step["step_number"].as_u64().unwrap_or(0);
        let before = if n <= 1 {
            "start.png".to_owned()
        } else {
            format!("step_{}.png", n - 1)
        };
        let after = [format!("step_{n}.png"), format!("step-{n}-")];
        let reasons: Vec<&str> = step["reasons"]
            .as_array()
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let _ = write!(
            body,
            "<tr class=\"{status}\"><td>{n}</td><td>{text}</td><td>{status}</td><td>{source}</td><td>{attempts}</td>\
             <td>{why}</td><td>{duration}</td><td>{before}</td><td>{after}</td></tr>",
            status = esc(step["status"].as_str().unwrap_or("")),
            text = esc(instruction(step["instruction"].as_str().unwrap_or(""))),
            source = esc(step["source"].as_str().unwrap_or("")),
            attempts = step["attempts"].as_u64().unwrap_or(0),
            why = esc(&short(&reasons.join("; "), 400)),
            duration = html::ms(step["duration_ms"].as_f64().unwrap_or(0.0)),
            before = picture(id, &[before], present, &format!("before step {n}")),
            after = picture(id, &after, present, &format!("after step {n}")),
        );
    }
    body.push_str("</tbody></table>");
}
