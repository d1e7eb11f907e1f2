//! What the decision prompt learns beyond the snapshot: the site's
//! profile (name, characteristics, common selectors, login hints; see
//! [`SiteProfiles`]) and the site's sitemap URLs, discovered at run
//! time. Both are added only when they apply to the page, and the step's
//! token budget shrinks the snapshot first, then the URL list.

use std::sync::Arc;

pub use oxwright_jobs::{SiteProfile, SiteProfiles};

/// URLs of a sitemap the prompt takes at most (seed: 300 URLs or 10,000
/// characters, whichever is smaller).
pub const SITEMAP_MAX_URLS: usize = 300;
/// Characters of the URL list the prompt takes at most.
pub const SITEMAP_MAX_CHARS: usize = 10_000;

/// Where a site's sitemap URLs come from (the sitemap loader, with its
/// cache and the run's URL policy); an empty list when there is none.
#[async_trait::async_trait]
pub trait SitemapSource: Send + Sync {
    /// The sitemap URLs of the site `page` is on.
    async fn urls(&self, page: &url::Url) -> Vec<String>;
}

/// A [`SitemapSource`] over the sitemap loader (its cache, the run's URL
/// policy): the site's sitemaps found through robots.txt, then
/// `/sitemap.xml`, at most [`SITEMAP_MAX_URLS`] URLs.
#[derive(Clone)]
pub struct SitemapHints {
    loader: oxwright_sitemap::SitemapLoader,
}

impl SitemapHints {
    /// Loads sitemaps under `policy` with the loader's defaults (3 s and
    /// 2 MiB a document, 24 h cache).
    pub fn new(policy: Arc<oxwright_engine::UrlPolicy>) -> Self {
        Self {
            loader: oxwright_sitemap::SitemapLoader::new(policy, oxwright_sitemap::SitemapOptions::default()),
        }
    }
}

#[async_trait::async_trait]
impl SitemapSource for SitemapHints {
    async fn urls(&self, page: &url::Url) -> Vec<String> {
        let site = page.origin().ascii_serialization();
        match self.loader.load(&site).await {
            Ok(result) => result
                .urls
                .into_iter()
                .take(SITEMAP_MAX_URLS)
                .map(|u| u.loc)
                .collect(),
            Err(e) => {
                tracing::debug!(%site, error = %e, "no sitemap hints");
                Vec::new()
            }
        }
    }
}

/// What a run adds to its decision prompts.
#[derive(Clone, Default)]
pub struct Hints {
    /// `sites.yaml`.
    pub sites: Option<Arc<SiteProfiles>>,
    /// The sitemap URLs of the page's site.
    pub sitemaps: Option<Arc<dyn SitemapSource>>,
}

impl std::fmt::Debug for Hints {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hints")
            .field("sites", &self.sites.as_ref().map(|s| s.sites.len()))
            .field("sitemaps", &self.sitemaps.is_some())
            .finish()
    }
}

/// The URL list the prompt takes: `urls:` and one URL a line, at most
/// `max_urls` URLs and `max_chars` characters; `None` when empty.
pub fn url_block(urls: &[String], max_urls: usize, max_chars: usize) -> Option<String> {
    let mut out = String::from("urls:\n");
    let mut n = 0;
    for u in urls.iter().take(max_urls) {
        if out.len() + u.len() + 1 > max_chars {
            break;
        }
        out.push_str(u);
        out.push('\n');
        n += 1;
    }
    (n > 0).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_blocks_are_capped() {
        let urls: Vec<String> = (0..500).map(|i| format!("https://a.test/p/{i}")).collect();
        let b = url_block(&urls, SITEMAP_MAX_URLS, SITEMAP_MAX_CHARS).unwrap();
        assert_eq!(b.lines().count(), 301);
        let b = url_block(&urls, SITEMAP_MAX_URLS, 100).unwrap();
        assert!(b.len() <= 100, "{}", b.len());
        assert!(url_block(&[], 10, 100).is_none());
    }
}
