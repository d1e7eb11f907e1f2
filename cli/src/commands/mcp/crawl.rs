//! The MCP server's crawls: each `crawl` call runs as `oxwright crawl`
//! does, through an in-process queue, over the server's own warm pool and
//! store.

use std::sync::Arc;

use oxwright_http::HttpClient;
use oxwright_mcp::{CrawlCall, CrawlOutcome, SiteCrawler};
use oxwright_queue::{JobQueue, MemoryQueue};
use oxwright_robots::{HttpRobotsFetcher, RobotsCache, RobotsConfig};
use oxwright_scheduler::batch::new_batch_id;
use oxwright_scheduler::crawl::{CrawlRequest, CrawlStop, Scope, run_crawl};
use oxwright_worker::HandlerContext;

use crate::commands::batch::spawn_fetch_worker;
use tokio_util::sync::CancellationToken;

/// Runs the `crawl` tool's crawls over a handler context on the server's
/// pool; `stopping` ends every crawl when the server stops.
#[derive(Debug)]
pub struct McpCrawler {
    ctx: HandlerContext,
    stopping: CancellationToken,
}

impl McpCrawler {
    /// Crawls through `ctx` (the server's pool, policy and store).
    pub fn new(ctx: HandlerContext, stopping: CancellationToken) -> Self {
        Self { ctx, stopping }
    }

    /// robots.txt for one crawl, read over the policy-judged client with
    /// the default token.
    fn robots(&self) -> Result<RobotsCache, String> {
        let fetcher = HttpRobotsFetcher::new(HttpClient::new(), self.ctx.policy.clone());
        RobotsCache::new(Arc::new(fetcher), RobotsConfig::default()).map_err(|e| e.to_string())
    }

    /// The URLs of the start hosts' sitemaps, at depth 1.
    async fn sitemap_seeds(&self, call: &CrawlCall) -> Vec<url::Url> {
        let mut seeds = Vec::new();
        for start in &call.starts {
            match self.ctx.sitemaps.load(start.as_str()).await {
                Ok(found) => seeds.extend(found.urls.iter().filter_map(|u| url::Url::parse(&u.loc).ok())),
                Err(err) => tracing::info!(start = %start, error = %err, "no sitemap seeds"),
            }
        }
        seeds
    }
}

#[async_trait::async_trait]
impl SiteCrawler for McpCrawler {
    async fn crawl(&self, call: CrawlCall) -> Result<CrawlOutcome, String> {
        Scope::new(&call.starts, &call.options).map_err(|e| e.to_string())?;
        let robots = if call.options.ignore_robots {
            None
        } else {
            Some(self.robots()?)
        };
        let seeds = if call.options.sitemap {
            self.sitemap_seeds(&call).await
        } else {
            Vec::new()
        };
        let queue: Arc<dyn JobQueue> = Arc::new(MemoryQueue::new());
        let mut reports = queue.reports().await.map_err(|e| e.to_string())?;
        let shutdown = self.stopping.child_token();
        let capacity = self.ctx.pool.capacity();
        let (worker, workers_done) =
            spawn_fetch_worker(self.ctx.clone(), queue.clone(), capacity, shutdown.clone());
        let timer = {
            let (shutdown, within) = (shutdown.clone(), call.within);
            tokio::spawn(async move {
                tokio::time::sleep(within).await;
                shutdown.cancel();
            })
        };
        let req = CrawlRequest {
            batch_id: new_batch_id(),
            starts: call.starts,
            seeds,
            template: call.template,
            options: call.options,
            window: capacity * 2,
            taken_up: false,
            resumable: false,
        };
        let summary = run_crawl(
            queue,
            self.ctx.store.clone(),
            robots,
            req,
            reports.as_mut(),
            |_, _| {},
            CrawlStop {
                shutdown: shutdown.clone(),
                drained: workers_done.cancelled_owned(),
                suspend: None,
            },
        )
        .await;
        timer.abort();
        shutdown.cancel();
        if let Ok(Err(err)) = worker.await {
            tracing::warn!(error = %err, "the crawl's worker ended with an error");
        }
        let s = summary.map_err(|e| format!("the crawl could not run: {e}"))?;
        Ok(CrawlOutcome {
            batch_id: s.batch.batch_id,
            ok: s.batch.ok,
            failed: s.batch.failed,
            interrupted: s.batch.interrupted,
            skipped: s.skipped,
            manifest: s.batch.manifest,
            skipped_list: s.skipped_list,
            elapsed_s: s.batch.elapsed_s,
        })
    }
}
