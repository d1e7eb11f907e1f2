//! `POST /v1/fetch`: one page, answered when it is done.

use std::sync::Arc;
use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use oxwright_jobs::{FetchSpec, Job, JobError, JobId, JobKind, JobReport, JobSpec, ReportStatus, keys};
use serde::Serialize;

use super::error::{ApiError, invalid, unavailable};
use super::state::AppState;
use crate::batch::{BatchLine, new_batch_id, parse_url_entry};
use crate::links::{ArtifactLink, artifact_links};

/// Default wait of `POST /v1/fetch` for its page.
pub const DEFAULT_FETCH_DEADLINE_MS: u64 = 120_000;
/// Longest wait `POST /v1/fetch` accepts.
pub const MAX_FETCH_DEADLINE_MS: u64 = 600_000;
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
    state.submit_one(&batch_id, job, "api:fetch").await?;
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
