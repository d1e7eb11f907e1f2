//! A job: its Markdown rendered beside its source, metadata, links, the
//! screenshot and HTML when kept, the raw `result.json`; for a failure,
//! the error with what to try and the attempts it took.

use std::fmt::Write as _;
use std::sync::Arc;

use axum::extract::{Path, State};
use axum::response::Response;
use oxwright_jobs::{ErrorKind, JobError, JobId, JobKind, keys};
use serde_json::Value;

use super::html::{Nav, enc, esc, file_list, link};
use super::{markdown, page};
use crate::api::error::{ApiError, invalid, not_found, unavailable};
use crate::api::state::AppState;

/// Links listed on a job page.
const MAX_LINKS: usize = 500;

/// `GET /ui/jobs/{kind}/{id}`.
pub(super) async fn show(
    State(state): State<Arc<AppState>>,
    Path((kind, id)): Path<(String, String)>,
) -> Response {
    match show_job(&state, &kind, &id).await {
        Ok((title, body)) => page(&state, &title, Nav::Batches, &body),
        Err(err) => err.page(&state),
    }
}

async fn get_json(state: &AppState, key: &str) -> Result<Option<Value>, ApiError> {
    match state.store.get(key).await {
        Ok(body) => Ok(Some(serde_json::from_slice(&body).unwrap_or(Value::Null))),
        Err(oxwright_artifacts::ArtifactError::NotFound { .. }) => Ok(None),
        Err(err) => Err(unavailable(err)),
    }
}

async fn show_job(state: &AppState, kind: &str, id: &str) -> Result<(String, String), ApiError> {
    let kind: JobKind =
        serde_json::from_value(Value::String(kind.to_owned())).map_err(|_| invalid("no such job kind"))?;
    let id: JobId =
        serde_json::from_value(Value::String(id.to_owned())).map_err(|_| invalid("bad job id"))?;
    let dir = keys::job_artifact(kind, id, "");
    let artifacts = state.store.list(&dir).await.map_err(unavailable)?;
    if let Some(result) = get_json(state, &keys::job_result(kind, id)).await? {
        return Ok(done(&result, &artifacts, &dir));
    }
    if let Some(error) = get_json(state, &keys::job_artifact(kind, id, "error.json")).await? {
        return Ok(failed(&error, &artifacts, &dir));
    }
    Err(not_found(format!("job {id} has no result yet")))
}

fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

fn done(result: &Value, artifacts: &[String], dir: &str) -> (String, String) {
    let title = [
        &result["title"],
        &result["name"],
        &result["url"],
        &result["start_url"],
    ]
    .into_iter()
    .map(text)
    .find(|t| !t.is_empty())
    .unwrap_or_else(|| "Job".to_owned());
    let mut body = String::from("<dl class=\"meta\">");
    for field in [
        "url",
        "final_url",
        "status",
        "content_type",
        "rendered",
        "render_reason",
        "content_mode",
        "attempts",
        "truncated",
        "start_url",
        "session_id",
    ] {
        let value = &result[field];
        if !value.is_null() {
            let _ = write!(body, "<dt>{field}</dt><dd>{}</dd>", esc(&text(value)));
        }
    }
    for field in ["tokens", "timings", "totals"] {
        if let Some(map) = result[field].as_object() {
            let parts: Vec<String> = map.iter().map(|(k, v)| format!("{k} {}", text(v))).collect();
            let _ = write!(body, "<dt>{field}</dt><dd>{}</dd>", esc(&parts.join(", ")));
        }
    }
    body.push_str("</dl>");
    if let Some(session) = result["session_id"].as_str() {
        let _ = write!(
            body,
            "<p>{}</p>",
            link(
                &format!("/ui/sessions/{}", enc(session)),
                "The workflow session: steps and pictures"
            )
        );
    }
    if let Some(warnings) = result["warnings"].as_array().filter(|w| !w.is_empty()) {
        body.push_str("<h2>Warnings</h2><ul class=\"warnings\">");
        for w in warnings {
            let _ = write!(body, "<li>{}</li>", esc(&text(w)));
        }
        body.push_str("</ul>");
    }
    if let Some(md) = result["markdown"].as_str() {
        let _ = write!(
            body,
            "<h2>Markdown</h2><div class=\"side\"><article class=\"rendered\">{}</article>\
             <pre class=\"source\">{}</pre></div>",
            markdown::render(md),
            esc(md)
        );
    }
    if let Some(shot) = artifacts.iter().find(|k| k.ends_with(".png")) {
        let _ = write!(
            body,
            "<h2>Screenshot</h2><img class=\"shot\" alt=\"screenshot\" src=\"/ui/files/{}\">",
            esc(shot)
        );
    }
    links(result, &mut body);
    if let Some(meta) = result["metadata"].as_object().filter(|m| !m.is_empty()) {
        let _ = write!(
            body,
            "<h2>Metadata</h2><pre>{}</pre>",
            esc(&serde_json::to_string_pretty(meta).unwrap_or_default())
        );
    }
    file_list(&mut body, artifacts, dir);
    let mut raw = result.clone();
    if let Some(md) = raw
        .get_mut("markdown")
        .filter(|m| m.as_str().is_some_and(|s| s.len() > 2000))
    {
        *md = Value::String("(shown above)".into());
    }
    let _ = write!(
        body,
        "<details><summary>result.json</summary><pre>{}</pre></details>",
        esc(&serde_json::to_string_pretty(&raw).unwrap_or_default())
    );
    (title, body)
}

fn links(result: &Value, body: &mut String) {
    let Some(groups) = result["links"].as_object() else {
        return;
    };
    let mut shown = 0;
    body.push_str("<h2>Links</h2>");
    for (group, list) in groups {
        let Some(list) = list.as_array() else { continue };
        let _ = write!(
            body,
            "<h3>{} ({})</h3><ul class=\"links\">",
            esc(group),
            list.len()
        );
        for l in list {
            if shown >= MAX_LINKS {
                break;
            }
            shown += 1;
            let href = l["href"].as_str().or_else(|| l.as_str()).unwrap_or("");
            let label = l["text"].as_str().unwrap_or("");
            let _ = write!(
                body,
                "<li><span class=\"url\">{}</span> {}</li>",
                esc(href),
                esc(label)
            );
        }
        body.push_str("</ul>");
    }
}

fn failed(doc: &Value, artifacts: &[String], dir: &str) -> (String, String) {
    let url = text(&doc["url"]);
    let mut body = String::new();
    match serde_json::from_value::<JobError>(doc["error"].clone()) {
        Ok(err) => {
            let _ = write!(
                body,
                "<div class=\"failure\"><p><strong>{}</strong>: {}</p><p class=\"hint\">{}</p>\
                 <dl class=\"meta\"><dt>url</dt><dd>{}</dd><dt>attempts</dt><dd>{}</dd><dt>delivery</dt><dd>{}</dd>",
                esc(err.kind.as_str()),
                esc(&err.message),
                esc(hint(err.kind)),
                esc(&url),
                err.attempts,
                esc(&text(&doc["attempt"])),
            );
            if let Some(status) = err.status {
                let _ = write!(body, "<dt>HTTP status</dt><dd>{status}</dd>");
            }
            if let Some(ct) = &err.content_type {
                let _ = write!(body, "<dt>content type</dt><dd>{}</dd>", esc(ct));
            }
            if let Some(at) = &err.url {
                let _ = write!(body, "<dt>failed at</dt><dd>{}</dd>", esc(at));
            }
            body.push_str("</dl></div>");
        }
        Err(_) => body.push_str("<p class=\"error\">The error artefact is unreadable.</p>"),
    }
    file_list(&mut body, artifacts, dir);
    let _ = write!(
        body,
        "<details><summary>error.json</summary><pre>{}</pre></details>",
        esc(&serde_json::to_string_pretty(doc).unwrap_or_default())
    );
    (format!("Failed: {url}"), body)
}

/// What to try for a failure of `kind`.
pub(crate) fn hint(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::InvalidInput => "The job itself is wrong: fix the URL or the option the message names.",
        ErrorKind::PolicyDenied => {
            "The URL policy refused the address: allow the host (allow_hosts) if it is meant to be reached."
        }
        ErrorKind::Dns => {
            "The host name does not resolve from the worker: check the name and the worker's DNS."
        }
        ErrorKind::Connection => {
            "The server refused or dropped the connection: check that it is up and reachable."
        }
        ErrorKind::Timeout => {
            "The page did not finish within timeout_ms: raise it, or wait for less (wait_until load or domcontentloaded)."
        }
        ErrorKind::WaitForTimeout => {
            "The wait_for selector never appeared: check it against the rendered page."
        }
        ErrorKind::HttpStatus => {
            "The server answered with an error status: the page may need auth, or be gone."
        }
        ErrorKind::NonHtml => "The URL serves neither HTML nor PDF.",
        ErrorKind::BrowserCrashed | ErrorKind::BrowserUnavailable => {
            "The browser failed: the worker retries on a fresh one; many of these point at memory pressure."
        }
        ErrorKind::BrowserMisconfigured => {
            "The worker's browser cannot start: check its configuration and install."
        }
        ErrorKind::Extraction => {
            "The page loaded but could not be read: try content full or an include selector."
        }
        ErrorKind::ExtractionFailed => {
            "The model's answers never fitted the extract schema: its error shows the last answer and why."
        }
        ErrorKind::Cancelled => "The batch was cancelled before this job started.",
        ErrorKind::Expired => {
            "The job's deadline passed before a worker took it: add workers or a longer deadline."
        }
        ErrorKind::StepFailed => "A workflow step failed: its session shows the page at that step.",
        ErrorKind::ResumeUncertain => {
            "The run stopped mid-step and its effect could not be established: check the site before running again."
        }
        ErrorKind::HandedOver => "The run was handed to another worker and goes on there.",
        ErrorKind::Llm => {
            "The LLM endpoint failed or answered badly: check the llm settings and the endpoint."
        }
        ErrorKind::Storage => "The artefact store failed: check its reachability and credentials.",
        ErrorKind::StoreMismatch => "The job was submitted to another store than this worker writes to.",
        ErrorKind::ResourceLimit => {
            "The page exceeded a resource limit (size or memory): see the message for which."
        }
        ErrorKind::Internal => "An internal error: the message and the worker's log say more.",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hostile_result_renders_as_text() {
        let result = serde_json::json!({
            "title": "<script>alert(1)</script>",
            "url": "javascript:alert(1)",
            "final_url": "\"><img src=x onerror=alert(1)>",
            "markdown": "<script>alert(2)</script>\n\n[x](javascript:alert(3))",
            "links": {"internal": [{"href": "javascript:alert(4)", "text": "<b>x</b>"}]},
            "warnings": ["<i>w</i>"],
        });
        let (title, body) = done(&result, &["jobs/fetch/x/<b>.png".into()], "jobs/fetch/x/");
        assert_eq!(title, "<script>alert(1)</script>", "escaped by the layout");
        assert!(!body.contains("<script"), "{body}");
        assert!(!body.contains("<img src=x"), "{body}");
        assert!(!body.contains("href=\"javascript"), "{body}");
        assert!(!body.contains("<b>"), "{body}");
    }
}
