//! The sitemap-load handler: discovery, nested indexes and the cache live
//! in `oxwright-sitemap`; this writes `result.json` and `urls.txt`.

use bytes::Bytes;
use oxwright_jobs::{ErrorKind, Job, JobError, SitemapSpec, keys};

use super::HandlerContext;

/// Loads the sitemaps of `spec.target` and stores the result.
pub async fn run_sitemap(
    ctx: &HandlerContext,
    job: &Job,
    spec: &SitemapSpec,
) -> Result<Vec<String>, JobError> {
    let result = ctx.sitemaps.load(&spec.target).await.map_err(JobError::from)?;
    let store_err = |e: oxwright_artifacts::ArtifactError| super::store_error(&e);
    let urls_key = keys::job_artifact(job.kind(), job.id, "urls.txt");
    let list: String = result.urls.iter().map(|u| format!("{}\n", u.loc)).collect();
    ctx.store
        .put(&urls_key, Bytes::from(list), "text/plain; charset=utf-8")
        .await
        .map_err(store_err)?;
    let result_key = keys::job_result(job.kind(), job.id);
    let body =
        serde_json::to_vec_pretty(&result).map_err(|e| JobError::new(ErrorKind::Internal, e.to_string()))?;
    ctx.store
        .put(&result_key, Bytes::from(body), "application/json")
        .await
        .map_err(store_err)?;
    Ok(vec![urls_key, result_key])
}
