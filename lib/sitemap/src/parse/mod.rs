//! Sitemap document parsing: decompression under a byte cap, format
//! sniffing, and streaming readers for XML (urlset, sitemapindex, RSS, Atom)
//! and plain-text sitemaps.

mod document;
mod input;
mod read;
mod text;
mod xml;

pub use document::{DocKind, ParseError, ParseLimits, ParsedDoc};
pub(crate) use read::decode_capped;
pub use read::{parse_sitemap, parse_sitemap_with};

#[cfg(test)]
mod tests;
