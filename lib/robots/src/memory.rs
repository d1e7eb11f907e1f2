//! An in-memory [`RobotsFetcher`]: the outcome of each robots.txt URL set
//! by hand, for the tests of whatever sits above the cache (the crawl
//! frontier), and the count of fetches made.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use url::Url;

use crate::fetch::{FetchError, RobotsFetcher, RobotsResponse};

/// Answers each robots.txt URL with the outcome set for it, and a 404 for
/// any other.
#[derive(Debug, Default)]
pub struct MemoryRobotsFetcher {
    outcomes: Mutex<HashMap<String, Result<RobotsResponse, FetchError>>>,
    fetches: AtomicUsize,
}

impl MemoryRobotsFetcher {
    /// A fetcher that answers 404 everywhere.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets what fetching `robots_url` gives from now on.
    pub fn set(&self, robots_url: &Url, outcome: Result<RobotsResponse, FetchError>) {
        self.outcomes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(robots_url.to_string(), outcome);
    }

    /// How many fetches were made.
    pub fn fetches(&self) -> usize {
        self.fetches.load(Ordering::SeqCst)
    }
}

#[async_trait::async_trait]
impl RobotsFetcher for MemoryRobotsFetcher {
    async fn fetch(&self, robots_url: &Url) -> Result<RobotsResponse, FetchError> {
        self.fetches.fetch_add(1, Ordering::SeqCst);
        self.outcomes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(robots_url.as_str())
            .cloned()
            .unwrap_or_else(|| Ok(RobotsResponse::status(404)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn answers_what_was_set_and_404_elsewhere() {
        let f = MemoryRobotsFetcher::new();
        let here = Url::parse("https://a.example/robots.txt").unwrap();
        f.set(&here, Ok(RobotsResponse::ok("User-agent: *\nDisallow: /\n")));
        assert_eq!(
            f.fetch(&here).await.unwrap().body,
            b"User-agent: *\nDisallow: /\n"
        );
        let elsewhere = Url::parse("https://b.example/robots.txt").unwrap();
        assert_eq!(f.fetch(&elsewhere).await.unwrap().status, 404);
        assert_eq!(f.fetches(), 2);
    }
}
