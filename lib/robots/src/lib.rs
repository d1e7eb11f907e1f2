//! RFC 9309 robots.txt for crawls: the rules of one host for oxwright's
//! user-agent token ([`Robots`]: `allowed`, `crawl_delay`, `sitemaps`), the
//! RFC's fetch outcomes, and a cache per origin ([`RobotsCache`]) that
//! honours the answer's `Cache-Control` within the RFC's 24 hours.
//!
//! The user-agent token matched against `User-agent:` lines is
//! configurable ([`RobotsConfig::user_agent`]) and defaults to
//! [`DEFAULT_USER_AGENT_TOKEN`], `oxwright`: a site addresses oxwright as
//!
//! ```text
//! User-agent: oxwright
//! Disallow: /private/
//! Crawl-delay: 5
//! ```
//!
//! and, when no group names the token, the `*` group applies.
//!
//! What a fetch outcome means (RFC 9309 section 2.3.1):
//!
//! | answer | rules |
//! |---|---|
//! | 2xx | the file, parsed (the first [`MAX_ROBOTS_BYTES`], 500 KiB) |
//! | 3xx | followed up to [`MAX_ROBOTS_REDIRECTS`] hops; a longer chain is "unavailable" |
//! | 4xx except 429 | unavailable: everything allowed |
//! | 429, 5xx, unreachable, refused by the URL policy | nothing allowed (or the stale copy, up to 30 days), asked again after 10 minutes |
//!
//! The file is read through the [`RobotsFetcher`] trait:
//! [`HttpRobotsFetcher`] is the real one over the project's policy-judged
//! client; [`MemoryRobotsFetcher`] answers from a table, for tests above
//! the cache. The parser is texting_robots, which carries
//! Google's and reppy's test cases; [`Robots::parse`] reduces each
//! `User-agent:` value to its product token first, as Google's parser
//! does, and rules and URLs are compared with percent-escapes spelt one
//! way (`%7E` is `~`), as the RFC compares them.

mod cache;
mod error;
mod fetch;
mod http;
mod memory;
mod rules;
mod sitemaps;

pub use cache::{RobotsCache, RobotsConfig, origin_key, robots_url};
pub use error::RobotsError;
pub use fetch::{FetchError, MAX_ROBOTS_REDIRECTS, RobotsFetcher, RobotsResponse};
pub use http::{DEFAULT_ROBOTS_HTTP_USER_AGENT, DEFAULT_ROBOTS_TIMEOUT, HttpRobotsFetcher};
pub use memory::MemoryRobotsFetcher;
pub use rules::{MAX_ROBOTS_BYTES, Robots, RobotsSource, is_product_token};
pub use sitemaps::{MAX_ROBOTS_SITEMAPS, sitemap_urls};

/// The user-agent token oxwright looks for in robots.txt unless configured otherwise.
pub const DEFAULT_USER_AGENT_TOKEN: &str = "oxwright";
