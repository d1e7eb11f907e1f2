//! What a fetch reads about a page besides its Markdown: metadata (title
//! tags, OpenGraph and Twitter cards, JSON-LD, dates), the links it makes
//! and the images it shows. URLs in all of them are absolute.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Metadata read from the rendered page.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageMetadata {
    /// `<meta name="description">`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// `<html lang>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lang: Option<String>,
    /// `<link rel="canonical">`, resolved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub canonical: Option<String>,
    /// `<link rel="next">`, resolved: the next page of a paginated series.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
    /// OpenGraph properties (`og:title`, `og:image`, `article:author`, …),
    /// keyed by their full property name; URL-valued ones resolved.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub open_graph: BTreeMap<String, String>,
    /// Twitter card tags (`twitter:card`, `twitter:image`, …); URL-valued ones resolved.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub twitter: BTreeMap<String, String>,
    /// Each `<script type="application/ld+json">` block that parses, as JSON.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub json_ld: Vec<serde_json::Value>,
    /// When the page says it was published (as the page wrote it): the
    /// `article:published_time` meta, JSON-LD `datePublished`, `<meta
    /// name="date">` and the like.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub published: Option<String>,
    /// When the page says it was last modified (`article:modified_time`,
    /// JSON-LD `dateModified`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modified: Option<String>,
    /// The main document's response headers the fetch asked for
    /// (`response_headers`), by lowercase name; repeated ones joined with `, `.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub response_headers: BTreeMap<String, String>,
    /// Other `<meta>` name/property pairs (author, keywords, robots, …).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub meta: BTreeMap<String, String>,
}

/// A link of the page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageLink {
    /// The absolute target, without its fragment.
    pub url: String,
    /// The first non-empty text the page gave it (whitespace collapsed).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub text: String,
}

/// The page's http(s) links, each target once, in document order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageLinks {
    /// Links to the page's own host (a leading `www.` ignored on both sides).
    pub internal: Vec<PageLink>,
    /// Links to other hosts.
    pub external: Vec<PageLink>,
}

impl PageLinks {
    /// Every link, internal first.
    pub fn all(&self) -> impl Iterator<Item = &PageLink> {
        self.internal.iter().chain(&self.external)
    }
}

/// An image of the page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageImage {
    /// The absolute source (the lazy-loading attribute's when `src` is a placeholder).
    pub src: String,
    /// The alt text, empty when there is none.
    #[serde(default)]
    pub alt: String,
}
