//! The egress proxy: an HTTP forward proxy on loopback that Chromium must
//! send every request through (`--proxy-server`, loopback not bypassed).
//! For each request it resolves the host once through the policy's
//! [`Resolver`], checks every address against the [`UrlPolicy`], and
//! connects to the checked address itself, so no second lookup can rebind
//! the name. Plain HTTP (absolute-form, WebSocket upgrades included) and
//! `CONNECT` tunnels (TLS, `wss`) are served; refusals get a `403` and are
//! recorded in a log its owner drains per job. See `design.md` in
//! `lib/browser` for how the browser uses it.

mod conn;
mod progress;
mod pump;
mod upstream;

pub use conn::NET_ERROR_HEADER;
pub use progress::Progress;
pub use upstream::{Upstream, UpstreamKind};

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use oxwright_policy::{PolicyError, Resolver, SystemResolver, UrlPolicy};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// Bounds on what one proxied connection may take.
#[derive(Debug, Clone)]
pub struct EgressLimits {
    /// Largest request or response head accepted, in bytes.
    pub max_head_bytes: usize,
    /// Deadline for a client to send its request head.
    pub head_timeout: Duration,
    /// Deadline for connecting to the checked address (per address tried).
    pub connect_timeout: Duration,
    /// A connection with no byte moving either way for this long is closed.
    pub idle_timeout: Duration,
    /// Refusals kept in the log before the oldest are dropped.
    pub max_refusals: usize,
}

impl Default for EgressLimits {
    fn default() -> Self {
        Self {
            max_head_bytes: 64 * 1024,
            head_timeout: Duration::from_secs(15),
            connect_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(120),
            max_refusals: 1000,
        }
    }
}

/// How many origins one proxy remembers between drains.
const MAX_REACHED: usize = 4096;

/// One request the proxy refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The URL (plain HTTP) or `host:port` (tunnel) that was asked for.
    pub target: String,
    /// Why it was refused.
    pub error: PolicyError,
}

/// Counters of one proxy's life so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EgressStats {
    /// Client connections accepted.
    pub accepted: u64,
    /// Requests and tunnels let through to an upstream.
    pub forwarded: u64,
    /// Requests and tunnels refused by the policy.
    pub refused: u64,
}

/// What the connection tasks share with the proxy's owner.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) policy: RwLock<Arc<UrlPolicy>>,
    /// The proxy connections leave through, if any.
    pub(crate) upstream: RwLock<Option<Arc<Upstream>>>,
    pub(crate) resolver: Arc<dyn Resolver>,
    pub(crate) limits: EgressLimits,
    refusals: Mutex<Vec<Refusal>>,
    /// Origins let through since the last drain (at most
    /// [`MAX_REACHED`]; past that, new ones are not kept).
    reached: Mutex<std::collections::BTreeSet<String>>,
    /// How far the newest exchanges' answers have come.
    pub(crate) exchanges: progress::Exchanges,
    accepted: AtomicU64,
    pub(crate) forwarded: AtomicU64,
    refused: AtomicU64,
}

impl Shared {
    pub(crate) fn policy(&self) -> Arc<UrlPolicy> {
        self.policy.read().expect("policy lock").clone()
    }

    pub(crate) fn upstream(&self) -> Option<Arc<Upstream>> {
        self.upstream.read().expect("upstream lock").clone()
    }

    /// Records that a connection to `url`'s origin was let through.
    pub(crate) fn reach(&self, url: &url::Url) {
        let mut reached = self.reached.lock().expect("reached origins");
        if reached.len() < MAX_REACHED {
            reached.insert(url.origin().ascii_serialization());
        }
    }

    pub(crate) fn refuse(&self, target: String, error: PolicyError) {
        tracing::debug!(target = %target, reason = %error, "egress refused");
        self.refused.fetch_add(1, Ordering::Relaxed);
        let mut log = self.refusals.lock().expect("refusal log");
        if log.len() >= self.limits.max_refusals {
            log.remove(0);
        }
        log.push(Refusal { target, error });
    }
}

/// A running egress proxy on `127.0.0.1`. Dropping it stops the listener and
/// every connection it carries.
#[derive(Debug)]
pub struct EgressProxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
    stop: CancellationToken,
}

impl EgressProxy {
    /// Starts a proxy enforcing `policy` with the system resolver.
    pub async fn start(policy: Arc<UrlPolicy>) -> std::io::Result<Self> {
        Self::with_resolver(policy, Arc::new(SystemResolver), EgressLimits::default()).await
    }

    /// Starts a proxy enforcing `policy`, resolving names with `resolver`.
    pub async fn with_resolver(
        policy: Arc<UrlPolicy>,
        resolver: Arc<dyn Resolver>,
        limits: EgressLimits,
    ) -> std::io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            policy: RwLock::new(policy),
            upstream: RwLock::new(None),
            resolver,
            limits,
            refusals: Mutex::new(Vec::new()),
            reached: Mutex::new(std::collections::BTreeSet::new()),
            exchanges: progress::Exchanges::default(),
            accepted: AtomicU64::new(0),
            forwarded: AtomicU64::new(0),
            refused: AtomicU64::new(0),
        });
        let stop = CancellationToken::new();
        tokio::spawn(accept_loop(listener, shared.clone(), stop.clone()));
        Ok(Self { addr, shared, stop })
    }

    /// Returns the address Chromium must use as its proxy.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Returns the proxy as a `--proxy-server` / `proxyServer` value.
    pub fn proxy_server(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Replaces the policy applied to requests from now on.
    pub fn set_policy(&self, policy: Arc<UrlPolicy>) {
        *self.shared.policy.write().expect("policy lock") = policy;
    }

    /// Sends the connections opened from now on through `upstream` (an
    /// HTTP or SOCKS5 proxy), or directly with `None`. The policy still
    /// judges every target first.
    pub fn set_upstream(&self, upstream: Option<Arc<Upstream>>) {
        *self.shared.upstream.write().expect("upstream lock") = upstream;
    }

    /// Returns the upstream proxy in force.
    pub fn upstream(&self) -> Option<Arc<Upstream>> {
        self.shared.upstream()
    }

    /// Returns the policy in force.
    pub fn policy(&self) -> Arc<UrlPolicy> {
        self.shared.policy()
    }

    /// Returns the refusals recorded since the last drain, leaving them.
    pub fn refusals(&self) -> Vec<Refusal> {
        self.shared.refusals.lock().expect("refusal log").clone()
    }

    /// Takes every refusal recorded since the last drain.
    pub fn drain_refusals(&self) -> Vec<Refusal> {
        std::mem::take(&mut *self.shared.refusals.lock().expect("refusal log"))
    }

    /// Takes the origins (`scheme://host[:port]`) of every request and
    /// tunnel let through since the last drain: what a page of this proxy's
    /// browser context reached, its frames in other processes and its
    /// workers included.
    pub fn drain_origins(&self) -> Vec<String> {
        std::mem::take(&mut *self.shared.reached.lock().expect("reached origins"))
            .into_iter()
            .collect()
    }

    /// How far the answer to the newest request for `url` (plain HTTP),
    /// or the newest tunnel to its host (TLS), begun at or after `since`,
    /// had come: what a page that ran out of time waiting for it can say
    /// the server had sent. The newest few hundred exchanges are kept.
    pub fn progress(&self, url: &url::Url, since: std::time::Instant) -> Option<Progress> {
        self.shared.exchanges.find(&progress::key_of(url)?, since)
    }

    /// Returns the proxy's counters.
    pub fn stats(&self) -> EgressStats {
        EgressStats {
            accepted: self.shared.accepted.load(Ordering::Relaxed),
            forwarded: self.shared.forwarded.load(Ordering::Relaxed),
            refused: self.shared.refused.load(Ordering::Relaxed),
        }
    }

    /// Stops accepting and closes every connection now.
    pub fn shutdown(&self) {
        self.stop.cancel();
    }
}

impl Drop for EgressProxy {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>, stop: CancellationToken) {
    let tracker = TaskTracker::new();
    loop {
        let accepted = tokio::select! {
            _ = stop.cancelled() => break,
            accepted = listener.accept() => accepted,
        };
        match accepted {
            Ok((stream, _)) => {
                shared.accepted.fetch_add(1, Ordering::Relaxed);
                let shared = shared.clone();
                let stop = stop.clone();
                tracker.spawn(async move {
                    tokio::select! {
                        _ = stop.cancelled() => {}
                        _ = conn::serve(stream, &shared) => {}
                    }
                });
            }
            Err(err) => {
                // Out of descriptors and the like: back off instead of spinning.
                tracing::debug!(error = %err, "egress accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
    tracker.close();
}
