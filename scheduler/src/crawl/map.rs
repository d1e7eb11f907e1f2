//! A site's map: its URLs from its sitemaps and from a shallow reading of
//! its pages' links, judged by a crawl's rules (scope, normalisation, trap
//! bounds, robots.txt) and listed once each, without fetching a page for
//! its Markdown. For a user choosing what to crawl.
//!
//! Pages at a depth below `max_depth` are read for their links (the start
//! URLs at depth 0, so the default depth 1 reads only them); URLs at
//! `max_depth` are listed, not read. Sitemap URLs are listed at depth 1
//! and never read. Reads keep the crawl's per-host pace.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use futures::stream::{FuturesUnordered, StreamExt};
use oxwright_jobs::{CrawlOptions, SkipReason};
use oxwright_robots::RobotsCache;
use serde::{Deserialize, Serialize};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use url::Url;

use super::frontier::{Frontier, Judged, Taken};
use super::scope::PatternError;
use crate::politeness::{Hosts, host_key};

/// Where a mapped URL came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MapSource {
    /// A URL the map started from.
    Start,
    /// A link on a page read.
    Link,
    /// A sitemap's entry.
    Sitemap,
}

/// One URL of a map.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MappedUrl {
    /// The URL, normalised as a crawl would fetch it.
    pub url: String,
    /// Where it was found.
    pub source: MapSource,
    /// Links from a start URL (1 for a sitemap's).
    pub depth: u32,
    /// The page's title when it was read, else the first link text naming it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The sitemap's `<lastmod>`, for a sitemap's URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lastmod: Option<String>,
}

/// A sitemap entry offered to a map.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SitemapEntry {
    /// The URL.
    pub url: Url,
    /// Its `<lastmod>`, as written.
    pub lastmod: Option<String>,
}

/// A map to draw.
#[derive(Debug, Clone)]
pub struct MapRequest {
    /// Where it starts (depth 0).
    pub starts: Vec<Url>,
    /// The start hosts' sitemap entries.
    pub sitemap: Vec<SitemapEntry>,
    /// The crawl rules the URLs are judged by; `limit` is the number of
    /// URLs listed at most, `max_depth` the links followed.
    pub options: CrawlOptions,
    /// Keeps only URLs whose path, query or title holds every word of it
    /// (case folded), the shorter URL first.
    pub search: Option<String>,
    /// Pages read at once, across every host.
    pub concurrency: usize,
}

/// A site's map.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SiteMap {
    /// The URLs, starts first, then in the order found (best matches
    /// first when searched).
    pub urls: Vec<MappedUrl>,
    /// Pages read for their links.
    pub pages_read: usize,
    /// URLs found and not listed, by reason.
    pub skipped: BTreeMap<String, usize>,
    /// Pages that could not be read, and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// Seconds it took.
    pub elapsed_s: f64,
}

/// What a map reads of a page.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MapPage {
    /// Where its redirects ended.
    pub final_url: Option<Url>,
    /// Its title.
    pub title: String,
    /// The page it names as canonical.
    pub canonical: Option<String>,
    /// Its links (absolute), with their text, `<link rel="next">` among them.
    pub links: Vec<(String, String)>,
}

/// Reads a page for a map (over HTTP, without a browser, in the product).
#[async_trait::async_trait]
pub trait PageReader: Send + Sync {
    /// The page at `url`, or why it could not be read.
    async fn read(&self, url: &Url) -> Result<MapPage, String>;
}

struct Mapper<'a> {
    frontier: Frontier,
    robots: Option<&'a RobotsCache>,
    hosts: Hosts<(Taken, usize)>,
    urls: Vec<MappedUrl>,
    /// Where each listed URL stands in `urls`.
    index: HashMap<String, usize>,
    skipped: BTreeMap<String, usize>,
    max_depth: u32,
}

impl Mapper<'_> {
    fn skip(&mut self, reason: SkipReason) {
        *self.skipped.entry(reason.as_str().to_owned()).or_default() += 1;
    }

    async fn robots_allow(&mut self, url: &Url) -> bool {
        let Some(robots) = self.robots else {
            return true;
        };
        match robots.robots_for(url).await {
            Ok(rules) => {
                if let Some(delay) = rules.crawl_delay() {
                    self.hosts.set_crawl_delay(&host_key(url), delay, Instant::now());
                }
                rules.allowed(url)
            }
            Err(_) => false,
        }
    }

    /// Offers a URL found at `depth`: listed when the rules take it, and
    /// queued to be read when it is above the map's depth.
    async fn offer(
        &mut self,
        found: &Url,
        depth: u32,
        source: MapSource,
        title: &str,
        lastmod: Option<&str>,
    ) {
        let url = match self.frontier.judge(found, depth, None) {
            Judged::Known => {
                self.name(found, title);
                return;
            }
            Judged::Skipped(line) => return self.skip(line.reason),
            Judged::Candidate(url) => url,
        };
        if !self.robots_allow(&url).await {
            if let Judged::Skipped(line) = self.frontier.skip_robots(found, depth, None) {
                self.skip(line.reason);
            }
            return;
        }
        match self.frontier.admit(found, &url, depth, None) {
            Ok(true) => {}
            Ok(false) => return,
            Err(line) => {
                if let Some(line) = line {
                    self.skip(line.reason);
                }
                return;
            }
        }
        let at = self.urls.len();
        self.index.insert(url.to_string(), at);
        self.urls.push(MappedUrl {
            url: url.to_string(),
            source,
            depth,
            title: (!title.is_empty()).then(|| title.to_owned()),
            lastmod: lastmod.map(str::to_owned),
        });
        if depth < self.max_depth && source != MapSource::Sitemap {
            let taken = Taken {
                url,
                depth,
                parent: None,
            };
            self.hosts
                .push(&host_key(&taken.url), (taken, at), Instant::now());
        }
    }

    /// Gives a listed URL found again its first link text, if it has none.
    fn name(&mut self, found: &Url, title: &str) {
        if title.is_empty() {
            return;
        }
        let url = self.frontier.normalise(found);
        if let Some(&at) = self.index.get(url.as_str())
            && self.urls[at].title.is_none()
        {
            self.urls[at].title = Some(title.to_owned());
        }
    }

    /// Takes in a page read: its title, and its links one level deeper.
    /// A page that redirected to, or names as canonical, a URL listed
    /// already is a duplicate of it and leaves the list.
    async fn page(&mut self, taken: &Taken, at: usize, page: MapPage) -> bool {
        for other in [page.final_url.map(String::from), page.canonical]
            .into_iter()
            .flatten()
        {
            let Ok(other) = Url::parse(&other) else {
                continue;
            };
            let other = self.frontier.normalise(&other);
            if other == taken.url || !matches!(other.scheme(), "http" | "https") {
                continue;
            }
            if !self.frontier.claim(&other) {
                self.skip(SkipReason::Duplicate);
                self.urls[at].url.clear();
                return false;
            }
        }
        if !page.title.is_empty() {
            self.urls[at].title = Some(page.title);
        }
        for (link, text) in page.links {
            if let Ok(url) = Url::parse(&link) {
                self.offer(&url, taken.depth + 1, MapSource::Link, &text, None)
                    .await;
            }
        }
        true
    }
}

/// Draws the map `req` asks for, reading pages with `reader` and asking
/// `robots` (absent when robots.txt is ignored) before listing a URL.
/// When `shutdown` fires no further page is read; what was found is kept.
pub async fn map_site(
    reader: &dyn PageReader,
    robots: Option<&RobotsCache>,
    req: MapRequest,
    shutdown: CancellationToken,
) -> Result<SiteMap, PatternError> {
    let started = std::time::Instant::now();
    let options = req.options;
    let mut mapper = Mapper {
        frontier: Frontier::new(&req.starts, options.clone())?,
        robots: if options.ignore_robots { None } else { robots },
        hosts: Hosts::new(options.per_host_concurrency, options.per_host_delay()),
        urls: Vec::new(),
        index: HashMap::new(),
        skipped: BTreeMap::new(),
        max_depth: options.max_depth,
    };
    for start in &req.starts {
        mapper.offer(start, 0, MapSource::Start, "", None).await;
    }
    for entry in &req.sitemap {
        let lastmod = entry.lastmod.as_deref();
        mapper.offer(&entry.url, 1, MapSource::Sitemap, "", lastmod).await;
    }
    let mut warnings = Vec::new();
    let mut pages_read = 0;
    let mut reading = FuturesUnordered::new();
    let concurrency = req.concurrency.max(1);
    loop {
        let now = Instant::now();
        while !shutdown.is_cancelled()
            && reading.len() < concurrency
            && let Some((key, (taken, at))) = mapper.hosts.release(now)
        {
            reading.push(async move {
                let page = reader.read(&taken.url).await;
                (key, taken, at, page)
            });
        }
        if reading.is_empty() && (mapper.hosts.waiting() == 0 || shutdown.is_cancelled()) {
            break;
        }
        let wake = mapper
            .hosts
            .next_release()
            .filter(|_| reading.len() < concurrency);
        tokio::select! {
            _ = shutdown.cancelled(), if reading.is_empty() => break,
            _ = tokio::time::sleep_until(wake.unwrap_or(now)), if wake.is_some() => {}
            Some((key, taken, at, page)) = reading.next(), if !reading.is_empty() => {
                mapper.hosts.finished(&key, false, Instant::now());
                match page {
                    Ok(page) => {
                        pages_read += 1;
                        mapper.page(&taken, at, page).await;
                    }
                    Err(why) => warnings.push(format!("{}: {why}", taken.url)),
                }
            }
        }
    }
    let mut urls: Vec<MappedUrl> = mapper.urls.into_iter().filter(|u| !u.url.is_empty()).collect();
    if let Some(search) = req.search.as_deref() {
        urls = search_urls(urls, search);
    }
    Ok(SiteMap {
        urls,
        pages_read,
        skipped: mapper.skipped,
        warnings,
        elapsed_s: started.elapsed().as_secs_f64(),
    })
}

/// The URLs whose path, query or title holds every word of `search`
/// (case folded), the shorter URL first.
fn search_urls(urls: Vec<MappedUrl>, search: &str) -> Vec<MappedUrl> {
    let words: Vec<String> = search.split_whitespace().map(str::to_lowercase).collect();
    let mut kept: Vec<(usize, usize, MappedUrl)> = urls
        .into_iter()
        .enumerate()
        .filter_map(|(i, u)| {
            let path = Url::parse(&u.url)
                .map(|p| p[url::Position::BeforePath..].to_owned())
                .unwrap_or_default();
            let text = format!("{path} {}", u.title.as_deref().unwrap_or_default()).to_lowercase();
            words.iter().all(|w| text.contains(w.as_str())).then_some((i, u))
        })
        .map(|(i, u)| (u.url.len(), i, u))
        .collect();
    kept.sort_by_key(|(len, i, _)| (*len, *i));
    kept.into_iter().map(|(_, _, u)| u).collect()
}

/// How long a map waits for one page by default.
pub const MAP_PAGE_TIMEOUT: Duration = Duration::from_secs(15);

#[cfg(test)]
mod tests {
    use super::*;

    struct Site;

    #[async_trait::async_trait]
    impl PageReader for Site {
        async fn read(&self, url: &Url) -> Result<MapPage, String> {
            let links = |l: &[&str]| {
                l.iter()
                    .map(|p| (format!("https://example.com{p}"), format!("to {p}")))
                    .collect()
            };
            let page = match url.path() {
                "/" => MapPage {
                    title: "Home".into(),
                    links: links(&["/a", "/b", "/a#x", "/a?utm_source=y", "/c?utm_source=z"]),
                    ..MapPage::default()
                },
                "/a" => MapPage {
                    title: "A".into(),
                    links: links(&["/a/1", "/"]),
                    ..MapPage::default()
                },
                "/b" => MapPage {
                    title: "B".into(),
                    canonical: Some("https://example.com/a".into()),
                    links: links(&["/b/only"]),
                    ..MapPage::default()
                },
                "/c" => return Err("connection refused".into()),
                _ => MapPage::default(),
            };
            Ok(page)
        }
    }

    fn request(max_depth: u32, search: Option<&str>) -> MapRequest {
        MapRequest {
            starts: vec!["https://example.com/".parse().unwrap()],
            sitemap: vec![SitemapEntry {
                url: "https://example.com/from-sitemap".parse().unwrap(),
                lastmod: Some("2026-01-02".into()),
            }],
            options: CrawlOptions {
                max_depth,
                per_host_delay_ms: 0,
                ..CrawlOptions::default()
            },
            search: search.map(str::to_owned),
            concurrency: 2,
        }
    }

    fn listed(map: &SiteMap) -> Vec<(&str, MapSource)> {
        map.urls
            .iter()
            .map(|u| (u.url.trim_start_matches("https://example.com"), u.source))
            .collect()
    }

    #[tokio::test]
    async fn the_default_depth_reads_the_start_and_lists_its_links_once() {
        let map = map_site(&Site, None, request(1, None), CancellationToken::new())
            .await
            .unwrap();
        assert_eq!(map.pages_read, 1);
        assert_eq!(
            listed(&map),
            [
                ("/", MapSource::Start),
                ("/from-sitemap", MapSource::Sitemap),
                ("/a", MapSource::Link),
                ("/b", MapSource::Link),
                ("/c", MapSource::Link),
            ]
        );
        assert_eq!(map.urls[0].title.as_deref(), Some("Home"));
        assert_eq!(map.urls[1].lastmod.as_deref(), Some("2026-01-02"));
        assert_eq!(map.urls[2].title.as_deref(), Some("to /a"));
        assert_eq!(map.skipped.get("duplicate"), Some(&1), "{:?}", map.skipped);
    }

    #[tokio::test]
    async fn deeper_maps_read_links_drop_canonical_duplicates_and_say_what_failed() {
        let map = map_site(&Site, None, request(2, None), CancellationToken::new())
            .await
            .unwrap();
        assert_eq!(map.pages_read, 3, "{map:?}");
        let urls: Vec<&str> = listed(&map).into_iter().map(|(u, _)| u).collect();
        assert_eq!(urls, ["/", "/from-sitemap", "/a", "/c", "/a/1"]);
        assert_eq!(map.warnings.len(), 1, "{:?}", map.warnings);
        assert!(map.warnings[0].contains("connection refused"));

        for (search, want) in [("SiteMap", "/from-sitemap"), ("a 1", "/a/1")] {
            let map = map_site(&Site, None, request(2, Some(search)), CancellationToken::new())
                .await
                .unwrap();
            let urls: Vec<&str> = listed(&map).into_iter().map(|(u, _)| u).collect();
            assert_eq!(urls, [want], "{search}");
        }
    }
}
