//! Shared set-up for the end-to-end tests: the fixture site, a warm pool
//! and a URL policy that allows exactly the fixture server.

#![allow(dead_code)]

use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

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

/// Serves `pages` on `listener` until the test ends; unknown paths get 404.
pub fn serve_pages(listener: tokio::net::TcpListener, pages: std::collections::HashMap<String, String>) {
    let pages = Arc::new(pages);
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            let pages = pages.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 8192];
                let mut read = 0;
                while !buf[..read].windows(4).any(|w| w == b"\r\n\r\n") && read < buf.len() {
                    match sock.read(&mut buf[read..]).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => read += n,
                    }
                }
                let head = String::from_utf8_lossy(&buf[..read]);
                let path = head.split_whitespace().nth(1).unwrap_or("/");
                let path = path.split('?').next().unwrap_or("/");
                let (status, body) = match pages.get(path) {
                    Some(html) => ("200 OK", html.clone()),
                    None => ("404 Not Found", "<h1>Not found</h1>".to_string()),
                };
                let resp = format!(
                    "HTTP/1.1 {status}\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = sock.write_all(resp.as_bytes()).await;
                let _ = sock.shutdown().await;
            });
        }
    });
}

/// Serves the engine suite's pages on loopback (a second origin,
/// `localhost` on the same port, for cross-origin frames) and returns
/// their base URL with a policy allowing both origins.
pub async fn suite_site() -> (url::Url, Arc<UrlPolicy>) {
    // Bind first: the frames page names the second origin with this port.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let other = format!("http://localhost:{}", addr.port());
    serve_pages(
        listener,
        oxwright_engine::test_suite::pages(&other).into_iter().collect(),
    );
    let base: url::Url = format!("http://127.0.0.1:{}/", addr.port()).parse().unwrap();
    let policy = Arc::new(UrlPolicy::allowing([
        format!("127.0.0.1:{}", addr.port()).parse().unwrap(),
        format!("localhost:{}", addr.port()).parse().unwrap(),
    ]));
    (base, policy)
}

/// Opens fresh pages of `engine` under `policy` for the engine suite.
pub fn suite_opener(
    engine: Arc<dyn oxwright_engine::BrowserEngine>,
    policy: Arc<UrlPolicy>,
) -> impl Fn() -> std::pin::Pin<Box<dyn std::future::Future<Output = Box<dyn oxwright_engine::Page>> + Send>> + Sync
{
    move || {
        let (engine, policy) = (engine.clone(), policy.clone());
        Box::pin(async move {
            let mut open = oxwright_engine::OpenOptions::new(policy);
            open.record_requests = true;
            engine
                .open(&open)
                .await
                .unwrap_or_else(|e| panic!("a page of {} opens: {e}", engine.describe()))
        })
    }
}
