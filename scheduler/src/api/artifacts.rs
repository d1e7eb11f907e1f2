//! `GET /v1/artifacts/{key}` and the OpenAPI document.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use super::error::{ApiError, invalid, unavailable};
use super::state::AppState;

/// The OpenAPI 3.1 document of the API, served at `/v1/openapi.json`.
pub const OPENAPI: &str = include_str!("../openapi.json");

/// An artefact key and the API path that serves it.
#[derive(Debug, Clone, Serialize)]
pub struct ArtifactLink {
    /// The key in the artefact store.
    pub key: String,
    /// `GET` it here (with the API's token).
    pub url: String,
}

/// Links to `keys` under `/v1/artifacts/`.
pub fn artifact_links(keys: &[String]) -> Vec<ArtifactLink> {
    keys.iter()
        .map(|key| ArtifactLink {
            key: key.clone(),
            url: format!("/v1/artifacts/{key}"),
        })
        .collect()
}

pub(crate) async fn openapi() -> Response {
    ([(header::CONTENT_TYPE, "application/json")], OPENAPI).into_response()
}

pub(crate) async fn get_artifact(
    State(state): State<Arc<AppState>>,
    Path(key): Path<String>,
) -> Result<Response, ApiError> {
    if oxwright_artifacts::validate_key(&key).is_err() || !key.starts_with("jobs/") {
        return Err(invalid("bad artefact key: jobs/<kind>/<id>/<name>"));
    }
    let body = match state.store.get(&key).await {
        Ok(body) => body,
        Err(oxwright_artifacts::ArtifactError::NotFound { .. }) => {
            return Err(ApiError::new(
                StatusCode::NOT_FOUND,
                "not_found",
                format!("no artefact {key}"),
            ));
        }
        Err(err) => return Err(unavailable(err)),
    };
    let content_type = match key.rsplit('.').next() {
        Some("md") => "text/markdown; charset=utf-8",
        Some("json") => "application/json",
        Some("html") => "text/html; charset=utf-8",
        Some("png") => "image/png",
        Some("txt") => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    };
    Ok(([(header::CONTENT_TYPE, content_type)], body).into_response())
}
