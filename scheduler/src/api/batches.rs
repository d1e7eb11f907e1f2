//! `POST /v1/batches` (URLs or a sitemap, with a webhook), `GET
//! /v1/batches/{id}` (status and paged results) and `DELETE
//! /v1/batches/{id}` (cancel).

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use oxwright_jobs::{JobError, JobId, JobKind, JobReport, ReportStatus, keys};
use serde::{Deserialize, Serialize};

use super::error::{ApiError, invalid, not_found, unavailable};
use super::state::AppState;
use crate::batch::{check_batch_id, new_batch_id};
use crate::hooks::BatchWebhook;
use crate::links::{ArtifactLink, artifact_links};
use crate::template::{ExpandTemplate, JobTemplate};

/// Most results one `GET /v1/batches/{id}` page returns.
pub const MAX_PAGE: usize = 1_000;

/// `POST /v1/batches` body.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct BatchRequest {
    /// `fetch` (default) or `sitemap`: what each entry of `urls` becomes.
    #[serde(default)]
    kind: Option<JobKind>,
    /// Page URLs (fetch) or domains / sitemap URLs (sitemap jobs).
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
    /// Page loads in flight at once to one host (host and port); the
    /// scheduler releases the jobs host by host when this, the delay or
    /// `respect_robots` is given.
    #[serde(default)]
    per_host_concurrency: Option<usize>,
    /// Least time between two page loads' starts at one host, in ms.
    #[serde(default)]
    per_host_delay_ms: Option<u64>,
    /// Fail the pages robots.txt disallows (`policy_denied`) and honour
    /// its `Crawl-delay`.
    #[serde(default)]
    respect_robots: bool,
}

impl BatchRequest {
    /// The per-host limits asked for, if any.
    fn host_limits(&self) -> Result<Option<crate::batch::HostLimits>, ApiError> {
        if self.per_host_concurrency.is_none() && self.per_host_delay_ms.is_none() && !self.respect_robots {
            return Ok(None);
        }
        if self.per_host_concurrency == Some(0) {
            return Err(invalid("`per_host_concurrency` must be at least 1"));
        }
        Ok(Some(crate::batch::HostLimits {
            concurrency: self.per_host_concurrency.unwrap_or(usize::MAX),
            delay_ms: self.per_host_delay_ms.unwrap_or(0),
            respect_robots: self.respect_robots,
        }))
    }
}

/// `POST /v1/batches` answer.
#[derive(Debug, Serialize)]
pub(crate) struct BatchAccepted {
    batch_id: String,
    total: usize,
    published: usize,
    refused: usize,
    /// Where the manifest will be.
    manifest: String,
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
    let limits = req.host_limits()?;
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
    if req.sitemap.is_some() && req.kind.is_some_and(|k| k != JobKind::Fetch) {
        return Err(invalid("`sitemap` fetches a sitemap's pages: it takes no `kind`"));
    }
    let template = JobTemplate {
        kind: req.kind.unwrap_or(JobKind::Fetch),
        urls,
        options: req.options,
    };
    let batch_id = new_batch_id();
    let (jobs, refused) = template.jobs(&batch_id, &state.opts.policy)?;
    let receipt = match limits {
        None => {
            crate::submit::submit_batch_with(
                state.queue.as_ref(),
                state.store.as_ref(),
                &batch_id,
                jobs,
                refused,
                "api:v1",
                req.webhook.clone(),
            )
            .await
        }
        Some(limits) => {
            crate::batch::submit_gated(
                state.queue.as_ref(),
                state.store.as_ref(),
                &state.gate,
                &batch_id,
                jobs,
                refused,
                "api:v1",
                req.webhook.clone(),
                limits,
            )
            .await
        }
    }
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
            manifest: receipt.manifest,
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

pub(crate) async fn get_batch(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    query: Result<Query<PageQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<BatchView>, ApiError> {
    check_batch_id(&id)?;
    let batches = state.batches();
    let Query(query) = query.map_err(|e| invalid(e.body_text()))?;
    if query.limit == 0 || query.limit > MAX_PAGE {
        return Err(invalid(format!("limit must be 1 to {MAX_PAGE}")));
    }
    let Some(status) = batches.status(&id, None).await? else {
        return Err(not_found(format!("no batch {id}")));
    };
    let lines = batches.manifest(&id).await?;
    let cancelled = batches.is_cancelled(&id).await?;
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

pub(crate) async fn delete_batch(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
) -> Result<(StatusCode, Json<serde_json::Value>), ApiError> {
    state.cancel_batch(&id).await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(serde_json::json!({
            "batch_id": id,
            "state": "cancelled",
            "message": "jobs not yet started are skipped and get a `cancelled` line; running ones finish",
        })),
    ))
}
