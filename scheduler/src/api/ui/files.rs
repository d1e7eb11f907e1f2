//! Stored artefacts, served so that nothing in them runs: a sandboxing
//! Content-Security-Policy on every answer (an HTML artefact becomes a
//! document of a unique origin with no script), and a page's kept HTML as
//! text. Only job and session artefacts are served.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};

use crate::api::error::{invalid, not_found, unavailable};
use crate::api::state::AppState;

/// What an artefact may do when opened: nothing but show itself (the
/// report's pictures and inline styles).
const FILE_CSP: &str =
    "sandbox; default-src 'none'; img-src 'self' data:; style-src 'unsafe-inline'; media-src 'self'";

/// `GET /ui/files/{key}`.
pub(super) async fn get(State(state): State<Arc<AppState>>, Path(key): Path<String>) -> Response {
    let allowed = key.starts_with("jobs/") || key.starts_with("sessions/");
    if oxwright_artifacts::validate_key(&key).is_err() || !allowed {
        return invalid("bad artefact key: jobs/… or sessions/…").page(&state);
    }
    let body = match state.store.get(&key).await {
        Ok(body) => body,
        Err(oxwright_artifacts::ArtifactError::NotFound { .. }) => {
            return not_found(format!("no artefact {key}")).page(&state);
        }
        Err(err) => return unavailable(err).page(&state),
    };
    let name = key.rsplit('/').next().unwrap_or("");
    let content_type = match name.rsplit_once('.').map(|(_, ext)| ext) {
        // The run's own report: markup, but sandboxed like the rest.
        Some("html") if name == "report.html" => "text/html; charset=utf-8",
        Some("png") => "image/png",
        Some("jpg" | "jpeg") => "image/jpeg",
        Some("json") => "application/json",
        Some("pdf") => "application/pdf",
        // A page's HTML, Markdown, logs, specs: as text.
        _ => "text/plain; charset=utf-8",
    };
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CONTENT_SECURITY_POLICY, FILE_CSP),
        ],
        body,
    )
        .into_response()
}
