//! [`PlaywrightMcpEngine`]: opens each page on its own `@playwright/mcp`
//! child (`--isolated`: an in-memory profile) behind its own egress proxy,
//! at most `capacity` at once. A child per page keeps pages apart the way
//! a fresh browser context does in the Chromium engine, and lets the
//! policy proxy hold the page's own policy.

use std::sync::Arc;

use async_trait::async_trait;
use oxwright_egress::EgressProxy;
use oxwright_engine::{BrowserEngine, EngineError, EngineErrorKind, OpenOptions, Page};
use tokio::sync::Semaphore;

use crate::PwMcpConfig;
use crate::client::McpClient;
use crate::page::McpPage;

/// The Playwright MCP backend of the engine seam.
#[derive(Debug, Clone)]
pub struct PlaywrightMcpEngine {
    cfg: PwMcpConfig,
    permits: Arc<Semaphore>,
}

impl PlaywrightMcpEngine {
    /// An engine that starts servers as `cfg` says.
    pub fn new(cfg: PwMcpConfig) -> Self {
        let permits = Arc::new(Semaphore::new(cfg.capacity.max(1)));
        Self { cfg, permits }
    }

    /// Opens a page and returns it as this engine's type (tests and
    /// diagnostics reach the MCP client through it).
    pub async fn open_page(&self, opts: &OpenOptions) -> Result<McpPage, EngineError> {
        let permit = self
            .permits
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| EngineError::new(EngineErrorKind::Unavailable, "the engine is shut down"))?;
        let egress = EgressProxy::start(opts.policy.clone())
            .await
            .map_err(|e| EngineError::new(EngineErrorKind::Unavailable, format!("egress proxy: {e}")))?;
        let workdir = tempfile::Builder::new()
            .prefix("oxwright-pwmcp-")
            .tempdir()
            .map_err(|e| EngineError::new(EngineErrorKind::Unavailable, format!("work dir: {e}")))?;
        let args = self.server_args(opts, &egress, workdir.path());
        let client = McpClient::new(self.cfg.clone(), args, workdir.path());
        client.connect().await?;
        Ok(McpPage::new(
            client,
            opts.policy.clone(),
            egress,
            opts.dialogs,
            workdir,
            Some(permit),
        ))
    }

    fn server_args(
        &self,
        opts: &OpenOptions,
        egress: &EgressProxy,
        workdir: &std::path::Path,
    ) -> Vec<String> {
        let mut args: Vec<String> = vec![
            "--isolated".into(),
            "--executable-path".into(),
            self.cfg.executable.display().to_string(),
            "--proxy-server".into(),
            egress.proxy_server(),
            "--output-dir".into(),
            workdir.join("out").display().to_string(),
            "--snapshot-mode".into(),
            "none".into(),
            "--codegen".into(),
            "none".into(),
            "--console-level".into(),
            "debug".into(),
            "--timeout-action".into(),
            self.cfg.action_timeout.as_millis().to_string(),
            "--timeout-navigation".into(),
            self.cfg.navigation_timeout.as_millis().to_string(),
            "--timeout-settle".into(),
            self.cfg.settle.as_millis().to_string(),
            "--viewport-size".into(),
            "1280x720".into(),
        ];
        if opts.headless {
            args.push("--headless".into());
        }
        // Sandboxed wherever Chromium's sandbox can run (not root, user
        // namespaces allowed), as the Chromium engine runs it.
        if oxwright_owned::sandbox::missing().is_some() {
            args.push("--no-sandbox".into());
        }
        args.extend(self.cfg.extra_args.iter().cloned());
        args
    }
}

#[async_trait]
impl BrowserEngine for PlaywrightMcpEngine {
    async fn open(&self, opts: &OpenOptions) -> Result<Box<dyn Page>, EngineError> {
        if !opts.shape.is_empty() {
            return Err(EngineError::unsupported(
                "request shaping (headers, cookies, emulation)",
            ));
        }
        Ok(Box::new(self.open_page(opts).await?))
    }

    fn capacity(&self) -> usize {
        self.cfg.capacity.max(1)
    }

    fn describe(&self) -> String {
        format!(
            "playwright-mcp ({} children at most, {})",
            self.capacity(),
            self.cfg.cli.display()
        )
    }
}
