//! The crawl frontier at scale, with a fake fetcher: every host's pages
//! form a tree (page `i` links to pages `2i+1` and `2i+2`, back to its
//! parent and to the home page, and to itself under a tracking
//! parameter), so each page is found several times under several
//! spellings. Every page released "finishes" at once and its links are
//! offered. Measures the offers (parse, normalise, judge, take) and the
//! releases per second, and the process's memory per URL taken.

use std::time::{Duration, Instant};

use anyhow::Result;
use clap::Args;
use oxwright_jobs::CrawlOptions;
use oxwright_scheduler::crawl::{Frontier, Judged};
use serde::Serialize;
use url::Url;

/// Arguments of `frontier`.
#[derive(Debug, Args)]
pub struct FrontierArgs {
    /// Hosts crawled at once.
    #[arg(long, default_value_t = 100_000)]
    pub hosts: usize,
    /// Pages taken in all (spread evenly over the hosts).
    #[arg(long, default_value_t = 10_000_000)]
    pub urls: usize,
    /// Page loads in flight per host.
    #[arg(long, default_value_t = 2)]
    pub per_host_concurrency: usize,
}

/// What `frontier` measured.
#[derive(Debug, Serialize)]
pub struct FrontierReport {
    pub hosts: usize,
    pub urls_taken: usize,
    pub links_offered: usize,
    pub skipped_lines: usize,
    pub offers_per_s: f64,
    pub releases_per_s: f64,
    pub wall_s: f64,
    /// Resident memory of the process before the frontier existed and at its end.
    pub rss_before_mib: f64,
    pub rss_after_mib: f64,
    /// The largest number of URLs waiting for their host at once.
    pub peak_waiting: usize,
    /// (RSS at the end − RSS before) / URLs taken: everything the
    /// frontier keeps per URL once the pages are done.
    pub rss_bytes_per_url: f64,
    /// The seen-set and skip record by their capacity, per URL taken.
    pub seen_bytes_per_url: f64,
}

fn rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// The links of page `i` (of `per_host`) at host `h`, as a page would spell them.
fn links(h: usize, i: usize, per_host: usize, out: &mut Vec<String>) {
    out.clear();
    let base = format!("https://h{h}.example");
    for child in [2 * i + 1, 2 * i + 2] {
        if child < per_host {
            out.push(format!("{base}/p/{child}"));
        }
    }
    if i > 0 {
        out.push(format!("{base}/p/{}", (i - 1) / 2));
        out.push(format!("{base}/p/{i}?utm_source=feed"));
    }
    out.push(format!("{base}/"));
}

/// The page number of `url`'s path (`/` is 0).
fn page_of(url: &Url) -> usize {
    url.path()
        .strip_prefix("/p/")
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// The host number of `url` (`h123.example`).
fn host_of(url: &Url) -> usize {
    url.host_str()
        .and_then(|h| h.strip_prefix('h'))
        .and_then(|h| h.split('.').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

pub async fn run(args: &FrontierArgs) -> Result<FrontierReport> {
    let per_host = args.urls.div_ceil(args.hosts).max(1);
    let starts: Vec<Url> = (0..args.hosts)
        .map(|h| format!("https://h{h}.example/p/0").parse().expect("url"))
        .collect();
    let rss_before = rss_bytes();
    let options = CrawlOptions {
        max_depth: u32::MAX,
        limit: args.urls,
        per_host_concurrency: args.per_host_concurrency,
        per_host_delay_ms: 0,
        ..CrawlOptions::default()
    };
    let mut frontier = Frontier::new(&starts, options)?;
    drop(starts);
    let started = Instant::now();
    let (mut offer_time, mut release_time) = (Duration::ZERO, Duration::ZERO);
    let (mut offered, mut skipped, mut releases, mut peak_waiting) = (0usize, 0usize, 0usize, 0usize);
    let offer = |frontier: &mut Frontier, text: &str, depth: u32, parent: Option<&str>| {
        let url = Url::parse(text).expect("url");
        match frontier.judge(&url, depth, parent) {
            Judged::Candidate(n) => usize::from(
                frontier
                    .take(&url, n, depth, parent, tokio::time::Instant::now())
                    .is_some(),
            ),
            Judged::Skipped(_) => 1,
            Judged::Known => 0,
        }
    };
    let t = Instant::now();
    for h in 0..args.hosts {
        skipped += offer(&mut frontier, &format!("https://h{h}.example/p/0"), 0, None);
        offered += 1;
    }
    offer_time += t.elapsed();
    let mut batch = Vec::new();
    let mut found = Vec::new();
    loop {
        let t = Instant::now();
        let now = tokio::time::Instant::now();
        batch.clear();
        while let Some(released) = frontier.hosts().release(now) {
            batch.push(released);
        }
        release_time += t.elapsed();
        releases += batch.len();
        peak_waiting = peak_waiting.max(frontier.hosts().waiting() + batch.len());
        if batch.is_empty() {
            break;
        }
        let t = Instant::now();
        for (key, taken) in batch.drain(..) {
            frontier.hosts().finished(&key, false, now);
            let (h, i) = (host_of(&taken.url), page_of(&taken.url));
            links(h, i, per_host, &mut found);
            let parent = taken.url.as_str();
            for link in &found {
                skipped += offer(&mut frontier, link, taken.depth + 1, Some(parent));
                offered += 1;
            }
        }
        offer_time += t.elapsed();
    }
    let wall = started.elapsed();
    let rss_after = rss_bytes();
    let taken = frontier.taken();
    let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
    Ok(FrontierReport {
        hosts: args.hosts,
        urls_taken: taken,
        links_offered: offered,
        skipped_lines: skipped,
        offers_per_s: offered as f64 / offer_time.as_secs_f64(),
        releases_per_s: releases as f64 / release_time.as_secs_f64(),
        wall_s: wall.as_secs_f64(),
        rss_before_mib: mib(rss_before),
        rss_after_mib: mib(rss_after),
        peak_waiting,
        rss_bytes_per_url: rss_after.saturating_sub(rss_before) as f64 / taken.max(1) as f64,
        seen_bytes_per_url: frontier.seen_bytes() as f64 / taken.max(1) as f64,
    })
}

pub fn markdown(r: &FrontierReport) -> String {
    format!(
        "| hosts | URLs taken | links offered | skip lines | offers/s | releases/s | wall | RSS before → after | peak waiting | RSS / URL | seen-set / URL |\n\
         |---|---|---|---|---|---|---|---|---|---|---|\n\
         | {} | {} | {} | {} | {:.0} | {:.0} | {:.1} s | {:.0} → {:.0} MiB | {} | {:.1} B | {:.1} B |",
        r.hosts,
        r.urls_taken,
        r.links_offered,
        r.skipped_lines,
        r.offers_per_s,
        r.releases_per_s,
        r.wall_s,
        r.rss_before_mib,
        r.rss_after_mib,
        r.peak_waiting,
        r.rss_bytes_per_url,
        r.seen_bytes_per_url
    )
}
