//! Sitemap document parsing: decompression under a byte cap, format
//! sniffing, and streaming readers for XML (urlset, sitemapindex, RSS, Atom)
//! and plain-text sitemaps.

mod document;
mod input;
mod text;
mod xml;

pub(crate) use document::decode_capped;
pub use document::{DocKind, ParseError, ParseLimits, ParsedDoc, parse_sitemap, parse_sitemap_with};

/// Longest URL kept; longer values are dropped as junk.
const MAX_LOC_LEN: usize = 4096;

#[cfg(test)]
mod tests;
