//! Shared set-up for the end-to-end tests: the fixture site, a warm pool
//! and a URL policy that allows exactly the fixture server.

#![allow(dead_code)]

use std::sync::Arc;

use oxwright_artifacts::MemoryStore;
use oxwright_browser::{BrowserPool, PoolConfig, UrlPolicy};
use oxwright_fixtures::FixtureServer;
use oxwright_jobs::FetchSpec;
use oxwright_worker::HandlerContext;

/// A fixture server plus a browser pool allowed to reach only it.
pub struct Env {
    pub site: FixtureServer,
    pub pool: BrowserPool,
    pub policy: Arc<UrlPolicy>,
}

/// Returns the pool configuration the tests use (CHROME_PATH honoured).
pub fn pool_config() -> PoolConfig {
    let env = std::env::vars().collect();
    PoolConfig {
        browsers: 1,
        pages_per_browser: 4,
        ..PoolConfig::default()
    }
    .with_env(&env)
}

impl Env {
    /// Starts the fixture site and a pool.
    pub async fn start() -> Self {
        Self::with_config(pool_config()).await
    }

    /// Starts the fixture site and a pool built from `cfg`.
    pub async fn with_config(cfg: PoolConfig) -> Self {
        let site = FixtureServer::start().await.expect("fixture server starts");
        let pool = BrowserPool::start(cfg)
            .await
            .expect("chromium starts (apt-get install chromium)");
        let policy = Arc::new(UrlPolicy::allowing([site.addr().to_string().parse().unwrap()]));
        Self { site, pool, policy }
    }

    /// Returns a spec for `path` on the fixture site with fast retries.
    pub fn spec(&self, path: &str) -> FetchSpec {
        let mut spec = FetchSpec::new(self.site.url(path).parse().unwrap());
        spec.retry_delay_ms = 20;
        spec.timeout_ms = 15_000;
        spec
    }

    /// Returns a handler context writing into a fresh memory store.
    pub fn handler(&self) -> (HandlerContext, MemoryStore) {
        let store = MemoryStore::new();
        let ctx = HandlerContext::new(self.pool.clone(), self.policy.clone(), Arc::new(store.clone()));
        (ctx, store)
    }
}

/// Returns a policy allowing exactly `addrs` (host:port) on top of the public internet.
pub fn policy_allowing(addrs: &[std::net::SocketAddr]) -> Arc<UrlPolicy> {
    Arc::new(UrlPolicy::allowing(
        addrs.iter().map(|a| a.to_string().parse().expect("host rule")),
    ))
}

/// Returns the fixture path that redirects (302) to `target`.
pub fn redirect_to(target: &str) -> String {
    let encoded: String = url::form_urlencoded::byte_serialize(target.as_bytes()).collect();
    format!("/redirect/to?url={encoded}")
}

/// Returns a loopback port nothing listens on (bound, noted, released).
pub fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind an ephemeral port");
    let port = listener.local_addr().expect("local addr").port();
    drop(listener);
    port
}

/// Polls `cond` every 20 ms until it holds or `limit` passes; returns whether it held.
pub async fn wait_until(limit: std::time::Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        if cond() {
            return true;
        }
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}
