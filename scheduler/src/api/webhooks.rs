//! `POST /webhooks/{name}`: a configured webhook's job template, behind
//! its own secret.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};

use super::error::ApiError;
use super::state::AppState;
use crate::batch::new_batch_id;
use crate::submit::SubmitReceipt;

pub(crate) async fn post_webhook(
    State(state): State<Arc<AppState>>,
    Path(name): Path<String>,
    headers: HeaderMap,
) -> Result<(StatusCode, Json<SubmitReceipt>), ApiError> {
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
    let batch_id = format!("{}-{}", hook.name, new_batch_id());
    let receipt = state
        .submit_template(&batch_id, &hook.job, &format!("webhook:{}", hook.name))
        .await?;
    Ok((StatusCode::ACCEPTED, Json(receipt)))
}
