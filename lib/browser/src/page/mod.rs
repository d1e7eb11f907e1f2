//! [`ChromiumPage`]: the engine seam's [`Page`] on a pooled Chromium tab.
//! Snapshot, locate, act and settle live here (moved from the workflow
//! crate); navigation, extraction and screenshots are the tab's own.
//! Console messages and dialogs are collected from the moment the page is
//! opened; dialogs nobody handles are answered at once (dismissed by
//! default) so they never block the page.

mod act;
mod hit;
mod locate;
mod network;
mod pointer;
pub(crate) mod raw;
mod screenshot;
mod settle;
mod shadow;
mod shape;
mod snapshot;
mod state;
mod targets;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use chromiumoxide::cdp::browser_protocol::page::{
    EventJavascriptDialogOpening, HandleJavaScriptDialogParams,
};
use chromiumoxide::cdp::js_protocol::runtime::{EventConsoleApiCalled, EventExceptionThrown};
use futures::StreamExt;
use oxwright_engine::{
    Act, ActOptions, Acted, BrowserEngine, ConsoleMessage, DialogAction, DialogRecord, Element, ElementId,
    ElementState, EngineError, EngineErrorKind, GotoOptions, Locator, Navigated, OpenOptions, Page,
    RequestRecord, ScreenshotOptions, Snapshot, SnapshotOptions, TabInfo, Target, WaitCondition, WaitUntil,
    name_matches,
};
use serde_json::{Value, json};
use tokio::task::JoinHandle;

use crate::{BrowserError, BrowserPool, Lease, NavigateOptions, Tab, UrlPolicy};
use settle::Settle;
pub use snapshot::SnapshotSource;
use snapshot::Snapshotter;

/// Most console messages kept between two reads.
const CONSOLE_CAP: usize = 1_000;
/// Poll interval of waits.
const POLL: Duration = Duration::from_millis(50);

/// Maps a browser error onto the engine's kinds (the message is kept).
pub(crate) fn engine_error(err: BrowserError) -> EngineError {
    let message = err.to_string();
    let job_kind = err.kind();
    match err {
        BrowserError::Unavailable(_) => EngineError::new(EngineErrorKind::Unavailable, message),
        BrowserError::Misconfigured(_) => EngineError::new(EngineErrorKind::Misconfigured, message),
        BrowserError::Crashed(_) => EngineError::new(EngineErrorKind::Crashed, message),
        BrowserError::Timeout { .. } => EngineError::new(EngineErrorKind::Timeout, message),
        BrowserError::WaitFor { .. } => EngineError::new(EngineErrorKind::WaitForTimeout, message),
        BrowserError::Policy { url, source } => EngineError::policy(&url, &source),
        BrowserError::HttpStatus {
            status,
            url,
            retry_after_s,
        } => {
            let mut out = EngineError::new(EngineErrorKind::HttpStatus, message)
                .with_status(status)
                .with_url(url);
            out.retry_after_s = retry_after_s;
            out
        }
        BrowserError::NonHtml { content_type, url }
        | BrowserError::Download {
            content_type, url, ..
        } => EngineError::new(EngineErrorKind::NonHtml, message)
            .with_content_type(content_type)
            .with_url(url),
        BrowserError::Net { url, .. } => {
            // One reading of Chromium's net error names: the job kind's.
            let kind = match job_kind {
                oxwright_jobs::ErrorKind::Dns => EngineErrorKind::Dns,
                oxwright_jobs::ErrorKind::Timeout => EngineErrorKind::Timeout,
                oxwright_jobs::ErrorKind::InvalidInput => EngineErrorKind::InvalidInput,
                _ => EngineErrorKind::Navigation,
            };
            EngineError::new(kind, message).with_url(url)
        }
        BrowserError::Protocol { .. } => EngineError::new(EngineErrorKind::Protocol, message),
        BrowserError::Extraction(_) => EngineError::new(EngineErrorKind::Script, message),
    }
}

/// An action that cannot be done on the element as it is.
pub(crate) fn interactable(message: impl Into<String>) -> EngineError {
    EngineError::new(EngineErrorKind::NotInteractable, message)
}

/// Maps a browser error of an action onto the engine's kinds: a node that
/// is gone is stale, not a crash.
pub(crate) fn act_error(err: BrowserError) -> EngineError {
    match &err {
        BrowserError::Protocol { message, .. }
            if message.contains("No node")
                || message.contains("Could not find node")
                || message.contains("does not belong") =>
        {
            EngineError::new(
                EngineErrorKind::Stale,
                "the element left the page (the page changed); take a new snapshot",
            )
        }
        _ => engine_error(err),
    }
}

impl From<BrowserError> for EngineError {
    fn from(err: BrowserError) -> Self {
        engine_error(err)
    }
}

/// What a page drives: a pooled tab, or a popup a pooled tab opened
/// (closed with the job's context when the pooled tab goes back).
#[derive(Debug)]
enum Holder {
    Lease(Lease),
    Popup(Tab),
}

impl std::ops::Deref for Holder {
    type Target = Tab;

    fn deref(&self) -> &Tab {
        match self {
            Holder::Lease(lease) => lease,
            Holder::Popup(tab) => tab,
        }
    }
}

/// A pooled Chromium page behind the engine seam. Dropping it gives the
/// tab back to the pool.
#[derive(Debug)]
pub struct ChromiumPage {
    lease: Holder,
    policy: Arc<UrlPolicy>,
    /// Request shaping of this page (headers, cookies, emulation).
    shape: Arc<oxwright_jobs::RequestShape>,
    snapshots: tokio::sync::Mutex<Snapshotter>,
    console: Arc<Mutex<Vec<ConsoleMessage>>>,
    dialogs: Arc<Mutex<Vec<DialogRecord>>>,
    /// How dialogs are answered, and a prompt's text when accepted.
    dialog_answer: Arc<Mutex<(DialogAction, Option<String>)>>,
    listeners: Vec<JoinHandle<()>>,
    /// The requests of the current document, when the page records them
    /// ([`OpenOptions::record_requests`]).
    network: Option<network::Log>,
}

/// What `requests` and `response_body` answer on a page that does not record.
fn not_recording() -> EngineError {
    EngineError::new(
        EngineErrorKind::Unsupported,
        "this page does not record its requests (it was opened without record_requests)",
    )
}

impl Drop for ChromiumPage {
    fn drop(&mut self) {
        for l in &self.listeners {
            l.abort();
        }
        // A popup's page closes its tab (a pooled one goes back to the pool,
        // whose reset closes whatever popups are left).
        if let Holder::Popup(tab) = &self.lease
            && let Ok(rt) = tokio::runtime::Handle::try_current()
        {
            let page = tab.raw_page().clone();
            rt.spawn(async move {
                let _ = tokio::time::timeout(Duration::from_secs(5), page.close()).await;
            });
        }
    }
}

impl ChromiumPage {
    /// Wraps a lease: starts collecting console messages and answering dialogs.
    pub async fn new(lease: Lease, opts: &OpenOptions) -> Result<Self, EngineError> {
        Self::holding(Holder::Lease(lease), opts).await
    }

    async fn holding(lease: Holder, opts: &OpenOptions) -> Result<Self, EngineError> {
        let console = Arc::new(Mutex::new(Vec::new()));
        let dialogs = Arc::new(Mutex::new(Vec::new()));
        let page = lease.raw_page().clone();
        let listen_err = |e: chromiumoxide::error::CdpError| {
            EngineError::new(EngineErrorKind::Protocol, format!("event subscription: {e}"))
        };
        let mut calls = page
            .event_listener::<EventConsoleApiCalled>()
            .await
            .map_err(listen_err)?;
        let mut thrown = page
            .event_listener::<EventExceptionThrown>()
            .await
            .map_err(listen_err)?;
        let main_frame: &str = page.target_id().as_ref();
        let (network, network_task) = if opts.record_requests {
            // The recording buffers stay with the renderer after a reset.
            lease.taint();
            let (log, task) = network::record(&page, main_frame.to_string())
                .await
                .map_err(listen_err)?;
            (Some(log), Some(task))
        } else {
            (None, None)
        };
        let mut opening = page
            .event_listener::<EventJavascriptDialogOpening>()
            .await
            .map_err(listen_err)?;
        let sink = console.clone();
        let console_task = tokio::spawn(async move {
            loop {
                let msg = tokio::select! {
                    Some(ev) = calls.next() => {
                        let text = ev.args.iter().map(|a| match &a.value {
                            Some(Value::String(s)) => s.clone(),
                            Some(v) => v.to_string(),
                            None => a.description.clone().unwrap_or_default(),
                        }).collect::<Vec<_>>().join(" ");
                        let level = format!("{:?}", ev.r#type).to_ascii_lowercase();
                        ConsoleMessage { level, text, url: None, timestamp_ms: Some(*ev.timestamp.inner() as i64) }
                    }
                    Some(ev) = thrown.next() => {
                        let d = &ev.exception_details;
                        let text = d.exception.as_ref().and_then(|e| e.description.clone()).unwrap_or_else(|| d.text.clone());
                        ConsoleMessage {
                            level: "pageerror".into(),
                            text,
                            url: d.url.clone(),
                            timestamp_ms: Some(*ev.timestamp.inner() as i64),
                        }
                    }
                    else => break,
                };
                let mut buf = sink.lock().unwrap_or_else(|p| p.into_inner());
                if buf.len() < CONSOLE_CAP {
                    buf.push(msg);
                }
            }
        });
        let dialog_answer = Arc::new(Mutex::new((opts.dialogs, None::<String>)));
        let (answers, sink) = (dialog_answer.clone(), dialogs.clone());
        let dialog_task = tokio::spawn(async move {
            while let Some(ev) = opening.next().await {
                let (answer, text) = answers.lock().unwrap_or_else(|p| p.into_inner()).clone();
                let accept = answer == DialogAction::Accept;
                let mut params = HandleJavaScriptDialogParams::new(accept);
                if accept {
                    params.prompt_text = text.or_else(|| ev.default_prompt.clone());
                }
                let _ = tokio::time::timeout(Duration::from_secs(5), page.execute(params)).await;
                let kind = serde_json::to_value(&ev.r#type)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_else(|| "alert".into());
                sink.lock().unwrap_or_else(|p| p.into_inner()).push(DialogRecord {
                    kind,
                    message: ev.message.clone(),
                    action: answer,
                });
            }
        });
        if !opts.shape.is_empty() {
            shape::emulate(&lease, &opts.shape).await?;
        }
        Ok(Self {
            lease,
            policy: opts.policy.clone(),
            shape: opts.shape.clone(),
            snapshots: tokio::sync::Mutex::new(Snapshotter::default()),
            console,
            dialogs,
            dialog_answer,
            listeners: [Some(console_task), Some(dialog_task), network_task]
                .into_iter()
                .flatten()
                .collect(),
            network,
        })
    }

    /// A snapshot read from `source`: what the engine's `snapshot` does,
    /// with the source chosen (the tests hold the DOM reader to Chromium's
    /// own accessibility tree this way). Refs are shared with `snapshot`.
    pub async fn snapshot_from(
        &self,
        source: SnapshotSource,
        opts: &SnapshotOptions,
    ) -> Result<Snapshot, EngineError> {
        let mut snaps = self.snapshots.lock().await;
        Ok(snaps.capture(&self.lease, opts.max_chars, source).await?)
    }

    /// The lease underneath, for Chromium-only extras (pool stats, raw
    /// DevTools); `None` for a popup's page.
    pub fn lease(&self) -> Option<&Lease> {
        match &self.lease {
            Holder::Lease(lease) => Some(lease),
            Holder::Popup(_) => None,
        }
    }

    /// The action started at `started` is done: waits for what it set off
    /// (when armed) and says how long each part took.
    async fn settled(&self, started: Instant, settle: Option<Settle>, timeout: Duration) -> Acted {
        let action = started.elapsed();
        let settle_started = Instant::now();
        let navigated = match settle {
            Some(s) => s.wait(&self.lease, timeout).await.navigated,
            None => false,
        };
        Acted {
            action,
            settle: settle_started.elapsed(),
            navigated,
        }
    }

    async fn loader(&self) -> Result<Option<String>, EngineError> {
        let tree = raw::call(&self.lease, "Page.getFrameTree", json!({})).await?;
        Ok(tree["frameTree"]["frame"]["loaderId"].as_str().map(str::to_owned))
    }

    /// Runs a navigating script (history, reload) and waits for the page to settle.
    async fn run_and_settle(&self, script: &str, timeout: Duration) -> Result<(), EngineError> {
        let settle = Settle::arm(&self.lease).await?;
        match self.lease.evaluate(script, timeout).await {
            Ok(_) => {}
            // The script navigated before its evaluation could answer: that
            // is what it was for (a loaded machine shows this race).
            Err(e) if e.to_string().contains("Inspected target navigated or closed") => {}
            Err(e) => return Err(e.into()),
        }
        settle.wait(&self.lease, timeout).await;
        Ok(())
    }

    async fn eval_bool(&self, expression: &str) -> Result<bool, EngineError> {
        Ok(self.lease.evaluate(expression, self.lease.call_timeout()).await? == Value::Bool(true))
    }
}

#[async_trait]
impl Page for ChromiumPage {
    async fn goto(&self, url: &url::Url, opts: &GotoOptions) -> Result<Navigated, EngineError> {
        let nav = NavigateOptions {
            goto: opts.clone(),
            policy: self.policy.clone(),
            headers: shape::host_headers(url, &self.shape),
            proxy: self.shape.proxy.clone(),
        };
        shape::set_cookies(&self.lease, url, &self.shape).await?;
        Ok(self.lease.navigate(url, &nav).await?)
    }

    async fn url(&self) -> Result<String, EngineError> {
        let v = self
            .lease
            .evaluate("location.href", self.lease.call_timeout())
            .await?;
        Ok(v.as_str().unwrap_or_default().to_string())
    }

    async fn title(&self) -> Result<String, EngineError> {
        let v = self
            .lease
            .evaluate("document.title", self.lease.call_timeout())
            .await?;
        Ok(v.as_str().unwrap_or_default().to_string())
    }

    async fn location(&self) -> Result<(String, String), EngineError> {
        let v = self
            .lease
            .evaluate("[location.href, document.title]", self.lease.call_timeout())
            .await?;
        let part = |i: usize| v[i].as_str().unwrap_or_default().to_string();
        Ok((part(0), part(1)))
    }

    async fn snapshot(&self, opts: &SnapshotOptions) -> Result<Snapshot, EngineError> {
        let mut snaps = self.snapshots.lock().await;
        Ok(snaps
            .capture(&self.lease, opts.max_chars, SnapshotSource::Dom)
            .await?)
    }

    async fn locate(&self, locator: &Locator) -> Result<Vec<Element>, EngineError> {
        Ok(self
            .locate_backends(locator)
            .await?
            .into_iter()
            .map(|(b, role, name)| Element {
                id: ElementId(b.to_string()),
                role,
                name,
            })
            .collect())
    }

    async fn act(&self, target: &Target, act: &Act, opts: &ActOptions) -> Result<Acted, EngineError> {
        let backend = self.resolve(target).await?;
        let started = Instant::now();
        let settle = if opts.settle {
            Some(Settle::arm(&self.lease).await?)
        } else {
            None
        };
        let password = act::perform(&self.lease, backend, act, opts.timeout).await?;
        if matches!(act, Act::Fill { secret: true, .. }) || password {
            self.snapshots.lock().await.mask(backend);
        }
        Ok(self.settled(started, settle, opts.timeout).await)
    }

    async fn evaluate(&self, expression: &str, timeout: Duration) -> Result<Value, EngineError> {
        Ok(self.lease.evaluate(expression, timeout).await?)
    }

    async fn storage_state(&self) -> Result<oxwright_engine::StorageState, EngineError> {
        state::export(&self.lease).await
    }

    async fn restore_state(
        &self,
        saved: &oxwright_engine::StorageState,
        url: &url::Url,
        opts: &GotoOptions,
    ) -> Result<Navigated, EngineError> {
        // Another job must never start with this state, whatever happens
        // between here and the script's removal.
        self.lease.taint();
        let script = state::prepare(&self.lease, saved).await?;
        let opened = self.goto(url, opts).await;
        if let Some(id) = script {
            state::forget(&self.lease, &id).await;
        }
        opened
    }

    async fn requests(&self) -> Result<Vec<RequestRecord>, EngineError> {
        let Some(log) = &self.network else {
            return Err(not_recording());
        };
        // Events come before the answer to a later command: one round trip
        // puts every event sent so far into the recorder's queue, and a
        // moment lets the recorder take them in.
        let _ = raw::call(&self.lease, "Runtime.evaluate", json!({ "expression": "0" })).await;
        tokio::time::sleep(Duration::from_millis(25)).await;
        Ok(network::records(log))
    }

    async fn response_body(&self, id: &str) -> Result<Option<String>, EngineError> {
        if self.network.is_none() {
            return Err(not_recording());
        }
        let out = raw::call(&self.lease, "Network.getResponseBody", json!({ "requestId": id }))
            .await
            .map_err(|e| {
                EngineError::new(
                    EngineErrorKind::NotFound,
                    format!(
                        "Chromium kept no copy of the body of request {id} (none is kept for a failed or \
                         redirected request or a no-store response, and bodies are not always kept for \
                         requests this engine intercepts): {e}"
                    ),
                )
            })?;
        if out["base64Encoded"].as_bool() == Some(true) {
            return Ok(None);
        }
        Ok(Some(out["body"].as_str().unwrap_or_default().to_string()))
    }

    async fn drag(&self, from: &Target, to: &Target, opts: &ActOptions) -> Result<Acted, EngineError> {
        let source = self.resolve(from).await?;
        let dest = self.resolve(to).await?;
        let started = Instant::now();
        let settle = if opts.settle {
            Some(Settle::arm(&self.lease).await?)
        } else {
            None
        };
        pointer::drag(&self.lease, source, dest, opts.timeout).await?;
        Ok(self.settled(started, settle, opts.timeout).await)
    }

    async fn html(&self) -> Result<String, EngineError> {
        let v = self
            .lease
            .evaluate(
                "document.documentElement ? document.documentElement.outerHTML : ''",
                self.lease.call_timeout().max(Duration::from_secs(20)),
            )
            .await?;
        Ok(v.as_str().unwrap_or_default().to_string())
    }

    async fn screenshot(&self, opts: &ScreenshotOptions) -> Result<Vec<u8>, EngineError> {
        if !opts.mask_secrets {
            return self.capture(opts).await;
        }
        let masked = self.snapshots.lock().await.masked();
        let frames = self.cross_origin_frame_contexts().await;
        let covers = screenshot::cover(&self.lease, &masked, frames).await?;
        let shot = self.capture(opts).await;
        covers.remove(&self.lease).await;
        shot
    }

    async fn console(&self) -> Vec<ConsoleMessage> {
        std::mem::take(&mut *self.console.lock().unwrap_or_else(|p| p.into_inner()))
    }

    async fn memory(&self) -> Result<oxwright_engine::PageMemory, EngineError> {
        Ok(self.lease.memory().await?)
    }

    async fn expose_closed_shadow_roots(&self, key: &str) -> Result<usize, EngineError> {
        Ok(shadow::expose_closed(&self.lease, key).await?)
    }

    async fn crashed_out_of_memory(&self) -> bool {
        self.lease.crashed_out_of_memory().await
    }

    async fn renderer_killed_for_memory(&self) -> Option<u64> {
        self.lease.killed_for_memory().await
    }

    fn memory_limit(&self) -> Option<oxwright_engine::MemoryLimit> {
        Some(self.lease.memory_limit())
    }

    async fn dialogs(&self) -> Vec<DialogRecord> {
        std::mem::take(&mut *self.dialogs.lock().unwrap_or_else(|p| p.into_inner()))
    }

    async fn policy_refusals(&self) -> Vec<String> {
        self.lease.refused_since_navigation()
    }

    async fn navigation_warnings(&self) -> Vec<String> {
        self.lease.take_notes()
    }

    async fn wait_for(&self, condition: &WaitCondition, timeout: Duration) -> Result<(), EngineError> {
        let deadline = Instant::now() + timeout;
        if let WaitCondition::Time(d) = condition {
            tokio::time::sleep((*d).min(timeout)).await;
            return Ok(());
        }
        if let WaitCondition::LoadState(WaitUntil::Ready) = condition {
            self.wait_for(&WaitCondition::LoadState(WaitUntil::Domcontentloaded), timeout)
                .await?;
            self.lease
                .wait_ready(deadline.saturating_duration_since(Instant::now()))
                .await?;
            return Ok(());
        }
        if let WaitCondition::LoadState(WaitUntil::Networkidle) = condition {
            Settle::arm(&self.lease).await?.wait(&self.lease, timeout).await;
            return Ok(());
        }
        loop {
            let met = match condition {
                WaitCondition::Selector(s) => !self.locate_backends(&Locator::css(s)).await?.is_empty(),
                WaitCondition::Text(t) => !self.locate_backends(&Locator::text(t)).await?.is_empty(),
                WaitCondition::TextGone(t) => self.locate_backends(&Locator::text(t)).await?.is_empty(),
                WaitCondition::Url(u) => self.url().await?.contains(u.as_str()),
                WaitCondition::LoadState(WaitUntil::Domcontentloaded) => {
                    self.eval_bool("document.readyState !== 'loading'").await?
                }
                WaitCondition::LoadState(_) => self.eval_bool("document.readyState === 'complete'").await?,
                WaitCondition::Time(_) => true,
            };
            if met {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(EngineError::new(
                    EngineErrorKind::Timeout,
                    format!(
                        "timed out after {} ms waiting for {condition:?}",
                        timeout.as_millis()
                    ),
                ));
            }
            tokio::time::sleep(POLL).await;
        }
    }

    async fn back(&self, timeout: Duration) -> Result<(), EngineError> {
        self.run_and_settle("history.back()", timeout).await
    }

    async fn forward(&self, timeout: Duration) -> Result<(), EngineError> {
        self.run_and_settle("history.forward()", timeout).await
    }

    async fn reload(&self, timeout: Duration) -> Result<(), EngineError> {
        self.run_and_settle("location.reload()", timeout).await?;
        self.wait_for(&WaitCondition::LoadState(WaitUntil::Load), timeout)
            .await
    }

    async fn tabs(&self) -> Result<Vec<TabInfo>, EngineError> {
        let me = self.lease.raw_page().target_id().as_ref().to_string();
        let targets = self.lease.browser().targets().await?;
        Ok(targets
            .into_iter()
            .filter(|t| t.r#type == "page")
            .filter(|t| t.target_id.as_ref() == me || t.opener_id.as_ref().is_some_and(|o| o.as_ref() == me))
            .map(|t| TabInfo {
                current: t.target_id.as_ref() == me,
                id: t.target_id.as_ref().to_string(),
                url: t.url,
                title: t.title,
            })
            .collect())
    }

    async fn answer_dialogs(
        &self,
        action: DialogAction,
        prompt_text: Option<String>,
    ) -> Result<(), EngineError> {
        *self.dialog_answer.lock().unwrap_or_else(|p| p.into_inner()) = (action, prompt_text);
        Ok(())
    }

    async fn popup(&self, id: &str) -> Result<Box<dyn Page>, EngineError> {
        let opened = self.tabs().await?;
        if !opened.iter().any(|t| t.id == id && !t.current) {
            return Err(EngineError::new(
                EngineErrorKind::InvalidInput,
                format!("{id} is not a tab this page opened"),
            ));
        }
        let tab = self.lease.adopt_popup(id).await?;
        let mut opts = OpenOptions::new(self.policy.clone());
        opts.shape = self.shape.clone();
        let answer = self
            .dialog_answer
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        opts.dialogs = answer.0;
        let page = ChromiumPage::holding(Holder::Popup(tab), &opts).await?;
        *page.dialog_answer.lock().unwrap_or_else(|p| p.into_inner()) = answer;
        Ok(Box::new(page))
    }

    async fn inspect(&self, target: &Target) -> Result<ElementState, EngineError> {
        let backend = self.resolve(target).await?;
        act::inspect(&self.lease, backend).await
    }

    async fn table_rows(&self, target: &Target) -> Result<Value, EngineError> {
        let backend = self.resolve(target).await?;
        act::table_rows(&self.lease, backend).await
    }

    async fn bring_to_front(&self) -> Result<(), EngineError> {
        raw::call(&self.lease, "Page.bringToFront", json!({})).await?;
        Ok(())
    }

    async fn set_viewport(&self, width: u32, height: u32) -> Result<(), EngineError> {
        if !(100..=10_000).contains(&width) || !(100..=10_000).contains(&height) {
            return Err(EngineError::new(
                EngineErrorKind::InvalidInput,
                format!("viewport {width}x{height} is outside 100..=10000 pixels a side"),
            ));
        }
        // The override outlives the job: the page is closed, not reused.
        self.lease.taint();
        raw::call(
            &self.lease,
            "Emulation.setDeviceMetricsOverride",
            json!({ "width": width, "height": height, "deviceScaleFactor": 1, "mobile": false }),
        )
        .await?;
        Ok(())
    }

    async fn set_input_files(
        &self,
        target: &Target,
        paths: &[std::path::PathBuf],
    ) -> Result<(), EngineError> {
        let backend = self.resolve(target).await?;
        let object = raw::resolve(&self.lease, backend).await?;
        let is_file = raw::call_on(
            &self.lease,
            &object,
            "function() { return this instanceof HTMLInputElement && this.type === 'file'; }",
            vec![],
        )
        .await?;
        if is_file != Value::Bool(true) {
            return Err(EngineError::new(
                EngineErrorKind::NotInteractable,
                format!("{target} is not a file input (<input type=file>)"),
            ));
        }
        let files: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
        raw::call_node(
            &self.lease,
            "DOM.setFileInputFiles",
            backend,
            json!({ "files": files }),
        )
        .await?;
        Ok(())
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

#[async_trait]
impl BrowserEngine for BrowserPool {
    async fn open(&self, opts: &OpenOptions) -> Result<Box<dyn Page>, EngineError> {
        let lease = self.acquire(opts.headless).await?;
        Ok(Box::new(ChromiumPage::new(lease, opts).await?))
    }

    fn capacity(&self) -> usize {
        BrowserPool::capacity(self)
    }

    fn describe(&self) -> String {
        format!("chromium pool of {}", BrowserPool::capacity(self))
    }
}
