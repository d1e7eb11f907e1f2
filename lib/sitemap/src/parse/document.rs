//! The parsed form of one sitemap document and the entry point that picks
//! the reader for it.

use serde::{Deserialize, Serialize};

use super::{input, text, xml};
use crate::types::SitemapUrl;

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

/// Parses one sitemap document with the default 2 MiB cap. Never panics.
pub fn parse_sitemap(bytes: &[u8], max_urls: usize) -> ParsedDoc {
    parse_sitemap_with(
        bytes,
        ParseLimits {
            max_urls,
            ..ParseLimits::default()
        },
    )
}

/// Parses one sitemap document (gzip or not; XML, RSS, Atom or plain text)
/// under `limits`, streaming: decompressed bytes are never held whole.
pub fn parse_sitemap_with(bytes: &[u8], limits: ParseLimits) -> ParsedDoc {
    let mut opened = match input::open(bytes, limits.max_bytes) {
        Ok(o) => o,
        Err(e) => return ParsedDoc::failed(ParseError::Malformed(format!("cannot decode body: {e}"))),
    };
    let first = match std::io::BufRead::fill_buf(&mut opened.reader) {
        Ok(buf) => buf.first().copied(),
        Err(e) => return ParsedDoc::failed(ParseError::Malformed(format!("cannot decode body: {e}"))),
    };
    let mut doc = match first {
        None => ParsedDoc::failed(ParseError::NotSitemap("empty document".into())),
        Some(b'<') => xml::parse(&mut opened.reader, &opened.meter, limits),
        Some(_) => text::parse(&mut opened.reader, &opened.meter, limits),
    };
    if doc.error.is_none() {
        // Bytes after the root element still count against the cap.
        let _ = std::io::copy(&mut opened.reader, &mut std::io::sink());
    }
    if opened.meter.exceeded() {
        doc.error = Some(ParseError::TooLarge {
            limit: limits.max_bytes,
        });
    }
    if doc.error.is_some() {
        doc.urls.clear();
        doc.sitemaps.clear();
    }
    doc.bytes = opened.meter.bytes();
    doc.gzip_layers = opened.gzip_layers;
    doc
}

/// Checks a `<loc>` (or feed link) value: an absolute http(s) URL with a host.
pub(crate) fn clean_loc(raw: &str) -> Option<String> {
    let raw = raw.trim();
    if raw.is_empty() || raw.len() > super::MAX_LOC_LEN {
        return None;
    }
    let url = url::Url::parse(raw).ok()?;
    if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
        return None;
    }
    Some(String::from(url))
}

/// Reads a whole small document (robots.txt) through the same gzip peeling
/// and byte cap as a sitemap.
pub(crate) fn decode_capped(bytes: &[u8], max_bytes: usize) -> Result<Vec<u8>, ParseError> {
    let mut opened = input::open(bytes, max_bytes)
        .map_err(|e| ParseError::Malformed(format!("cannot decode body: {e}")))?;
    let mut out = Vec::new();
    match std::io::Read::read_to_end(&mut opened.reader, &mut out) {
        Ok(_) => Ok(out),
        Err(_) if opened.meter.exceeded() => Err(ParseError::TooLarge { limit: max_bytes }),
        Err(e) => Err(ParseError::Malformed(format!("cannot decode body: {e}"))),
    }
}
