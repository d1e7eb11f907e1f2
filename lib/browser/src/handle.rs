//! One connected browser: the chromiumoxide client, its handler task, the
//! owned process, and whether the connection is still alive.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use chromiumoxide::Browser;
use chromiumoxide::cdp::browser_protocol::browser::{
    BrowserContextId, GetVersionParams, ResetPermissionsParams,
};
use chromiumoxide::cdp::browser_protocol::target::{CreateBrowserContextParams, CreateTargetParams};
use chromiumoxide::handler::HandlerConfig;
use futures::StreamExt;
use tokio::task::JoinHandle;

use crate::error::{cdp, deadline};
use crate::process::{ChromiumProcess, LaunchOptions};
use crate::tab::Tab;
use crate::{BrowserError, PoolConfig};

/// A browser the pool hands pages out of.
#[derive(Debug)]
pub(crate) struct BrowserHandle {
    browser: Browser,
    alive: Arc<AtomicBool>,
    handler: JoinHandle<()>,
    process: std::sync::Mutex<Option<ChromiumProcess>>,
    call_timeout: Duration,
}

impl BrowserHandle {
    /// Launches (or connects to) a browser and starts its handler task.
    pub(crate) async fn start(cfg: &PoolConfig, headless: bool) -> Result<Arc<Self>, BrowserError> {
        let (process, ws_url) = match &cfg.chrome_url {
            Some(url) => (None, url.clone()),
            None => {
                let opts = LaunchOptions {
                    executable: cfg.chrome_path.clone(),
                    headless,
                    extra_args: cfg.extra_args.clone(),
                    launch_timeout: cfg.launch_timeout,
                    window: cfg.window,
                    display: cfg.display.clone(),
                };
                let (proc_, url) = tokio::task::spawn_blocking(move || ChromiumProcess::launch(&opts))
                    .await
                    .map_err(|e| BrowserError::Unavailable(format!("launch task: {e}")))??;
                (Some(proc_), url)
            }
        };
        let config = HandlerConfig {
            request_timeout: cfg.call_timeout,
            viewport: None,
            ..HandlerConfig::default()
        };
        let (browser, mut handler) = deadline("devtools connection", cfg.launch_timeout, async {
            Browser::connect_with_config(ws_url.clone(), config)
                .await
                .map_err(|e| BrowserError::Unavailable(format!("connect {ws_url}: {e}")))
        })
        .await?;
        let alive = Arc::new(AtomicBool::new(true));
        let flag = alive.clone();
        let pid = process.as_ref().map(ChromiumProcess::pid);
        let handler = tokio::spawn(async move {
            while let Some(event) = handler.next().await {
                if let Err(err) = event {
                    if matches!(err, chromiumoxide::error::CdpError::Ws(_)) {
                        tracing::warn!(?pid, error = %err, "devtools connection failed");
                        break;
                    }
                    tracing::debug!(?pid, error = %err, "devtools handler error");
                }
            }
            flag.store(false, Ordering::SeqCst);
            tracing::debug!(?pid, "devtools connection closed");
        });
        tracing::debug!(?pid, headless, "browser started");
        Ok(Arc::new(Self {
            browser,
            alive,
            handler,
            process: std::sync::Mutex::new(process),
            call_timeout: cfg.call_timeout,
        }))
    }

    /// Says whether the DevTools connection is still up.
    pub(crate) fn is_alive(&self) -> bool {
        self.alive.load(Ordering::SeqCst) && !self.handler.is_finished()
    }

    /// Marks the browser dead so the pool replaces it.
    pub(crate) fn mark_dead(&self) {
        self.alive.store(false, Ordering::SeqCst);
    }

    /// Asks the browser for its version within the call deadline.
    pub(crate) async fn ping(&self) -> Result<(), BrowserError> {
        if !self.is_alive() {
            return Err(BrowserError::Crashed("devtools connection closed".into()));
        }
        deadline("Browser.getVersion", self.call_timeout, async {
            self.browser
                .execute(GetVersionParams::default())
                .await
                .map(|_| ())
                .map_err(|e| cdp("Browser.getVersion", e))
        })
        .await
    }

    /// Opens a page in a fresh browser context, or in the browser's default
    /// context when `shared`.
    pub(crate) async fn new_tab(self: &Arc<Self>, shared: bool) -> Result<Tab, BrowserError> {
        if !self.is_alive() {
            return Err(BrowserError::Crashed("devtools connection closed".into()));
        }
        let context = if shared {
            None
        } else {
            Some(
                deadline("Target.createBrowserContext", self.call_timeout, async {
                    self.browser
                        .create_browser_context(CreateBrowserContextParams::default())
                        .await
                        .map_err(|e| cdp("Target.createBrowserContext", e))
                })
                .await?,
            )
        };
        let mut params = CreateTargetParams::new("about:blank");
        params.browser_context_id = context.clone();
        let page = deadline("Target.createTarget", self.call_timeout, async {
            self.browser
                .new_page(params)
                .await
                .map_err(|e| cdp("Target.createTarget", e))
        })
        .await;
        match page {
            Ok(page) => Ok(Tab::new(page, context, self.clone(), self.call_timeout)),
            Err(err) => {
                if let Some(context) = context {
                    self.dispose_context(context).await;
                }
                Err(err)
            }
        }
    }

    /// Disposes a browser context and every page in it.
    pub(crate) async fn dispose_context(&self, context: BrowserContextId) {
        let res =
            tokio::time::timeout(self.call_timeout, self.browser.dispose_browser_context(context)).await;
        if !matches!(res, Ok(Ok(()))) && self.is_alive() {
            tracing::debug!("browser context dispose failed");
        }
    }

    /// Resets the permissions granted in `context` (browser-level command).
    pub(crate) async fn reset_permissions(&self, context: BrowserContextId) -> Result<(), BrowserError> {
        let params = ResetPermissionsParams {
            browser_context_id: Some(context),
        };
        deadline("Browser.resetPermissions", self.call_timeout, async {
            self.browser
                .execute(params)
                .await
                .map(|_| ())
                .map_err(|e| cdp("Browser.resetPermissions", e))
        })
        .await
    }

    /// Lists the browser's targets (pages, popups, workers).
    pub(crate) async fn targets(
        &self,
    ) -> Result<Vec<chromiumoxide::cdp::browser_protocol::target::TargetInfo>, BrowserError> {
        use chromiumoxide::cdp::browser_protocol::target::GetTargetsParams;
        deadline("Target.getTargets", self.call_timeout, async {
            self.browser
                .execute(GetTargetsParams::default())
                .await
                .map(|r| r.result.target_infos)
                .map_err(|e| cdp("Target.getTargets", e))
        })
        .await
    }

    /// Returns the owned process id, if this browser was launched here.
    pub(crate) fn pid(&self) -> Option<i32> {
        self.process.lock().ok()?.as_ref().map(ChromiumProcess::pid)
    }

    /// Kills the browser now (process group included) and stops the handler.
    pub(crate) fn kill(&self) {
        self.mark_dead();
        self.handler.abort();
        if let Ok(mut guard) = self.process.lock() {
            guard.take();
        }
    }
}

impl Drop for BrowserHandle {
    fn drop(&mut self) {
        self.kill();
    }
}
