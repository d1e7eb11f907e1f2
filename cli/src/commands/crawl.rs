//! `oxwright crawl URL…`: follows a site's links from one or more start
//! URLs through the in-process queue and the warm pool, within a depth
//! and a page limit, obeying robots.txt and a per-host pace; pages and a
//! manifest land where a batch's do, and what was not taken is listed
//! with the reason.

use clap::Args;
use oxwright_config::Setup;
use oxwright_jobs::CrawlOptions;
use oxwright_scheduler::batch::{BatchLine, new_batch_id, parse_url_entry};
use oxwright_scheduler::crawl::{CrawlRequest, CrawlStop, CrawlSummary, run_crawl};
use url::Url;

use super::batch::{Embedded, PoliteArgs, progress_bar, show_progress};
use crate::fetch_flags::FetchArgs;
use crate::signals::shutdown_on_signals;

/// Arguments of `oxwright crawl`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  oxwright crawl docs.example.com                          # the site's pages, 5 links deep, 1,000 at most
  oxwright crawl example.com --include-path '/blog/**' --limit 200
  oxwright crawl example.com --sitemap --per-host-concurrency 4 --json")]
pub struct CrawlCmd {
    /// Where to start (domains or URLs); the crawl stays on their hosts.
    #[arg(required = true, value_name = "URL")]
    pub urls: Vec<String>,
    /// Links followed from a start URL at most [default: 5].
    #[arg(long, value_name = "N")]
    pub max_depth: Option<u32>,
    /// Pages taken at most, start URLs included [default: 1000].
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
    #[command(flatten)]
    pub scope: ScopeArgs,
    /// Pages with a query taken at most per path [default: 50].
    #[arg(long, value_name = "N")]
    pub max_query_variants: Option<usize>,
    #[command(flatten)]
    pub polite: PoliteArgs,
    /// Seed the crawl with the start hosts' sitemaps too.
    #[arg(long)]
    pub sitemap: bool,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub fetch: FetchArgs,
}

impl CrawlCmd {
    /// The crawl's options: the flags given over the defaults.
    fn options(&self) -> CrawlOptions {
        let defaults = CrawlOptions::default();
        CrawlOptions {
            max_depth: self.max_depth.unwrap_or(defaults.max_depth),
            limit: self.limit.unwrap_or(defaults.limit),
            max_query_variants: self.max_query_variants.unwrap_or(defaults.max_query_variants),
            sitemap: self.sitemap,
            ..self.scope.options(&self.polite)
        }
    }
}

/// What a crawl or a map follows: path patterns, hosts, robots.txt and
/// query spellings.
#[derive(Debug, Args)]
pub struct ScopeArgs {
    /// Take only pages whose path (and query) matches: a glob (`/docs/**`)
    /// or `re:REGEX` (repeatable; any one matches).
    #[arg(long = "include-path", value_name = "PATTERN")]
    pub include: Vec<String>,
    /// Do not take pages whose path (and query) matches, as for --include-path (repeatable).
    #[arg(long = "exclude-path", value_name = "PATTERN")]
    pub exclude: Vec<String>,
    /// Follow links to the start hosts' subdomains too.
    #[arg(long)]
    pub allow_subdomains: bool,
    /// Follow links to this host too (repeatable). Private hosts also need
    /// the global --allow-host.
    #[arg(long = "follow-host", value_name = "HOST")]
    pub follow_hosts: Vec<String>,
    /// Take pages robots.txt disallows, and ignore its Crawl-delay.
    #[arg(long)]
    pub ignore_robots: bool,
    /// Treat URLs that differ only in their query as one page.
    #[arg(long)]
    pub ignore_query: bool,
}

impl ScopeArgs {
    /// The default crawl options with these flags and `polite`'s pace.
    pub fn options(&self, polite: &PoliteArgs) -> CrawlOptions {
        let defaults = CrawlOptions::default();
        let mut normalise = defaults.normalise.clone();
        normalise.ignore_query = self.ignore_query;
        CrawlOptions {
            include: self.include.clone(),
            exclude: self.exclude.clone(),
            allow_subdomains: self.allow_subdomains,
            allow_hosts: self.follow_hosts.clone(),
            ignore_robots: self.ignore_robots,
            normalise,
            per_host_concurrency: polite
                .per_host_concurrency
                .unwrap_or(defaults.per_host_concurrency),
            per_host_delay_ms: polite.per_host_delay.map_or(defaults.per_host_delay_ms, |d| {
                u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
            }),
            ..defaults
        }
    }
}

/// Runs the command; returns the process exit code.
pub async fn run(setup: Setup, cmd: CrawlCmd) -> anyhow::Result<i32> {
    let options = cmd.options();
    let (starts, robots) = starts_and_robots(&setup, &cmd.urls, &options, &cmd.polite)?;
    let seeds = if options.sitemap {
        sitemap_seeds(&setup, &starts).await
    } else {
        Vec::new()
    };
    let template = cmd.fetch.spec_with(
        "http://template.invalid/".parse().expect("valid url"),
        &setup.config.fetch,
    );
    let batch_id = new_batch_id();
    let shutdown = shutdown_on_signals();
    let embedded = Embedded::start(&setup, &template, shutdown.clone()).await?;
    let progress = progress_bar(starts.len() as u64);
    let req = CrawlRequest {
        batch_id,
        starts,
        seeds,
        template,
        options,
        window: embedded.capacity * 2,
        taken_up: false,
        resumable: false,
    };
    let mut reports = embedded.queue.reports().await?;
    let mut show = show_progress(progress.clone());
    let summary = run_crawl(
        embedded.queue.clone(),
        embedded.store.clone(),
        robots,
        req,
        reports.as_mut(),
        |report, so_far| {
            if let Some(report) = report {
                show(report, so_far.ok + so_far.failed, so_far.total);
            }
        },
        CrawlStop {
            shutdown: shutdown.clone(),
            drained: embedded.workers_done.clone().cancelled_owned(),
            suspend: None,
        },
    )
    .await;
    oxwright_telemetry::console::clear_hook();
    let summary = summary?;
    let store = embedded.store.clone();
    embedded
        .stop(&progress, summary.batch.interrupted, &shutdown)
        .await?;

    if cmd.json {
        println!("{}", serde_json::to_string_pretty(&summary)?);
    } else {
        print_summary(&summary, &store.describe());
    }
    Ok(crate::exit::of_outcome(
        summary.batch.failed,
        summary.batch.interrupted,
    ))
}

/// The start URLs of a crawl or a map, checked by the URL policy and
/// the scope's patterns, and robots.txt unless `options` ignore it.
pub fn starts_and_robots(
    setup: &Setup,
    urls: &[String],
    options: &CrawlOptions,
    polite: &PoliteArgs,
) -> anyhow::Result<(Vec<Url>, Option<oxwright_robots::RobotsCache>)> {
    let mut starts = Vec::new();
    for raw in urls {
        match parse_url_entry(raw, &setup.policy) {
            BatchLine::Url(url) => starts.push(url),
            BatchLine::Invalid { error, .. } => {
                return Err(crate::exit::usage(format!(
                    "start URL {raw:?}: {}",
                    error.message
                )));
            }
        }
    }
    oxwright_scheduler::crawl::Scope::new(&starts, options).map_err(crate::exit::usage)?;
    let robots = if options.ignore_robots {
        None
    } else {
        Some(polite.robots(setup)?)
    };
    Ok((starts, robots))
}

/// The URLs of the start hosts' sitemaps; a host without one adds none.
async fn sitemap_seeds(setup: &Setup, starts: &[Url]) -> Vec<Url> {
    let mut seeds = Vec::new();
    for start in starts {
        match super::sitemap::expand(setup, start.as_str()).await {
            Ok(text) => seeds.extend(text.lines().filter_map(|l| Url::parse(l).ok())),
            Err(err) => eprintln!("warning: no sitemap seeds from {start}: {err:#}"),
        }
    }
    seeds
}

fn print_summary(s: &CrawlSummary, store: &str) {
    let b = &s.batch;
    println!(
        "crawl {}: {} pages, {} ok, {} failed in {:.1} s{}",
        b.batch_id,
        b.total,
        b.ok,
        b.failed,
        b.elapsed_s,
        if b.interrupted { " — interrupted" } else { "" }
    );
    for (kind, n) in &b.failed_by_kind {
        println!("  failed {kind}: {n}");
    }
    for (reason, n) in &s.skipped {
        println!("  not taken ({reason}): {n}");
    }
    println!("store:    {store}");
    println!("manifest: {}", b.manifest);
    println!("skipped:  {}", s.skipped_list);
}
