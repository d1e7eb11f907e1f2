//! `/v1/checks`: each check's state, last run and pass rates; a check's
//! run log; and `POST /v1/checks/{name}/runs`, which starts a run now
//! (answered with the run's record when `?wait=true`).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use chrono::Utc;
use oxwright_checks::{CheckRun, Trigger};
use serde::{Deserialize, Serialize};

use super::error::{ApiError, conflict, invalid, not_found, unavailable};
use super::state::AppState;
use crate::checks::{CheckState, TriggerError, history};

/// Longest wait of `POST /v1/checks/{name}/runs?wait=true`.
pub const MAX_CHECK_WAIT: Duration = Duration::from_secs(600);
/// Most runs read for a pass rate (the last 7 days' at most).
const RATE_RUNS: usize = 2_000;

/// One check in `GET /v1/checks`.
#[derive(Debug, Serialize)]
pub(crate) struct CheckSummary {
    name: String,
    url: String,
    tags: Vec<String>,
    schedule: Option<String>,
    running: bool,
    state: CheckState,
    last_run: Option<CheckRun>,
    /// Share of runs that passed (flaky ones count as passed) over the
    /// last 24 hours, and over the last 7 days; none without runs.
    pass_rate_24h: Option<f64>,
    pass_rate_7d: Option<f64>,
}

pub(crate) async fn list_checks(
    State(state): State<Arc<AppState>>,
) -> Result<Json<Vec<CheckSummary>>, ApiError> {
    let runner = &state.checks;
    let mut out = Vec::new();
    for (name, check) in runner.checks() {
        let runs = runner.runs(name, RATE_RUNS).await.map_err(unavailable)?;
        let (pass_rate_24h, pass_rate_7d) = history::pass_rates(&runs, Utc::now());
        out.push(CheckSummary {
            name: name.to_owned(),
            url: check.url.to_string(),
            tags: check.tags.clone(),
            schedule: check.schedule.as_ref().map(ToString::to_string),
            running: runner.running(name).await,
            state: runner.state(name).await,
            pass_rate_24h,
            pass_rate_7d,
            last_run: runs.into_iter().next(),
        });
    }
    Ok(Json(out))
}

/// `?limit=` of the run log.
#[derive(Debug, Deserialize)]
pub(crate) struct RunsQuery {
    #[serde(default = "default_limit")]
    limit: usize,
}

fn default_limit() -> usize {
    50
}

pub(crate) async fn list_runs(
    State(state): State<Arc<AppState>>,
    Path(name): Path<String>,
    Query(query): Query<RunsQuery>,
) -> Result<Json<Vec<CheckRun>>, ApiError> {
    if !state.checks.checks().contains_key(&name) {
        return Err(not_found(format!("no check is named {name:?}")));
    }
    let limit = query.limit.clamp(1, 1_000);
    Ok(Json(state.checks.runs(&name, limit).await.map_err(unavailable)?))
}

/// The body of `POST /v1/checks/{name}/runs`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RunRequest {
    /// Another deployment to run against: its origin replaces the start URL's.
    #[serde(default)]
    url: Option<String>,
    /// Recorded with the run (a commit, a deploy id …).
    #[serde(default)]
    metadata: BTreeMap<String, String>,
}

/// `?wait=true`.
#[derive(Debug, Deserialize)]
pub(crate) struct WaitQuery {
    #[serde(default)]
    wait: bool,
}

/// The answer of a run started without waiting.
#[derive(Debug, Serialize)]
struct RunAccepted {
    check: String,
    run_id: String,
    job_id: oxwright_jobs::JobId,
    runs: String,
}

pub(crate) async fn post_run(
    State(state): State<Arc<AppState>>,
    Path(name): Path<String>,
    Query(query): Query<WaitQuery>,
    body: Option<Json<RunRequest>>,
) -> Result<Response, ApiError> {
    let request = body.map(|Json(b)| b).unwrap_or_default();
    start(&state, &name, request, Trigger::Api, query.wait).await
}

/// Starts a run of `name`; with `wait`, answers with its record.
pub(crate) async fn start(
    state: &AppState,
    name: &str,
    request: RunRequest,
    trigger: Trigger,
    wait: bool,
) -> Result<Response, ApiError> {
    let url = match request.url.as_deref() {
        Some(raw) => Some(
            state
                .opts
                .policy
                .parse_input(raw)
                .map_err(|e| invalid(format!("url {raw:?} refused by the URL policy: {e}")))?,
        ),
        None => None,
    };
    let started = state
        .checks
        .trigger(name, trigger, url, request.metadata, wait)
        .await
        .map_err(|e| match e {
            TriggerError::Unknown(_) => not_found(e.to_string()),
            TriggerError::Running(_) => conflict(e.to_string()),
            TriggerError::Failed(_) => unavailable(e),
        })?;
    let Some(done) = started.done else {
        let accepted = RunAccepted {
            check: name.to_string(),
            run_id: started.run_id,
            job_id: started.job_id,
            runs: format!("/v1/checks/{name}/runs"),
        };
        return Ok((StatusCode::ACCEPTED, Json(accepted)).into_response());
    };
    match tokio::time::timeout(MAX_CHECK_WAIT, done).await {
        Ok(Ok(run)) => {
            let status = if run.status.is_pass() {
                StatusCode::OK
            } else {
                StatusCode::BAD_GATEWAY
            };
            Ok((status, Json(run)).into_response())
        }
        _ => Err(ApiError::new(
            StatusCode::GATEWAY_TIMEOUT,
            "timeout",
            format!(
                "run {} of check {name:?} was not done in time; it may still finish: GET /v1/checks/{name}/runs",
                started.run_id
            ),
        )),
    }
}
