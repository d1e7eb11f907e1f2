//! A host cache in front of a [`Resolver`]: one lookup per name at a time
//! and its answer kept for a while.
//!
//! Every request a page makes is checked twice — by the request interceptor
//! and by the egress proxy that carries it — and a news page asks one
//! third-party host for dozens of resources at once. Without a cache each
//! of those is a `getaddrinfo` call on a blocking thread (glibc keeps no
//! cache of its own), and a host that does not answer holds one thread per
//! request for the resolver's whole timeout. The cache answers concurrent
//! lookups of a name with one call, keeps an answer for [`POSITIVE_TTL`]
//! (Chromium's own host cache keeps system-resolver answers a minute) and a
//! failure for [`NEGATIVE_TTL`].
//!
//! The rebinding guarantee is unchanged: the policy judges the addresses
//! the cache returns and the proxy connects to exactly those.

use std::collections::HashMap;
use std::io;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::OnceCell;
use tokio::time::Instant;

use crate::{ResolveFuture, Resolver};

/// How long an answer is kept.
pub const POSITIVE_TTL: Duration = Duration::from_secs(60);
/// How long a failure is kept.
pub const NEGATIVE_TTL: Duration = Duration::from_secs(10);
/// The most live names kept; past it all go.
const MAX_NAMES: usize = 4_096;

/// An answer: the addresses, or the error's kind and message (an
/// `io::Error` is not `Clone`).
type Answer = Result<Vec<IpAddr>, (io::ErrorKind, String)>;

/// One name's lookup: filled once by whichever caller asked first.
type Slot = Arc<OnceCell<(Instant, Answer)>>;

/// Caches `R`'s answers per host name (see the module documentation).
#[derive(Debug)]
pub struct CachingResolver<R> {
    inner: R,
    positive: Duration,
    negative: Duration,
    names: Mutex<Names>,
}

/// The cached names, and the size at which expired ones are next swept out.
#[derive(Debug)]
struct Names {
    slots: HashMap<String, Slot>,
    sweep_at: usize,
}

/// The fewest names at which a sweep is worth its walk.
const MIN_SWEEP: usize = 256;

impl Names {
    fn new() -> Self {
        Self {
            slots: HashMap::new(),
            sweep_at: MIN_SWEEP,
        }
    }

    /// Drops the names whose answers expired once the map has doubled since
    /// the last sweep (amortised O(1) per insert), so it holds about what
    /// the last [`POSITIVE_TTL`] asked for, not every name a long batch
    /// ever met; past [`MAX_NAMES`] live names it starts over.
    fn sweep(&mut self, now: Instant) {
        if self.slots.len() < self.sweep_at {
            return;
        }
        self.slots
            .retain(|_, s| s.get().is_none_or(|(expires, _)| *expires > now));
        if self.slots.len() >= MAX_NAMES {
            self.slots.clear();
        }
        self.slots.shrink_to(2 * self.slots.len());
        self.sweep_at = (2 * self.slots.len()).clamp(MIN_SWEEP, MAX_NAMES);
    }
}

impl<R: Resolver> CachingResolver<R> {
    /// Caches `inner`'s answers for [`POSITIVE_TTL`] and failures for [`NEGATIVE_TTL`].
    pub fn new(inner: R) -> Self {
        Self::with_ttls(inner, POSITIVE_TTL, NEGATIVE_TTL)
    }

    /// Caches answers for `positive` and failures for `negative`.
    pub fn with_ttls(inner: R, positive: Duration, negative: Duration) -> Self {
        Self {
            inner,
            positive,
            negative,
            names: Mutex::new(Names::new()),
        }
    }

    /// The slot to read `host` from: the current one unless its answer expired.
    fn slot(&self, host: &str) -> Slot {
        let now = Instant::now();
        let mut names = self.names.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(slot) = names.slots.get(host)
            && slot.get().is_none_or(|(expires, _)| *expires > now)
        {
            return slot.clone();
        }
        names.sweep(now);
        let slot = Slot::default();
        names.slots.insert(host.to_owned(), slot.clone());
        slot
    }
}

impl<R: Resolver> Resolver for CachingResolver<R> {
    fn resolve<'a>(&'a self, host: &'a str, port: u16) -> ResolveFuture<'a> {
        Box::pin(async move {
            let slot = self.slot(host);
            let (_, answer) = slot
                .get_or_init(|| async {
                    let answer = self
                        .inner
                        .resolve(host, port)
                        .await
                        .map_err(|e| (e.kind(), e.to_string()));
                    let ttl = if answer.is_ok() {
                        self.positive
                    } else {
                        self.negative
                    };
                    (Instant::now() + ttl, answer)
                })
                .await;
            answer
                .clone()
                .map_err(|(kind, message)| io::Error::new(kind, message))
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    /// Answers `ok` (or fails when `ok` is empty) after a short wait,
    /// counting the calls.
    #[derive(Debug, Default)]
    struct Counting {
        calls: AtomicUsize,
        ok: Vec<IpAddr>,
    }

    impl Resolver for Counting {
        fn resolve<'a>(&'a self, _host: &'a str, _port: u16) -> ResolveFuture<'a> {
            self.calls.fetch_add(1, Ordering::SeqCst);
            Box::pin(async move {
                tokio::time::sleep(Duration::from_millis(50)).await;
                if self.ok.is_empty() {
                    Err(io::Error::other("failed to lookup address information"))
                } else {
                    Ok(self.ok.clone())
                }
            })
        }
    }

    fn addrs() -> Vec<IpAddr> {
        vec!["93.184.215.14".parse().unwrap()]
    }

    #[tokio::test(start_paused = true)]
    async fn concurrent_lookups_of_a_name_make_one_call() {
        let cache = CachingResolver::new(Counting {
            ok: addrs(),
            ..Counting::default()
        });
        let all = futures_join(&cache, "cdn.example", 20).await;
        assert!(all.iter().all(|r| r.as_ref().unwrap() == &addrs()));
        assert_eq!(cache.inner.calls.load(Ordering::SeqCst), 1);
        // Another name is its own lookup.
        cache.resolve("other.example", 443).await.unwrap();
        assert_eq!(cache.inner.calls.load(Ordering::SeqCst), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn answers_expire_after_their_ttl() {
        let cache = CachingResolver::new(Counting {
            ok: addrs(),
            ..Counting::default()
        });
        cache.resolve("cdn.example", 443).await.unwrap();
        tokio::time::advance(POSITIVE_TTL - Duration::from_secs(1)).await;
        cache.resolve("cdn.example", 80).await.unwrap();
        assert_eq!(cache.inner.calls.load(Ordering::SeqCst), 1);
        tokio::time::advance(Duration::from_secs(2)).await;
        cache.resolve("cdn.example", 443).await.unwrap();
        assert_eq!(cache.inner.calls.load(Ordering::SeqCst), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn failures_are_kept_briefly_and_keep_their_message() {
        let cache = CachingResolver::new(Counting::default());
        let all = futures_join(&cache, "gone.example", 8).await;
        for r in &all {
            let err = r.as_ref().unwrap_err();
            assert_eq!(err.to_string(), "failed to lookup address information");
        }
        assert_eq!(cache.inner.calls.load(Ordering::SeqCst), 1);
        tokio::time::advance(NEGATIVE_TTL + Duration::from_secs(1)).await;
        assert!(cache.resolve("gone.example", 443).await.is_err());
        assert_eq!(cache.inner.calls.load(Ordering::SeqCst), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn expired_names_are_swept_as_new_ones_come() {
        let cache = CachingResolver::new(Counting {
            ok: addrs(),
            ..Counting::default()
        });
        for i in 0..300 {
            cache.resolve(&format!("a{i}.example"), 443).await.unwrap();
        }
        tokio::time::advance(POSITIVE_TTL + Duration::from_secs(1)).await;
        for i in 0..300 {
            cache.resolve(&format!("b{i}.example"), 443).await.unwrap();
        }
        // The a-names expired a minute ago: a long batch's cache holds
        // what it asked for lately, not every host it ever met.
        {
            let names = cache.names.lock().unwrap();
            assert_eq!(names.slots.len(), 300);
            assert!(names.slots.keys().all(|k| k.starts_with('b')));
        }
        // A live answer is still served from the cache.
        cache.resolve("b299.example", 443).await.unwrap();
        assert_eq!(cache.inner.calls.load(Ordering::SeqCst), 600);
    }

    async fn futures_join(
        cache: &CachingResolver<Counting>,
        host: &str,
        n: usize,
    ) -> Vec<io::Result<Vec<IpAddr>>> {
        let mut set = Vec::new();
        for _ in 0..n {
            set.push(cache.resolve(host, 443));
        }
        let mut out = Vec::new();
        // Polled together: every call starts before the first answer.
        let joined = std::future::poll_fn(|cx| {
            use std::task::Poll;
            let mut pending = false;
            for (i, f) in set.iter_mut().enumerate() {
                if out.len() <= i {
                    out.resize_with(i + 1, || None);
                }
                if out[i].is_none() {
                    match f.as_mut().poll(cx) {
                        Poll::Ready(v) => out[i] = Some(v),
                        Poll::Pending => pending = true,
                    }
                }
            }
            if pending { Poll::Pending } else { Poll::Ready(()) }
        });
        joined.await;
        out.into_iter().map(Option::unwrap).collect()
    }
}
