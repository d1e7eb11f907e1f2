//! The parsed form of one sitemap document, what the readers share.

use serde::{Deserialize, Serialize};

use crate::types::SitemapUrl;

/// Longest URL kept; longer values are dropped as junk.
const MAX_LOC_LEN: usize = 4096;

/// What kind of document was read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DocKind {
    /// Nothing usable was recognised.
    #[default]
    Unknown,
    /// `<urlset>`: a list of pages.
    UrlSet,
    /// `<sitemapindex>`: a list of further sitemaps.
    Index,
    /// One URL per line.
    Text,
    /// An RSS 2.0 feed used as a sitemap.
    Rss,
    /// An Atom feed used as a sitemap.
    Atom,
}

/// Why a document yielded nothing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(rename_all = "snake_case", tag = "kind", content = "detail")]
pub enum ParseError {
    /// The document, decompressed, is larger than the cap.
    #[error("document exceeds {limit} bytes after decompression")]
    TooLarge {
        /// The cap in bytes.
        limit: usize,
    },
    /// The document declares a DTD internal subset (entities); it is refused
    /// rather than expanded.
    #[error("document declares a DTD with an internal subset; entity declarations are refused")]
    Dtd,
    /// The document is well formed but is not a sitemap, index or feed.
    #[error("not a sitemap: {0}")]
    NotSitemap(String),
    /// The document is broken before anything usable was read.
    #[error("malformed document: {0}")]
    Malformed(String),
}

/// Limits for one parse.
#[derive(Debug, Clone, Copy)]
pub struct ParseLimits {
    /// Largest document after decompression.
    pub max_bytes: usize,
    /// Most URLs (and most child sitemaps) kept from one document.
    pub max_urls: usize,
}

impl Default for ParseLimits {
    fn default() -> Self {
        Self {
            max_bytes: 2 * 1024 * 1024,
            max_urls: 50_000,
        }
    }
}

/// One parsed document.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ParsedDoc {
    /// What the document turned out to be.
    pub kind: DocKind,
    /// The page URLs it lists, in document order (empty for an index).
    pub urls: Vec<SitemapUrl>,
    /// The child sitemaps it lists (an index only).
    pub sitemaps: Vec<String>,
    /// Problems that did not stop the parse (truncation, skipped entries).
    pub warnings: Vec<String>,
    /// Why the document yielded nothing; `urls` and `sitemaps` are then empty.
    pub error: Option<ParseError>,
    /// Bytes read after decompression.
    pub bytes: u64,
    /// How many gzip layers were removed.
    pub gzip_layers: u32,
}

impl ParsedDoc {
    pub(crate) fn failed(error: ParseError) -> Self {
        Self {
            error: Some(error),
            ..Self::default()
        }
    }
}

/// Checks a `<loc>` (or feed link) value: an absolute http(s) URL with a host.
pub(crate) fn clean_loc(raw: &str) -> Option<String> {
    let raw = raw.trim();
    if raw.is_empty() || raw.len() > MAX_LOC_LEN {
        return None;
    }
    let url = url::Url::parse(raw).ok()?;
    if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
        return None;
    }
    Some(String::from(url))
}
