//! A page in its own browser context: navigation with lifecycle waits,
//! content reads and screenshots, every call under a deadline.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use chromiumoxide::Page;
use chromiumoxide::cdp::browser_protocol::browser::BrowserContextId;
use chromiumoxide::cdp::browser_protocol::inspector::EventTargetCrashed;
use chromiumoxide::cdp::browser_protocol::page::{
    CaptureScreenshotFormat, CaptureScreenshotParams, CrashParams,
};
use chromiumoxide::cdp::js_protocol::runtime::EvaluateParams;
use futures::StreamExt;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::BrowserError;
use crate::error::{cdp, deadline};
use crate::handle::BrowserHandle;

/// A page on its own browser context.
#[derive(Debug)]
pub struct Tab {
    page: Page,
    context: BrowserContextId,
    browser: Arc<BrowserHandle>,
    call_timeout: Duration,
    crashed: watch::Receiver<bool>,
    crashed_flag: Arc<AtomicBool>,
    pub(crate) tasks: std::sync::Mutex<Vec<JoinHandle<()>>>,
}

impl Tab {
    pub(crate) fn new(
        page: Page,
        context: BrowserContextId,
        browser: Arc<BrowserHandle>,
        call_timeout: Duration,
    ) -> Self {
        let (tx, rx) = watch::channel(false);
        let flag = Arc::new(AtomicBool::new(false));
        let watcher = {
            let page = page.clone();
            let flag = flag.clone();
            tokio::spawn(async move {
                let Ok(mut crashes) = page.event_listener::<EventTargetCrashed>().await else {
                    return;
                };
                if crashes.next().await.is_some() {
                    flag.store(true, Ordering::SeqCst);
                    let _ = tx.send(true);
                    tracing::warn!("renderer crashed");
                }
            })
        };
        Self {
            page,
            context,
            browser,
            call_timeout,
            crashed: rx,
            crashed_flag: flag,
            tasks: std::sync::Mutex::new(vec![watcher]),
        }
    }

    /// Returns the chromiumoxide page, for callers that need raw DevTools calls.
    pub fn page(&self) -> &Page {
        &self.page
    }

    /// Says whether the renderer of this page crashed.
    pub fn crashed(&self) -> bool {
        self.crashed_flag.load(Ordering::SeqCst) || !self.browser.is_alive()
    }

    /// Returns the deadline of one DevTools call.
    pub fn call_timeout(&self) -> Duration {
        self.call_timeout
    }

    /// Runs one DevTools command under the call deadline, failing fast on a crash.
    pub async fn call<C>(&self, cmd: C) -> Result<C::Response, BrowserError>
    where
        C: chromiumoxide::types::Command,
    {
        let method = cmd.identifier().to_string();
        self.guard(&method, self.call_timeout, async {
            self.page
                .execute(cmd)
                .await
                .map(|r| r.result)
                .map_err(|e| cdp(&method, e))
        })
        .await
    }

    /// Runs `fut` under `limit`, ending early with [`BrowserError::Crashed`]
    /// when the renderer or the connection dies.
    pub(crate) async fn guard<T>(
        &self,
        what: &str,
        limit: Duration,
        fut: impl std::future::Future<Output = Result<T, BrowserError>>,
    ) -> Result<T, BrowserError> {
        if self.crashed() {
            return Err(BrowserError::Crashed(format!("{what}: renderer crashed")));
        }
        let mut crashed = self.crashed.clone();
        let crash = async move {
            let _ = crashed.wait_for(|c| *c).await;
        };
        tokio::select! {
            r = deadline(what, limit, fut) => r,
            _ = crash => Err(BrowserError::Crashed(format!("{what}: renderer crashed"))),
        }
    }

    /// Evaluates `expression` and returns its JSON value (promises awaited).
    pub async fn evaluate(
        &self,
        expression: &str,
        limit: Duration,
    ) -> Result<serde_json::Value, BrowserError> {
        let params = EvaluateParams::builder()
            .expression(expression)
            .return_by_value(true)
            .await_promise(true)
            .build()
            .map_err(|e| BrowserError::Extraction(e.to_string()))?;
        let out = self
            .guard("Runtime.evaluate", limit, async {
                self.page
                    .execute(params)
                    .await
                    .map(|r| r.result)
                    .map_err(|e| cdp("Runtime.evaluate", e))
            })
            .await?;
        if let Some(ex) = out.exception_details {
            let text = ex
                .exception
                .as_ref()
                .and_then(|e| e.description.clone())
                .unwrap_or(ex.text);
            return Err(BrowserError::Extraction(format!("script failed: {text}")));
        }
        Ok(out.result.value.unwrap_or(serde_json::Value::Null))
    }

    /// Takes a PNG screenshot of the viewport.
    pub async fn screenshot_png(&self) -> Result<Vec<u8>, BrowserError> {
        let params = CaptureScreenshotParams::builder()
            .format(CaptureScreenshotFormat::Png)
            .build();
        let shot = self
            .guard(
                "Page.captureScreenshot",
                self.call_timeout.max(Duration::from_secs(15)),
                async {
                    self.page
                        .execute(params)
                        .await
                        .map(|r| r.result)
                        .map_err(|e| cdp("Page.captureScreenshot", e))
                },
            )
            .await?;
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD
            .decode(AsRef::<str>::as_ref(&shot.data))
            .map_err(|e| BrowserError::Extraction(format!("screenshot data: {e}")))
    }

    /// Crashes the renderer on purpose (tests and poison-page drills).
    pub async fn crash_renderer(&self) {
        // Page.crash never answers: the renderer is gone before it can.
        let _ = tokio::time::timeout(
            Duration::from_millis(500),
            self.page.execute(CrashParams::default()),
        )
        .await;
    }

    /// Disposes the browser context (and so the page).
    pub(crate) async fn close(self) {
        for task in self.tasks.lock().expect("tasks").drain(..) {
            task.abort();
        }
        if self.browser.is_alive() {
            self.browser.dispose_context(self.context.clone()).await;
        }
    }
}
