//! Job handlers, one per kind, and the dispatch that runs a job and writes
//! its artefacts.

pub mod sitemap;
pub mod workflow;

use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use chrono::Utc;
use oxwright_artifacts::{ArtifactError, ArtifactStore, PatientStore};
use oxwright_browser::{BrowserPool, UrlPolicy};
use oxwright_jobs::{ErrorKind, Job, JobError, JobReport, JobSpec, ReportStatus, keys};
use oxwright_sitemap::{SitemapLoader, SitemapOptions};

/// What a handler needs: the browser pool, the URL policy and the store.
#[derive(Debug, Clone)]
pub struct HandlerContext {
    /// The warm browsers.
    pub pool: BrowserPool,
    /// The URL policy every navigation obeys.
    pub policy: Arc<UrlPolicy>,
    /// Where artefacts go: the store given, behind a [`PatientStore`] that
    /// waits out a short outage (see [`STORE_PATIENCE`]).
    pub store: Arc<dyn ArtifactStore>,
    /// Sitemap discovery and loading, with its cache.
    pub sitemaps: SitemapLoader,
    /// Secrets and API-key environment for workflow jobs.
    pub workflow: workflow::WorkflowContext,
    /// The identity of `store`, once read (see [`store_refusal`]).
    pub store_id: Arc<std::sync::OnceLock<String>>,
    /// Batches seen cancelled (for good) or running (re-read after
    /// [`CANCEL_RECHECK`]), so a batch's jobs cost one store read a second.
    pub cancelled: Arc<std::sync::Mutex<std::collections::HashMap<String, (bool, Instant)>>>,
    /// The `[llm]` endpoint a fetch's `extract` schema is read through.
    pub extract_model: ExtractModel,
}

/// The chat model fetches with an `extract` schema are read through:
/// this worker's `[llm]` endpoint. A section that names none, or names
/// one badly, fails only the fetches that ask for it.
#[derive(Clone, Default)]
pub struct ExtractModel(pub Option<Arc<dyn oxwright_llm::ChatModel>>, pub Option<String>);

impl ExtractModel {
    /// The endpoint `section`, with the `OXWRIGHT_LLM_*` variables of
    /// `env` on top, names.
    pub fn from_section(
        section: &oxwright_llm::LlmSection,
        env: &std::collections::BTreeMap<String, String>,
    ) -> Self {
        match section.clone().with_env(env).client(env) {
            Ok(client) => Self(
                client.map(|c| Arc::new(c) as Arc<dyn oxwright_llm::ChatModel>),
                None,
            ),
            Err(why) => Self(None, Some(why)),
        }
    }

    /// The model, or the error of a fetch that needs one.
    pub fn get(&self) -> Result<&dyn oxwright_llm::ChatModel, JobError> {
        self.0
            .as_deref()
            .ok_or_else(|| oxwright_extract::llm::no_model(self.1.as_deref()))
    }
}

impl std::fmt::Debug for ExtractModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            Some(m) => write!(f, "ExtractModel({})", m.model_name(false)),
            None => f.write_str("ExtractModel(none)"),
        }
    }
}

/// How long a batch seen running is taken as running before its
/// cancellation marker is read again.
pub const CANCEL_RECHECK: std::time::Duration = std::time::Duration::from_secs(1);

/// How long a worker waits, in place, for a store that refuses a write
/// for a transient reason (an S3 server restarting, a network blip)
/// before the job fails as `storage` and goes back to the queue. A page
/// whose result is held through the outage is not loaded again.
pub const STORE_PATIENCE: std::time::Duration = std::time::Duration::from_secs(20);

impl HandlerContext {
    /// Builds a context writing through `store` with [`STORE_PATIENCE`];
    /// the sitemap loader shares the URL policy.
    pub fn new(pool: BrowserPool, policy: Arc<UrlPolicy>, store: Arc<dyn ArtifactStore>) -> Self {
        Self::with_store_patience(pool, policy, store, STORE_PATIENCE)
    }

    /// Builds a context whose writes wait up to `patience` for a store
    /// that refuses them for a transient reason (zero: not at all).
    pub fn with_store_patience(
        pool: BrowserPool,
        policy: Arc<UrlPolicy>,
        store: Arc<dyn ArtifactStore>,
        patience: std::time::Duration,
    ) -> Self {
        let sitemaps = SitemapLoader::new(policy.clone(), SitemapOptions::default());
        Self {
            pool,
            policy,
            store: Arc::new(PatientStore::new(store, patience)),
            sitemaps,
            workflow: workflow::WorkflowContext::default(),
            store_id: Arc::default(),
            cancelled: Arc::default(),
            extract_model: ExtractModel::default(),
        }
    }
}

/// Returns the job error for a failed artefact-store operation, keeping its
/// class: a transient failure is [`ErrorKind::Storage`] (retried), a
/// permanent one [`ErrorKind::Internal`].
pub fn store_error(err: &ArtifactError) -> JobError {
    let kind = if err.is_retryable() {
        ErrorKind::Storage
    } else {
        ErrorKind::Internal
    };
    JobError::new(kind, format!("artefact store: {err}"))
}

/// Runs `job`, writes its artefacts, and returns the report to publish.
/// Never fails: a failed job yields a report with a typed error and an
/// `error.json` artefact (when the store takes it).
pub async fn run_job(ctx: &HandlerContext, job: &Job) -> JobReport {
    run_job_attempt(ctx, job, false, false).await
}

/// Runs `job` like [`run_job`]. When `retry_possible` and the `error.json`
/// of a failed job cannot be written because the store failed transiently,
/// the report carries that [`ErrorKind::Storage`] error instead of the
/// job's own, so the delivery is retried rather than settled without its
/// error artefact. On the last attempt the job's own error is kept.
///
/// `delivered_before` says the job may have run already (a later attempt,
/// or a delivery the broker gave back after a worker died or a report
/// was lost): a fetch whose `result.json` is stored is then answered from
/// the store, without loading the page again.
#[tracing::instrument(skip_all, fields(job_id = %job.id, kind = %job.kind(), attempt = job.attempt))]
pub async fn run_job_attempt(
    ctx: &HandlerContext,
    job: &Job,
    retry_possible: bool,
    delivered_before: bool,
) -> JobReport {
    let started = Instant::now();
    let refused = match expired(job, Utc::now()) {
        Some(err) => Some(err),
        None => match batch_cancelled(ctx, job).await {
            Some(err) => Some(err),
            None => store_refusal(ctx, job).await,
        },
    };
    let outcome = match refused {
        Some(err) => Err(err),
        None => match &job.spec {
            JobSpec::Fetch(spec) => match stored_fetch(ctx, job, delivered_before).await {
                Some(written) => Ok(written),
                None => run_fetch(ctx, job, spec).await,
            },
            JobSpec::Sitemap(spec) => sitemap::run_sitemap(ctx, job, spec).await,
            JobSpec::Workflow(spec) => workflow::run_workflow_job(ctx, job, spec).await,
        },
    };
    let (status, error, artifacts) = match outcome {
        Ok(artifacts) => (ReportStatus::Ok, None, artifacts),
        // Not a failure: the run goes on from its checkpoint.
        Err(err) if err.kind == ErrorKind::HandedOver => (ReportStatus::Failed, Some(err), Vec::new()),
        // Its error.json would land in the wrong store too.
        Err(err) if err.kind == ErrorKind::StoreMismatch => {
            tracing::warn!(job_id = %job.id, error = %err, "job refused");
            (ReportStatus::Failed, Some(err), Vec::new())
        }
        Err(err) => {
            tracing::debug!(error = %err, "job failed");
            let key = keys::job_artifact(job.kind(), job.id, "error.json");
            let body = serde_json::to_vec_pretty(&serde_json::json!({
                "job_id": job.id, "url": job.url(), "attempt": job.attempt, "error": err,
            }))
            .unwrap_or_default();
            match ctx.store.put(&key, Bytes::from(body), "application/json").await {
                Ok(()) => (ReportStatus::Failed, Some(err), vec![key]),
                Err(store_err) if retry_possible && store_err.is_retryable() && !err.is_retryable() => {
                    tracing::warn!(error = %store_err, job_error = %err, "writing the error artefact failed; the job will be retried");
                    let mut storage = store_error(&store_err);
                    storage.message = format!("{} (writing error.json after {err})", storage.message);
                    (ReportStatus::Failed, Some(storage), Vec::new())
                }
                Err(store_err) => {
                    tracing::warn!(error = %store_err, "writing the error artefact failed");
                    (ReportStatus::Failed, Some(err), Vec::new())
                }
            }
        }
    };
    JobReport {
        job_id: job.id,
        kind: job.kind(),
        batch_id: job.batch_id.clone(),
        url: job.url().to_string(),
        status,
        error,
        artifacts,
        attempt: job.attempt,
        duration_ms: started.elapsed().as_secs_f64() * 1000.0,
        finished_at: Utc::now(),
    }
}

/// Returns the [`ErrorKind::Expired`] error of a job whose deadline is
/// not after `now`; such a job is not run.
pub fn expired(job: &Job, now: chrono::DateTime<Utc>) -> Option<JobError> {
    let deadline = job.deadline?;
    (deadline <= now).then(|| {
        JobError::new(
            ErrorKind::Expired,
            format!(
                "the deadline {} passed before the job ran (now {})",
                deadline.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
                now.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
            ),
        )
    })
}

/// Refuses a job of a cancelled batch (its `cancelled.json` marker is in
/// the store) with [`ErrorKind::Cancelled`]; a marker that cannot be read
/// lets the job run.
async fn batch_cancelled(ctx: &HandlerContext, job: &Job) -> Option<JobError> {
    let batch_id = job.batch_id.as_deref()?;
    let known = ctx
        .cancelled
        .lock()
        .expect("cancel cache lock")
        .get(batch_id)
        .copied();
    let cancelled = match known {
        Some((true, _)) => true,
        Some((false, seen)) if seen.elapsed() < CANCEL_RECHECK => false,
        _ => {
            let cancelled = match ctx.store.exists(&keys::batch_cancelled(batch_id)).await {
                Ok(found) => found,
                Err(err) => {
                    tracing::debug!(batch_id, error = %err, "cancellation marker unreadable; the job runs");
                    false
                }
            };
            let mut cache = ctx.cancelled.lock().expect("cancel cache lock");
            // Bounded: batches seen running are forgotten first.
            if cache.len() > 10_000 {
                cache.retain(|_, (c, _)| *c);
            }
            cache.insert(batch_id.to_owned(), (cancelled, Instant::now()));
            cancelled
        }
    };
    cancelled.then(|| {
        JobError::new(
            ErrorKind::Cancelled,
            format!("not run: batch {batch_id} was cancelled"),
        )
    })
}

/// Refuses a job submitted to another artefact store than this worker
/// writes to (the identity the job carries is not this store's): run
/// here, its results and manifest line would be lost to the submitter.
/// A store that cannot be read now is a transient `storage` failure.
async fn store_refusal(ctx: &HandlerContext, job: &Job) -> Option<JobError> {
    let wanted = job.store_id.as_deref()?;
    if ctx.store_id.get().map(String::as_str) == Some(wanted) {
        return None;
    }
    let ours = match oxwright_artifacts::read_store_id(ctx.store.as_ref()).await {
        Ok(ours) => ours,
        Err(err) => return Some(store_error(&err)),
    };
    if let Some(id) = &ours {
        let _ = ctx.store_id.set(id.clone());
    }
    if ours.as_deref() == Some(wanted) {
        return None;
    }
    let ours = ours.map_or_else(|| "none yet".to_owned(), |id| format!("store id {id}"));
    Some(JobError::new(
        ErrorKind::StoreMismatch,
        format!(
            "the job was submitted to another artefact store (store id {wanted}) than this worker writes to \
             ({}, {ours}); run here, its results would be lost to the submitter. Give the submitter, the \
             scheduler and the workers the same store (--s3 / OXWRIGHT_S3, or --out)",
            ctx.store.describe()
        ),
    ))
}

/// Fetches `spec`'s page (the store's fetch cache answers when the
/// spec's `max_age_ms` allows) and reads its `extract` schema, if any,
/// through the `[llm]` endpoint, or by selectors learned from it.
pub async fn fetch_page(
    ctx: &HandlerContext,
    spec: &oxwright_jobs::FetchSpec,
) -> Result<oxwright_fetch::FetchOutput, JobError> {
    let mut out =
        oxwright_fetch::fetch_cached(&ctx.pool, &ctx.policy, Some(ctx.store.as_ref()), spec).await?;
    let model = ctx.extract_model.get();
    // `learn` kept the page's HTML for its selectors; a cached result has none.
    let html = if spec.include_html {
        out.html.clone()
    } else {
        out.html.take()
    };
    let store = ctx.store.as_ref();
    oxwright_extract::learn::fill(model, store, spec, html.as_deref(), &mut out.result).await?;
    Ok(out)
}

/// The artefacts of a fetch that ran before and whose `result.json` is
/// stored (written last, so the rest are there too), when the job may
/// have run before (delivered again, a later attempt, or published again
/// by a restarted scheduler); `None` when it must run.
async fn stored_fetch(ctx: &HandlerContext, job: &Job, delivered_before: bool) -> Option<Vec<String>> {
    if !delivered_before && job.attempt <= 1 && !job.may_have_run {
        return None;
    }
    let body = ctx.store.get(&keys::job_result(job.kind(), job.id)).await.ok()?;
    let result: serde_json::Value = serde_json::from_slice(&body).ok()?;
    let written: Vec<String> = result
        .get("artifacts")?
        .as_array()?
        .iter()
        .filter_map(|k| k.as_str().map(str::to_owned))
        .collect();
    tracing::info!(job_id = %job.id, "the page's result was stored by an earlier delivery; not loaded again");
    (!written.is_empty()).then_some(written)
}

async fn run_fetch(
    ctx: &HandlerContext,
    job: &Job,
    spec: &oxwright_jobs::FetchSpec,
) -> Result<Vec<String>, JobError> {
    // Boxed: a fetch and a model's calls nest too deep for the layout of
    // the futures that await a job.
    let mut out = Box::pin(fetch_page(ctx, spec)).await?;
    let kind = job.kind();
    let store_err = |e: ArtifactError| store_error(&e);
    let md_key = keys::job_artifact(kind, job.id, "page.md");
    let mut written = vec![md_key.clone()];
    if let Some(html) = out.html.take() {
        let key = keys::job_artifact(kind, job.id, "page.html");
        ctx.store
            .put(&key, Bytes::from(html), "text/html; charset=utf-8")
            .await
            .map_err(store_err)?;
        written.push(key);
    }
    if let Some(png) = out.screenshot.take() {
        let key = keys::job_artifact(kind, job.id, "screenshot.png");
        ctx.store
            .put(&key, Bytes::from(png), "image/png")
            .await
            .map_err(store_err)?;
        written.push(key);
    }
    if let Some(records) = &out.result.extract {
        let key = keys::job_artifact(kind, job.id, "extract.json");
        let body = serde_json::to_vec_pretty(records)
            .map_err(|e| JobError::new(ErrorKind::Internal, e.to_string()))?;
        ctx.store
            .put(&key, Bytes::from(body), "application/json")
            .await
            .map_err(store_err)?;
        written.push(key);
    }
    let result_key = keys::job_result(kind, job.id);
    written.push(result_key.clone());
    out.result.artifacts = written.clone();
    ctx.store
        .put(
            &md_key,
            Bytes::from(out.result.markdown.clone()),
            "text/markdown; charset=utf-8",
        )
        .await
        .map_err(store_err)?;
    let body = serde_json::to_vec_pretty(&out.result)
        .map_err(|e| JobError::new(ErrorKind::Internal, e.to_string()))?;
    ctx.store
        .put(&result_key, Bytes::from(body), "application/json")
        .await
        .map_err(store_err)?;
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxwright_jobs::SitemapSpec;

    fn job_with_deadline(deadline: Option<chrono::DateTime<Utc>>) -> Job {
        let mut job = Job::new(
            JobSpec::Sitemap(SitemapSpec {
                target: "example.com".into(),
            }),
            None,
        );
        job.deadline = deadline;
        job
    }

    #[test]
    fn deadline_in_the_past_expires_the_job() {
        let now = Utc::now();
        let err =
            expired(&job_with_deadline(Some(now - chrono::Duration::seconds(1))), now).expect("expired");
        assert_eq!(err.kind, ErrorKind::Expired);
        assert!(!err.is_retryable());
        assert!(
            expired(&job_with_deadline(Some(now)), now).is_some(),
            "the deadline itself is too late"
        );
    }

    #[test]
    fn future_or_absent_deadline_runs() {
        let now = Utc::now();
        assert!(expired(&job_with_deadline(Some(now + chrono::Duration::seconds(5))), now).is_none());
        assert!(expired(&job_with_deadline(None), now).is_none());
    }

    #[test]
    fn store_errors_keep_their_class() {
        let backend = |retryable| ArtifactError::Backend {
            key: "jobs/fetch/x/page.md".into(),
            message: "connection refused".into(),
            retryable,
            source: None,
        };
        assert_eq!(store_error(&backend(true)).kind, ErrorKind::Storage);
        assert!(store_error(&backend(true)).is_retryable());
        assert_eq!(store_error(&backend(false)).kind, ErrorKind::Internal);
        let bad_key = ArtifactError::invalid_key("../x", "parent segment");
        assert!(!store_error(&bad_key).is_retryable());
    }
}
