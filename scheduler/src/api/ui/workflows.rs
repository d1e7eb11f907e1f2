//! A workflow's action cache: each entry (the page pattern, the step, the
//! action and element it resolved to), its verified successes in a row
//! (past the trust count it replays with no LLM call), its last failure;
//! forgetting an entry makes the next run decide that step again.
//!
//! The cache is the workflow's event files folded; a forget is one more
//! event file (`{"event": "forgotten", "key": …}`), so runs folding the
//! files drop the entry, and this page hides it until the next run writes
//! the folded view again.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::Arc;

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Redirect, Response};
use bytes::Bytes;
use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use super::html::{Nav, csrf_field, enc, esc, short};
use super::{form, page, refusal};
use crate::api::error::{ApiError, invalid, not_found, unavailable};
use crate::api::state::AppState;

fn check_workflow_id(id: &str) -> Result<(), ApiError> {
    let ok = !id.is_empty()
        && id.len() <= 128
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'));
    if ok {
        Ok(())
    } else {
        Err(invalid("bad workflow id"))
    }
}

fn prefix(id: &str) -> String {
    format!("workflows/{id}")
}

/// The keys forgotten, with when.
async fn forgotten(state: &AppState, id: &str) -> Result<Vec<(Value, DateTime<Utc>)>, ApiError> {
    let keys = state
        .store
        .list(&format!("{}/actions/", prefix(id)))
        .await
        .map_err(unavailable)?;
    let mut out = Vec::new();
    for key in keys
        .iter()
        .filter(|k| k.contains("-forget-") && k.ends_with(".json"))
    {
        let Ok(body) = state.store.get(key).await else {
            continue;
        };
        let Ok(file) = serde_json::from_slice::<Value>(&body) else {
            continue;
        };
        let at = file["at"]
            .as_str()
            .and_then(|t| t.parse().ok())
            .unwrap_or_default();
        for event in file["events"].as_array().into_iter().flatten() {
            if event["event"] == "forgotten" {
                out.push((event["key"].clone(), at));
            }
        }
    }
    Ok(out)
}

/// `GET /ui/workflows/{id}`.
pub(super) async fn show(State(state): State<Arc<AppState>>, Path(id): Path<String>) -> Response {
    match show_cache(&state, &id).await {
        Ok(body) => page(&state, &format!("Action cache of {id}"), Nav::Sessions, &body),
        Err(err) => err.page(&state),
    }
}

async fn show_cache(state: &AppState, id: &str) -> Result<String, ApiError> {
    check_workflow_id(id)?;
    let cache: Value = match state.store.get(&format!("{}/actions.json", prefix(id))).await {
        Ok(body) => serde_json::from_slice(&body).unwrap_or(Value::Null),
        Err(oxwright_artifacts::ArtifactError::NotFound { .. }) => {
            return Err(not_found(format!("workflow {id} has no action cache yet")));
        }
        Err(err) => return Err(unavailable(err)),
    };
    let forgotten = forgotten(state, id).await?;
    let mut body = String::new();
    let _ = write!(
        body,
        "<p class=\"meta\">Folded from {} runs; starts at {}.</p>",
        cache["runs"].as_u64().unwrap_or(0),
        esc(cache["start_url"].as_str().unwrap_or(""))
    );
    body.push_str(
        "<table class=\"cache\"><thead><tr><th>Page</th><th>Step</th><th>Action</th><th>Element</th>\
         <th>Successes in a row</th><th>Last failure</th><th>Updated</th><th></th></tr></thead><tbody>",
    );
    let csrf = csrf_field(state.ui.csrf());
    let mut shown = 0;
    for entry in cache["entries"].as_array().into_iter().flatten() {
        let updated: DateTime<Utc> = entry["updated_at"]
            .as_str()
            .and_then(|t| t.parse().ok())
            .unwrap_or_default();
        if forgotten
            .iter()
            .any(|(key, at)| *key == entry["key"] && *at >= updated)
        {
            continue;
        }
        shown += 1;
        let resolved = &entry["resolved"];
        let action = format!(
            "{} {}",
            resolved["action"].as_str().unwrap_or(""),
            short(&resolved["locator"].to_string(), 160)
        );
        let fingerprint = &resolved["fingerprint"];
        let element = format!(
            "{} {:?}",
            fingerprint["role"].as_str().unwrap_or("element"),
            fingerprint["name"].as_str().unwrap_or("")
        );
        let forget = if state.opts.api.view_only {
            String::new()
        } else {
            format!(
                "<form method=\"post\" action=\"/ui/workflows/{}/forget\">{csrf}\
                 <input type=\"hidden\" name=\"key\" value=\"{}\"><button>Forget</button></form>",
                enc(id),
                esc(&entry["key"].to_string())
            )
        };
        let _ = write!(
            body,
            "<tr><td class=\"url\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(entry["key"]["url_pattern"].as_str().unwrap_or("")),
            esc(entry["key"]["instruction"].as_str().unwrap_or("")),
            esc(&action),
            esc(&element),
            entry["successes"].as_u64().unwrap_or(0),
            esc(entry["last_failure"].as_str().unwrap_or("")),
            esc(&updated.format("%Y-%m-%d %H:%M:%S UTC").to_string()),
            forget,
        );
    }
    body.push_str("</tbody></table>");
    if shown == 0 {
        body.push_str("<p>No entry: the next run decides every step.</p>");
    }
    Ok(body)
}

/// `POST /ui/workflows/{id}/forget` (`key`: the entry's key as JSON).
pub(super) async fn forget(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    body: Bytes,
) -> Response {
    let form: HashMap<String, String> = form(&body);
    if let Some(refused) = refusal(&state, &form) {
        return refused;
    }
    match write_forget(&state, &id, form.get("key").map(String::as_str).unwrap_or("")).await {
        Ok(()) => Redirect::to(&format!("/ui/workflows/{}", enc(&id))).into_response(),
        Err(err) => err.page(&state),
    }
}

async fn write_forget(state: &AppState, id: &str, key: &str) -> Result<(), ApiError> {
    check_workflow_id(id)?;
    let key: Value = serde_json::from_str(key).map_err(|_| invalid("the entry's key is not JSON"))?;
    let shaped = key.as_object().is_some_and(|k| {
        k.len() == 3
            && k.get("url_pattern").is_some_and(Value::is_string)
            && k.get("instruction").is_some_and(Value::is_string)
            && k.get("placeholders").is_some_and(Value::is_array)
    });
    if !shaped {
        return Err(invalid(
            "an entry's key has url_pattern, instruction and placeholders",
        ));
    }
    let at = Utc::now();
    let session = format!("forget-{}", &uuid::Uuid::new_v4().simple().to_string()[..8]);
    let file = json!({
        "workflow_id": id,
        "session_id": session,
        "at": at,
        "start_url": "",
        "checklist": [],
        "events": [{"event": "forgotten", "key": key}],
    });
    let name = format!(
        "{}/actions/{}-{session}.json",
        prefix(id),
        at.format("%Y%m%dT%H%M%S%.6fZ")
    );
    state
        .store
        .put(&name, Bytes::from(file.to_string()), "application/json")
        .await
        .map_err(unavailable)?;
    tracing::info!(workflow_id = %id, step = %key["instruction"], "action cache entry forgotten");
    Ok(())
}
