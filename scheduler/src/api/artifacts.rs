//! `GET /v1/artifacts/{key}` and the OpenAPI document; the links to
//! artefacts are [`crate::links`].

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::error::{ApiError, invalid, unavailable};
use super::state::AppState;

/// The OpenAPI 3.1 document of the API as written; [`openapi_document`]
/// is what `/v1/openapi.json` serves.
pub const OPENAPI: &str = include_str!("../openapi.json");

/// The OpenAPI document served: [`OPENAPI`] with its `FetchOptions`,
/// `JobRequest` and `CrawlOptions` schemas generated from their
/// declarations, so it lists every option with its type and description.
pub fn openapi_document() -> &'static str {
    static DOC: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
        let mut doc: serde_json::Value = serde_json::from_str(OPENAPI).expect("the OpenAPI document is JSON");
        doc["components"]["schemas"]["FetchOptions"] =
            serde_json::Value::Object(oxwright_jobs::schema::fetch_options_schema());
        doc["components"]["schemas"]["JobRequest"] =
            serde_json::Value::Object(oxwright_jobs::schema::job_request_schema());
        doc["components"]["schemas"]["CrawlOptions"] =
            serde_json::Value::Object(oxwright_jobs::schema::schema_of::<oxwright_jobs::CrawlOptions>());
        doc.to_string()
    });
    &DOC
}

pub(crate) async fn openapi() -> Response {
    ([(header::CONTENT_TYPE, "application/json")], openapi_document()).into_response()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_served_document_lists_every_fetch_option() {
        let doc: serde_json::Value = serde_json::from_str(openapi_document()).unwrap();
        let options = &doc["components"]["schemas"]["FetchOptions"]["properties"];
        for key in [
            "render",
            "timeout_ms",
            "wait_until",
            "actions",
            "max_age_ms",
            "proxy",
            "cookies",
        ] {
            assert!(options.get(key).is_some(), "FetchOptions lacks {key}");
        }
        // The request adds the URL beside the options.
        assert!(options.get("url").is_none());
        let request = &doc["components"]["schemas"]["FetchRequest"]["allOf"];
        assert_eq!(request[0]["$ref"], "#/components/schemas/FetchOptions");
    }

    #[test]
    fn the_served_document_lists_every_crawl_option() {
        let doc: serde_json::Value = serde_json::from_str(openapi_document()).unwrap();
        let options = &doc["components"]["schemas"]["CrawlOptions"]["properties"];
        for key in [
            "max_depth",
            "limit",
            "include",
            "exclude",
            "ignore_robots",
            "per_host_concurrency",
            "normalise",
        ] {
            assert!(options.get(key).is_some(), "CrawlOptions lacks {key}");
        }
        assert_eq!(options["max_depth"]["default"], 5);
        assert!(doc["paths"]["/v1/crawls"]["post"].is_object());
    }
}
