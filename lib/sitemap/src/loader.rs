//! The sitemap load: discovery (robots.txt `Sitemap:` lines, then
//! `/sitemap.xml`), breadth-first expansion of sitemap indexes under depth,
//! document and URL limits, cycle checks, caching with conditional GETs, and
//! the deduplicated result. Index expansion only: pages are never crawled.

use std::collections::HashSet;
use std::sync::Arc;

use futures::StreamExt;
use oxwright_policy::UrlPolicy;
use tracing::{debug, instrument};
use url::Url;

use crate::cache::{CachedDoc, DocCache, now_secs};
use crate::fetch::{Fetched, Fetcher, doc_key};
use crate::parse::{ParseError, ParseLimits, ParsedDoc, parse_sitemap_with};
use crate::types::{SitemapOptions, SitemapResult, SitemapUrl, SourceDoc};
use crate::{SitemapError, parse_robots_sitemaps};

/// How many documents of one index level are fetched at once.
const PARALLEL_FETCHES: usize = 4;

/// Loads sitemaps. Cheap to clone: clones share the HTTP client and the cache.
#[derive(Debug, Clone)]
pub struct SitemapLoader {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    fetcher: Fetcher,
    cache: DocCache,
    opts: SitemapOptions,
}

/// What `load` was asked for.
enum Target {
    /// Discover from the origin of this URL.
    Site(Url),
    /// Load this sitemap.
    Sitemap(Url),
}

/// The running state of one load.
struct Run {
    sources: Vec<SourceDoc>,
    urls: Vec<SitemapUrl>,
    seen_urls: HashSet<String>,
    warnings: Vec<String>,
    visited: HashSet<String>,
    documents: usize,
    url_cap_hit: bool,
}

impl SitemapLoader {
    /// Creates a loader that fetches only what `policy` allows.
    pub fn new(policy: Arc<UrlPolicy>, opts: SitemapOptions) -> Self {
        let fetcher = Fetcher::new(policy, opts.timeout, opts.max_bytes, &opts.user_agent);
        let cache = DocCache::new(opts.cache_dir.clone(), opts.ttl);
        Self {
            inner: Arc::new(Inner { fetcher, cache, opts }),
        }
    }

    /// Loads the sitemaps of `target`: a domain (`example.com`), the URL of a
    /// site (discovery from its origin) or the URL of a sitemap (loaded
    /// directly). A URL is taken as a sitemap when its last path segment
    /// names one (`sitemap`, `.xml`, `.gz`, `.txt`, `feed`, `rss`, `atom`).
    #[instrument(skip_all, fields(target = %target))]
    pub async fn load(&self, target: &str) -> Result<SitemapResult, SitemapError> {
        let target = parse_target(target)?;
        let (Target::Site(url) | Target::Sitemap(url)) = &target;
        self.inner
            .fetcher
            .policy()
            .check(url)
            .await
            .map_err(|source| SitemapError::Policy {
                url: url.to_string(),
                source,
            })?;
        let domain = domain_of(url);
        let mut run = Run {
            sources: Vec::new(),
            urls: Vec::new(),
            seen_urls: HashSet::new(),
            warnings: Vec::new(),
            visited: HashSet::new(),
            documents: 0,
            url_cap_hit: false,
        };
        match target {
            Target::Sitemap(url) => {
                if let Some(Err(e)) = self.expand(vec![url], &mut run).await.pop() {
                    return Err(e);
                }
            }
            Target::Site(origin) => self.discover(&origin, &domain, &mut run).await?,
        }
        debug!(
            domain = %domain,
            urls = run.urls.len(),
            documents = run.documents,
            "sitemap load done"
        );
        Ok(SitemapResult {
            domain,
            sources: run.sources,
            urls: run.urls,
            warnings: run.warnings,
        })
    }

    /// Reads robots.txt, expands the sitemaps it lists, and falls back to
    /// `/sitemap.xml` when it lists none or none of them loads.
    async fn discover(&self, origin: &Url, domain: &str, run: &mut Run) -> Result<(), SitemapError> {
        let robots_url = origin
            .join("/robots.txt")
            .map_err(|_| SitemapError::InvalidInput(origin.to_string()))?;
        let mut roots = Vec::new();
        let (source, outcome) = self.fetch_doc(&robots_url, true, &run.visited).await;
        run.sources.push(source);
        match outcome {
            Ok(doc) => {
                for w in doc.warnings {
                    run.warnings.push(format!("{robots_url}: {w}"));
                }
                roots.extend(doc.sitemaps.iter().filter_map(|s| Url::parse(s).ok()));
            }
            Err(SitemapError::Http {
                status: 404 | 410, ..
            }) => {}
            // Anything else, a refused redirect hop included (the origin
            // itself passed the policy), only loses robots.txt.
            Err(e) => run.warnings.push(format!("robots.txt unusable: {e}")),
        }
        let fallback = origin
            .join("/sitemap.xml")
            .map_err(|_| SitemapError::InvalidInput(origin.to_string()))?;
        let mut tried: Vec<String> = roots.iter().map(|u| u.to_string()).collect();
        let mut outcomes = self.expand(roots, run).await;
        if !outcomes.iter().any(Result::is_ok) && !tried.contains(&fallback.to_string()) {
            tried.push(fallback.to_string());
            outcomes.extend(self.expand(vec![fallback], run).await);
        }
        if outcomes.iter().any(Result::is_ok) {
            return Ok(());
        }
        let serious = outcomes.into_iter().filter_map(Result::err).find(|e| {
            !matches!(
                e,
                SitemapError::Http {
                    status: 404 | 410,
                    ..
                } | SitemapError::Parse { .. }
            )
        });
        Err(serious.unwrap_or(SitemapError::NotFound {
            domain: domain.to_string(),
            tried,
        }))
    }

    /// Expands `roots` breadth first and returns one outcome per root.
    async fn expand(&self, roots: Vec<Url>, run: &mut Run) -> Vec<Result<(), SitemapError>> {
        let opts = &self.inner.opts;
        let mut root_outcomes = Vec::new();
        let mut level: Vec<Url> = roots;
        let mut depth = 0u32;
        while !level.is_empty() {
            let mut batch = Vec::new();
            for url in level.drain(..) {
                let key = doc_key(&url);
                if run.visited.contains(&key) {
                    let msg = format!("{url}: already read in this load (cycle or duplicate); skipped");
                    run.warnings.push(msg);
                    if depth == 0 {
                        root_outcomes.push(Ok(()));
                    }
                    continue;
                }
                if run.documents >= opts.max_documents {
                    run.warnings.push(format!(
                        "{url}: skipped, the load reached max_documents ({})",
                        opts.max_documents
                    ));
                    continue;
                }
                run.documents += 1;
                run.visited.insert(key);
                batch.push(url);
            }
            let visited = run.visited.clone();
            let fetched: Vec<_> = futures::stream::iter(batch)
                .map(|url| {
                    let visited = &visited;
                    async move {
                        let res = self.fetch_doc(&url, false, visited).await;
                        (url, res)
                    }
                })
                .buffered(PARALLEL_FETCHES)
                .collect()
                .await;
            for (url, (source, outcome)) in fetched {
                run.sources.push(source);
                let doc = match outcome {
                    Ok(doc) => doc,
                    Err(e) => {
                        debug!(url = %url, error = %e, "sitemap document failed");
                        run.warnings.push(e.to_string());
                        if depth == 0 {
                            root_outcomes.push(Err(e));
                        }
                        continue;
                    }
                };
                if depth == 0 {
                    root_outcomes.push(Ok(()));
                }
                for w in &doc.warnings {
                    run.warnings.push(format!("{url}: {w}"));
                }
                run.add_urls(doc.urls, opts.max_urls);
                if doc.sitemaps.is_empty() {
                    continue;
                }
                if depth >= opts.max_depth {
                    run.warnings.push(format!(
                        "{url}: index nesting deeper than max_depth ({}); skipped {} sitemaps",
                        opts.max_depth,
                        doc.sitemaps.len()
                    ));
                    continue;
                }
                level.extend(doc.sitemaps.iter().filter_map(|s| Url::parse(s).ok()));
            }
            depth += 1;
        }
        root_outcomes
    }

    /// Fetches and parses one document, through the cache. The returned
    /// source describes what happened either way.
    async fn fetch_doc(
        &self,
        url: &Url,
        robots: bool,
        visited: &HashSet<String>,
    ) -> (SourceDoc, Result<ParsedDoc, SitemapError>) {
        let opts = &self.inner.opts;
        let key = format!(
            "{}|{}|{}|{}",
            if robots { "robots" } else { "sitemap" },
            opts.max_bytes,
            opts.max_urls,
            doc_key(url)
        );
        let cached = self.inner.cache.get(&key).await;
        let validators = cached.as_ref().map(|c| c.validators());
        let mut source = SourceDoc {
            url: url.to_string(),
            status: None,
            bytes: 0,
            from_cache: false,
            not_modified: false,
            error: None,
        };
        let outcome = match self.inner.fetcher.fetch(url, validators.as_ref(), visited).await {
            Ok(Fetched::NotModified { final_url }) => match cached {
                Some(c) => {
                    source.status = Some(304);
                    source.bytes = c.doc.bytes;
                    source.from_cache = true;
                    source.not_modified = true;
                    Ok(c.doc.clone())
                }
                None => Err(SitemapError::Http {
                    url: final_url.to_string(),
                    status: 304,
                }),
            },
            Ok(Fetched::Body {
                final_url,
                status,
                body,
                validators,
            }) => {
                source.status = Some(status);
                let limits = ParseLimits {
                    max_bytes: opts.max_bytes,
                    max_urls: opts.max_urls,
                };
                let doc = parse_blocking(body, final_url.clone(), robots, limits).await;
                source.bytes = doc.bytes;
                match &doc.error {
                    Some(err) => Err(SitemapError::from_parse(final_url.as_str(), err)),
                    None => {
                        if validators.etag.is_some() || validators.last_modified.is_some() {
                            self.inner
                                .cache
                                .put(CachedDoc {
                                    key,
                                    etag: validators.etag,
                                    last_modified: validators.last_modified,
                                    stored_at: now_secs(),
                                    doc: doc.clone(),
                                })
                                .await;
                        }
                        Ok(doc)
                    }
                }
            }
            Err(e) => {
                if let SitemapError::Http { status, .. } = &e {
                    source.status = Some(*status);
                }
                Err(e)
            }
        };
        if let Err(e) = &outcome {
            source.error = Some(e.to_string());
        }
        (source, outcome)
    }
}

impl Run {
    /// Appends the URLs not seen yet, up to `max_urls` in total.
    fn add_urls(&mut self, urls: Vec<SitemapUrl>, max_urls: usize) {
        for u in urls {
            if self.seen_urls.contains(&u.loc) {
                continue;
            }
            if self.urls.len() >= max_urls {
                if !self.url_cap_hit {
                    self.url_cap_hit = true;
                    self.warnings.push(format!(
                        "stopped at max_urls ({max_urls}); further URLs were dropped"
                    ));
                }
                return;
            }
            self.seen_urls.insert(u.loc.clone());
            self.urls.push(u);
        }
    }
}

/// Parses off the async threads: a 2 MiB document takes milliseconds.
async fn parse_blocking(body: Vec<u8>, base: Url, robots: bool, limits: ParseLimits) -> ParsedDoc {
    let job = move || {
        if robots {
            parse_robots_doc(&body, &base, limits.max_bytes)
        } else {
            parse_sitemap_with(&body, limits)
        }
    };
    tokio::task::spawn_blocking(job)
        .await
        .unwrap_or_else(|e| ParsedDoc::failed(ParseError::Malformed(format!("parser task failed: {e}"))))
}

/// Decodes a robots.txt body (it may arrive gzip-encoded) and reads its `Sitemap:` lines.
fn parse_robots_doc(body: &[u8], base: &Url, max_bytes: usize) -> ParsedDoc {
    let text = match crate::parse::decode_capped(body, max_bytes) {
        Ok(text) => text,
        Err(e) => return ParsedDoc::failed(e),
    };
    ParsedDoc {
        sitemaps: parse_robots_sitemaps(&text, base)
            .into_iter()
            .map(String::from)
            .collect(),
        bytes: text.len() as u64,
        ..ParsedDoc::default()
    }
}

fn parse_target(text: &str) -> Result<Target, SitemapError> {
    let text = text.trim();
    if text.is_empty() || text.chars().any(char::is_whitespace) {
        return Err(SitemapError::InvalidInput(text.to_string()));
    }
    // A bare host gets the scheme a person means: http for loopback and
    // private addresses, https elsewhere (the URL policy's one rule).
    let mut url = match oxwright_policy::bare_host_url(text) {
        Some(url) => url,
        None => Url::parse(text).map_err(|_| SitemapError::InvalidInput(text.to_string()))?,
    };
    if url.host_str().is_none_or(str::is_empty) {
        return Err(SitemapError::InvalidInput(text.to_string()));
    }
    url.set_fragment(None);
    let last = url
        .path_segments()
        .and_then(|mut s| s.next_back())
        .unwrap_or("")
        .to_ascii_lowercase();
    let is_sitemap = [".xml", ".gz", ".txt", ".rss", ".atom"]
        .iter()
        .any(|ext| last.ends_with(ext))
        || ["sitemap", "feed", "rss", "atom"]
            .iter()
            .any(|w| last.contains(w));
    if is_sitemap {
        return Ok(Target::Sitemap(url));
    }
    url.set_path("/");
    url.set_query(None);
    Ok(Target::Site(url))
}

fn domain_of(url: &Url) -> String {
    let host = url.host_str().unwrap_or_default();
    match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(t: &str) -> (&'static str, String) {
        match parse_target(t).unwrap() {
            Target::Site(u) => ("site", u.to_string()),
            Target::Sitemap(u) => ("sitemap", u.to_string()),
        }
    }

    #[test]
    fn targets_are_classified() {
        assert_eq!(kind("example.com"), ("site", "https://example.com/".into()));
        assert_eq!(kind("127.0.0.1:8765"), ("site", "http://127.0.0.1:8765/".into()));
        assert_eq!(
            kind("localhost:3000/sitemap.xml"),
            ("sitemap", "http://localhost:3000/sitemap.xml".into())
        );
        assert_eq!(
            kind("http://a.example:8080/docs/x?q=1"),
            ("site", "http://a.example:8080/".into())
        );
        assert_eq!(
            kind("https://a.example/sitemap_index.xml"),
            ("sitemap", "https://a.example/sitemap_index.xml".into())
        );
        assert_eq!(
            kind("https://a.example/s/urls.txt.gz"),
            ("sitemap", "https://a.example/s/urls.txt.gz".into())
        );
        assert_eq!(
            kind("https://a.example/blog/feed"),
            ("sitemap", "https://a.example/blog/feed".into())
        );
        for bad in ["", "  ", "a b", "http://"] {
            assert!(
                matches!(parse_target(bad), Err(SitemapError::InvalidInput(_))),
                "{bad:?}"
            );
        }
        assert_eq!(
            domain_of(&Url::parse("http://a.example:8080/").unwrap()),
            "a.example:8080"
        );
        assert_eq!(
            domain_of(&Url::parse("https://a.example:443/").unwrap()),
            "a.example"
        );
    }
}
