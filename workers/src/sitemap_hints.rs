//! The sitemap URLs a workflow's decision prompt gets (seed 001: the site's
//! sitemap, discovered at run time through robots.txt, then
//! `/sitemap.xml`), from the sitemap loader with its cache and the run's
//! URL policy.

use std::sync::Arc;

use oxwright_policy::UrlPolicy;
use oxwright_sitemap::{SitemapLoader, SitemapOptions};

/// A [`oxwright_workflow::SitemapSource`] over the sitemap loader.
#[derive(Clone)]
pub struct LoaderHints {
    loader: SitemapLoader,
}

impl LoaderHints {
    /// Loads sitemaps under `policy` with the loader's defaults (3 s and
    /// 2 MiB a document, 24 h cache).
    pub fn new(policy: Arc<UrlPolicy>) -> Self {
        Self {
            loader: SitemapLoader::new(policy, SitemapOptions::default()),
        }
    }
}

#[async_trait::async_trait]
impl oxwright_workflow::SitemapSource for LoaderHints {
    async fn urls(&self, page: &url::Url) -> Vec<String> {
        let site = page.origin().ascii_serialization();
        match self.loader.load(&site).await {
            Ok(result) => result
                .urls
                .into_iter()
                .take(oxwright_workflow::SITEMAP_MAX_URLS)
                .map(|u| u.loc)
                .collect(),
            Err(e) => {
                tracing::debug!(%site, error = %e, "no sitemap hints");
                Vec::new()
            }
        }
    }
}
