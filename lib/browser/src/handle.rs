//! One connected browser: the chromiumoxide client, its handler task, the
//! owned process, its egress proxy, and whether the connection is still
//! alive.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use chromiumoxide::cdp::browser_protocol::browser::{
    BrowserContextId, GetVersionParams, ResetPermissionsParams,
};
use chromiumoxide::cdp::browser_protocol::target::{CreateBrowserContextParams, CreateTargetParams};
use chromiumoxide::handler::HandlerConfig;
use chromiumoxide::{Browser, Page};
use futures::StreamExt;
use oxwright_egress::EgressProxy;
use oxwright_policy::UrlPolicy;
use tokio::task::JoinHandle;

use crate::error::{cdp, deadline};
use crate::process::{ChromiumProcess, LaunchOptions};
use crate::{BrowserError, PoolConfig};

/// A browser the pool hands pages out of.
#[derive(Debug)]
pub(crate) struct BrowserHandle {
    browser: Browser,
    /// The browser's DevTools endpoint (what a page's frame link connects to).
    pub(crate) ws_url: String,
    alive: Arc<AtomicBool>,
    handler: JoinHandle<()>,
    process: std::sync::Mutex<Option<ChromiumProcess>>,
    call_timeout: Duration,
    /// The proxy the whole browser is launched with: what its default
    /// context (and anything outside a job's own context) leaves through.
    /// `None` for a remote browser, whose flags are not ours to set.
    egress: Option<Arc<EgressProxy>>,
    /// What one job's page may use.
    pub(crate) memory_limit: oxwright_engine::MemoryLimit,
    /// When a renderer last ran out of V8 heap (Unix ms; 0: never, or a
    /// remote browser whose stderr is not ours).
    oom: Arc<std::sync::atomic::AtomicU64>,
    /// The last renderer killed over the per-job memory ceiling.
    renderer_killed: Arc<crate::renderer_memory::Killed>,
}

/// Chromium bypasses the proxy for loopback unless told not to: `<-loopback>`
/// removes that implicit rule, so loopback goes through the proxy too.
pub(crate) const PROXY_BYPASS: &str = "<-loopback>";

/// The least time opening a page gets, whatever one call's deadline: it
/// starts a renderer process, which on a busy machine took over 10 s (CI,
/// beside a deployment of workers). Giving up sooner replaces a browser
/// that was only slow, which costs more of the CPU that was short.
pub(crate) const OPEN_PAGE_FLOOR: Duration = Duration::from_secs(30);

/// A page just opened for a tab: the page, the browser context it has to
/// itself (none when shared), that context's egress proxy, and how long a
/// call on it may take; [`crate::tab::Tab::open`] makes the tab.
pub(crate) struct OpenedPage {
    pub(crate) page: Page,
    pub(crate) context: Option<BrowserContextId>,
    pub(crate) egress: Option<Arc<EgressProxy>>,
    pub(crate) call_timeout: Duration,
}

/// Starts an egress proxy that refuses everything non-public until a job
/// sets its policy.
async fn start_egress() -> Result<Arc<EgressProxy>, BrowserError> {
    EgressProxy::start(Arc::new(UrlPolicy::default()))
        .await
        .map(Arc::new)
        .map_err(|e| BrowserError::Unavailable(format!("egress proxy: {e}")))
}

/// Decides whether the browsers run sandboxed; says once, as a warning,
/// when they cannot (an operator's explicit `off` only at INFO).
fn sandbox(mode: crate::SandboxMode) -> Result<bool, BrowserError> {
    use oxwright_owned::sandbox::{Sandbox, decide};
    match decide(mode).map_err(BrowserError::Misconfigured)? {
        Sandbox::On => Ok(true),
        Sandbox::Off(why) => {
            static SAID: std::sync::OnceLock<()> = std::sync::OnceLock::new();
            SAID.get_or_init(|| {
                if mode == crate::SandboxMode::Off {
                    tracing::info!(reason = %why, "chromium runs without its sandbox");
                } else {
                    tracing::warn!(
                        "CHROMIUM RUNS WITHOUT ITS SANDBOX: {why}. A renderer a hostile page compromises \
                         is then this process's user; run oxwright as a normal user where user namespaces \
                         are allowed (or set browser.sandbox = \"off\" to say this is intended)"
                    );
                }
            });
            Ok(false)
        }
    }
}

impl BrowserHandle {
    /// Launches (or connects to) a browser and starts its handler task.
    pub(crate) async fn start(cfg: &PoolConfig, headless: bool) -> Result<Arc<Self>, BrowserError> {
        let (process, ws_url, egress) = match &cfg.chrome_url {
            Some(url) => (None, url.clone(), None),
            None => {
                let egress = start_egress().await?;
                let mut extra_args = cfg.extra_args.clone();
                // V8's old space stops a script's heap a quarter above the
                // job limit (its renderer dies, not the browser): the fetch's
                // watchdog ends a page at the limit first, V8 only one that
                // grows faster than it reads. Unless the caller set V8 flags.
                if !extra_args.iter().any(|a| a.starts_with("--js-flags")) {
                    let cap = cfg.job_memory_mb.max(16).saturating_add(cfg.job_memory_mb / 4);
                    extra_args.push(format!("--js-flags=--max-old-space-size={cap}"));
                }
                // Last on the command line, so a caller's flags cannot replace them.
                extra_args.push(format!("--proxy-server={}", egress.proxy_server()));
                extra_args.push(format!("--proxy-bypass-list={PROXY_BYPASS}"));
                let sandbox = sandbox(cfg.sandbox)?;
                let opts = LaunchOptions {
                    executable: cfg.chrome_path.clone(),
                    headless,
                    extra_args,
                    sandbox,
                    launch_timeout: cfg.launch_timeout,
                    window: cfg.window,
                    display: cfg.display.clone(),
                };
                let (proc_, url) = tokio::task::spawn_blocking(move || ChromiumProcess::launch(&opts))
                    .await
                    .map_err(|e| BrowserError::Unavailable(format!("launch task: {e}")))??;
                (Some(proc_), url, Some(egress))
            }
        };
        let config = HandlerConfig {
            // The handler's own clock bounds every command, so it must leave
            // room for the calls given more than one call's deadline.
            request_timeout: cfg.call_timeout.max(OPEN_PAGE_FLOOR),
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
        let oom = process
            .as_ref()
            .map_or_else(Arc::default, ChromiumProcess::oom_marker);
        let renderer_killed = Arc::new(crate::renderer_memory::Killed::default());
        // Only the renderers of a browser this pool launched are its to measure.
        if let Some(p) = &process {
            crate::renderer_memory::watch(
                p.pid(),
                cfg.renderer_ceiling_mb(),
                alive.clone(),
                renderer_killed.clone(),
            );
        }
        Ok(Arc::new(Self {
            oom,
            renderer_killed,
            browser,
            ws_url,
            alive,
            handler,
            process: std::sync::Mutex::new(process),
            call_timeout: cfg.call_timeout,
            memory_limit: cfg.memory_limit(),
            egress,
        }))
    }

    /// Says whether a renderer of this browser ran out of V8 heap within
    /// `window` before now.
    pub(crate) fn oom_within(&self, window: Duration) -> bool {
        let at = self.oom.load(Ordering::SeqCst);
        at != 0 && crate::process::unix_ms().saturating_sub(at) <= window.as_millis() as u64
    }

    /// The size (MiB) of a renderer of this browser killed over the
    /// per-job memory ceiling within `window` before now.
    pub(crate) fn renderer_killed_within(&self, window: Duration) -> Option<u64> {
        self.renderer_killed.within(window)
    }

    /// Says whether the DevTools connection is still up.
    pub(crate) fn is_alive(&self) -> bool {
        self.alive.load(Ordering::SeqCst) && !self.handler.is_finished()
    }

    /// Marks the browser dead so the pool replaces it.
    pub(crate) fn mark_dead(&self) {
        self.alive.store(false, Ordering::SeqCst);
    }

    /// Returns the deadline for opening a page: at least [`OPEN_PAGE_FLOOR`],
    /// since the first page of a browser starts a renderer process.
    fn open_timeout(&self) -> Duration {
        self.call_timeout.max(OPEN_PAGE_FLOOR)
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
    /// context when `shared`. A fresh context gets its own egress proxy
    /// (`proxyServer`), so everything its pages, popups and workers send is
    /// judged by the job's policy and every refusal is the job's.
    pub(crate) async fn open_page(self: &Arc<Self>, shared: bool) -> Result<OpenedPage, BrowserError> {
        if !self.is_alive() {
            return Err(BrowserError::Crashed("devtools connection closed".into()));
        }
        let (context, egress) = if shared {
            (None, self.egress.clone())
        } else {
            let egress = start_egress().await?;
            let params = CreateBrowserContextParams::builder()
                .proxy_server(egress.proxy_server())
                .proxy_bypass_list(PROXY_BYPASS)
                .build();
            let context = deadline("Target.createBrowserContext", self.open_timeout(), async {
                self.browser
                    .create_browser_context(params)
                    .await
                    .map_err(|e| cdp("Target.createBrowserContext", e))
            })
            .await?;
            (Some(context), Some(egress))
        };
        let mut params = CreateTargetParams::new("about:blank");
        params.browser_context_id = context.clone();
        let page = deadline("Target.createTarget", self.open_timeout(), async {
            self.browser
                .new_page(params)
                .await
                .map_err(|e| cdp("Target.createTarget", e))
        })
        .await;
        match page {
            Ok(page) => Ok(OpenedPage {
                page,
                context,
                egress,
                call_timeout: self.call_timeout,
            }),
            Err(err) => {
                if let Some(context) = context {
                    self.dispose_context(context).await;
                }
                Err(err)
            }
        }
    }

    /// Closes every page of `context` but `keep` (popups a job opened).
    pub(crate) async fn close_other_pages(
        &self,
        context: &BrowserContextId,
        keep: &chromiumoxide::cdp::browser_protocol::target::TargetId,
    ) -> Result<(), BrowserError> {
        use chromiumoxide::cdp::browser_protocol::target::{CloseTargetParams, GetTargetsParams};
        let targets = deadline("Target.getTargets", self.call_timeout, async {
            self.browser
                .execute(GetTargetsParams::default())
                .await
                .map(|r| r.result.target_infos)
                .map_err(|e| cdp("Target.getTargets", e))
        })
        .await?;
        for target in targets {
            if target.browser_context_id.as_ref() == Some(context)
                && &target.target_id != keep
                && target.r#type == "page"
            {
                deadline("Target.closeTarget", self.call_timeout, async {
                    self.browser
                        .execute(CloseTargetParams::new(target.target_id.clone()))
                        .await
                        .map(|_| ())
                        .map_err(|e| cdp("Target.closeTarget", e))
                })
                .await?;
            }
        }
        Ok(())
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

    /// The page of target `id` (a popup a page opened), once the
    /// connection has attached to it (waits up to the call deadline).
    pub(crate) async fn page_of(&self, id: &str) -> Result<chromiumoxide::Page, BrowserError> {
        use chromiumoxide::cdp::browser_protocol::target::TargetId;
        let started = std::time::Instant::now();
        loop {
            match self.browser.get_page(TargetId::from(id.to_string())).await {
                Ok(page) => return Ok(page),
                Err(chromiumoxide::error::CdpError::NotFound) if started.elapsed() < self.call_timeout => {
                    tokio::time::sleep(std::time::Duration::from_millis(25)).await;
                }
                Err(e) => return Err(cdp("Target.attachToTarget", e)),
            }
        }
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
