//! `POST /webhooks/{name}`: a configured webhook, behind its own secret.
//! It submits its job template, and starts a run of each check it names
//! (a deploy webhook), against the deployment URL taken from the one body
//! field it allows.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use oxwright_checks::Trigger;
use serde::Serialize;
use serde_json::Value;

use super::error::{ApiError, invalid, unavailable};
use super::state::AppState;
use crate::batch::new_batch_id;
use crate::checks::TriggerError;
use crate::config::WebhookConfig;
use crate::submit::SubmitReceipt;

/// What a webhook call started: the batch of its job, and a run per check.
#[derive(Debug, Serialize)]
pub(crate) struct WebhookReceipt {
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    batch: Option<SubmitReceipt>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    checks: Vec<CheckStarted>,
}

/// One check a webhook call named: the run it started, or why none.
#[derive(Debug, Serialize)]
struct CheckStarted {
    check: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    run_id: Option<String>,
    /// `running`: its last run is still going, so this call started none.
    #[serde(skip_serializing_if = "Option::is_none")]
    skipped: Option<&'static str>,
}

pub(crate) async fn post_webhook(
    State(state): State<Arc<AppState>>,
    Path(name): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<(StatusCode, Json<WebhookReceipt>), ApiError> {
    let Some(hook) = state.opts.webhooks.iter().find(|w| w.name == name) else {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("no webhook {name}"),
        ));
    };
    if let Some(secret) = state.opts.webhook_secrets.get(&hook.name)
        && !super::bearer_is(&headers, secret)
    {
        return Err(ApiError::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "missing or wrong bearer token",
        ));
    }
    // Everything the body decides is read before anything starts.
    let (url, metadata) = check_inputs(&state, hook, &body)?;
    let batch = match &hook.job {
        Some(job) => {
            let batch_id = format!("{}-{}", hook.name, new_batch_id());
            Some(
                state
                    .submit_template(&batch_id, job, &format!("webhook:{}", hook.name))
                    .await?,
            )
        }
        None => None,
    };
    let mut checks = Vec::new();
    for check in &hook.checks {
        let started = state
            .checks
            .trigger(check, Trigger::Webhook, url.clone(), metadata.clone(), false)
            .await;
        checks.push(match started {
            Ok(run) => CheckStarted {
                check: check.clone(),
                run_id: Some(run.run_id),
                skipped: None,
            },
            Err(TriggerError::Running(_)) => CheckStarted {
                check: check.clone(),
                run_id: None,
                skipped: Some("running"),
            },
            Err(err) => return Err(unavailable(err)),
        });
    }
    Ok((StatusCode::ACCEPTED, Json(WebhookReceipt { batch, checks })))
}

/// The deployment URL (from `url_field`, allowed by the URL policy) and
/// the metadata (from `metadata_fields`) the hook's checks run with.
fn check_inputs(
    state: &AppState,
    hook: &WebhookConfig,
    body: &[u8],
) -> Result<(Option<url::Url>, BTreeMap<String, String>), ApiError> {
    let mut metadata = BTreeMap::from([("webhook".to_string(), hook.name.clone())]);
    if hook.checks.is_empty() || (hook.url_field.is_none() && hook.metadata_fields.is_empty()) {
        return Ok((None, metadata));
    }
    let json: Value = serde_json::from_slice(body)
        .map_err(|e| invalid(format!("webhook {:?} reads its body as JSON: {e}", hook.name)))?;
    let url = match &hook.url_field {
        Some(field) => {
            let raw = field_text(&json, field).ok_or_else(|| {
                invalid(format!(
                    "the body has no text at `{field}` (the deployment's URL)"
                ))
            })?;
            let url = state
                .opts
                .policy
                .parse_input(&raw)
                .map_err(|e| invalid(format!("`{field}` {raw:?} refused by the URL policy: {e}")))?;
            if !matches!(url.scheme(), "http" | "https") {
                return Err(invalid(format!("`{field}` {raw:?} is not an http or https URL")));
            }
            Some(url)
        }
        None => None,
    };
    for field in &hook.metadata_fields {
        if let Some(text) = field_text(&json, field) {
            metadata.insert(field.clone(), text.chars().take(MAX_METADATA_CHARS).collect());
        }
    }
    Ok((url, metadata))
}

/// Longest metadata value kept from a webhook's body.
const MAX_METADATA_CHARS: usize = 256;

/// The text (or number, or boolean) at the dotted path `field` of `json`.
fn field_text(json: &Value, field: &str) -> Option<String> {
    let mut at = json;
    for part in field.split('.') {
        at = match at {
            Value::Object(map) => map.get(part)?,
            Value::Array(items) => items.get(part.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    match at {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::field_text;

    #[test]
    fn dotted_paths_reach_nested_fields_and_nothing_else() {
        let body = serde_json::json!({
            "deployment_status": {"environment_url": "https://pr-7.preview.example", "id": 42},
            "commits": [{"sha": "3f2a"}],
            "flag": true,
            "nested": {"object": {}}
        });
        let at = |f: &str| field_text(&body, f);
        assert_eq!(
            at("deployment_status.environment_url").as_deref(),
            Some("https://pr-7.preview.example")
        );
        assert_eq!(at("deployment_status.id").as_deref(), Some("42"));
        assert_eq!(at("commits.0.sha").as_deref(), Some("3f2a"));
        assert_eq!(at("flag").as_deref(), Some("true"));
        assert_eq!(at("nested.object"), None);
        assert_eq!(at("deployment_status.missing"), None);
        assert_eq!(at("commits.x.sha"), None);
    }
}
