//! What every command builds from its flags: configuration, policy, store,
//! the browser pool, and the shutdown signal.

use std::collections::BTreeMap;
use std::sync::Arc;

use anyhow::Context as _;
use oxwright_artifacts::{ArtifactStore, FsStore};
use oxwright_browser::BrowserPool;
use oxwright_policy::UrlPolicy;
use oxwright_worker::HandlerContext;
use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::options::CommonArgs;

/// The resolved configuration of one invocation.
#[derive(Debug)]
pub struct Setup {
    /// The merged configuration.
    pub config: Config,
    /// The URL policy.
    pub policy: Arc<UrlPolicy>,
    /// The process environment, read once.
    pub env: BTreeMap<String, String>,
}

impl Setup {
    /// Merges file, environment and flags.
    pub fn new(common: &CommonArgs) -> anyhow::Result<Self> {
        let env: BTreeMap<String, String> = std::env::vars().collect();
        let mut config = Config::load(common.config.as_deref(), &env)?;
        if let Some(out) = &common.out {
            config.out_dir = out.clone();
        }
        if let Some(n) = common.browsers {
            config.browser.browsers = n;
        }
        if let Some(n) = common.pages_per_browser {
            config.browser.pages_per_browser = n;
        }
        config.policy.allow_private |= common.allow_private;
        config
            .policy
            .allow_hosts
            .extend(common.allow_hosts.iter().cloned());
        let policy = Arc::new(config.policy.clone());
        Ok(Self { config, policy, env })
    }

    /// Returns the file store under `out_dir`.
    pub fn store(&self) -> Arc<dyn ArtifactStore> {
        Arc::new(FsStore::new(self.config.out_dir.clone()))
    }

    /// Starts the warm browser pool.
    pub async fn pool(&self) -> anyhow::Result<BrowserPool> {
        let cfg = self.config.pool(&self.env);
        BrowserPool::start(cfg.clone())
            .await
            .with_context(|| format!("starting Chromium ({})", cfg.chrome_path.display()))
    }

    /// Returns a handler context over `pool`.
    pub fn handler(&self, pool: BrowserPool) -> HandlerContext {
        HandlerContext::new(pool, self.policy.clone(), self.store())
    }
}

/// Returns a token cancelled on the first SIGINT or SIGTERM; a second
/// signal exits at once (the browsers die with the process).
pub fn shutdown_on_signals() -> CancellationToken {
    let token = CancellationToken::new();
    let trigger = token.clone();
    tokio::spawn(async move {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
        next_signal(&mut term).await;
        tracing::info!("shutting down: finishing in-flight pages (signal again to stop now)");
        trigger.cancel();
        next_signal(&mut term).await;
        std::process::exit(130);
    });
    token
}

async fn next_signal(term: &mut Option<tokio::signal::unix::Signal>) {
    match term.as_mut() {
        Some(t) => tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = t.recv() => {}
        },
        None => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
