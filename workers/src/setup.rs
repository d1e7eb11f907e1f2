//! The browser half of a binary's setup: the pool the `[browser]` section
//! describes, and the handler context over it.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::Context as _;
use oxwright_browser::{BrowserPool, PoolConfig};
use oxwright_config::{BrowserSection, Setup};

use crate::HandlerContext;

/// Returns the pool configuration `[browser]` describes, with
/// `CHROME_PATH` / `CHROME_URL` / `DISPLAY` from `env`.
pub fn pool_config(b: &BrowserSection, env: &BTreeMap<String, String>) -> PoolConfig {
    let mut pool = PoolConfig {
        browsers: b.browsers.max(1),
        pages_per_browser: b.pages_per_browser.max(1),
        max_pages_per_browser: b.max_pages_per_browser,
        chrome_url: b.chrome_url.clone(),
        recycle_after: b.recycle_after.max(1),
        context_reuse: b.context_reuse.max(1),
        isolation: b.isolation,
        call_timeout: Duration::from_millis(b.call_timeout_ms.max(100)),
        extra_args: b.extra_args.clone(),
        job_memory_mb: b.job_memory_mb,
        job_dom_nodes: b.job_dom_nodes,
        sandbox: b.sandbox,
        ..PoolConfig::default()
    };
    if let Some(path) = &b.chrome_path {
        pool.chrome_path = path.clone();
    }
    pool.with_env(env)
}

/// What a [`Setup`] builds for the commands that drive a browser.
#[allow(async_fn_in_trait)]
pub trait BrowserSetup {
    /// The pool configuration of this setup ([`pool_config`]).
    fn pool_config(&self) -> PoolConfig;

    /// Starts the warm browser pool.
    async fn pool(&self) -> anyhow::Result<BrowserPool>;

    /// Builds the browser pool without launching a browser (see
    /// [`BrowserPool::start_cold`]): for fetches that may need none.
    async fn pool_cold(&self) -> anyhow::Result<BrowserPool>;

    /// Returns a handler context over `pool`.
    async fn handler(&self, pool: BrowserPool) -> anyhow::Result<HandlerContext>;
}

impl BrowserSetup for Setup {
    fn pool_config(&self) -> PoolConfig {
        pool_config(&self.config.browser, &self.env)
    }

    async fn pool(&self) -> anyhow::Result<BrowserPool> {
        let cfg = self.pool_config();
        BrowserPool::start(cfg.clone())
            .await
            .with_context(|| format!("starting Chromium ({})", cfg.chrome_path.display()))
    }

    async fn pool_cold(&self) -> anyhow::Result<BrowserPool> {
        let cfg = self.pool_config();
        BrowserPool::start_cold(cfg.clone())
            .await
            .with_context(|| format!("setting up Chromium ({})", cfg.chrome_path.display()))
    }

    async fn handler(&self, pool: BrowserPool) -> anyhow::Result<HandlerContext> {
        let mut ctx = HandlerContext::new(pool, self.policy.clone(), self.store().await?);
        ctx.workflow =
            crate::handlers::workflow::WorkflowContext::from_env(&self.env).map_err(anyhow::Error::msg)?;
        ctx.extract_model = crate::handlers::ExtractModel::from_section(&self.config.llm, &self.env);
        Ok(ctx)
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use oxwright_browser::Isolation;
    use oxwright_config::Config;

    use super::*;

    #[test]
    fn the_section_becomes_the_pool_with_the_environment_on_top() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("oxwright.toml");
        std::fs::write(
            &path,
            "[browser]\nbrowsers = 2\nisolation = \"shared\"\nchrome_path = \"/opt/chrome\"\n",
        )
        .unwrap();
        let env = BTreeMap::from([("CHROME_PATH".to_string(), "/usr/bin/chromium".to_string())]);
        let cfg = Config::load(Some(&path), &env).unwrap();
        let pool = pool_config(&cfg.browser, &env);
        assert_eq!(pool.browsers, 2);
        assert_eq!(pool.isolation, Isolation::Shared);
        assert_eq!(pool.chrome_path, PathBuf::from("/usr/bin/chromium"));
        let file_only = Config::load(Some(&path), &BTreeMap::new()).unwrap();
        let pool = pool_config(&file_only.browser, &BTreeMap::new());
        assert_eq!(pool.chrome_path, PathBuf::from("/opt/chrome"));
        assert_eq!(pool.browsers, 2);
    }

    #[test]
    fn the_sections_defaults_are_the_pools() {
        let from_section = pool_config(&BrowserSection::default(), &BTreeMap::new());
        let pool = PoolConfig::default();
        assert_eq!(from_section.browsers, pool.browsers);
        assert_eq!(from_section.pages_per_browser, pool.pages_per_browser);
        assert_eq!(from_section.max_pages_per_browser, pool.max_pages_per_browser);
        assert_eq!(from_section.context_reuse, pool.context_reuse);
        assert_eq!(from_section.isolation, pool.isolation);
        assert_eq!(from_section.recycle_after, pool.recycle_after);
        assert_eq!(from_section.call_timeout, pool.call_timeout);
        assert_eq!(from_section.job_memory_mb, pool.job_memory_mb);
        assert_eq!(from_section.job_dom_nodes, pool.job_dom_nodes);
        assert_eq!(from_section.sandbox, pool.sandbox);
        assert_eq!(from_section.chrome_path, pool.chrome_path);
    }
}
