//! The result types of a sitemap load: the URLs found, the documents read and
//! the options that bound the work.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Limits and settings for [`crate::SitemapLoader`].
#[derive(Debug, Clone)]
pub struct SitemapOptions {
    /// Time allowed for one document, redirects and body included (3 s).
    pub timeout: Duration,
    /// Largest document, counted after decompression (2 MiB).
    pub max_bytes: usize,
    /// How many levels of sitemap indexes are expanded below a root document.
    pub max_depth: u32,
    /// How many sitemap documents one load may fetch, robots.txt excluded.
    pub max_documents: usize,
    /// How many distinct URLs one load keeps.
    pub max_urls: usize,
    /// Where the disk tier lives; `None` keeps the cache in memory only.
    pub cache_dir: Option<PathBuf>,
    /// How long a cached document (validators and parse) is kept (24 h).
    pub ttl: Duration,
    /// The User-Agent header sent with every request.
    pub user_agent: String,
}

impl Default for SitemapOptions {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(3),
            max_bytes: 2 * 1024 * 1024,
            max_depth: 3,
            max_documents: 50,
            max_urls: 100_000,
            cache_dir: Some(std::env::temp_dir().join("oxwright-sitemap-cache")),
            ttl: Duration::from_secs(24 * 60 * 60),
            user_agent: concat!("oxwright-sitemap/", env!("CARGO_PKG_VERSION")).to_string(),
        }
    }
}

/// One URL listed by a sitemap, with the metadata the sitemap gave for it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SitemapUrl {
    /// The absolute URL.
    pub loc: String,
    /// `<lastmod>` (or a feed's `pubDate` / `updated`), as written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lastmod: Option<String>,
    /// `<changefreq>`, as written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changefreq: Option<String>,
    /// `<priority>`, when it is a number between 0 and 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<f32>,
}

impl SitemapUrl {
    /// Creates an entry with no metadata.
    pub fn new(loc: impl Into<String>) -> Self {
        Self {
            loc: loc.into(),
            lastmod: None,
            changefreq: None,
            priority: None,
        }
    }
}

/// One document read during a load: robots.txt or a sitemap.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SourceDoc {
    /// The URL requested (before redirects).
    pub url: String,
    /// The final HTTP status, when a response arrived.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// Bytes of the document after decompression (the cached size on a 304).
    pub bytes: u64,
    /// The parse came from the cache (after a 304).
    pub from_cache: bool,
    /// The server answered 304 Not Modified to a conditional GET.
    pub not_modified: bool,
    /// Why this document contributed nothing, if it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// What a sitemap load found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SitemapResult {
    /// The host (and port, when not the scheme's default) that was loaded.
    pub domain: String,
    /// Every document read, in the order it was read.
    pub sources: Vec<SourceDoc>,
    /// The URLs found, deduplicated, in document order.
    pub urls: Vec<SitemapUrl>,
    /// Things that went wrong without failing the load.
    pub warnings: Vec<String>,
}
