//! The scheduler daemon: consumes job reports and keeps batch manifests,
//! serves the HTTP API (`POST /jobs`, `POST /batches`,
//! `GET /batches/{id}`, `POST /webhooks/{name}`), and submits the
//! configured schedules on their cron expressions.

use std::collections::BTreeMap;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use chrono::Utc;
use oxwright_artifacts::ArtifactStore;
use oxwright_jobs::{ErrorKind, JobError, JobSpec};
use oxwright_policy::UrlPolicy;
use oxwright_queue::JobQueue;
use serde::{Deserialize, Serialize};
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

use crate::batch::{BatchError, new_batch_id};
use crate::submit::{SubmitReceipt, submit_batch};
use crate::template::JobTemplate;
use crate::tracker::BatchTracker;

/// A cron schedule: `cron` (seconds first: `sec min hour day month
/// weekday [year]`, UTC) → a batch from `job` at every tick.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScheduleConfig {
    /// The schedule's name (batch ids start with it).
    pub name: String,
    /// The cron expression.
    pub cron: String,
    /// What to submit.
    pub job: JobTemplate,
}

/// A webhook: `POST /webhooks/<name>` submits `job`. When `secret_env`
/// names an environment variable, callers must send its value as
/// `Authorization: Bearer <secret>`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebhookConfig {
    /// The webhook's name, its path segment.
    pub name: String,
    /// Environment variable holding the shared secret.
    #[serde(default)]
    pub secret_env: Option<String>,
    /// What to submit.
    pub job: JobTemplate,
}

/// How the daemon runs.
#[derive(Debug, Clone)]
pub struct SchedulerOptions {
    /// The URL policy submissions are checked against.
    pub policy: Arc<UrlPolicy>,
    /// How often manifests with new lines are written.
    pub flush_interval: Duration,
    /// Cron schedules.
    pub schedules: Vec<ScheduleConfig>,
    /// Webhooks.
    pub webhooks: Vec<WebhookConfig>,
    /// Resolved webhook secrets by webhook name (never logged).
    pub webhook_secrets: BTreeMap<String, String>,
    /// The HTTP API's token, body limit and webhook signing key.
    pub api: ApiOptions,
}

/// How the HTTP API guards itself.
#[derive(Clone)]
pub struct ApiOptions {
    /// When set, every route but `/healthz` and `/webhooks/{name}` (which
    /// have their own secrets) needs `Authorization: Bearer <token>`.
    pub token: Option<String>,
    /// Largest request body, in bytes; larger ones get 413.
    pub max_body_bytes: usize,
    /// The key batch webhook deliveries are signed with (HMAC-SHA256);
    /// unsigned without one.
    pub signing_secret: Option<String>,
}

/// Default largest request body: 10 MiB (about 100,000 URLs).
pub const DEFAULT_MAX_BODY_BYTES: usize = 10 * 1024 * 1024;

impl Default for ApiOptions {
    fn default() -> Self {
        Self {
            token: None,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            signing_secret: None,
        }
    }
}

impl std::fmt::Debug for ApiOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The secrets themselves are never printed.
        f.debug_struct("ApiOptions")
            .field("token", &self.token.is_some())
            .field("max_body_bytes", &self.max_body_bytes)
            .field("signing_secret", &self.signing_secret.is_some())
            .finish()
    }
}

/// Why the daemon stopped or could not start.
#[derive(Debug, thiserror::Error)]
pub enum SchedulerError {
    /// A queue or store failure.
    #[error(transparent)]
    Batch(#[from] BatchError),
    /// A schedule's cron expression is invalid.
    #[error("schedule {name:?}: invalid cron expression {cron:?}: {message}")]
    Cron {
        /// The schedule.
        name: String,
        /// The expression.
        cron: String,
        /// Why.
        message: String,
    },
    /// The HTTP server failed.
    #[error("HTTP API: {0}")]
    Http(#[from] std::io::Error),
}

pub(crate) struct AppState {
    pub(crate) queue: Arc<dyn JobQueue>,
    pub(crate) store: Arc<dyn ArtifactStore>,
    pub(crate) tracker: Mutex<BatchTracker>,
    pub(crate) opts: SchedulerOptions,
    /// `POST /v1/fetch` requests waiting for their report.
    pub(crate) waiters: crate::v1::Waiters,
    /// Batch webhook deliveries.
    pub(crate) hooks: crate::hooks::Hooks,
}

/// Runs the daemon until `shutdown`: the report loop, the HTTP API on
/// `listener` (when given) and the schedules. Flushes every manifest
/// before returning.
pub async fn run_scheduler(
    queue: Arc<dyn JobQueue>,
    store: Arc<dyn ArtifactStore>,
    opts: SchedulerOptions,
    listener: Option<tokio::net::TcpListener>,
    shutdown: CancellationToken,
) -> Result<(), SchedulerError> {
    let schedules = opts
        .schedules
        .iter()
        .map(|s| {
            cron::Schedule::from_str(&s.cron)
                .map(|cron| (s.clone(), cron))
                .map_err(|e| SchedulerError::Cron {
                    name: s.name.clone(),
                    cron: s.cron.clone(),
                    message: e.to_string(),
                })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let state = Arc::new(AppState {
        tracker: Mutex::new(BatchTracker::new(store.clone())),
        queue: queue.clone(),
        store,
        hooks: crate::hooks::Hooks::new(opts.api.signing_secret.clone()),
        waiters: crate::v1::Waiters::default(),
        opts,
    });
    let tasks = tokio_util::task::TaskTracker::new();
    for (config, cron) in schedules {
        tasks.spawn(run_schedule(state.clone(), config, cron, shutdown.clone()));
    }
    if let Some(listener) = listener {
        let app = router(state.clone());
        let stop = shutdown.clone();
        tasks.spawn(async move {
            let served = axum::serve(listener, app)
                .with_graceful_shutdown(stop.cancelled_owned())
                .await;
            if let Err(err) = served {
                tracing::error!(error = %err, "HTTP API stopped");
            }
        });
    }
    tasks.close();
    let result = report_loop(&state, &shutdown).await;
    shutdown.cancel();
    tasks.wait().await;
    let flushed = state.tracker.lock().await.flush().await;
    if let Ok(summaries) = &flushed {
        finished(&state, summaries).await;
    }
    result?;
    flushed.map_err(BatchError::from)?;
    Ok(())
}

/// Reports held unacked (recorded, their manifests not yet written) that
/// make the report loop write the manifests before the next tick, well
/// below the broker's report prefetch, so reports keep flowing.
pub const FLUSH_AT_HELD: usize = 256;

async fn report_loop(state: &AppState, shutdown: &CancellationToken) -> Result<(), SchedulerError> {
    let mut reports = state.queue.reports().await.map_err(BatchError::from)?;
    let every = state.opts.flush_interval;
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // While the store fails only the tick tries again.
    let mut written = true;
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => {
                // Reports already waiting are recorded before the last
                // flush (an embedded daemon's in-process queue would lose
                // them); a broker would hand them to the next scheduler.
                while let Ok(Some(next)) =
                    tokio::time::timeout(REPORT_DRAIN_WAIT, reports.next_unacked()).await
                {
                    take_report(state, next, &mut written).await;
                }
                // While the subscription lives, so the held reports can be acked.
                flush(state).await;
                return Ok(());
            }
            _ = tick.tick() => written = flush(state).await,
            // Each report is acked once the manifest holding its line is
            // written (`BatchTracker::hold`), not when it is read.
            next = reports.next_unacked() => match next {
                Some(next) => take_report(state, next, &mut written).await,
                None => return Err(BatchError::Queue(oxwright_queue::QueueError::Closed).into()),
            },
        }
    }
}

/// How long a stopping report loop waits for one more waiting report.
const REPORT_DRAIN_WAIT: Duration = Duration::from_millis(200);

/// Records one report (its ack held until its line is written), tells its
/// waiter and its batch's webhook; flushes when many reports are held.
async fn take_report(
    state: &AppState,
    (report, ack): (
        Result<oxwright_jobs::JobReport, oxwright_queue::QueueError>,
        oxwright_queue::ReportAck,
    ),
    written: &mut bool,
) {
    let report = match report {
        Ok(report) => report,
        Err(err) => {
            tracing::warn!(error = %err, "unreadable report dropped");
            if let Err(err) = ack.ack().await {
                tracing::debug!(error = %err, "ack of an unreadable report failed");
            }
            return;
        }
    };
    let job_id = report.job_id;
    let mut tracker = state.tracker.lock().await;
    match tracker.hold(report.clone(), ack).await {
        Ok(outcome) => {
            tracing::debug!(%job_id, ?outcome, "report");
            if outcome == crate::tracker::Recorded::New {
                state.waiters.notify(&report);
                if let Some(batch_id) = report.batch_id.as_deref()
                    && !state.hooks.knows(batch_id)
                {
                    let hook = tracker.record_of(batch_id).and_then(|r| r.webhook.clone());
                    state.hooks.register(batch_id, hook);
                }
                state.hooks.page(&report);
            }
        }
        Err(err) => tracing::warn!(
            %job_id, error = %err,
            "report not recorded yet; kept unacked, tried again at the next flush"
        ),
    }
    let held = tracker.held();
    drop(tracker);
    if held >= FLUSH_AT_HELD && *written {
        *written = flush(state).await;
    }
}

/// Writes the manifests with new lines; on failure the lines and their
/// reports stay held for the next try. Says whether it succeeded.
async fn flush(state: &AppState) -> bool {
    let flushed = state.tracker.lock().await.flush().await;
    match flushed {
        Ok(summaries) => {
            finished(state, &summaries).await;
            true
        }
        Err(err) => {
            tracing::warn!(error = %err, "writing manifests failed; the next flush tries again");
            false
        }
    }
}

/// Sends the last webhook event of every batch just completed.
async fn finished(state: &AppState, summaries: &[crate::batch::BatchSummary]) {
    for summary in summaries {
        if !state.hooks.has_webhook(&summary.batch_id) {
            state.hooks.forget(&summary.batch_id);
            continue;
        }
        let cancelled = state
            .store
            .exists(&oxwright_jobs::keys::batch_cancelled(&summary.batch_id))
            .await
            .unwrap_or(false);
        state.hooks.finished(summary, cancelled);
    }
}

async fn run_schedule(
    state: Arc<AppState>,
    config: ScheduleConfig,
    cron: cron::Schedule,
    shutdown: CancellationToken,
) {
    tracing::info!(schedule = %config.name, cron = %config.cron, "schedule armed");
    loop {
        let Some(next) = cron.upcoming(Utc).next() else {
            tracing::info!(schedule = %config.name, "schedule has no further ticks");
            return;
        };
        let wait = (next - Utc::now()).to_std().unwrap_or_default();
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep(wait) => {}
        }
        let batch_id = format!("{}-{}", config.name, new_batch_id());
        let source = format!("schedule:{}", config.name);
        match submit_template(&state, &batch_id, &config.job, &source).await {
            Ok(receipt) => {
                tracing::info!(schedule = %config.name, batch_id = %receipt.batch_id, jobs = receipt.published, "schedule fired")
            }
            Err(err) => {
                tracing::warn!(schedule = %config.name, error = %err.message, "schedule could not submit")
            }
        }
    }
}

/// Builds the HTTP API.
fn router(state: Arc<AppState>) -> Router {
    use crate::v1;
    let guarded = Router::new()
        .route("/jobs", post(post_job))
        .route("/batches", post(post_batch))
        .route("/batches/{id}", get(get_batch))
        .route("/v1/fetch", post(v1::post_fetch))
        .route("/v1/batches", post(v1::post_batch))
        .route("/v1/batches/{id}", get(v1::get_batch).delete(v1::delete_batch))
        .route("/v1/artifacts/{*key}", get(v1::get_artifact))
        .route_layer(axum::middleware::from_fn_with_state(state.clone(), require_token));
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/v1/openapi.json", get(v1::openapi))
        .route("/webhooks/{name}", post(post_webhook))
        .merge(guarded)
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
    if let Some(token) = &state.opts.api.token {
        let given = request
            .headers()
            .get(axum::http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        if !given.is_some_and(|g| constant_time_eq(g.as_bytes(), token.as_bytes())) {
            return ApiError::new(
                StatusCode::UNAUTHORIZED,
                "unauthorized",
                "missing or wrong bearer token: send `Authorization: Bearer <token>`",
            )
            .into_response();
        }
    }
    next.run(request).await
}

/// An API error: a status and a typed body.
pub(crate) struct ApiError {
    status: StatusCode,
    kind: String,
    message: String,
}

impl ApiError {
    /// The error of a body that could not be read: 413 when too large, 415
    /// without a JSON content type, 400 otherwise (axum's 422 included).
    pub(crate) fn from_rejection(err: axum::extract::rejection::JsonRejection) -> Self {
        let (status, kind) = match err.status() {
            StatusCode::PAYLOAD_TOO_LARGE => (StatusCode::PAYLOAD_TOO_LARGE, "too_large"),
            StatusCode::UNSUPPORTED_MEDIA_TYPE => {
                (StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type")
            }
            _ => (StatusCode::BAD_REQUEST, "invalid_input"),
        };
        Self::new(status, kind, err.body_text())
    }

    pub(crate) fn new(status: StatusCode, kind: &str, message: impl Into<String>) -> Self {
        Self {
            status,
            kind: kind.to_owned(),
            message: message.into(),
        }
    }
}

impl From<JobError> for ApiError {
    fn from(err: JobError) -> Self {
        let status = match err.kind {
            ErrorKind::InvalidInput | ErrorKind::PolicyDenied => StatusCode::BAD_REQUEST,
            _ => StatusCode::SERVICE_UNAVAILABLE,
        };
        Self::new(status, err.kind.as_str(), err.message)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = serde_json::json!({ "error": self.kind, "message": self.message });
        (self.status, Json(body)).into_response()
    }
}

/// Submits `template` as batch `batch_id`; errors are typed job errors.
async fn submit_template(
    state: &AppState,
    batch_id: &str,
    template: &JobTemplate,
    source: &str,
) -> Result<SubmitReceipt, JobError> {
    crate::template::submit_template(
        state.queue.as_ref(),
        state.store.as_ref(),
        &state.opts.policy,
        batch_id,
        template,
        source,
    )
    .await
}

/// `POST /jobs` body: one job spec (`{"kind": "fetch", "spec": {...}}`),
/// nothing else beside it.
#[derive(Debug)]
struct JobRequest {
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

/// `POST /jobs` answer.
#[derive(Debug, Serialize)]
struct JobAccepted {
    job_id: String,
    batch_id: String,
    result: String,
}

async fn post_job(
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
    submit_one(state, &batch_id, job, "api").await?;
    Ok((StatusCode::ACCEPTED, Json(accepted)))
}

/// Submits `job` as the one job of batch `batch_id`.
pub(crate) async fn submit_one(
    state: &AppState,
    batch_id: &str,
    job: oxwright_jobs::Job,
    source: &str,
) -> Result<(), ApiError> {
    submit_batch(
        state.queue.as_ref(),
        state.store.as_ref(),
        batch_id,
        vec![job],
        Vec::new(),
        source,
    )
    .await
    .map(|_| ())
    .map_err(|e| ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "unavailable", e.to_string()))
}

async fn post_batch(
    State(state): State<Arc<AppState>>,
    body: Result<Json<JobTemplate>, axum::extract::rejection::JsonRejection>,
) -> Result<(StatusCode, Json<SubmitReceipt>), ApiError> {
    let Json(template) = body.map_err(ApiError::from_rejection)?;
    let receipt = submit_template(&state, &new_batch_id(), &template, "api").await?;
    Ok((StatusCode::ACCEPTED, Json(receipt)))
}

async fn get_batch(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
) -> Result<Json<crate::tracker::BatchStatus>, ApiError> {
    if oxwright_artifacts::validate_key(&oxwright_jobs::keys::batch_record(&id)).is_err() {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_input",
            "bad batch id",
        ));
    }
    let status = state.tracker.lock().await.status(&id).await;
    match status {
        Ok(Some(status)) => Ok(Json(status)),
        Ok(None) => Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("no batch {id}"),
        )),
        Err(err) => Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "unavailable",
            err.to_string(),
        )),
    }
}

async fn post_webhook(
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
    if let Some(secret) = state.opts.webhook_secrets.get(&hook.name) {
        let given = headers
            .get(axum::http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        if !given.is_some_and(|g| constant_time_eq(g.as_bytes(), secret.as_bytes())) {
            return Err(ApiError::new(
                StatusCode::UNAUTHORIZED,
                "unauthorized",
                "missing or wrong bearer token",
            ));
        }
    }
    let batch_id = format!("{}-{}", hook.name, new_batch_id());
    let receipt = submit_template(&state, &batch_id, &hook.job, &format!("webhook:{}", hook.name)).await?;
    Ok((StatusCode::ACCEPTED, Json(receipt)))
}

/// Compares secrets without an early exit on the first differing byte.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
