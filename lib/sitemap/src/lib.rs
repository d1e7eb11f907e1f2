//! Sitemap loading for the sitemap-load job: discovery from robots.txt and
//! `/sitemap.xml`, fetching under the URL policy with per-document time and
//! size limits, streaming parsers for XML, gzip, plain-text and feed
//! sitemaps, a memory-plus-`/tmp` cache revalidated with conditional GETs,
//! and the capped prompt form of the result.

mod cache;
mod error;
mod fetch;
mod loader;
mod parse;
mod prompt;
mod types;

pub use error::SitemapError;
pub use loader::SitemapLoader;
/// The `Sitemap:` lines of a robots.txt (read by `oxwright-robots`, the one robots.txt parser).
pub use oxwright_robots::sitemap_urls as parse_robots_sitemaps;
pub use parse::{DocKind, ParseError, ParseLimits, ParsedDoc, parse_sitemap, parse_sitemap_with};
pub use prompt::{PROMPT_MAX_CHARS, PROMPT_MAX_URLS, prompt_form};
pub use types::{SitemapOptions, SitemapResult, SitemapUrl, SourceDoc};
