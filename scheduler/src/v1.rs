//! The v1 HTTP API: `POST /v1/fetch` (one page, answered when it is done),
//! `POST /v1/batches` (URLs or a sitemap, with a webhook), `GET
//! /v1/batches/{id}` (status and paged results), `DELETE /v1/batches/{id}`
//! (cancel), `GET /v1/artifacts/{key}` and the OpenAPI document at
//! `/v1/openapi.json`. Every error is `{"error": kind, "message": …}`.

use std::sync::Arc;
use std::time::Duration;

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use oxwright_jobs::{FetchSpec, Job, JobError, JobId, JobKind, JobReport, JobSpec, ReportStatus, keys};
use serde::{Deserialize, Serialize};

use crate::batch::{BatchLine, new_batch_id, parse_url_entry};
use crate::daemon::{ApiError, AppState};
use crate::hooks::BatchWebhook;
use crate::template::JobTemplate;

/// The OpenAPI 3.1 document of the API, served at `/v1/openapi.json`.
pub const OPENAPI: &str = include_str!("openapi.json");

/// Default wait of `POST /v1/fetch` for its page.
pub const DEFAULT_FETCH_DEADLINE_MS: u64 = 120_000;
/// Longest wait `POST /v1/fetch` accepts.
pub const MAX_FETCH_DEADLINE_MS: u64 = 600_000;
/// Most results one `GET /v1/batches/{id}` page returns.
pub const MAX_PAGE: usize = 1_000;

fn invalid(message: impl Into<String>) -> ApiError {
    ApiError::new(StatusCode::BAD_REQUEST, "invalid_input", message)
}

fn unavailable(err: impl std::fmt::Display) -> ApiError {
    ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "unavailable", err.to_string())
}

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

/// The answer of `POST /v1/fetch`.
#[derive(Debug, Serialize)]
pub(crate) struct FetchAnswer {
    job_id: JobId,
    batch_id: String,
    /// `ok` or `failed`.
    status: ReportStatus,
    url: String,
    /// The fetch result (`result.json`): Markdown, metadata, links …
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<JobError>,
    artifacts: Vec<ArtifactLink>,
    duration_ms: f64,
}

pub(crate) async fn post_fetch(
    State(state): State<Arc<AppState>>,
    body: Result<Json<serde_json::Value>, axum::extract::rejection::JsonRejection>,
) -> Result<Response, ApiError> {
    let Json(body) = body.map_err(ApiError::from_rejection)?;
    let serde_json::Value::Object(mut fields) = body else {
        return Err(invalid("the body must be a JSON object: a fetch job's fields"));
    };
    let deadline_ms = match fields.remove("deadline_ms") {
        None => DEFAULT_FETCH_DEADLINE_MS,
        Some(v) => v
            .as_u64()
            .filter(|ms| (1..=MAX_FETCH_DEADLINE_MS).contains(ms))
            .ok_or_else(|| invalid(format!("deadline_ms must be 1 to {MAX_FETCH_DEADLINE_MS}")))?,
    };
    let spec: FetchSpec = serde_json::from_value(serde_json::Value::Object(fields))
        .map_err(|e| invalid(format!("bad fetch: {e}")))?;
    spec.validate()?;
    let url = match parse_url_entry(spec.url.as_str(), &state.opts.policy) {
        BatchLine::Url(url) => url,
        BatchLine::Invalid { error, .. } => return Err(error.into()),
    };
    let batch_id = new_batch_id();
    let mut spec = spec;
    spec.url = url;
    let mut job = Job::new(JobSpec::Fetch(spec), Some(batch_id.clone()));
    let deadline = Duration::from_millis(deadline_ms);
    // Not started by then, it is not worth starting: no one waits for it.
    job.deadline = Some(job.created_at + chrono::Duration::milliseconds(deadline_ms as i64));
    let job_id = job.id;
    let waiter = state.waiters.wait_for(job_id);
    crate::daemon::submit_one(&state, &batch_id, job, "api:fetch").await?;
    let report = match wait_report(&state, waiter, job_id, deadline).await {
        Some(report) => {
            state.waiters.forget(job_id);
            report
        }
        None => {
            state.waiters.forget(job_id);
            return Err(ApiError::new(
                StatusCode::GATEWAY_TIMEOUT,
                "timeout",
                format!(
                    "the page was not done within deadline_ms={deadline_ms}; job {job_id} of batch {batch_id} \
                     may still finish: GET /v1/batches/{batch_id}"
                ),
            ));
        }
    };
    let result = match report.status {
        ReportStatus::Ok => match state.store.get(&keys::job_result(JobKind::Fetch, job_id)).await {
            Ok(body) => serde_json::from_slice(&body).ok(),
            Err(err) => return Err(unavailable(err)),
        },
        ReportStatus::Failed => None,
    };
    let status = match report.status {
        ReportStatus::Ok => StatusCode::OK,
        ReportStatus::Failed => StatusCode::BAD_GATEWAY,
    };
    let answer = FetchAnswer {
        job_id,
        batch_id,
        status: report.status,
        url: report.url,
        result,
        error: report.error,
        artifacts: artifact_links(&report.artifacts),
        duration_ms: report.duration_ms,
    };
    Ok((status, Json(answer)).into_response())
}

/// Waits for the report of `job_id`: from this daemon's report loop, or,
/// when another scheduler took it off the queue, from the store.
async fn wait_report(
    state: &AppState,
    mut waiter: tokio::sync::oneshot::Receiver<JobReport>,
    job_id: JobId,
    deadline: Duration,
) -> Option<JobReport> {
    let until = tokio::time::Instant::now() + deadline;
    let mut poll = tokio::time::interval(Duration::from_secs(1));
    poll.tick().await;
    loop {
        tokio::select! {
            report = &mut waiter => return report.ok(),
            _ = tokio::time::sleep_until(until) => return None,
            _ = poll.tick() => {
                if let Some(report) = stored_report(state, job_id).await {
                    return Some(report);
                }
            }
        }
    }
}

/// The report of a finished fetch rebuilt from its stored artefacts.
async fn stored_report(state: &AppState, job_id: JobId) -> Option<JobReport> {
    let result_key = keys::job_result(JobKind::Fetch, job_id);
    let error_key = keys::job_artifact(JobKind::Fetch, job_id, "error.json");
    let (status, error, key) = if state.store.exists(&result_key).await.ok()? {
        (ReportStatus::Ok, None, result_key)
    } else if let Ok(body) = state.store.get(&error_key).await {
        let doc: serde_json::Value = serde_json::from_slice(&body).ok()?;
        let error: JobError = serde_json::from_value(doc.get("error")?.clone()).ok()?;
        (ReportStatus::Failed, Some(error), error_key)
    } else {
        return None;
    };
    let artifacts = match status {
        ReportStatus::Ok => state
            .store
            .list(&keys::job_artifact(JobKind::Fetch, job_id, ""))
            .await
            .unwrap_or_else(|_| vec![key]),
        ReportStatus::Failed => vec![key],
    };
    Some(JobReport {
        job_id,
        kind: JobKind::Fetch,
        batch_id: None,
        url: String::new(),
        status,
        error,
        artifacts,
        attempt: 0,
        duration_ms: 0.0,
        finished_at: chrono::Utc::now(),
    })
}

/// `POST /v1/batches` body.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct BatchRequest {
    /// Page URLs.
    #[serde(default)]
    urls: Vec<String>,
    /// A site (domain or sitemap URL) whose sitemap URLs are fetched.
    #[serde(default)]
    sitemap: Option<String>,
    /// Fetch options for every page (a fetch job's fields but `url`).
    #[serde(default)]
    options: serde_json::Map<String, serde_json::Value>,
    /// Where the batch's events go.
    #[serde(default)]
    webhook: Option<BatchWebhook>,
}

/// `POST /v1/batches` answer.
#[derive(Debug, Serialize)]
pub(crate) struct BatchAccepted {
    batch_id: String,
    total: usize,
    published: usize,
    refused: usize,
    status_url: String,
}

pub(crate) async fn post_batch(
    State(state): State<Arc<AppState>>,
    body: Result<Json<serde_json::Value>, axum::extract::rejection::JsonRejection>,
) -> Result<(StatusCode, Json<BatchAccepted>), ApiError> {
    let Json(body) = body.map_err(ApiError::from_rejection)?;
    let req: BatchRequest = serde_json::from_value(body).map_err(|e| invalid(format!("bad batch: {e}")))?;
    if let Some(hook) = &req.webhook {
        hook.validate(&state.opts.policy).map_err(invalid)?;
    }
    let urls = match (&req.sitemap, req.urls.is_empty()) {
        (Some(_), false) => return Err(invalid("give `urls` or `sitemap`, not both")),
        (None, true) => return Err(invalid("give `urls` (a list of page URLs) or `sitemap`")),
        (None, false) => req.urls,
        (Some(site), true) => {
            let loader = oxwright_sitemap::SitemapLoader::new(
                state.opts.policy.clone(),
                oxwright_sitemap::SitemapOptions::default(),
            );
            let loaded = loader
                .load(site)
                .await
                .map_err(|e| JobError::from(e).with_url(site.clone()))?;
            if loaded.urls.is_empty() {
                return Err(invalid(format!("the sitemap of {site} lists no URL")));
            }
            loaded.urls.into_iter().map(|u| u.loc).collect()
        }
    };
    let template = JobTemplate {
        kind: JobKind::Fetch,
        urls,
        options: req.options,
    };
    let batch_id = new_batch_id();
    let (jobs, refused) = template.jobs(&batch_id, &state.opts.policy)?;
    let receipt = crate::submit::submit_batch_with(
        state.queue.as_ref(),
        state.store.as_ref(),
        &batch_id,
        jobs,
        refused,
        "api:v1",
        req.webhook.clone(),
    )
    .await
    .map_err(unavailable)?;
    state.hooks.register(&batch_id, req.webhook);
    state.hooks.started(&batch_id, receipt.total);
    Ok((
        StatusCode::ACCEPTED,
        Json(BatchAccepted {
            status_url: format!("/v1/batches/{batch_id}"),
            batch_id,
            total: receipt.total,
            published: receipt.published,
            refused: receipt.refused,
        }),
    ))
}

/// `GET /v1/batches/{id}` query.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PageQuery {
    /// Results skipped (manifest order).
    #[serde(default)]
    offset: usize,
    /// Results returned (at most [`MAX_PAGE`]).
    #[serde(default = "default_limit")]
    limit: usize,
    /// Inlines each ok page's Markdown.
    #[serde(default)]
    markdown: bool,
}

fn default_limit() -> usize {
    100
}

/// One result of a batch.
#[derive(Debug, Serialize)]
pub(crate) struct BatchResult {
    job_id: JobId,
    url: String,
    status: ReportStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<JobError>,
    artifacts: Vec<ArtifactLink>,
    #[serde(skip_serializing_if = "Option::is_none")]
    markdown: Option<String>,
}

/// `GET /v1/batches/{id}` answer.
#[derive(Debug, Serialize)]
pub(crate) struct BatchView {
    #[serde(flatten)]
    status: crate::tracker::BatchStatus,
    /// `running`, `completed` or `cancelled`.
    state: &'static str,
    results: Vec<BatchResult>,
    offset: usize,
    /// The offset of the next page; absent on the last one so far.
    #[serde(skip_serializing_if = "Option::is_none")]
    next_offset: Option<usize>,
}

fn check_batch_id(id: &str) -> Result<(), ApiError> {
    if oxwright_artifacts::validate_key(&keys::batch_record(id)).is_err() || id.contains('/') {
        return Err(invalid("bad batch id"));
    }
    Ok(())
}

pub(crate) async fn get_batch(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    query: Result<Query<PageQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<BatchView>, ApiError> {
    check_batch_id(&id)?;
    let Query(query) = query.map_err(|e| invalid(e.body_text()))?;
    if query.limit == 0 || query.limit > MAX_PAGE {
        return Err(invalid(format!("limit must be 1 to {MAX_PAGE}")));
    }
    let (status, lines) = {
        let mut tracker = state.tracker.lock().await;
        let status = tracker.status(&id).await.map_err(unavailable)?;
        (status, tracker.manifest_lines(&id))
    };
    let Some(status) = status else {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("no batch {id}"),
        ));
    };
    let lines = match lines {
        Some(lines) => lines,
        None => match state.store.get(&keys::batch_manifest(&id)).await {
            Ok(body) => body.to_vec(),
            Err(oxwright_artifacts::ArtifactError::NotFound { .. }) => Vec::new(),
            Err(err) => return Err(unavailable(err)),
        },
    };
    let cancelled = state
        .store
        .exists(&keys::batch_cancelled(&id))
        .await
        .map_err(unavailable)?;
    let all: Vec<&[u8]> = lines.split(|b| *b == b'\n').filter(|l| !l.is_empty()).collect();
    let mut results = Vec::new();
    for line in all.iter().skip(query.offset).take(query.limit) {
        let Ok(report) = serde_json::from_slice::<JobReport>(line) else {
            continue;
        };
        let markdown = match (query.markdown, report.status) {
            (true, ReportStatus::Ok) => {
                let key = keys::job_artifact(report.kind, report.job_id, "page.md");
                state
                    .store
                    .get(&key)
                    .await
                    .ok()
                    .map(|b| String::from_utf8_lossy(&b).into_owned())
            }
            _ => None,
        };
        results.push(BatchResult {
            job_id: report.job_id,
            url: report.url,
            status: report.status,
            error: report.error,
            artifacts: artifact_links(&report.artifacts),
            markdown,
        });
    }
    let end = query.offset.saturating_add(query.limit);
    let state_name = if cancelled {
        "cancelled"
    } else if status.complete {
        "completed"
    } else {
        "running"
    };
    Ok(Json(BatchView {
        next_offset: (end < all.len()).then_some(end),
        offset: query.offset,
        results,
        state: state_name,
        status,
    }))
}

/// What `DELETE /v1/batches/{id}` writes and answers.
#[derive(Debug, Serialize, Deserialize)]
struct Cancelled {
    batch_id: String,
    cancelled_at: chrono::DateTime<chrono::Utc>,
}

pub(crate) async fn delete_batch(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
) -> Result<(StatusCode, Json<serde_json::Value>), ApiError> {
    check_batch_id(&id)?;
    let status = state
        .tracker
        .lock()
        .await
        .status(&id)
        .await
        .map_err(unavailable)?;
    let Some(status) = status else {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("no batch {id}"),
        ));
    };
    if status.complete {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "conflict",
            format!("batch {id} is complete: nothing to cancel"),
        ));
    }
    let marker = Cancelled {
        batch_id: id.clone(),
        cancelled_at: chrono::Utc::now(),
    };
    let body = serde_json::to_vec_pretty(&marker).expect("markers serialise");
    state
        .store
        .put(&keys::batch_cancelled(&id), Bytes::from(body), "application/json")
        .await
        .map_err(unavailable)?;
    tracing::info!(batch_id = %id, "batch cancelled: its jobs not yet started are skipped");
    Ok((
        StatusCode::ACCEPTED,
        Json(serde_json::json!({
            "batch_id": id,
            "state": "cancelled",
            "message": "jobs not yet started are skipped and get a `cancelled` line; running ones finish",
        })),
    ))
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

/// The `POST /v1/fetch` requests waiting for their job's report.
#[derive(Debug, Default)]
pub(crate) struct Waiters(
    std::sync::Mutex<std::collections::HashMap<JobId, tokio::sync::oneshot::Sender<JobReport>>>,
);

impl Waiters {
    fn wait_for(&self, job_id: JobId) -> tokio::sync::oneshot::Receiver<JobReport> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.0.lock().expect("waiters lock").insert(job_id, tx);
        rx
    }

    fn forget(&self, job_id: JobId) {
        self.0.lock().expect("waiters lock").remove(&job_id);
    }

    /// Hands `report` to the request waiting for it, if any.
    pub(crate) fn notify(&self, report: &JobReport) {
        if let Some(tx) = self.0.lock().expect("waiters lock").remove(&report.job_id) {
            let _ = tx.send(report.clone());
        }
    }
}
