//! `oxwright batch FILE`: runs a URL list through the in-process queue and
//! the warm pool, with a progress bar, artefacts and a manifest in the file
//! store, and a summary at the end.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use clap::Args;
use indicatif::{ProgressBar, ProgressState, ProgressStyle};
use oxwright_http::HttpClient;
use oxwright_jobs::{JobKind, ReportStatus};
use oxwright_queue::{JobQueue, MemoryQueue};
use oxwright_robots::{HttpRobotsFetcher, RobotsCache, RobotsConfig};
use oxwright_scheduler::batch::{
    BatchRequest, BatchSummary, PerHost, new_batch_id, parse_url_list, run_batch,
};
use oxwright_worker::{ConsumerOptions, run_consumer};
use tokio_util::sync::CancellationToken;

use oxwright_config::Setup;
use oxwright_worker::BrowserSetup;

use crate::fetch_flags::FetchArgs;
use crate::signals::shutdown_on_signals;

/// Arguments of `oxwright batch`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  oxwright batch urls.txt                         # one URL a line; manifest + Markdown under ./oxwright-out
  oxwright batch --sitemap example.com --json     # every URL of the site's sitemaps
  cat urls.txt | oxwright --browsers 2 batch -")]
pub struct BatchCmd {
    /// File of URLs, one a line (`-` for standard input).
    #[arg(required_unless_present = "sitemap")]
    pub file: Option<PathBuf>,
    /// Fetch every URL of this site's sitemaps (a domain or URL) instead of a file.
    #[arg(long, conflicts_with = "file")]
    pub sitemap: Option<String>,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
    /// Fail the lines robots.txt disallows (`policy_denied`) and honour
    /// each host's Crawl-delay.
    #[arg(long)]
    pub respect_robots: bool,
    #[command(flatten)]
    pub polite: PoliteArgs,
    #[command(flatten)]
    pub fetch: FetchArgs,
}

/// The per-host pace of a batch or a crawl, and robots.txt's token.
#[derive(Debug, Clone, Args)]
pub struct PoliteArgs {
    /// Page loads in flight at once to one host (host and port) [default:
    /// 2 for a crawl; no limit for a batch].
    #[arg(long, value_name = "N")]
    pub per_host_concurrency: Option<usize>,
    /// Least time between two page loads' starts at one host, e.g. `500ms`,
    /// `2s`; robots.txt's Crawl-delay wins when longer [default: 250ms for
    /// a crawl; none for a batch].
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration)]
    pub per_host_delay: Option<std::time::Duration>,
    /// The token robots.txt groups are matched against [default: oxwright].
    #[arg(long, value_name = "TOKEN")]
    pub robots_token: Option<String>,
}

impl PoliteArgs {
    /// robots.txt for this run, read over the policy-judged client.
    pub fn robots(&self, setup: &Setup) -> anyhow::Result<RobotsCache> {
        let config = RobotsConfig {
            user_agent: self
                .robots_token
                .clone()
                .unwrap_or_else(|| RobotsConfig::default().user_agent),
            ..RobotsConfig::default()
        };
        let fetcher = HttpRobotsFetcher::new(HttpClient::new(), setup.policy.clone());
        RobotsCache::new(Arc::new(fetcher), config).map_err(crate::exit::usage)
    }

    /// A batch's per-host limits: none unless a flag asks for them.
    fn per_host(&self, setup: &Setup, respect_robots: bool) -> anyhow::Result<Option<PerHost>> {
        if self.per_host_concurrency.is_none() && self.per_host_delay.is_none() && !respect_robots {
            return Ok(None);
        }
        Ok(Some(PerHost {
            concurrency: self.per_host_concurrency.unwrap_or(usize::MAX),
            delay: self.per_host_delay.unwrap_or_default(),
            robots: respect_robots.then(|| self.robots(setup)).transpose()?,
        }))
    }
}

/// Runs the command; returns the process exit code.
pub async fn run(setup: Setup, cmd: BatchCmd) -> anyhow::Result<i32> {
    let lines = {
        let text = super::read_url_list(&setup, cmd.sitemap.as_deref(), cmd.file.as_ref()).await?;
        parse_url_list(&text, &setup.policy)
    };
    let template = cmd.fetch.spec_with(
        "http://template.invalid/".parse().expect("valid url"),
        &setup.config.fetch,
    );
    let batch_id = new_batch_id();
    let shutdown = shutdown_on_signals();

    let per_host = cmd.polite.per_host(&setup, cmd.respect_robots)?;
    let embedded = Embedded::start(&setup, &template, shutdown.clone()).await?;
    let progress = progress_bar(lines.len() as u64);
    let req = BatchRequest {
        batch_id: batch_id.clone(),
        lines,
        template,
        window: embedded.capacity * 4,
        per_host,
    };
    let summary = run_batch(
        embedded.queue.clone(),
        embedded.store.clone(),
        req,
        show_progress(progress.clone()),
        shutdown.clone(),
        embedded.workers_done.clone().cancelled_owned(),
    )
    .await;
    oxwright_telemetry::console::clear_hook();
    let summary = summary?;
    let store = embedded.store.clone();
    embedded.stop(&progress, summary.interrupted, &shutdown).await?;

    if cmd.json {
        println!("{}", serde_json::to_string_pretty(&summary)?);
    } else {
        print_summary(&summary, &store.describe());
    }
    Ok(crate::exit::of_outcome(summary.failed, summary.interrupted))
}

/// The in-process queue and the warm pool's worker an embedded batch or
/// crawl runs its jobs through.
pub(crate) struct Embedded {
    pub pool: oxwright_browser::BrowserPool,
    pub store: Arc<dyn oxwright_artifacts::ArtifactStore>,
    pub queue: Arc<dyn JobQueue>,
    pub capacity: usize,
    pub worker: tokio::task::JoinHandle<Result<(), oxwright_queue::QueueError>>,
    pub workers_done: CancellationToken,
}

impl Embedded {
    /// Starts the worker; pages read without a browser launch none until
    /// one must render.
    pub(crate) async fn start(
        setup: &Setup,
        template: &oxwright_jobs::FetchSpec,
        shutdown: CancellationToken,
    ) -> anyhow::Result<Self> {
        model_for(setup, template)?;
        let pool = if template.render == oxwright_jobs::Render::Always {
            setup.pool().await?
        } else {
            setup.pool_cold().await?
        };
        let ctx = setup.handler(pool.clone()).await?;
        let store = ctx.store.clone();
        let queue: Arc<dyn JobQueue> = Arc::new(MemoryQueue::new());
        let capacity = pool.capacity();
        let (worker, workers_done) = spawn_fetch_worker(ctx, queue.clone(), capacity, shutdown);
        Ok(Self {
            pool,
            store,
            queue,
            capacity,
            worker,
            workers_done,
        })
    }
}

/// Runs `capacity` fetches at once from `queue` through `ctx` until
/// `shutdown`; the token is cancelled once the worker has stopped.
pub(crate) fn spawn_fetch_worker(
    ctx: oxwright_worker::HandlerContext,
    queue: Arc<dyn JobQueue>,
    capacity: usize,
    shutdown: CancellationToken,
) -> (
    tokio::task::JoinHandle<Result<(), oxwright_queue::QueueError>>,
    CancellationToken,
) {
    let done = CancellationToken::new();
    let stopped = done.clone();
    let worker = tokio::spawn(async move {
        let result = run_consumer(
            ctx,
            queue,
            ConsumerOptions::new(JobKind::Fetch, capacity),
            shutdown,
        )
        .await;
        stopped.cancel();
        result
    });
    (worker, done)
}

impl Embedded {
    /// Ends the run: the bar stays as it stood when an interrupted run
    /// stopped, and the worker and the pool stop.
    pub(crate) async fn stop(
        self,
        progress: &ProgressBar,
        interrupted: bool,
        shutdown: &CancellationToken,
    ) -> anyhow::Result<()> {
        if interrupted {
            progress.abandon();
        } else {
            progress.finish_and_clear();
        }
        shutdown.cancel();
        self.worker.await.context("worker task")??;
        self.pool.shutdown().await;
        Ok(())
    }
}

/// Moves the bar on with each manifest line, and prints each failure above it.
pub(crate) fn show_progress(pb: ProgressBar) -> impl FnMut(&oxwright_jobs::JobReport, usize, usize) {
    move |report, done, total| {
        pb.set_length(total as u64);
        pb.set_position(done as u64);
        if report.status == ReportStatus::Failed {
            let kind = report.error.as_ref().map(|e| e.kind.as_str()).unwrap_or("?");
            pb.println(format!(
                "failed [{kind}] {}",
                oxwright_telemetry::printable(&report.url)
            ));
        }
    }
}

/// The batch's progress bar on a terminal (hidden otherwise): it ticks
/// while no page finishes, shows the rate rounded, and log lines and
/// messages are printed above it rather than through it.
pub(crate) fn progress_bar(total: u64) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let pb = ProgressBar::new(total);
    pb.set_style(
        ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {bar:40} {pos}/{len} pages ({rate}, eta {eta})",
        )
        .expect("valid template")
        .with_key("rate", |state: &ProgressState, w: &mut dyn std::fmt::Write| {
            let _ = write!(w, "{:.1} pages/s", state.per_sec());
        }),
    );
    pb.enable_steady_tick(std::time::Duration::from_millis(120));
    let above = pb.clone();
    oxwright_telemetry::console::set_hook(std::sync::Arc::new(move |bytes: &[u8]| {
        let text = String::from_utf8_lossy(bytes);
        above.suspend(|| {
            use std::io::Write;
            let _ = std::io::stderr().lock().write_all(text.as_bytes());
        });
    }));
    pb
}

fn print_summary(s: &BatchSummary, store: &str) {
    let rate = if s.elapsed_s > 0.0 {
        (s.ok + s.failed) as f64 / s.elapsed_s
    } else {
        0.0
    };
    println!(
        "batch {}: {} pages, {} ok, {} failed in {:.1} s ({rate:.1} pages/s){}",
        s.batch_id,
        s.total,
        s.ok,
        s.failed,
        s.elapsed_s,
        if s.interrupted { " — interrupted" } else { "" }
    );
    for (kind, n) in &s.failed_by_kind {
        println!("  {kind}: {n}");
    }
    println!("store:    {store}");
    println!("manifest: {}", s.manifest);
    println!("markdown: jobs/fetch/<job-id>/page.md (one folder per job; see the manifest)");
}

/// Refuses, before any page is fetched, a fetch whose `extract` schema
/// finds no LLM endpoint here (a usage error, exit 2).
pub(crate) fn model_for(
    setup: &oxwright_config::Setup,
    spec: &oxwright_jobs::FetchSpec,
) -> anyhow::Result<()> {
    if spec.extract.is_some() {
        oxwright_worker::handlers::ExtractModel::from_section(&setup.config.llm, &setup.env)
            .get()
            .map_err(|e| crate::exit::usage(e.message))?;
    }
    Ok(())
}
