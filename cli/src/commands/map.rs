//! `oxwright map URL…`: a site's URLs from its sitemaps and a shallow
//! reading of its pages' links, over HTTP, without Markdown or a browser,
//! judged by the crawl's rules: for choosing what to crawl.

use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use oxwright_config::Setup;
use oxwright_jobs::{CrawlOptions, FetchSpec, RequestShape};
use oxwright_policy::UrlPolicy;
use oxwright_scheduler::crawl::map::MAP_PAGE_TIMEOUT;
use oxwright_scheduler::crawl::{MapPage, MapRequest, PageReader, SiteMap, SitemapEntry, map_site};
use oxwright_sitemap::{SitemapLoader, SitemapOptions};
use oxwright_telemetry::printable;
use url::Url;

use super::batch::PoliteArgs;
use super::crawl::{ScopeArgs, starts_and_robots};
use crate::signals::shutdown_on_signals;

/// Arguments of `oxwright map`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  oxwright map docs.example.com                      # sitemap URLs and the start page's links, one a line
  oxwright map example.com --max-depth 2 --search pricing --json")]
pub struct MapCmd {
    /// Where to start (domains or URLs); the map stays on their hosts.
    #[arg(required = true, value_name = "URL")]
    pub urls: Vec<String>,
    /// Links followed from a start URL: pages above this depth are read
    /// for their links [default: 1, the start pages only].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_depth: Option<u32>,
    /// URLs listed at most [default: 5000].
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
    /// List only URLs whose path, query or title holds every word of TEXT
    /// (case folded), the shorter URLs first.
    #[arg(long, value_name = "TEXT")]
    pub search: Option<String>,
    #[command(flatten)]
    pub scope: ScopeArgs,
    /// Leave the sitemaps out: links only.
    #[arg(long)]
    pub no_sitemap: bool,
    /// Pages read at once, across every host [default: 4].
    #[arg(long, value_name = "N")]
    pub concurrency: Option<usize>,
    #[command(flatten)]
    pub polite: PoliteArgs,
    /// Print the map as JSON: each URL with its source, depth, title and lastmod.
    #[arg(long)]
    pub json: bool,
}

/// URLs a map lists unless `--limit` says otherwise.
pub const DEFAULT_MAP_LIMIT: usize = 5000;

impl MapCmd {
    fn options(&self) -> CrawlOptions {
        CrawlOptions {
            max_depth: self.max_depth.unwrap_or(1),
            limit: self.limit.unwrap_or(DEFAULT_MAP_LIMIT),
            ..self.scope.options(&self.polite)
        }
    }
}

/// Reads pages over the policy-judged HTTP client, shaped as the
/// configuration's fetch defaults ask.
struct HttpReader {
    policy: Arc<UrlPolicy>,
    shape: RequestShape,
    timeout: Duration,
}

#[async_trait::async_trait]
impl PageReader for HttpReader {
    async fn read(&self, url: &Url) -> Result<MapPage, String> {
        let (final_url, outline) = oxwright_fetch::outline_page(url, &self.policy, &self.shape, self.timeout)
            .await
            .map_err(|e| e.to_string())?;
        let next = outline.metadata.next.map(|n| (n, String::new()));
        Ok(MapPage {
            final_url: Some(final_url),
            title: outline.title,
            canonical: outline.metadata.canonical,
            links: outline
                .links
                .all()
                .map(|l| (l.url.clone(), l.text.clone()))
                .chain(next)
                .collect(),
        })
    }
}

/// Runs the command; returns the process exit code.
pub async fn run(setup: Setup, cmd: MapCmd) -> anyhow::Result<i32> {
    let options = cmd.options();
    let (starts, robots) = starts_and_robots(&setup, &cmd.urls, &options, &cmd.polite)?;
    let sitemap = if cmd.no_sitemap {
        Vec::new()
    } else {
        sitemap_entries(&setup, &starts).await
    };
    let mut template = FetchSpec::new(starts[0].clone());
    if let Err(e) = setup.config.fetch.apply(&mut template, |_| false) {
        tracing::warn!(error = %e, "[fetch] not applied");
    }
    let reader = HttpReader {
        policy: setup.policy.clone(),
        shape: template.shape(),
        timeout: MAP_PAGE_TIMEOUT,
    };
    let req = MapRequest {
        starts,
        sitemap,
        options,
        search: cmd.search.clone(),
        concurrency: cmd.concurrency.unwrap_or(4),
    };
    let map = map_site(&reader, robots.as_ref(), req, shutdown_on_signals()).await?;
    if cmd.json {
        println!("{}", serde_json::to_string_pretty(&map)?);
    } else {
        print_map(&map);
    }
    Ok(crate::exit::OK)
}

/// The entries of the start hosts' sitemaps; a host without one adds none.
async fn sitemap_entries(setup: &Setup, starts: &[Url]) -> Vec<SitemapEntry> {
    let loader = SitemapLoader::new(setup.policy.clone(), SitemapOptions::default());
    let mut entries = Vec::new();
    for start in starts {
        match loader.load(start.as_str()).await {
            Ok(result) => {
                for w in &result.warnings {
                    eprintln!("warning: sitemap: {}", printable(w));
                }
                entries.extend(result.urls.into_iter().filter_map(|u| {
                    Some(SitemapEntry {
                        url: Url::parse(&u.loc).ok()?,
                        lastmod: u.lastmod,
                    })
                }));
            }
            Err(err) => eprintln!(
                "warning: no sitemap for {start}: {}",
                printable(&oxwright_jobs::JobError::from(err).to_string())
            ),
        }
    }
    entries
}

fn print_map(map: &SiteMap) {
    for url in &map.urls {
        println!("{}", url.url);
    }
    for w in &map.warnings {
        eprintln!("warning: {}", printable(w));
    }
    let skipped: Vec<String> = map.skipped.iter().map(|(r, n)| format!("{r} {n}")).collect();
    eprintln!(
        "{} URLs, {} pages read in {:.1} s{}",
        map.urls.len(),
        map.pages_read,
        map.elapsed_s,
        if skipped.is_empty() {
            String::new()
        } else {
            format!("; not listed: {}", skipped.join(", "))
        }
    );
}
