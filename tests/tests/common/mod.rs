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
        let ctx = HandlerContext {
            pool: self.pool.clone(),
            policy: self.policy.clone(),
            store: Arc::new(store.clone()),
        };
        (ctx, store)
    }
}
