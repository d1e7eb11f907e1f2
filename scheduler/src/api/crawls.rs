//! `POST /v1/crawls`: a crawl run by the daemon, across its workers. It
//! is a batch that grows: `GET /v1/batches/{id}` shows its progress and
//! pages, `DELETE /v1/batches/{id}` cancels it, and its webhook hears
//! what a batch's does.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use oxwright_artifacts::ArtifactError;
use oxwright_jobs::{CrawlOptions, JobKind, JobTemplate, keys};
use serde::{Deserialize, Serialize};
use url::Url;

use super::error::{ApiError, invalid, unavailable};
use super::state::AppState;
use crate::batch::Growing;
use crate::batch::{BatchLine, new_batch_id, parse_url_entry};
use crate::crawl::{CrawlListing, CrawlRequest, CrawlServices, Scope};
use crate::hooks::BatchWebhook;

/// Start URLs one crawl takes at most.
pub const MAX_CRAWL_STARTS: usize = 100;

/// `POST /v1/crawls` body.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CrawlBody {
    /// Where the crawl starts (depth 0); it stays on their hosts.
    #[serde(default)]
    urls: Vec<String>,
    /// One start URL (or give `urls`).
    #[serde(default)]
    url: Option<String>,
    /// What the crawl follows and how politely.
    #[serde(default)]
    crawl: CrawlOptions,
    /// Fetch options for every page (a fetch job's fields but `url`).
    #[serde(default)]
    options: serde_json::Map<String, serde_json::Value>,
    /// Where the crawl's events go.
    #[serde(default)]
    webhook: Option<BatchWebhook>,
}

/// `POST /v1/crawls` answer.
#[derive(Debug, Serialize)]
pub(crate) struct CrawlAccepted {
    batch_id: String,
    /// Start URLs taken (sitemap URLs come on top when asked).
    starts: usize,
    /// Where the manifest grows.
    manifest: String,
    /// Where the URLs not taken are listed, with the reason.
    skipped_list: String,
    status_url: String,
}

pub(crate) async fn post_crawl(
    State(state): State<Arc<AppState>>,
    body: Result<Json<serde_json::Value>, axum::extract::rejection::JsonRejection>,
) -> Result<(StatusCode, Json<CrawlAccepted>), ApiError> {
    let Json(body) = body.map_err(ApiError::from_rejection)?;
    let req: CrawlBody = serde_json::from_value(body).map_err(|e| invalid(format!("bad crawl: {e}")))?;
    if let Some(hook) = &req.webhook {
        hook.validate(&state.opts.policy).map_err(invalid)?;
    }
    let raw: Vec<&String> = req.url.iter().chain(&req.urls).collect();
    if raw.is_empty() {
        return Err(invalid("give `url` or `urls`: where the crawl starts"));
    }
    if raw.len() > MAX_CRAWL_STARTS {
        return Err(invalid(format!(
            "{} start URLs: a crawl takes {MAX_CRAWL_STARTS} at most",
            raw.len()
        )));
    }
    if req.crawl.limit == 0 {
        return Err(invalid("`crawl.limit` must be at least 1"));
    }
    if req.crawl.per_host_concurrency == 0 {
        return Err(invalid("`crawl.per_host_concurrency` must be at least 1"));
    }
    let mut starts = Vec::new();
    for entry in raw {
        match parse_url_entry(entry, &state.opts.policy) {
            BatchLine::Url(url) => starts.push(url),
            BatchLine::Invalid { error, .. } => {
                return Err(invalid(format!("start URL {entry:?}: {}", error.message)));
            }
        }
    }
    Scope::new(&starts, &req.crawl).map_err(|e| invalid(e.to_string()))?;
    let template = JobTemplate {
        kind: JobKind::Fetch,
        urls: Vec::new(),
        options: req.options,
    }
    .fetch_template()?;
    let seeds = if req.crawl.sitemap {
        sitemap_seeds(&state, &starts).await
    } else {
        Vec::new()
    };
    let batch_id = new_batch_id();
    let accepted = CrawlAccepted {
        starts: starts.len(),
        manifest: keys::batch_manifest(&batch_id),
        skipped_list: keys::batch_skipped(&batch_id),
        status_url: format!("/v1/batches/{batch_id}"),
        batch_id: batch_id.clone(),
    };
    let crawl = CrawlRequest {
        batch_id: batch_id.clone(),
        starts,
        seeds,
        template,
        options: req.crawl,
        window: state.opts.crawl_window,
        taken_up: false,
        resumable: state.opts.durable_queue,
    };
    // Listed before it starts: a scheduler that dies from here on leaves
    // it for the next one to take up.
    CrawlListing::of(&crawl, req.webhook.clone())
        .put(state.store.as_ref())
        .await
        .map_err(|e| unavailable(format!("the crawl could not be recorded: {e}")))?;
    state.hooks.register(&batch_id, req.webhook);
    state.hooks.started(&batch_id, crawl.starts.len());
    launch(&state, crawl);
    Ok((StatusCode::ACCEPTED, Json(accepted)))
}

/// Runs `crawl` on the daemon's queue and store.
fn launch(state: &Arc<AppState>, crawl: CrawlRequest) {
    let services = CrawlServices {
        queue: state.queue.clone(),
        store: state.store.clone(),
    };
    let batch_id = crawl.batch_id.clone();
    let on_page = state.clone();
    let on_end = state.clone();
    state.crawls.start(
        services,
        crawl,
        move |report| on_page.hooks.page(report),
        move |result| async move { ended(&on_end, &batch_id, result).await },
    );
}

/// Takes up every crawl listed under `crawling/` that this daemon does
/// not run (an earlier scheduler's, stopped or killed), before any report
/// is read; returns how many. One that ended already is unlisted. One
/// whose fetch options held credentials cannot go on without them: its
/// pages not yet fetched end `cancelled`.
pub(crate) async fn take_up(state: &Arc<AppState>) -> Result<usize, ArtifactError> {
    let mut taken = 0;
    for listing in CrawlListing::listed(state.store.as_ref()).await? {
        let batch_id = listing.batch_id.clone();
        if state.crawls.status(&batch_id).is_some() {
            continue;
        }
        if state.store.exists(&keys::batch_summary(&batch_id)).await? {
            state.store.delete(&keys::crawl_listing(&batch_id)).await?;
            continue;
        }
        let Some(crawl) = listing.request(state.opts.crawl_window, state.opts.durable_queue) else {
            tracing::warn!(%batch_id, "a listed crawl's options cannot be read; left alone");
            continue;
        };
        state.hooks.register(&batch_id, listing.webhook.clone());
        launch(state, crawl);
        if !listing.withheld.is_empty() {
            tracing::warn!(
                %batch_id,
                withheld = ?listing.withheld,
                "a crawl taken up cannot go on: its credentials are not kept in the store; its pages not yet fetched end cancelled"
            );
            state.crawls.stop(&batch_id);
        }
        taken += 1;
    }
    Ok(taken)
}

/// After a crawl: an interrupted one is marked cancelled, so workers skip
/// its pages still queued; its webhook hears how it ended. A suspended
/// one is left as it is.
async fn ended(
    state: &AppState,
    batch_id: &str,
    result: Result<crate::crawl::CrawlSummary, crate::crawl::CrawlError>,
) {
    let summary = match result {
        Ok(summary) if summary.suspended => return,
        Ok(summary) => summary,
        Err(err) => {
            tracing::error!(%batch_id, error = %err, "crawl stopped");
            state.hooks.forget(batch_id);
            return;
        }
    };
    let cancelled = summary.batch.interrupted;
    if cancelled && let Err(err) = crate::batch::mark_cancelled(state.store.as_ref(), batch_id).await {
        tracing::warn!(%batch_id, error = %err, "an interrupted crawl could not be marked cancelled");
    }
    tracing::info!(
        %batch_id,
        pages = summary.batch.total,
        ok = summary.batch.ok,
        failed = summary.batch.failed,
        interrupted = summary.batch.interrupted,
        "crawl ended"
    );
    if state.hooks.has_webhook(batch_id) {
        state.hooks.finished(&summary.batch, cancelled);
    } else {
        state.hooks.forget(batch_id);
    }
}

/// The URLs of the start hosts' sitemaps; a host without one adds none.
async fn sitemap_seeds(state: &AppState, starts: &[Url]) -> Vec<Url> {
    let loader = oxwright_sitemap::SitemapLoader::new(
        state.opts.policy.clone(),
        oxwright_sitemap::SitemapOptions::default(),
    );
    let mut seeds = Vec::new();
    for start in starts {
        match loader.load(start.origin().ascii_serialization().as_str()).await {
            Ok(loaded) => seeds.extend(loaded.urls.iter().filter_map(|u| Url::parse(&u.loc).ok())),
            Err(err) => tracing::warn!(url = %start, error = %err, "no sitemap seeds"),
        }
    }
    seeds
}
