//! `POST /v1/jobs`: one job of any kind (`{"kind": "fetch"|"sitemap"|
//! "workflow", "spec": {…}}`), queued without waiting.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use oxwright_jobs::JobSpec;
use serde::Serialize;

use super::error::ApiError;
use super::state::AppState;
use crate::batch::new_batch_id;
use crate::template::{ExpandTemplate, JobTemplate};

/// `POST /v1/jobs` body: one job spec (`{"kind": "fetch", "spec": {...}}`),
/// nothing else beside it.
#[derive(Debug)]
pub(crate) struct JobRequest {
    spec: JobSpec,
}

impl JobRequest {
    /// The top-level fields a request may have.
    const FIELDS: [&'static str; 2] = ["kind", "spec"];

    /// Parses a request body, refusing unknown top-level fields (a
    /// flattened spec would ignore them).
    fn parse(body: serde_json::Value) -> Result<Self, ApiError> {
        let invalid = |message: String| ApiError::new(StatusCode::BAD_REQUEST, "invalid_input", message);
        let serde_json::Value::Object(fields) = &body else {
            return Err(invalid("the body must be a JSON object".into()));
        };
        if let Some(unknown) = fields.keys().find(|k| !Self::FIELDS.contains(&k.as_str())) {
            return Err(invalid(format!(
                "unknown field `{}`: a job has only `kind` and `spec`",
                crate::batch::shorten(unknown)
            )));
        }
        let spec = serde_json::from_value(body).map_err(|e| invalid(format!("bad job: {e}")))?;
        Ok(Self { spec })
    }
}

/// `POST /v1/jobs` answer.
#[derive(Debug, Serialize)]
pub(crate) struct JobAccepted {
    job_id: String,
    batch_id: String,
    result: String,
}

pub(crate) async fn post_job(
    State(state): State<Arc<AppState>>,
    body: Result<Json<serde_json::Value>, axum::extract::rejection::JsonRejection>,
) -> Result<(StatusCode, Json<JobAccepted>), ApiError> {
    let Json(body) = body.map_err(ApiError::from_rejection)?;
    let request = JobRequest::parse(body)?;
    let batch_id = new_batch_id();
    let template = match request.spec {
        JobSpec::Fetch(spec) => JobTemplate::for_fetch(&spec),
        JobSpec::Sitemap(spec) => JobTemplate {
            kind: oxwright_jobs::JobKind::Sitemap,
            urls: vec![spec.target],
            options: serde_json::Map::new(),
        },
        JobSpec::Workflow(spec) => {
            spec.validate()?;
            // The start page obeys the policy like any input URL.
            if let Some(crate::batch::BatchLine::Invalid { error, .. }) =
                crate::batch::parse_url_list(spec.start_url.as_str(), &state.opts.policy).pop()
            {
                return Err(error.into());
            }
            let job = oxwright_jobs::Job::new(JobSpec::Workflow(spec), Some(batch_id.clone()));
            return accept_one(&state, batch_id, job).await;
        }
    };
    let (jobs, refused) = template.jobs(&batch_id, &state.opts.policy)?;
    if let Some((_, err)) = refused.into_iter().next() {
        return Err(err.into());
    }
    let job = jobs.into_iter().next().expect("one url gives one job");
    accept_one(&state, batch_id, job).await
}

/// Submits `job` as batch `batch_id` of one.
async fn accept_one(
    state: &AppState,
    batch_id: String,
    job: oxwright_jobs::Job,
) -> Result<(StatusCode, Json<JobAccepted>), ApiError> {
    let accepted = JobAccepted {
        job_id: job.id.to_string(),
        batch_id: batch_id.clone(),
        result: oxwright_jobs::keys::job_result(job.kind(), job.id),
    };
    state.submit_one(&batch_id, job, "api").await?;
    Ok((StatusCode::ACCEPTED, Json(accepted)))
}
