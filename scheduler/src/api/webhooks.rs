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
use crate::checks::{TriggerError, inputs};
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
        Some(field) => Some(inputs::deploy_url(&state.opts.policy, &json, field).map_err(invalid)?),
        None => None,
    };
    inputs::add_metadata(&mut metadata, &json, &hook.metadata_fields);
    Ok((url, metadata))
}
