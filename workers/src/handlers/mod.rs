//! Job handlers, one per kind, and the dispatch that runs a job and writes
//! its artefacts.

pub mod sitemap;
pub mod workflow;

use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use chrono::Utc;
use oxwright_artifacts::ArtifactStore;
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
    /// Where artefacts go.
    pub store: Arc<dyn ArtifactStore>,
    /// Sitemap discovery and loading, with its cache.
    pub sitemaps: SitemapLoader,
    /// Secrets and API-key environment for workflow jobs.
    pub workflow: workflow::WorkflowContext,
}

impl HandlerContext {
    /// Builds a context; the sitemap loader shares the URL policy.
    pub fn new(pool: BrowserPool, policy: Arc<UrlPolicy>, store: Arc<dyn ArtifactStore>) -> Self {
        let sitemaps = SitemapLoader::new(policy.clone(), SitemapOptions::default());
        Self {
            pool,
            policy,
            store,
            sitemaps,
            workflow: workflow::WorkflowContext::default(),
        }
    }
}

/// Runs `job`, writes its artefacts, and returns the report to publish.
/// Never fails: a failed job yields a report with a typed error and an
/// `error.json` artefact.
#[tracing::instrument(skip_all, fields(job_id = %job.id, kind = %job.kind(), attempt = job.attempt))]
pub async fn run_job(ctx: &HandlerContext, job: &Job) -> JobReport {
    let started = Instant::now();
    let outcome = match &job.spec {
        JobSpec::Fetch(spec) => run_fetch(ctx, job, spec).await,
        JobSpec::Sitemap(spec) => sitemap::run_sitemap(ctx, job, spec).await,
        JobSpec::Workflow(spec) => workflow::run_workflow_job(ctx, job, spec).await,
    };
    let (status, error, artifacts) = match outcome {
        Ok(artifacts) => (ReportStatus::Ok, None, artifacts),
        Err(err) => {
            tracing::debug!(error = %err, "job failed");
            let key = keys::job_artifact(job.kind(), job.id, "error.json");
            let body = serde_json::to_vec_pretty(&serde_json::json!({
                "job_id": job.id, "url": job.url(), "attempt": job.attempt, "error": err,
            }))
            .unwrap_or_default();
            let artifacts = match ctx.store.put(&key, Bytes::from(body), "application/json").await {
                Ok(()) => vec![key],
                Err(store_err) => {
                    tracing::warn!(error = %store_err, "writing the error artefact failed");
                    Vec::new()
                }
            };
            (ReportStatus::Failed, Some(err), artifacts)
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

async fn run_fetch(
    ctx: &HandlerContext,
    job: &Job,
    spec: &oxwright_jobs::FetchSpec,
) -> Result<Vec<String>, JobError> {
    let mut out = oxwright_fetch::fetch_page(&ctx.pool, &ctx.policy, spec).await?;
    let kind = job.kind();
    let store_err = |e: oxwright_artifacts::ArtifactError| {
        JobError::new(ErrorKind::Internal, format!("artefact store: {e}"))
    };
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
