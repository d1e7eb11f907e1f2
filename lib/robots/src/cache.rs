//! The robots.txt cache: one entry per origin (scheme, host, port), held
//! in moka, refreshed through a [`RobotsFetcher`] when stale. It turns each
//! fetch outcome into rules as RFC 9309 says (2xx parsed, 4xx allow all,
//! 5xx or unreachable disallow all), keeps an answer as long as its
//! `Cache-Control` allows within the RFC's 24 hours, and keeps using a
//! stale copy while the host is unreachable. Concurrent asks for one
//! origin share one fetch.

use std::sync::Arc;
use std::time::Duration;

use moka::ops::compute::Op;
use tokio::time::Instant;
use tracing::debug;
use url::Url;

use crate::error::RobotsError;
use crate::fetch::{FetchError, RobotsFetcher, RobotsResponse};
use crate::rules::{Robots, RobotsSource, is_product_token};

/// How the cache reads and keeps robots.txt. Every default is the one the
/// field's doc names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RobotsConfig {
    /// The product token matched (case-insensitively) against the
    /// `User-agent:` lines: default [`crate::DEFAULT_USER_AGENT_TOKEN`]
    /// (`oxwright`). Letters, `_` and `-` only, as the RFC defines it.
    pub user_agent: String,
    /// How long an answer that names no `max-age` is used: 24 hours.
    pub default_ttl: Duration,
    /// The longest an answer is used, whatever its `max-age`: 24 hours,
    /// the RFC's limit for a host that can be reached.
    pub max_ttl: Duration,
    /// The shortest an answer is used, whatever its `max-age`: 1 minute,
    /// so a file sent with `no-cache` is not fetched again before every page.
    pub min_ttl: Duration,
    /// How soon robots.txt is asked again after the host failed (5xx,
    /// 429, unreachable): 10 minutes. Until then its URLs are disallowed
    /// (or the stale copy stands).
    pub retry_unreachable: Duration,
    /// How long a stale copy stands in for a file that cannot be reached:
    /// 30 days, after which the RFC lets a crawler stop relying on it.
    pub max_stale: Duration,
    /// Most origins held at once: 10,000.
    pub capacity: u64,
}

impl Default for RobotsConfig {
    fn default() -> Self {
        Self {
            user_agent: crate::DEFAULT_USER_AGENT_TOKEN.to_owned(),
            default_ttl: Duration::from_secs(24 * 3600),
            max_ttl: Duration::from_secs(24 * 3600),
            min_ttl: Duration::from_secs(60),
            retry_unreachable: Duration::from_secs(600),
            max_stale: Duration::from_secs(30 * 24 * 3600),
            capacity: 10_000,
        }
    }
}

/// One origin's rules and how long they hold.
#[derive(Debug, Clone)]
struct Entry {
    robots: Arc<Robots>,
    /// Until when the rules are used without asking again.
    fresh_until: Instant,
    /// When the host last answered (`None`: it never did); a copy older
    /// than `max_stale` no longer stands in for an unreachable file.
    answered_at: Option<Instant>,
}

/// The robots.txt rules of every origin a crawl touches. Cheap to clone:
/// clones share the entries and the fetcher.
#[derive(Debug, Clone)]
pub struct RobotsCache {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    fetcher: Arc<dyn RobotsFetcher>,
    config: RobotsConfig,
    entries: moka::future::Cache<String, Entry>,
}

impl RobotsCache {
    /// A cache that reads robots.txt through `fetcher`.
    pub fn new(fetcher: Arc<dyn RobotsFetcher>, config: RobotsConfig) -> Result<Self, RobotsError> {
        if !is_product_token(&config.user_agent) {
            return Err(RobotsError::InvalidToken {
                token: config.user_agent.escape_debug().to_string(),
            });
        }
        let entries = moka::future::Cache::builder()
            .max_capacity(config.capacity)
            // Entries carry their own freshness; moka only forgets what is
            // too old to stand in even for an unreachable host.
            .time_to_live(config.max_stale.max(config.max_ttl))
            .build();
        Ok(Self {
            inner: Arc::new(Inner {
                fetcher,
                config,
                entries,
            }),
        })
    }

    /// The configuration in force.
    pub fn config(&self) -> &RobotsConfig {
        &self.inner.config
    }

    /// Says whether `url` may be fetched under its origin's robots.txt
    /// (fetched first if the cache holds no fresh copy).
    pub async fn allowed(&self, url: &Url) -> Result<bool, RobotsError> {
        Ok(self.robots_for(url).await?.allowed(url))
    }

    /// The rules of `url`'s origin, fetched first if the cache holds no
    /// fresh copy. Concurrent calls for one origin share one fetch.
    pub async fn robots_for(&self, url: &Url) -> Result<Arc<Robots>, RobotsError> {
        let key = origin_key(url)?;
        if let Some(hit) = self.inner.entries.get(&key).await
            && hit.fresh_until > Instant::now()
        {
            return Ok(hit.robots);
        }
        let robots_url = robots_url(url)?;
        let inner = self.inner.clone();
        let result = self
            .inner
            .entries
            .entry(key)
            .and_compute_with(|current| async move {
                let current = current.map(moka::Entry::into_value);
                // Another caller may have refreshed it while this one waited.
                if let Some(c) = &current
                    && c.fresh_until > Instant::now()
                {
                    return Op::Nop;
                }
                Op::Put(inner.refresh(&robots_url, current).await)
            })
            .await;
        match result.into_entry() {
            Some(entry) => Ok(entry.into_value().robots),
            // Unreachable: the closure never removes.
            None => Err(RobotsError::InvalidUrl { url: url.to_string() }),
        }
    }

    /// Forgets the rules of `url`'s origin, so the next ask fetches them.
    pub async fn invalidate(&self, url: &Url) -> Result<(), RobotsError> {
        self.inner.entries.invalidate(&origin_key(url)?).await;
        Ok(())
    }
}

impl Inner {
    /// Fetches robots.txt and makes the entry its outcome calls for.
    async fn refresh(&self, robots_url: &Url, current: Option<Entry>) -> Entry {
        let cfg = &self.config;
        let now = Instant::now();
        let outcome = self.fetcher.fetch(robots_url).await;
        debug!(url = %robots_url, outcome = ?outcome.as_ref().map(|r| r.status), "robots.txt fetched");
        let answered = |robots: Robots, cache_control: Option<&str>| Entry {
            robots: Arc::new(robots),
            fresh_until: now + ttl(cache_control, cfg),
            answered_at: Some(now),
        };
        let failure = match outcome {
            Ok(RobotsResponse {
                status,
                body,
                cache_control,
            }) => match status {
                200..=299 => {
                    let robots = Robots::parse(&body, robots_url, &cfg.user_agent, status);
                    return answered(robots, cache_control.as_deref());
                }
                429 | 500.. => format!("HTTP {status}"),
                _ => {
                    let robots = Robots::unavailable(format!("HTTP {status}"));
                    return answered(robots, cache_control.as_deref());
                }
            },
            // Past the redirect limit the RFC calls the file unavailable.
            Err(FetchError::Redirect { reason, .. }) => {
                return answered(Robots::unavailable(reason), None);
            }
            Err(e @ (FetchError::Refused { .. } | FetchError::Unreachable { .. })) => e.to_string(),
        };
        let retry = now + cfg.retry_unreachable;
        match current {
            Some(stale)
                if stale
                    .answered_at
                    .is_some_and(|at| now.duration_since(at) < cfg.max_stale)
                    && !matches!(stale.robots.source(), RobotsSource::Unreachable { .. }) =>
            {
                debug!(url = %robots_url, reason = %failure, "robots.txt unreachable, the stale copy stands");
                Entry {
                    fresh_until: retry,
                    ..stale
                }
            }
            _ => Entry {
                robots: Arc::new(Robots::unreachable(failure)),
                fresh_until: retry,
                answered_at: None,
            },
        }
    }
}

/// How long an answer with `cache_control` is used: its `max-age` (0 for
/// `no-store` or `no-cache`), else the default, within the configured bounds.
fn ttl(cache_control: Option<&str>, cfg: &RobotsConfig) -> Duration {
    max_age(cache_control.unwrap_or(""))
        .unwrap_or(cfg.default_ttl)
        .clamp(cfg.min_ttl, cfg.max_ttl.max(cfg.min_ttl))
}

/// The freshness a `Cache-Control` value grants, if it names one.
fn max_age(value: &str) -> Option<Duration> {
    let mut age = None;
    for directive in value.split(',') {
        let directive = directive.trim();
        let (name, arg) = directive.split_once('=').unwrap_or((directive, ""));
        let name = name.trim().to_ascii_lowercase();
        match name.as_str() {
            "no-store" | "no-cache" => return Some(Duration::ZERO),
            "max-age" => {
                if let Ok(secs) = arg.trim().trim_matches('"').parse::<u64>() {
                    age = Some(Duration::from_secs(secs));
                }
            }
            _ => {}
        }
    }
    age
}

/// The cache key of `url`: its origin, `scheme://host[:port]`, the
/// scheme's default port left out.
pub fn origin_key(url: &Url) -> Result<String, RobotsError> {
    if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
        return Err(RobotsError::InvalidUrl {
            url: url.to_string().escape_debug().to_string(),
        });
    }
    Ok(url.origin().ascii_serialization())
}

/// The robots.txt URL of `url`'s origin.
pub fn robots_url(url: &Url) -> Result<Url, RobotsError> {
    let origin = origin_key(url)?;
    Url::parse(&format!("{origin}/robots.txt")).map_err(|_| RobotsError::InvalidUrl { url: url.to_string() })
}

#[cfg(test)]
#[path = "cache_tests.rs"]
mod tests;
