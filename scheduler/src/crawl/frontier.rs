//! The crawl's frontier: every URL it finds is normalised and judged once
//! (taken, or skipped with a reason), and the URLs taken wait per host
//! until politeness releases them.
//!
//! The seen-set holds a 128-bit hash of each normalised URL, not the URL:
//! about 20 to 40 bytes a URL whatever its length. A URL waits as text
//! only until it is released.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasher, Hasher};

use oxwright_jobs::normalise::normalise;
use oxwright_jobs::{CrawlOptions, SkipReason, SkippedUrl};
use tokio::time::Instant;
use url::Url;

use super::scope::{PatternError, Scope};
use crate::politeness::{Hosts, host_key};

/// A page the crawl took, waiting for release or in flight.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Taken {
    /// The normalised URL fetched.
    pub url: Url,
    /// Links from a start URL.
    pub depth: u32,
    /// The page that linked to it.
    pub parent: Option<String>,
}

/// What the frontier made of a URL found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Judged {
    /// It may be taken, spelt this way, once robots.txt allows it.
    Candidate(Url),
    /// It is not taken; the line to record.
    Skipped(SkippedUrl),
    /// Seen already, spelt the same way: nothing to record.
    Known,
}

/// The id of the job that fetches `url` (normalised) for the crawl
/// `batch_id`: the same in every process, so a scheduler that takes a
/// crawl up again matches the reports of pages an earlier one published.
pub fn page_job_id(batch_id: &str, url: &Url) -> oxwright_jobs::JobId {
    let hash = url_hash(&format!("{batch_id}\n{}", url.as_str()));
    oxwright_jobs::JobId(uuid::Builder::from_custom_bytes(hash.to_be_bytes()).into_uuid())
}

/// A stable 128-bit hash of a URL's text (two keyed SipHash-2-4 runs).
pub(crate) fn url_hash(text: &str) -> u128 {
    // Fixed keys: the same URL hashes the same in every process, so a
    // frontier rebuilt from its log agrees with the one that wrote it.
    let half = |k0: u64, k1: u64| {
        #[allow(deprecated)]
        let mut h = std::hash::SipHasher::new_with_keys(k0, k1);
        h.write(text.as_bytes());
        h.finish()
    };
    (u128::from(half(0x6f78_7772_6967_6874, 0x6372_6177_6c00_0001)) << 64)
        | u128::from(half(0x6672_6f6e_7469_6572, 0x7365_656e_0000_0002))
}

/// The `HashSet` hasher for values that are hashes already.
#[derive(Debug, Clone, Copy, Default)]
struct PreHashed;

impl BuildHasher for PreHashed {
    type Hasher = PreHashedHasher;
    fn build_hasher(&self) -> PreHashedHasher {
        PreHashedHasher(0)
    }
}

#[derive(Debug, Default)]
struct PreHashedHasher(u64);

impl Hasher for PreHashedHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(*b);
        }
    }
    fn write_u128(&mut self, n: u128) {
        self.0 = (n as u64) ^ ((n >> 64) as u64);
    }
}

/// The frontier of one crawl.
#[derive(Debug)]
pub struct Frontier {
    options: CrawlOptions,
    scope: Scope,
    /// Normalised URLs taken (waiting, in flight or done).
    seen: HashSet<u128, PreHashed>,
    /// URLs recorded as skipped (as found), so each is written once.
    recorded: HashSet<u128, PreHashed>,
    /// Pages with a query taken per path (by the hash of the URL without
    /// its query): only paths that have a query cost an entry.
    variants: HashMap<u128, u32, PreHashed>,
    taken: usize,
    hosts: Hosts<Taken>,
}

impl Frontier {
    /// A frontier for a crawl from `starts`.
    pub fn new(starts: &[Url], options: CrawlOptions) -> Result<Self, PatternError> {
        let scope = Scope::new(starts, &options)?;
        let hosts = Hosts::new(options.per_host_concurrency, options.per_host_delay());
        Ok(Self {
            options,
            scope,
            seen: HashSet::default(),
            recorded: HashSet::default(),
            variants: HashMap::default(),
            taken: 0,
            hosts,
        })
    }

    /// Pages taken so far (released or waiting).
    pub fn taken(&self) -> usize {
        self.taken
    }

    /// The politeness gate.
    pub fn hosts(&mut self) -> &mut Hosts<Taken> {
        &mut self.hosts
    }

    /// Bytes the seen-set and the skip record hold, by their capacity.
    pub fn seen_bytes(&self) -> usize {
        // A hashbrown table keeps one control byte per bucket beside the value.
        (self.seen.capacity() + self.recorded.capacity()) * (std::mem::size_of::<u128>() + 1)
            + self.variants.capacity() * (std::mem::size_of::<(u128, u32)>() + 1)
    }

    fn skip(&mut self, found: &str, reason: SkipReason, depth: u32, parent: Option<&str>) -> Judged {
        self.skip_as(found, reason, depth, parent, None)
    }

    fn skip_as(
        &mut self,
        found: &str,
        reason: SkipReason,
        depth: u32,
        parent: Option<&str>,
        same_as: Option<String>,
    ) -> Judged {
        if !self.recorded.insert(url_hash(found)) {
            return Judged::Known;
        }
        Judged::Skipped(SkippedUrl {
            url: found.to_owned(),
            reason,
            parent: parent.map(str::to_owned),
            depth,
            same_as,
        })
    }

    /// Judges a URL found at `depth` (linked from `parent`) by everything
    /// but robots.txt and the page limit, which [`Self::take`] applies.
    pub fn judge(&mut self, found: &Url, depth: u32, parent: Option<&str>) -> Judged {
        let mut found_text = found.clone();
        found_text.set_fragment(None);
        let found_text = found_text.as_str();
        let url = normalise(found, &self.options.normalise);
        if !matches!(url.scheme(), "http" | "https") {
            return self.skip(found_text, SkipReason::Policy, depth, parent);
        }
        if self.seen.contains(&url_hash(url.as_str())) {
            if found_text == url.as_str() {
                return Judged::Known;
            }
            let same_as = Some(url.to_string());
            return self.skip_as(found_text, SkipReason::Duplicate, depth, parent, same_as);
        }
        if depth > 0 && !self.scope.host_allowed(&url) {
            return self.skip(found_text, SkipReason::OffHost, depth, parent);
        }
        if depth > 0 && !self.scope.path_allowed(&url) {
            return self.skip(found_text, SkipReason::Excluded, depth, parent);
        }
        if depth > self.options.max_depth {
            return self.skip(found_text, SkipReason::Depth, depth, parent);
        }
        Judged::Candidate(url)
    }

    /// The skip line of a candidate robots.txt disallows (`Known` when
    /// this spelling was recorded already).
    pub fn skip_robots(&mut self, found: &Url, depth: u32, parent: Option<&str>) -> Judged {
        let mut found = found.clone();
        found.set_fragment(None);
        self.skip(found.as_str(), SkipReason::Robots, depth, parent)
    }

    /// Takes `url` (a [`Judged::Candidate`], found spelt `found`) unless
    /// the limit is reached or it looks like a trap (too long, too many
    /// query variants of its path): it waits for its host. Returns the
    /// skip line otherwise.
    pub fn take(
        &mut self,
        found: &Url,
        url: Url,
        depth: u32,
        parent: Option<&str>,
        now: Instant,
    ) -> Option<SkippedUrl> {
        match self.admit(found, &url, depth, parent) {
            Ok(true) => {
                let key = host_key(&url);
                let taken = Taken {
                    url,
                    depth,
                    parent: parent.map(str::to_owned),
                };
                self.hosts.push(&key, taken, now);
                None
            }
            Ok(false) => None,
            Err(line) => line,
        }
    }

    /// Counts `url` (a [`Judged::Candidate`], found spelt `found`) as
    /// taken, without queueing it, unless the limit is reached or it looks
    /// like a trap. `Ok(false)`: it was taken already. `Err`: not taken,
    /// with the skip line to record (`None` when this spelling was
    /// recorded already).
    pub fn admit(
        &mut self,
        found: &Url,
        url: &Url,
        depth: u32,
        parent: Option<&str>,
    ) -> Result<bool, Option<SkippedUrl>> {
        let mut found = found.clone();
        found.set_fragment(None);
        let path = url.query().map(|_| {
            let mut path = url.clone();
            path.set_query(None);
            url_hash(path.as_str())
        });
        let variants = path.map_or(0, |p| self.variants.get(&p).copied().unwrap_or(0));
        let reason = if self.taken >= self.options.limit {
            Some(SkipReason::Limit)
        } else if url.as_str().len() > self.options.max_url_len {
            Some(SkipReason::TooLong)
        } else if variants as usize >= self.options.max_query_variants {
            Some(SkipReason::QueryVariants)
        } else {
            None
        };
        if let Some(reason) = reason {
            return Err(match self.skip(found.as_str(), reason, depth, parent) {
                Judged::Skipped(line) => Some(line),
                _ => None,
            });
        }
        if !self.seen.insert(url_hash(url.as_str())) {
            return Ok(false);
        }
        if let Some(path) = path {
            *self.variants.entry(path).or_default() += 1;
        }
        self.taken += 1;
        Ok(true)
    }

    /// Marks `url` (normalised: a redirect's target or a page's
    /// canonical URL) as taken. Returns `false` when it was taken already:
    /// the page that named it duplicates another.
    pub fn claim(&mut self, url: &Url) -> bool {
        self.seen.insert(url_hash(url.as_str()))
    }

    /// Normalises `url` by the crawl's rules.
    pub fn normalise(&self, url: &Url) -> Url {
        normalise(url, &self.options.normalise)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Url {
        s.parse().unwrap()
    }

    fn frontier(options: CrawlOptions) -> Frontier {
        Frontier::new(&[url("https://example.com/")], options).unwrap()
    }

    fn offer(f: &mut Frontier, s: &str, depth: u32) -> Option<SkipReason> {
        match f.judge(&url(s), depth, Some("https://example.com/")) {
            Judged::Candidate(u) => f.take(&url(s), u, depth, None, Instant::now()).map(|l| l.reason),
            Judged::Skipped(line) => Some(line.reason),
            Judged::Known => None,
        }
    }

    #[test]
    fn each_url_is_taken_once_however_it_is_spelt() {
        let mut f = frontier(CrawlOptions::default());
        assert_eq!(offer(&mut f, "https://example.com/a?x=1&y=2", 1), None);
        assert_eq!(
            offer(
                &mut f,
                "HTTPS://EXAMPLE.com:443/b/../a?y=2&x=1&utm_source=z#top",
                1
            ),
            Some(SkipReason::Duplicate)
        );
        // The same spelling again is not recorded twice.
        assert_eq!(
            offer(&mut f, "https://example.com/./a?y=2&x=1&utm_source=z", 1),
            None
        );
        assert_eq!(offer(&mut f, "https://example.com/a?x=1&y=2#frag", 1), None);
        assert_eq!(f.taken(), 1);
    }

    #[test]
    fn the_scope_depth_and_traps_are_applied_in_order() {
        let mut f = frontier(CrawlOptions {
            max_depth: 2,
            max_query_variants: 2,
            max_url_len: 60,
            exclude: vec!["/private/**".into()],
            ..CrawlOptions::default()
        });
        assert_eq!(offer(&mut f, "https://other.org/", 1), Some(SkipReason::OffHost));
        assert_eq!(
            offer(&mut f, "https://example.com/private/x", 1),
            Some(SkipReason::Excluded)
        );
        assert_eq!(
            offer(&mut f, "https://example.com/deep", 3),
            Some(SkipReason::Depth)
        );
        assert_eq!(offer(&mut f, "https://example.com/cal?m=1", 1), None);
        assert_eq!(offer(&mut f, "https://example.com/cal?m=2", 1), None);
        assert_eq!(
            offer(&mut f, "https://example.com/cal?m=3", 1),
            Some(SkipReason::QueryVariants)
        );
        let long = format!("https://example.com/{}", "x".repeat(60));
        assert_eq!(offer(&mut f, &long, 1), Some(SkipReason::TooLong));
        assert_eq!(offer(&mut f, "mailto:a@example.com", 1), Some(SkipReason::Policy));
        // A start URL (depth 0) is taken whatever the patterns say.
        assert_eq!(offer(&mut f, "https://example.com/private/start", 0), None);
    }

    #[test]
    fn the_limit_stops_taking_and_says_so_once() {
        let mut f = frontier(CrawlOptions {
            limit: 2,
            ..CrawlOptions::default()
        });
        assert_eq!(offer(&mut f, "https://example.com/1", 1), None);
        assert_eq!(offer(&mut f, "https://example.com/2", 1), None);
        assert_eq!(offer(&mut f, "https://example.com/3", 1), Some(SkipReason::Limit));
        assert_eq!(offer(&mut f, "https://example.com/3", 1), None);
        assert_eq!(f.taken(), 2);
        assert_eq!(f.hosts().waiting(), 2);
    }

    #[test]
    fn a_claimed_redirect_target_is_not_taken_again() {
        let mut f = frontier(CrawlOptions::default());
        assert!(f.claim(&url("https://example.com/final")));
        assert!(!f.claim(&url("https://example.com/final")));
        assert_eq!(offer(&mut f, "https://example.com/final", 1), None);
        assert_eq!(f.taken(), 0);
    }

    #[test]
    fn the_hash_is_stable_across_processes() {
        assert_eq!(url_hash("https://example.com/"), url_hash("https://example.com/"));
        assert_ne!(
            url_hash("https://example.com/a"),
            url_hash("https://example.com/b")
        );
    }
}
