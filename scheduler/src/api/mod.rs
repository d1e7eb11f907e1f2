//! The scheduler's HTTP API: `/v1` (jobs, pages, batches, artefacts, the
//! OpenAPI document), configured webhooks and `/healthz`. The unversioned
//! `POST /jobs`, `POST /batches` and `GET /batches/{id}` of the first
//! API are aliases of their `/v1` routes.

mod artifacts;
mod batches;
mod checks;
pub(crate) mod crawls;
mod error;
mod fetch;
mod jobs;
mod state;
mod ui;
mod webhooks;

use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};

pub use crate::links::{ArtifactLink, artifact_links};
pub use artifacts::{OPENAPI, openapi_document};
pub use batches::MAX_PAGE;
pub use crawls::MAX_CRAWL_STARTS;
pub(crate) use error::ApiError;
pub use fetch::{DEFAULT_FETCH_DEADLINE_MS, MAX_FETCH_DEADLINE_MS};
pub(crate) use state::AppState;
pub(crate) use state::Waiters;
pub(crate) use ui::UiAuth;

/// Builds the HTTP API.
pub(crate) fn router(state: Arc<AppState>) -> Router {
    let reads = Router::new()
        .route("/v1/checks", get(checks::list_checks))
        .route("/v1/checks/{name}/runs", get(checks::list_runs))
        .route("/v1/batches/{id}", get(batches::get_batch))
        .route("/v1/artifacts/{*key}", get(artifacts::get_artifact))
        .route("/batches/{id}", get(batches::get_batch));
    let guarded = if state.opts.api.view_only {
        reads
    } else {
        Router::new()
            .route("/v1/jobs", post(jobs::post_job))
            .route("/v1/fetch", post(fetch::post_fetch))
            .route("/v1/batches", post(batches::post_batch))
            .route("/v1/crawls", post(crawls::post_crawl))
            .route(
                "/v1/batches/{id}",
                get(batches::get_batch).delete(batches::delete_batch),
            )
            .route("/v1/artifacts/{*key}", get(artifacts::get_artifact))
            .route("/v1/checks", get(checks::list_checks))
            .route(
                "/v1/checks/{name}/runs",
                get(checks::list_runs).post(checks::post_run),
            )
            // The first, unversioned API: aliases.
            .route("/jobs", post(jobs::post_job))
            .route("/batches", post(batches::post_batch))
            .route("/batches/{id}", get(batches::get_batch))
    };
    let guarded = guarded.route_layer(axum::middleware::from_fn_with_state(state.clone(), require_token));
    let mut app = Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/v1/openapi.json", get(artifacts::openapi));
    if !state.opts.api.view_only {
        app = app.route("/webhooks/{name}", post(webhooks::post_webhook));
    }
    app.merge(guarded)
        .merge(ui::router(state.clone()))
        .fallback(|| async {
            ApiError::new(
                StatusCode::NOT_FOUND,
                "not_found",
                "no such route: see /v1/openapi.json",
            )
        })
        .layer(axum::extract::DefaultBodyLimit::max(
            state.opts.api.max_body_bytes,
        ))
        .with_state(state)
}

/// Refuses a request without the API's bearer token, when one is set.
async fn require_token(
    State(state): State<Arc<AppState>>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    if let Some(token) = &state.opts.api.token
        && !bearer_is(request.headers(), token)
    {
        return ApiError::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "missing or wrong bearer token: send `Authorization: Bearer <token>`",
        )
        .into_response();
    }
    next.run(request).await
}

/// Whether the request sends `Authorization: Bearer <secret>`.
pub(crate) fn bearer_is(headers: &axum::http::HeaderMap, secret: &str) -> bool {
    headers
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .is_some_and(|given| constant_time_eq(given.as_bytes(), secret.as_bytes()))
}

/// Compares secrets without an early exit on the first differing byte.
pub(crate) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
