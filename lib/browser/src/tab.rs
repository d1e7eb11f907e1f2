//! A page in its own browser context: navigation with lifecycle waits,
//! content reads and screenshots, every call under a deadline; and the reset
//! that lets the pool hand the same context to the next job.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Duration;

use chromiumoxide::Page;
use chromiumoxide::cdp::browser_protocol::browser::BrowserContextId;
use chromiumoxide::cdp::browser_protocol::dom_storage::{ClearParams as ClearDomStorageParams, StorageId};
use chromiumoxide::cdp::browser_protocol::emulation::SetScriptExecutionDisabledParams;
use chromiumoxide::cdp::browser_protocol::inspector::EventTargetCrashed;
use chromiumoxide::cdp::browser_protocol::network::{ClearBrowserCacheParams, ClearBrowserCookiesParams};
use chromiumoxide::cdp::browser_protocol::page::{
    CaptureScreenshotFormat, CaptureScreenshotParams, CrashParams, CreateIsolatedWorldParams, NavigateParams,
    ResetNavigationHistoryParams, StopLoadingParams,
};
use chromiumoxide::cdp::browser_protocol::storage::ClearDataForOriginParams;
use chromiumoxide::cdp::browser_protocol::target::{EventAttachedToTarget, SetAutoAttachParams};
use chromiumoxide::cdp::js_protocol::heap_profiler::CollectGarbageParams;
use chromiumoxide::cdp::js_protocol::runtime::{EvaluateParams, GetHeapUsageParams};
use futures::StreamExt;
use oxwright_egress::{EgressProxy, Refusal};
use oxwright_policy::UrlPolicy;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::BrowserError;
use crate::error::{cdp, deadline};
use crate::handle::BrowserHandle;

mod reset;

/// How long [`Tab::unstick_navigation`] waits for the held navigation to
/// end once its load is stopped, then once the frame has a new document.
const STOP_WAIT: Duration = Duration::from_millis(500);
const UNSTICK_WAIT: Duration = Duration::from_secs(2);

/// A page on its own browser context.
///
/// The pool may hand the same context and page to several jobs in turn
/// (`PoolConfig::context_reuse`), resetting it in between; a tab that saw a
/// failed call, a crash, raw DevTools access ([`Tab::page`], [`Tab::call`])
/// or credentials in a URL is never reused.
#[derive(Debug)]
pub struct Tab {
    page: Page,
    /// The tab's own browser context; `None` in the browser's default
    /// context (`Isolation::Shared`).
    context: Option<BrowserContextId>,
    browser: Arc<BrowserHandle>,
    call_timeout: Duration,
    crashed: watch::Receiver<bool>,
    crashed_flag: Arc<AtomicBool>,
    watcher: JoinHandle<()>,
    /// Tasks of the current job (interception).
    pub(crate) tasks: std::sync::Mutex<Vec<JoinHandle<()>>>,
    /// The last `Page.navigate` sent: chromiumoxide answers it only once
    /// the navigated document's `load` fired (or after 30 s), and queues
    /// every later `Page.navigate` of the page behind it. See
    /// [`Tab::unstick_navigation`].
    pub(crate) nav_task: std::sync::Mutex<Option<JoinHandle<()>>>,
    /// Origins the page requested during the current job: whose storage a reset clears.
    pub(crate) origins: Arc<std::sync::Mutex<BTreeSet<String>>>,
    /// Set when a call failed: the page's state is unknown.
    failed: AtomicBool,
    /// Set when the caller had raw DevTools access or the state cannot be reset.
    tainted: AtomicBool,
    /// Jobs this context has served.
    pub(crate) jobs: AtomicU32,
    /// Whether the Fetch domain (request interception) is on for this page.
    pub(crate) fetch_enabled: AtomicBool,
    /// The egress proxy this page's context leaves through: its own in a
    /// context of its own, the browser's in the default context; `None`
    /// only for a remote browser's default context.
    pub(crate) egress: Option<Arc<EgressProxy>>,
    /// What the current job's interceptor records, and how much of it the
    /// navigation already reported.
    pub(crate) job_doc: std::sync::Mutex<Option<JobDoc>>,
    /// The frame-removing script registered for the page's new documents
    /// (see `frames.rs`), if any.
    pub(crate) frames_script:
        std::sync::Mutex<Option<chromiumoxide::cdp::browser_protocol::page::ScriptIdentifier>>,
    /// Whether [`Tab::prepare`] ran.
    pub(crate) prepared: AtomicBool,
    /// Set while [`Tab::navigate`] runs.
    pub(crate) navigating: AtomicBool,
    /// Set when a frame of another site rendered in a process of its own
    /// (site isolation) during this tab's life: its storage is partitioned
    /// under the page's site and the reset does not reach it, so the
    /// context is disposed rather than reused.
    other_site_frames: Arc<AtomicBool>,
    /// Watches for such frames from [`Tab::prepare`] on.
    frames_watch: std::sync::Mutex<Option<JoinHandle<()>>>,
    /// The page's link to its out-of-process frames, opened when first needed.
    frame_link: tokio::sync::Mutex<Option<Arc<crate::frame_link::FrameLink>>>,
}

/// The current job's interceptor record and what of it was reported.
#[derive(Debug)]
pub(crate) struct JobDoc {
    pub(crate) doc: Arc<std::sync::Mutex<crate::main_document::MainDocument>>,
    pub(crate) reported: usize,
    pub(crate) error_reported: bool,
}

/// How long before a renderer's crash a recorded cause (V8 out of heap,
/// a kill over the memory ceiling) counts as that crash's.
const CRASH_WINDOW: Duration = Duration::from_secs(5);
/// How long a crash waits for its cause to be read from Chromium's output.
const CAUSE_TRAIL: Duration = Duration::from_millis(1500);

impl Tab {
    /// Opens a page in a fresh browser context of `browser`, or in its
    /// default context when `shared`, and makes it a tab.
    pub(crate) async fn open(browser: &Arc<BrowserHandle>, shared: bool) -> Result<Self, BrowserError> {
        let opened = browser.open_page(shared).await?;
        Ok(Self::new(
            opened.page,
            opened.context,
            browser.clone(),
            opened.call_timeout,
            opened.egress,
        ))
    }

    pub(crate) fn new(
        page: Page,
        context: Option<BrowserContextId>,
        browser: Arc<BrowserHandle>,
        call_timeout: Duration,
        egress: Option<Arc<EgressProxy>>,
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
            watcher,
            tasks: std::sync::Mutex::new(Vec::new()),
            nav_task: std::sync::Mutex::new(None),
            origins: Arc::new(std::sync::Mutex::new(BTreeSet::new())),
            failed: AtomicBool::new(false),
            tainted: AtomicBool::new(false),
            jobs: AtomicU32::new(0),
            fetch_enabled: AtomicBool::new(false),
            egress,
            job_doc: std::sync::Mutex::new(None),
            frames_script: std::sync::Mutex::new(None),
            prepared: AtomicBool::new(false),
            navigating: AtomicBool::new(false),
            other_site_frames: Arc::new(AtomicBool::new(false)),
            frames_watch: std::sync::Mutex::new(None),
            frame_link: tokio::sync::Mutex::new(None),
        }
    }

    /// Once per tab, before its first navigation: registers the `ready`
    /// wait's work tracker, and lets workers the page starts run at once.
    ///
    /// The DevTools client attaches to every worker the page starts with
    /// Chromium told to hold it until the debugger says go, then says go
    /// and detaches in the same breath; a service worker often sees the
    /// detach first and stays held for ever, its registration pending.
    /// Nothing here needs a worker held (the egress proxy judges what it
    /// sends), so they are not held.
    pub(crate) async fn prepare(&self) -> Result<(), BrowserError> {
        if self.prepared.load(Ordering::SeqCst) {
            return Ok(());
        }
        self.track_work().await?;
        // chromiumoxide switches the Log and Performance domains on for
        // every page. Nothing reads them, and each costs work on every page:
        // an event per failed request and console line, and timing probes
        // around the renderer's script, style and layout work.
        futures::future::try_join(
            self.call_own(chromiumoxide::cdp::browser_protocol::log::DisableParams::default()),
            self.call_own(chromiumoxide::cdp::browser_protocol::performance::DisableParams::default()),
        )
        .await?;
        // Listening before the first frame can attach.
        let mut attached = self
            .page
            .event_listener::<EventAttachedToTarget>()
            .await
            .map_err(|e| cdp("Target.attachedToTarget", e))?;
        let flag = self.other_site_frames.clone();
        let watch = tokio::spawn(async move {
            while let Some(ev) = attached.next().await {
                if ev.target_info.r#type == "iframe" {
                    flag.store(true, Ordering::SeqCst);
                    break;
                }
            }
        });
        *self.frames_watch.lock().expect("frames watch") = Some(watch);
        let mut attach = SetAutoAttachParams::new(true, false);
        attach.flatten = Some(true);
        self.call_own(attach).await?;
        self.prepared.store(true, Ordering::SeqCst);
        Ok(())
    }

    /// The page's link to its out-of-process frames (opened on first use,
    /// again after its connection closed). The reset closes it, and with it
    /// every frame session and auto-attachment it made.
    pub(crate) async fn frame_link(&self) -> Result<Arc<crate::frame_link::FrameLink>, BrowserError> {
        let mut slot = self.frame_link.lock().await;
        if let Some(link) = slot.as_ref().filter(|l| !l.closed()) {
            return Ok(link.clone());
        }
        let target = self.page.target_id().as_ref().to_string();
        let link =
            crate::frame_link::FrameLink::open(&self.browser.ws_url, &target, self.call_timeout).await?;
        let link = Arc::new(link);
        *slot = Some(link.clone());
        Ok(link)
    }

    /// The out-of-process frames attached now, by slot, once those on
    /// their way arrived; none when the link cannot be opened.
    pub(crate) async fn frame_slots(
        &self,
    ) -> Vec<(crate::frame_link::Slot, crate::frame_link::FrameSession)> {
        match self.frame_link().await {
            Ok(link) => {
                link.settle(self.call_timeout).await;
                link.frames()
            }
            Err(_) => Vec::new(),
        }
    }

    /// A tab for the popup `id` this tab's page opened: same browser,
    /// context and egress proxy (so the job's policy holds for it too).
    pub(crate) async fn adopt_popup(&self, id: &str) -> Result<Tab, BrowserError> {
        let page = self.browser.page_of(id).await?;
        Ok(Tab::new(
            page,
            self.context.clone(),
            self.browser.clone(),
            self.call_timeout,
            self.egress.clone(),
        ))
    }

    /// Puts `policy` on the egress proxy for the job starting now and drops
    /// refusals left from before it.
    pub(crate) fn begin_egress(
        &self,
        policy: &Arc<UrlPolicy>,
        proxy: Option<&oxwright_jobs::ProxyUrl>,
    ) -> Result<(), String> {
        let upstream = match proxy {
            None => None,
            Some(proxy) => {
                // A shared context has one way out for every job in it.
                if self.context.is_none() || self.egress.is_none() {
                    return Err(format!(
                        "net::ERR_INVALID_URL: proxy {}: a job's proxy needs a browser context of its own; \
                         [browser] isolation = \"shared\" has one way out for every job",
                        proxy.redacted()
                    ));
                }
                let parsed = oxwright_egress::Upstream::parse(&proxy.0)
                    .map_err(|why| format!("net::ERR_INVALID_URL: {why}"))?;
                Some(Arc::new(parsed))
            }
        };
        if let Some(egress) = &self.egress {
            if !Arc::ptr_eq(&egress.policy(), policy) {
                egress.set_policy(policy.clone());
            }
            if egress.upstream() != upstream {
                egress.set_upstream(upstream);
            }
            egress.drain_refusals();
        }
        Ok(())
    }

    /// Returns what the URL policy refused since the last navigation
    /// returned (or since the last call): sub-requests, a later navigation
    /// of the main frame (a script's `location`, a meta refresh), and
    /// anything the page, its popups or its workers sent to the egress
    /// proxy. Read it once the page's content is taken, so a fetch reports
    /// what the page tried after its load event too.
    pub fn refused_since_navigation(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(job) = self.job_doc.lock().expect("job doc").as_mut() {
            let doc = job.doc.lock().expect("doc");
            out.extend(doc.refused.iter().skip(job.reported).cloned());
            job.reported = doc.refused.len();
            if let Some(BrowserError::Policy { url, .. }) = &doc.error
                && !job.error_reported
            {
                job.error_reported = true;
                out.push(url.clone());
            }
        }
        out.extend(self.egress_refusals().into_iter().map(|r| r.target));
        out
    }

    /// Takes the warnings of the current job's navigation since the last
    /// call: a `ready` wait cut short, a later navigation of the page that
    /// failed or was refused (the document it had was kept).
    pub fn take_notes(&self) -> Vec<String> {
        self.job_doc
            .lock()
            .expect("job doc")
            .as_ref()
            .map(|job| std::mem::take(&mut job.doc.lock().expect("doc").notes))
            .unwrap_or_default()
    }

    /// Takes the requests the egress proxy refused since the navigation
    /// began (or since the last call): anything the page, its popups or
    /// its workers tried to send past the URL policy.
    pub fn egress_refusals(&self) -> Vec<Refusal> {
        self.egress
            .as_ref()
            .map(|e| e.drain_refusals())
            .unwrap_or_default()
    }

    /// Returns the chromiumoxide page, for callers that need raw DevTools
    /// calls. What such calls change cannot be reset, so the pool disposes
    /// this tab's context after the job instead of reusing it.
    pub fn page(&self) -> &Page {
        self.taint();
        &self.page
    }

    /// The page, for this crate's own calls (which the reset undoes).
    pub(crate) fn raw_page(&self) -> &Page {
        &self.page
    }

    /// Marks the tab as not reusable.
    #[track_caller]
    pub(crate) fn taint(&self) {
        if !self.tainted.swap(true, Ordering::SeqCst) {
            tracing::debug!(at = %std::panic::Location::caller(), "tab tainted: the context will not be reused");
        }
    }

    /// Passes `result` through, marking the tab as not reusable on an error.
    pub(crate) fn note<T>(&self, result: Result<T, BrowserError>) -> Result<T, BrowserError> {
        if let Err(err) = &result {
            tracing::debug!(error = %err, "a call failed: the context will not be reused");
            self.failed.store(true, Ordering::SeqCst);
        }
        result
    }

    /// Says whether the pool may reset this tab and give it to another job.
    pub(crate) fn reusable(&self) -> bool {
        self.not_reusable_because().is_none()
    }

    /// Why the pool may not give this tab to another job, if it may not.
    pub(crate) fn not_reusable_because(&self) -> Option<&'static str> {
        if self.crashed() {
            Some("its renderer crashed")
        } else if self.failed.load(Ordering::SeqCst) {
            Some("a call on it failed")
        } else if self.tainted.load(Ordering::SeqCst) {
            Some("it was changed in a way no reset undoes")
        } else if self.other_site_frames.load(Ordering::SeqCst) {
            Some("a frame of another site stored data the reset cannot reach")
        } else {
            None
        }
    }

    /// Returns the browser this tab lives in.
    pub(crate) fn browser(&self) -> &Arc<BrowserHandle> {
        &self.browser
    }

    /// Says whether the renderer of this page crashed.
    pub fn crashed(&self) -> bool {
        self.crashed_flag.load(Ordering::SeqCst) || !self.browser.is_alive()
    }

    /// Returns the deadline of one DevTools call.
    pub fn call_timeout(&self) -> Duration {
        self.call_timeout
    }

    /// Says whether this page's renderer died of V8 running out of heap:
    /// after a crash, a renderer of the browser reported it within the last
    /// few seconds.
    pub async fn crashed_out_of_memory(&self) -> bool {
        self.after_crash(|b| b.oom_within(CRASH_WINDOW).then_some(()))
            .await
            .is_some()
    }

    /// The size (MiB) of this page's renderer when the pool killed it for
    /// its memory: after a crash, a renderer of the browser was killed over
    /// the ceiling within the last few seconds. The kill is noted before it
    /// is made, so nothing is waited for.
    pub async fn killed_for_memory(&self) -> Option<u64> {
        if !self.crashed() {
            return None;
        }
        self.browser.renderer_killed_within(CRASH_WINDOW)
    }

    /// After this page's renderer crashed, what `why` finds of the cause
    /// on its browser, asked for up to [`CAUSE_TRAIL`] (a cause read from
    /// Chromium's output trails the crash's event, by more on a loaded
    /// machine); `None` when the renderer did not crash.
    async fn after_crash<T>(&self, why: impl Fn(&BrowserHandle) -> Option<T>) -> Option<T> {
        if !self.crashed() {
            return None;
        }
        let until = std::time::Instant::now() + CAUSE_TRAIL;
        loop {
            if let Some(found) = why(&self.browser) {
                return Some(found);
            }
            if std::time::Instant::now() >= until {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(30)).await;
        }
    }

    /// What one job's page may use (the pool's settings).
    pub fn memory_limit(&self) -> oxwright_engine::MemoryLimit {
        self.browser.memory_limit
    }

    /// The page's JavaScript and DOM heap in use and its DOM nodes. Both
    /// are answered by the renderer even while a script keeps it busy. A
    /// page found over [`Tab::memory_limit`] is not reused.
    ///
    /// While a navigation waits for its document's response, DevTools
    /// holds commands to the page until the new document commits: the
    /// network is slow, not the renderer, and nothing is read.
    pub async fn memory(&self) -> Result<oxwright_engine::PageMemory, BrowserError> {
        use chromiumoxide::cdp::browser_protocol::memory::GetDomCountersParams;
        if self.awaiting_response() {
            return Ok(oxwright_engine::PageMemory::default());
        }
        let heap = self.call_unnoted(GetHeapUsageParams::default()).await?;
        let dom = self.call_unnoted(GetDomCountersParams::default()).await?;
        let heap_bytes = heap.used_size + heap.embedder_heap_used_size + heap.backing_storage_size;
        let memory = oxwright_engine::PageMemory {
            heap_bytes: heap_bytes.max(0.0) as u64,
            dom_nodes: dom.nodes.max(0) as u64,
        };
        if self.memory_limit().exceeded_by(&memory).is_some() {
            self.taint();
        }
        Ok(memory)
    }

    /// Whether a navigation is under way with no answer to its document
    /// yet (no status, no error, nothing taken).
    fn awaiting_response(&self) -> bool {
        if !self.navigating.load(Ordering::Relaxed) {
            return false;
        }
        let job = self.job_doc.lock().expect("job doc");
        job.as_ref().is_some_and(|job| {
            let doc = job.doc.lock().expect("doc");
            doc.status.is_none() && doc.error.is_none() && !doc.taken()
        })
    }

    /// Runs one DevTools command under the call deadline, failing fast on a
    /// crash. Like [`Tab::page`], it keeps the context from being reused.
    pub async fn call<C>(&self, cmd: C) -> Result<C::Response, BrowserError>
    where
        C: chromiumoxide::types::Command,
    {
        self.taint();
        self.call_own(cmd).await
    }

    /// [`Tab::call`] for this crate's own commands, which the reset undoes.
    pub(crate) async fn call_own<C>(&self, cmd: C) -> Result<C::Response, BrowserError>
    where
        C: chromiumoxide::types::Command,
    {
        let result = self.call_unnoted(cmd).await;
        self.note(result)
    }

    /// Runs a command whose error the caller judges (not marking the tab failed).
    pub(crate) async fn call_unnoted<C>(&self, cmd: C) -> Result<C::Response, BrowserError>
    where
        C: chromiumoxide::types::Command,
    {
        let method = cmd.identifier().to_string();
        self.guard_unnoted(&method, self.call_timeout, async {
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
        let result = self.guard_unnoted(what, limit, fut).await;
        self.note(result)
    }

    pub(crate) async fn guard_unnoted<T>(
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

    /// Evaluates `expression` for this crate's own reading of the page;
    /// a failure (the page navigating away meanwhile) is `None` and does
    /// not keep the context from being reused.
    pub(crate) async fn evaluate_quiet(&self, expression: &str) -> Option<serde_json::Value> {
        let params = EvaluateParams::builder()
            .expression(expression)
            .return_by_value(true)
            .build()
            .ok()?;
        let out = self
            .guard_unnoted("Runtime.evaluate", self.call_timeout, async {
                self.page
                    .execute(params)
                    .await
                    .map(|r| r.result)
                    .map_err(|e| cdp("Runtime.evaluate", e))
            })
            .await
            .ok()?;
        if out.exception_details.is_some() {
            return None;
        }
        out.result.value
    }

    /// Lets the page run the tasks queued before now and draw its next
    /// frame: an animation frame (work a handler deferred to it runs
    /// there), then a zero-delay timer, awaited; a page that draws no frame
    /// (hidden) goes on after 50 ms. Bounded by `limit`; a failure (the page
    /// navigating away meanwhile) is no error and does not keep the context
    /// from reuse.
    pub(crate) async fn run_queued_tasks(&self, limit: Duration) {
        let Ok(params) = EvaluateParams::builder()
            .expression(
                "new Promise(r => { let done = false; const go = () => { if (!done) { done = true; setTimeout(r, 0); } }; \
                 requestAnimationFrame(go); setTimeout(go, 50); })",
            )
            .await_promise(true)
            .build()
        else {
            return;
        };
        let _ = self
            .guard_unnoted("Runtime.evaluate", limit, async {
                self.page
                    .execute(params)
                    .await
                    .map(|_| ())
                    .map_err(|e| cdp("Runtime.evaluate", e))
            })
            .await;
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
            return self.note(Err(BrowserError::Extraction(format!("script failed: {text}"))));
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
}

impl Drop for Tab {
    fn drop(&mut self) {
        self.stop_job_tasks();
        self.watcher.abort();
        if let Some(watch) = self.frames_watch.lock().expect("frames watch").take() {
            watch.abort();
        }
    }
}
