//! How far each exchange's answer has come: the bytes a server sent and
//! whether its response head was whole, kept for the newest exchanges so
//! a navigation that ran out of time can say what the server had sent.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, ReadBuf};

/// How many exchanges one proxy keeps the progress of.
const KEPT: usize = 256;

/// What one exchange's server had sent when it was asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    /// Bytes received from the server, the response head included (for a
    /// tunnel, every byte it carried down, TLS included).
    pub received: u64,
    /// The length of the response head once it was whole; `None` while it
    /// is not, and always for a tunnel, whose head the proxy cannot see.
    pub head_bytes: Option<u64>,
    /// Whether the proxy carried the exchange (`false`) or a `CONNECT`
    /// tunnel (`true`).
    pub tunnel: bool,
    /// Whether the exchange had ended.
    pub ended: bool,
    /// From the request reaching the proxy to its end, or to now.
    pub elapsed: Duration,
}

/// One exchange's counters, shared by the task relaying it.
#[derive(Debug)]
pub(crate) struct Exchange {
    started: Instant,
    received: AtomicU64,
    /// The head's length plus one once whole; 0 before.
    head: AtomicU64,
    /// Milliseconds from the start to the end plus one; 0 while going on.
    ended_ms: AtomicU64,
    tunnel: bool,
}

impl Exchange {
    pub(crate) fn head_done(&self, len: usize) {
        self.head.store(len as u64 + 1, Ordering::Relaxed);
    }

    fn progress(&self) -> Progress {
        let ended = self.ended_ms.load(Ordering::Relaxed);
        Progress {
            received: self.received.load(Ordering::Relaxed),
            head_bytes: self.head.load(Ordering::Relaxed).checked_sub(1),
            tunnel: self.tunnel,
            ended: ended > 0,
            elapsed: match ended.checked_sub(1) {
                Some(ms) => Duration::from_millis(ms),
                None => self.started.elapsed(),
            },
        }
    }
}

/// Marks its exchange ended when the relay is over, however it ends.
pub(crate) struct Ending(pub(crate) Arc<Exchange>);

impl Drop for Ending {
    fn drop(&mut self) {
        let ms = self.0.started.elapsed().as_millis() as u64;
        self.0.ended_ms.store(ms + 1, Ordering::Relaxed);
    }
}

/// The newest exchanges, by the key their request is found under.
#[derive(Debug, Default)]
pub(crate) struct Exchanges(Mutex<VecDeque<(String, Arc<Exchange>)>>);

impl Exchanges {
    /// Starts keeping the progress of an exchange for `key`.
    pub(crate) fn begin(&self, key: String, tunnel: bool) -> Arc<Exchange> {
        let exchange = Arc::new(Exchange {
            started: Instant::now(),
            received: AtomicU64::new(0),
            head: AtomicU64::new(0),
            ended_ms: AtomicU64::new(0),
            tunnel,
        });
        let mut kept = self.0.lock().expect("exchanges");
        if kept.len() >= KEPT {
            kept.pop_front();
        }
        kept.push_back((key, exchange.clone()));
        exchange
    }

    /// The newest exchange for `key` that began at or after `since`.
    pub(crate) fn find(&self, key: &str, since: Instant) -> Option<Progress> {
        let kept = self.0.lock().expect("exchanges");
        kept.iter()
            .rev()
            .find(|(k, e)| k == key && e.started >= since)
            .map(|(_, e)| e.progress())
    }
}

/// The key a request for `url` is kept under: the URL without its
/// fragment for plain HTTP, `host:port` for what goes through a tunnel.
pub(crate) fn key_of(url: &url::Url) -> Option<String> {
    match url.scheme() {
        "http" | "ws" => {
            let mut url = url.clone();
            url.set_fragment(None);
            let _ = url.set_scheme("http");
            Some(url.to_string())
        }
        "https" | "wss" => Some(format!(
            "{}:{}",
            url.host_str()?.to_ascii_lowercase(),
            url.port_or_known_default()?
        )),
        _ => None,
    }
}

/// A reader that counts what it reads into its exchange.
pub(crate) struct Counted<'a, R> {
    pub(crate) inner: &'a mut R,
    pub(crate) exchange: &'a Exchange,
}

impl<R: AsyncRead + Unpin> AsyncRead for Counted<'_, R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let polled = Pin::new(&mut *this.inner).poll_read(cx, buf);
        let read = buf.filled().len().saturating_sub(before);
        if read > 0 {
            this.exchange.received.fetch_add(read as u64, Ordering::Relaxed);
        }
        polled
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_drop_fragments_and_tunnel_by_authority() {
        let key = |u: &str| key_of(&url::Url::parse(u).unwrap());
        assert_eq!(
            key("http://Example.com/a?b#c").as_deref(),
            Some("http://example.com/a?b")
        );
        assert_eq!(
            key("ws://example.com:81/s").as_deref(),
            Some("http://example.com:81/s")
        );
        assert_eq!(key("https://Example.com/a").as_deref(), Some("example.com:443"));
        assert_eq!(
            key("wss://example.com:8443/").as_deref(),
            Some("example.com:8443")
        );
        assert_eq!(key("data:text/plain,x"), None);
    }

    #[test]
    fn the_newest_exchange_since_a_moment_is_found() {
        let kept = Exchanges::default();
        let old = kept.begin("k".into(), false);
        old.received.store(5, Ordering::Relaxed);
        let since = Instant::now();
        assert_eq!(kept.find("k", since), None, "begun before the moment");
        let new = kept.begin("k".into(), false);
        new.received.store(7, Ordering::Relaxed);
        new.head_done(3);
        let seen = kept.find("k", since).expect("found");
        assert_eq!((seen.received, seen.head_bytes, seen.ended), (7, Some(3), false));
        drop(Ending(new));
        assert!(kept.find("k", since).expect("found").ended);
        for i in 0..KEPT {
            kept.begin(format!("other{i}"), false);
        }
        assert_eq!(kept.find("k", since), None, "only the newest are kept");
    }
}
