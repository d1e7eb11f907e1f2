//! Crawls: a batch that grows. The frontier normalises the links each
//! page reports, judges them by the crawl's scope, trap bounds and
//! robots.txt, and releases what it takes host by host, politely.

pub mod frontier;
pub mod live;
pub mod map;
pub mod run;
pub mod scope;
pub mod take_up;

pub use frontier::{Frontier, Judged, Taken};
pub use live::{CrawlServices, LiveCrawls};
pub use map::{MapPage, MapRequest, MapSource, MappedUrl, PageReader, SiteMap, SitemapEntry, map_site};
pub use run::{CrawlError, CrawlRequest, CrawlStop, CrawlSummary, run_crawl};
pub use scope::{PatternError, Scope};
pub use take_up::CrawlListing;
