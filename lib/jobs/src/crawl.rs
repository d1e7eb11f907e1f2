//! What a crawl follows and how politely: its scope (depth, page limit,
//! hosts, path patterns), its trap bounds, robots.txt and the per-host
//! pace. Serde only; the frontier that applies them is the scheduler's.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::normalise::{DEFAULT_MAX_QUERY_VARIANTS, DEFAULT_MAX_URL_LEN, NormaliseRules};

/// Default [`CrawlOptions::max_depth`].
pub const DEFAULT_CRAWL_MAX_DEPTH: u32 = 5;
/// Default [`CrawlOptions::limit`].
pub const DEFAULT_CRAWL_LIMIT: usize = 1_000;
/// Default [`CrawlOptions::per_host_concurrency`] of a crawl.
pub const DEFAULT_CRAWL_PER_HOST_CONCURRENCY: usize = 2;
/// Default [`CrawlOptions::per_host_delay_ms`] of a crawl.
pub const DEFAULT_CRAWL_PER_HOST_DELAY_MS: u64 = 250;

/// How a crawl chooses the pages it takes. Every default is the one the
/// field's doc names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct CrawlOptions {
    /// Links followed from a start URL at most (a start URL is depth 0). Default: 5.
    pub max_depth: u32,
    /// Pages taken at most, start URLs included. Default: 1,000.
    pub limit: usize,
    /// Path patterns a page must match to be taken (any one of them; none:
    /// every path). A pattern is a glob over the path and query (`*`
    /// within a segment, `**` across segments, `?` one character), or a
    /// regular expression when written `re:…` (searched, not anchored).
    /// Start URLs are taken whatever the patterns say.
    pub include: Vec<String>,
    /// Path patterns that exclude a page (any one of them), written as
    /// for `include`; they win over `include`.
    pub exclude: Vec<String>,
    /// Follows links to the start hosts' subdomains too (`docs.example.com`
    /// from `example.com`). Default: false.
    pub allow_subdomains: bool,
    /// Other hosts whose pages are followed (exact names, `www.` ignored).
    pub allow_hosts: Vec<String>,
    /// Takes pages robots.txt disallows and ignores its `Crawl-delay`. Default: false.
    pub ignore_robots: bool,
    /// How URLs are spelt before they are compared: the tracking
    /// parameters (`utm_*`, `gclid`, `fbclid`, …) dropped, the rest sorted,
    /// and with `ignore_query` the whole query dropped, so URLs that differ
    /// only in it are one page.
    pub normalise: NormaliseRules,
    /// Pages with a query taken at most per path (a calendar's
    /// `?month=…`, a listing's sort orders); the path without a query does
    /// not count. Default: 50.
    pub max_query_variants: usize,
    /// URLs longer than this (in bytes, normalised) are not followed. Default: 2,048.
    pub max_url_len: usize,
    /// Page loads in flight at once to one host (host and port), across
    /// every worker. Default: 2.
    pub per_host_concurrency: usize,
    /// Least time between the starts of two page loads at one host, in
    /// milliseconds; a host's robots.txt `Crawl-delay` wins when it is
    /// longer. Default: 250.
    pub per_host_delay_ms: u64,
    /// Seeds the crawl with the start hosts' sitemaps too (robots.txt
    /// `Sitemap:` lines, then `/sitemap.xml`); their URLs are depth 1.
    /// Default: false.
    pub sitemap: bool,
}

impl Default for CrawlOptions {
    fn default() -> Self {
        Self {
            max_depth: DEFAULT_CRAWL_MAX_DEPTH,
            limit: DEFAULT_CRAWL_LIMIT,
            include: Vec::new(),
            exclude: Vec::new(),
            allow_subdomains: false,
            allow_hosts: Vec::new(),
            ignore_robots: false,
            normalise: NormaliseRules::default(),
            max_query_variants: DEFAULT_MAX_QUERY_VARIANTS,
            max_url_len: DEFAULT_MAX_URL_LEN,
            per_host_concurrency: DEFAULT_CRAWL_PER_HOST_CONCURRENCY,
            per_host_delay_ms: DEFAULT_CRAWL_PER_HOST_DELAY_MS,
            sitemap: false,
        }
    }
}

impl CrawlOptions {
    /// [`Self::per_host_delay_ms`] as a duration.
    pub fn per_host_delay(&self) -> Duration {
        Duration::from_millis(self.per_host_delay_ms)
    }
}

/// A batch's per-host limits, as a batch's record and `gated/<id>.json` keep them: the scheduler releases its jobs host by host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostLimits {
    /// Page loads in flight at once to one host (host and port).
    pub concurrency: usize,
    /// Least time between two page loads' starts at one host, in ms.
    pub delay_ms: u64,
    /// Whether lines robots.txt disallows fail (`policy_denied`) and a
    /// host's `Crawl-delay` is honoured.
    #[serde(default)]
    pub respect_robots: bool,
}

/// Why a crawl did not take a URL it found: one line of its `skipped.jsonl`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SkipReason {
    /// robots.txt disallows it for oxwright's token.
    Robots,
    /// An `exclude` pattern matched it, or no `include` pattern did.
    Excluded,
    /// The crawl had taken its `limit` of pages.
    Limit,
    /// It was found deeper than `max_depth`.
    Depth,
    /// Taken already under another spelling, or the page named one already
    /// taken as its canonical URL, or redirected to one.
    Duplicate,
    /// Its host is neither a start host nor allowed.
    OffHost,
    /// Its path had `max_query_variants` pages already.
    QueryVariants,
    /// It is longer than `max_url_len`.
    TooLong,
    /// The URL policy refuses it (a private address, a scheme other than http(s)).
    Policy,
}

impl SkipReason {
    /// The reason as it is written in `skipped.jsonl`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Robots => "robots",
            Self::Excluded => "excluded",
            Self::Limit => "limit",
            Self::Depth => "depth",
            Self::Duplicate => "duplicate",
            Self::OffHost => "off_host",
            Self::QueryVariants => "query_variants",
            Self::TooLong => "too_long",
            Self::Policy => "policy",
        }
    }
}

/// One line of a crawl's `skipped.jsonl`: a URL found and not taken.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkippedUrl {
    /// The URL as it was found (its fragment dropped).
    pub url: String,
    /// Why it was not taken.
    pub reason: SkipReason,
    /// The page that linked to it (absent for a start URL or a sitemap seed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// The depth it would have had.
    pub depth: u32,
    /// For a duplicate: the URL taken in its place, normalised.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub same_as: Option<String>,
}
