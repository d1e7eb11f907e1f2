//! Navigation driven by events: chromiumoxide holds a `Page.navigate`
//! answer until its own idea of "loaded", so the command is sent in the
//! background and completion is read from lifecycle, frame and network
//! events, matched to the committed loader.

use std::collections::HashSet;
use std::future::Future;
use std::ops::ControlFlow;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chromiumoxide::cdp::browser_protocol::network::{EventLoadingFailed, ResourceType};
use chromiumoxide::cdp::browser_protocol::page::{
    EventFrameNavigated, EventLifecycleEvent, NavigateParams, NavigateReturns,
};
use chromiumoxide::listeners::EventStream;
use futures::StreamExt;
use oxwright_jobs::WaitUntil;
use tokio::sync::oneshot;

use crate::error::cdp;
use crate::intercept::Interceptor;
use crate::main_document::MainDocument;
use crate::ready::{Readiness, SOFT};
use crate::tab::Tab;
use crate::{BrowserError, NavigateOptions, Navigation};

/// Documents the `ready` wait follows when the page keeps navigating itself.
const READY_ROUNDS: usize = 3;
/// How often a document with no text yet is looked at again after the
/// `ready` wait's soft deadline (it is read once it shows text, or fails
/// at the navigation's deadline).
const TEXTLESS_RECHECK: Duration = Duration::from_millis(250);

impl Tab {
    /// Navigates to `url` and waits for the requested state, enforcing the
    /// URL policy and resource blocking on every request the page makes.
    pub async fn navigate(&self, url: &url::Url, opts: &NavigateOptions) -> Result<Navigation, BrowserError> {
        if !url.username().is_empty() || url.password().is_some() {
            // The network stack caches credentials per context; no reset clears them.
            self.taint();
        }
        self.navigating.store(true, std::sync::atomic::Ordering::Relaxed);
        let _done = Navigating(&self.navigating);
        let result = self.navigate_inner(url, opts).await;
        self.note(result)
    }

    /// The navigation's stages: admit the URL, listen, intercept and send
    /// the command, watch the events until the awaited state (or salvage
    /// what a failed wait left), then the `ready` and `wait_for` waits and
    /// the assembled result.
    async fn navigate_inner(
        &self,
        url: &url::Url,
        opts: &NavigateOptions,
    ) -> Result<Navigation, BrowserError> {
        let started = Instant::now();
        self.admit(url, opts).await?;
        let page = self.raw_page().clone();
        let main_frame = page.target_id().as_ref().to_string();
        let mut events = Events::listen(&page).await?;
        let doc = self.intercept(&main_frame, opts).await?;
        let answer = self.send_navigate(&page, url);
        let mut watch = Watch::new(url, &main_frame, opts, &doc);
        let mut hints = Hints::default();
        let what = format!("{} of {url}", watch.event_name);
        let watched = self.watch_events(&mut events, answer, &mut watch, &mut hints, opts);
        if let Err(err) = self.guard(&what, opts.goto.timeout, watched).await {
            return self.salvage(url, &doc, err, started);
        }
        let remaining = opts.goto.timeout.saturating_sub(started.elapsed());
        if opts.goto.wait_until == WaitUntil::Ready {
            let committed = watch.committed.take();
            self.settle_ready(&main_frame, committed, &mut events.lifecycle, remaining, &doc)
                .await?;
        }
        if let Some(selector) = &opts.goto.wait_for {
            let remaining = opts.goto.timeout.saturating_sub(started.elapsed());
            self.wait_for_selector(selector, remaining, opts.goto.timeout, &watch)
                .await?;
        }
        if let Some(err) = watch.refused_later() {
            // A later navigation of the main frame was refused before the page was read.
            return Err(err);
        }
        // The document's body failed while the waits above ran.
        while let Some(Some(ev)) = futures::FutureExt::now_or_never(events.failed.next()) {
            if let Some(err) = main_document_failed(&ev, &doc, url) {
                return Err(err);
            }
        }
        self.assemble(url, opts, &doc, hints).await
    }

    /// Checks `url` against the policy, points the egress at this job's
    /// policy and proxy, and readies the tab: an earlier navigation still
    /// waiting for its `load` would hold this one back, so what it takes to
    /// end that is over before this one listens.
    async fn admit(&self, url: &url::Url, opts: &NavigateOptions) -> Result<(), BrowserError> {
        opts.policy
            .check(url)
            .await
            .map_err(|source| BrowserError::Policy {
                url: url.to_string(),
                source,
            })?;
        self.begin_egress(&opts.policy, opts.proxy.as_ref())
            .map_err(|message| BrowserError::Net {
                url: url.to_string(),
                net_error: message,
            })?;
        self.unstick_navigation().await;
        self.skip_frames(opts.goto.skip_frames).await?;
        self.prepare().await
    }

    /// Starts this navigation's interceptor and returns the main document
    /// it fills in. The earlier navigations' interceptors stop once this
    /// one answers (both would answer the same requests, each by its own
    /// document).
    async fn intercept(&self, main_frame: &str, opts: &NavigateOptions) -> Result<SharedDoc, BrowserError> {
        let interceptor = Interceptor::start(self, main_frame.to_string(), opts).await?;
        let doc = interceptor.document();
        *self.job_doc.lock().expect("job doc") = Some(crate::tab::JobDoc {
            doc: doc.clone(),
            reported: 0,
            error_reported: false,
        });
        let earlier = std::mem::replace(
            &mut *self.tasks.lock().expect("tasks"),
            vec![interceptor.into_task()],
        );
        for task in earlier {
            task.abort();
        }
        Ok(doc)
    }

    /// Sends `Page.navigate` in the background (chromiumoxide would hold
    /// its answer until its own idea of "loaded") and returns where the
    /// answer arrives.
    fn send_navigate(&self, page: &chromiumoxide::Page, url: &url::Url) -> oneshot::Receiver<NavigateAnswer> {
        let (nav_tx, nav_rx) = oneshot::channel();
        let sender = page.clone();
        let target = url.to_string();
        *self.nav_task.lock().expect("nav task") = Some(tokio::spawn(async move {
            let _ = nav_tx.send(sender.execute(NavigateParams::new(target)).await);
        }));
        nav_rx
    }

    /// Follows the navigation's events until the awaited state of the
    /// committed document, or an error that no wait can mend. When `load`
    /// (or network idle) is awaited, the document's resource hints are
    /// read as soon as it reached `DOMContentLoaded` (its head is parsed by
    /// then), while the sub-resources still load.
    async fn watch_events<'t>(
        &'t self,
        events: &mut Events,
        mut answer: oneshot::Receiver<NavigateAnswer>,
        w: &mut Watch<'_>,
        hints: &mut Hints<'t>,
        opts: &'t NavigateOptions,
    ) -> Result<(), BrowserError> {
        let early_hints = matches!(opts.goto.wait_until, WaitUntil::Load | WaitUntil::Networkidle);
        loop {
            let unparsed = tokio::time::sleep_until(
                w.parse_deadline
                    .unwrap_or_else(|| tokio::time::Instant::now() + opts.goto.timeout),
            );
            let flow = tokio::select! {
                _ = unparsed, if w.ready && w.parse_deadline.is_some() => self.unparsed(w).await,
                res = &mut answer, if !w.nav_done => w.on_answer(res),
                Some(ev) = events.navigated.next() => w.on_frame_navigated(&ev),
                Some(ev) = events.lifecycle.next() => w.on_lifecycle(&ev),
                Some(ev) = events.failed.next() => w.on_loading_failed(&ev),
                read = async { hints.pending.as_mut().expect("hints pending").await }, if hints.pending.is_some() => {
                    hints.read = Some(read);
                    hints.pending = None;
                    ControlFlow::Continue(())
                }
                else => ControlFlow::Break(Err(BrowserError::Crashed("event streams ended".into()))),
            };
            if let ControlFlow::Break(result) = flow {
                return result;
            }
            if w.committed_reached(&w.dom_ready) {
                // From here on, a failed navigation of the page keeps this document.
                w.doc.lock().expect("doc").rendered = true;
                if early_hints && hints.pending.is_none() && hints.read.is_none() {
                    hints.pending = Some(Box::pin(self.refused_hints(opts)));
                }
            }
            if w.committed_reached(&w.seen) {
                return Ok(());
            }
        }
    }

    /// The `ready` wait's soft deadline passed with the document still
    /// parsing: nothing to read yet (the parser waits on a slow head
    /// script) keeps the wait going while the page shows no text; else the
    /// document is read as it stands.
    async fn unparsed(&self, w: &mut Watch<'_>) -> Flow {
        let shown = self
            .evaluate_quiet("(document.body && document.body.innerText || '').trim().length")
            .await
            .and_then(|v| v.as_u64());
        if shown == Some(0) {
            w.parse_deadline = Some(tokio::time::Instant::now() + TEXTLESS_RECHECK);
            return ControlFlow::Continue(());
        }
        w.doc.lock().expect("doc").notes.push(format!(
            "the document was still loading {} s after it arrived (no DOMContentLoaded); it was read as it stood",
            SOFT.as_secs()
        ));
        ControlFlow::Break(Ok(()))
    }

    /// What a failed wait leaves: a PDF taken whole (its rendering was
    /// aborted on purpose) or a 304 is the result; otherwise the refusal
    /// recorded by the interceptor explains a timeout or error page best,
    /// then one by the egress proxy of the document itself.
    fn salvage(
        &self,
        url: &url::Url,
        doc: &SharedDoc,
        err: BrowserError,
        started: Instant,
    ) -> Result<Navigation, BrowserError> {
        let mut d = doc.lock().expect("doc");
        if let Some(bytes) = d.document.take() {
            let mut nav = finish(url, d.clone());
            nav.document = Some(bytes);
            return Ok(nav);
        }
        if d.not_modified {
            return Ok(finish(url, d.clone()));
        }
        let recorded = d.error.clone();
        let redirects = d.redirects.clone();
        drop(d);
        let err = match err {
            BrowserError::Timeout { what, ms } => {
                let slow = self.server_progress(url, &redirects, started);
                BrowserError::Timeout {
                    what: slow.map_or_else(|| what.clone(), |slow| format!("{what}: {slow}")),
                    ms,
                }
            }
            err => err,
        };
        Err(recorded
            .or_else(|| self.egress_refusal_of(url, &redirects))
            .unwrap_or(err))
    }

    /// What the server of the navigation's document (its last redirect's)
    /// had sent when the navigation ran out of time, if it was still
    /// sending: a slow host is named as one, not the page.
    fn server_progress(&self, url: &url::Url, redirects: &[String], since: Instant) -> Option<String> {
        let egress = self.egress.as_ref()?;
        let last = redirects
            .last()
            .and_then(|r| url::Url::parse(r).ok())
            .unwrap_or_else(|| url.clone());
        let seen = egress.progress(&last, since)?;
        if seen.ended {
            return None;
        }
        let secs = seen.elapsed.as_secs_f64();
        Some(match seen.head_bytes {
            _ if seen.tunnel => format!(
                "the server had sent {} bytes through its TLS connection in {secs:.1} s, and the page was \
                 not yet whole",
                seen.received
            ),
            None => format!(
                "the server had sent {} bytes of its response head in {secs:.1} s, and the head was not \
                 yet whole",
                seen.received
            ),
            Some(head) => format!(
                "the server had sent its response head and {} bytes of its body in {secs:.1} s, and the \
                 body was not yet whole",
                seen.received.saturating_sub(head)
            ),
        })
    }

    /// Waits until `selector` matches, within `remaining`; a timeout is
    /// `WaitFor` with the navigation's whole deadline.
    async fn wait_for_selector(
        &self,
        selector: &str,
        remaining: Duration,
        limit: Duration,
        w: &Watch<'_>,
    ) -> Result<(), BrowserError> {
        let script = format!(
            "new Promise(resolve => {{ const sel = {sel}; const found = () => document.querySelector(sel) !== null; \
             if (found()) return resolve(true); const o = new MutationObserver(() => {{ if (found()) {{ o.disconnect(); resolve(true); }} }}); \
             o.observe(document, {{subtree: true, childList: true, attributes: true}}); }})",
            sel = serde_json::to_string(selector).expect("string serialises")
        );
        match self.evaluate(&script, remaining).await {
            Ok(_) => Ok(()),
            // The main frame was sent somewhere the policy refused while waiting.
            Err(_) if w.refused_later().is_some() => Err(w.refused_later().expect("recorded refusal")),
            Err(BrowserError::Timeout { .. }) => Err(BrowserError::WaitFor {
                selector: selector.to_string(),
                ms: limit.as_millis() as u64,
            }),
            Err(err) => Err(err),
        }
    }

    /// The navigation's result: the main document as the interceptor saw
    /// it, with what the egress proxy and the page's resource hints were
    /// refused.
    async fn assemble<'t>(
        &'t self,
        url: &url::Url,
        opts: &'t NavigateOptions,
        doc: &SharedDoc,
        hints: Hints<'t>,
    ) -> Result<Navigation, BrowserError> {
        let doc = doc.lock().expect("doc").clone();
        if let Some(job) = self.job_doc.lock().expect("job doc").as_mut() {
            job.reported = doc.refused.len();
        }
        if let Some(err) = self.main_document_refused(url, &doc) {
            return Err(err);
        }
        let mut nav = finish(url, doc);
        nav.refused
            .extend(self.egress_refusals().into_iter().map(|r| r.target));
        let hints = match (hints.read, hints.pending) {
            (Some(read), _) => read,
            (None, Some(pending)) => pending.await,
            (None, None) => self.refused_hints(opts).await,
        };
        for hint in hints {
            if !nav.refused.contains(&hint) {
                nav.refused.push(hint);
            }
        }
        Ok(nav)
    }

    /// The `ready` wait after `DOMContentLoaded` of the navigated document
    /// (see [`crate::ready`]). When the page navigates itself meanwhile and
    /// the new document commits, the wait starts again on that document
    /// once it reaches `DOMContentLoaded` (at most [`READY_ROUNDS`] times);
    /// a navigation that fails keeps the document (see `intercept`), so
    /// the wait goes on there.
    async fn settle_ready(
        &self,
        main_frame: &str,
        committed: Option<String>,
        lifecycle: &mut (impl futures::Stream<Item = std::sync::Arc<EventLifecycleEvent>> + Unpin),
        limit: Duration,
        doc: &SharedDoc,
    ) -> Result<(), BrowserError> {
        let started = Instant::now();
        let mut current = committed;
        for _ in 0..READY_ROUNDS {
            let remaining = limit.saturating_sub(started.elapsed());
            let readiness = self.wait_ready(remaining).await?;
            if readiness != Readiness::Gone {
                doc.lock().expect("doc").notes.extend(readiness.notes());
                return Ok(());
            }
            // The document went away: wait for the next one's DOMContentLoaded.
            let remaining = limit.saturating_sub(started.elapsed());
            let next = self
                .guard("DOMContentLoaded of the page's next document", remaining, async {
                    while let Some(ev) = lifecycle.next().await {
                        let loader = ev.loader_id.as_ref();
                        if ev.frame_id.as_ref() == main_frame
                            && ev.name == "DOMContentLoaded"
                            && current.as_deref() != Some(loader)
                        {
                            return Ok(loader.to_string());
                        }
                    }
                    Err(BrowserError::Crashed("event streams ended".into()))
                })
                .await?;
            current = Some(next);
        }
        Ok(())
    }

    /// Returns the speculative hints of the page (`preconnect`,
    /// `dns-prefetch`, `prefetch`, `prerender`, preloads, speculation
    /// rules) whose targets the policy refuses by themselves (a private
    /// literal address, a loopback name). Speculative loads are off and
    /// the rest goes through the egress proxy, so these make no request;
    /// they are reported because a page that names such a target was
    /// trying to reach it.
    async fn refused_hints(&self, opts: &NavigateOptions) -> Vec<String> {
        const HINTS: &str = r#"(() => {
            const out = [];
            for (const l of document.querySelectorAll('link[rel][href]')) {
                if (/(^|\s)(preconnect|dns-prefetch|prefetch|prerender|preload|modulepreload)(\s|$)/i.test(l.rel)) out.push(l.href);
            }
            for (const s of document.querySelectorAll('script[type=speculationrules]')) {
                try {
                    const j = JSON.parse(s.textContent);
                    for (const k of ['prefetch', 'prerender'])
                        for (const rule of (j[k] || []))
                            for (const u of (rule.urls || [])) out.push(new URL(u, document.baseURI).href);
                } catch (e) {}
            }
            return out.slice(0, 100);
        })()"#;
        let Some(serde_json::Value::Array(hrefs)) = self.evaluate_quiet(HINTS).await else {
            return Vec::new();
        };
        hrefs
            .iter()
            .filter_map(|h| h.as_str())
            .filter(|h| {
                url::Url::parse(h).is_ok_and(|u| {
                    matches!(u.scheme(), "http" | "https")
                        && matches!(
                            opts.policy.check_static(&u),
                            Err(oxwright_policy::PolicyError::PrivateAddress { .. })
                        )
                })
            })
            .map(str::to_string)
            .collect()
    }

    /// The proxy answers a refused document with a 403 (plain HTTP) or a
    /// failed tunnel (TLS): when that document is the one navigated to,
    /// the refusal is the navigation's error.
    fn main_document_refused(&self, url: &url::Url, doc: &MainDocument) -> Option<BrowserError> {
        if doc.status != Some(403) {
            return None;
        }
        self.egress_refusal_of(url, &doc.redirects)
    }

    /// Returns the egress refusal of `url` or one of its redirects, if any.
    fn egress_refusal_of(&self, url: &url::Url, redirects: &[String]) -> Option<BrowserError> {
        let egress = self.egress.as_ref()?;
        let candidates: Vec<String> = std::iter::once(url.to_string())
            .chain(redirects.iter().cloned())
            .collect();
        let refusals = egress.refusals();
        let found = refusals.iter().find(|r| {
            candidates.iter().any(|c| {
                let Ok(u) = url::Url::parse(c) else { return false };
                let authority = format!(
                    "{}:{}",
                    u.host_str().unwrap_or_default(),
                    u.port_or_known_default().unwrap_or(0)
                );
                r.target == *c || r.target == authority
            })
        });
        found.map(|r| BrowserError::Policy {
            url: r.target.clone(),
            source: r.error.clone(),
        })
    }
}

/// Clears a tab's `navigating` flag when its navigation ends, however it ends.
struct Navigating<'a>(&'a std::sync::atomic::AtomicBool);

impl Drop for Navigating<'_> {
    fn drop(&mut self) {
        self.0.store(false, std::sync::atomic::Ordering::Relaxed);
    }
}

/// The main document as the interceptor fills it in.
type SharedDoc = Arc<Mutex<MainDocument>>;

/// `Page.navigate`'s answer.
type NavigateAnswer = chromiumoxide::Result<chromiumoxide::types::CommandResponse<NavigateReturns>>;

/// Whether the event loop goes on, or ends with the wait's outcome.
type Flow = ControlFlow<Result<(), BrowserError>>;

/// The event streams a navigation follows.
struct Events {
    lifecycle: EventStream<EventLifecycleEvent>,
    navigated: EventStream<EventFrameNavigated>,
    failed: EventStream<EventLoadingFailed>,
}

impl Events {
    async fn listen(page: &chromiumoxide::Page) -> Result<Self, BrowserError> {
        let listen_err = |e| cdp("event subscription", e);
        Ok(Self {
            lifecycle: page.event_listener().await.map_err(listen_err)?,
            navigated: page.event_listener().await.map_err(listen_err)?,
            failed: page.event_listener().await.map_err(listen_err)?,
        })
    }
}

/// The page's resource hints the policy refuses: being read, or read.
#[derive(Default)]
struct Hints<'t> {
    pending: Option<Pin<Box<dyn Future<Output = Vec<String>> + Send + 't>>>,
    read: Option<Vec<String>>,
}

/// What the navigation has seen of its document, from the events its loop
/// receives; each handler says whether the wait is over.
struct Watch<'a> {
    url: &'a url::Url,
    main_frame: &'a str,
    doc: &'a SharedDoc,
    /// The lifecycle event awaited.
    event_name: &'static str,
    /// `ready` reads a document whose parsing never ends (a response that
    /// never finishes) once it has had SOFT.
    ready: bool,
    /// Loaders that reached the awaited event.
    seen: HashSet<String>,
    /// Loaders that reached `DOMContentLoaded`.
    dom_ready: HashSet<String>,
    /// The navigated document's failure, once its load failed.
    doc_failure: Option<String>,
    /// Chromium committed its error page; the reason follows.
    error_page: bool,
    /// `Page.navigate` has answered.
    nav_done: bool,
    parse_deadline: Option<tokio::time::Instant>,
    /// The loader of the navigated document, once committed.
    committed: Option<String>,
}

impl<'a> Watch<'a> {
    fn new(url: &'a url::Url, main_frame: &'a str, opts: &NavigateOptions, doc: &'a SharedDoc) -> Self {
        let event_name = match opts.goto.wait_until {
            WaitUntil::Load => "load",
            WaitUntil::Domcontentloaded | WaitUntil::Ready => "DOMContentLoaded",
            WaitUntil::Networkidle => "networkIdle",
        };
        Self {
            url,
            main_frame,
            doc,
            event_name,
            ready: opts.goto.wait_until == WaitUntil::Ready,
            seen: HashSet::new(),
            dom_ready: HashSet::new(),
            doc_failure: None,
            error_page: false,
            nav_done: false,
            parse_deadline: None,
            committed: None,
        }
    }

    /// The refusal the interceptor recorded, if any.
    fn recorded(&self) -> Option<BrowserError> {
        self.doc.lock().expect("doc").error.clone()
    }

    /// A navigation of the main frame after the first one (a script's
    /// `location`, a meta refresh) that the policy refused.
    fn refused_later(&self) -> Option<BrowserError> {
        self.recorded()
            .filter(|e| matches!(e, BrowserError::Policy { .. }))
    }

    fn net(&self, text: String) -> BrowserError {
        BrowserError::Net {
            net_error: text,
            url: self.url.to_string(),
        }
    }

    /// Whether the committed document's loader is in `loaders`.
    fn committed_reached(&self, loaders: &HashSet<String>) -> bool {
        self.committed.as_ref().is_some_and(|l| loaders.contains(l))
    }

    fn on_answer(&mut self, res: Result<NavigateAnswer, oneshot::error::RecvError>) -> Flow {
        self.nav_done = true;
        if let Ok(Ok(resp)) = res
            && let Some(text) = resp.result.error_text.filter(|t| !t.is_empty())
        {
            return ControlFlow::Break(Err(self.recorded().unwrap_or_else(|| self.net(text))));
        }
        ControlFlow::Continue(())
    }

    fn on_frame_navigated(&mut self, ev: &EventFrameNavigated) -> Flow {
        if ev.frame.parent_id.is_some() || ev.frame.id.as_ref() != self.main_frame {
            return ControlFlow::Continue(());
        }
        if ev.frame.url.starts_with("chrome-error:") {
            if let Some(err) = self.recorded() {
                return ControlFlow::Break(Err(err));
            }
            if let Some(text) = self.doc_failure.clone() {
                return ControlFlow::Break(Err(self.net(text)));
            }
            // The reason follows as Page.navigate's error text.
            self.error_page = true;
            return ControlFlow::Continue(());
        }
        if self.committed.is_none() {
            let loader = ev.frame.loader_id.as_ref();
            if !is_ours(&self.doc.lock().expect("doc"), loader, &ev.frame.url, self.url) {
                // A document an earlier navigation (or the unsticking of
                // one) committed late.
                tracing::debug!(url = %ev.frame.url, "a document not of this navigation committed");
                return ControlFlow::Continue(());
            }
            self.committed = Some(loader.to_string());
            self.parse_deadline = Some(tokio::time::Instant::now() + SOFT);
        }
        ControlFlow::Continue(())
    }

    fn on_lifecycle(&mut self, ev: &EventLifecycleEvent) -> Flow {
        if ev.frame_id.as_ref() == self.main_frame {
            if ev.name == self.event_name {
                self.seen.insert(ev.loader_id.as_ref().to_string());
            }
            if ev.name == "DOMContentLoaded" {
                self.dom_ready.insert(ev.loader_id.as_ref().to_string());
            }
        }
        ControlFlow::Continue(())
    }

    fn on_loading_failed(&mut self, ev: &EventLoadingFailed) -> Flow {
        let document = ev.r#type == ResourceType::Document;
        if document && self.doc.lock().expect("doc").taken() {
            // A PDF taken whole or a 304, its rendering aborted: handed back by `salvage`.
            return ControlFlow::Break(Err(self.net(ev.error_text.clone())));
        }
        if let Some(err) = main_document_failed(ev, self.doc, self.url) {
            // Its body was reset or cut short: no wait can mend it.
            return ControlFlow::Break(Err(self.recorded().unwrap_or(err)));
        }
        if document && self.committed.is_some() && self.doc.lock().expect("doc").abandoned_early {
            // The page's own navigation failed and was aborted; the
            // parsing it stopped does not resume, so the document is read
            // as it stands.
            return ControlFlow::Break(Ok(()));
        }
        if document {
            self.doc_failure = Some(ev.error_text.clone());
            if self.error_page {
                let err = self.recorded().unwrap_or_else(|| self.net(ev.error_text.clone()));
                return ControlFlow::Break(Err(err));
            }
        }
        ControlFlow::Continue(())
    }
}

/// Returns the error of `ev` when it is the navigated document's own load
/// failing (its body reset or shorter than its `Content-Length`), not a
/// sub-resource's, an iframe's or a cancelled load's.
fn main_document_failed(
    ev: &EventLoadingFailed,
    doc: &std::sync::Mutex<MainDocument>,
    url: &url::Url,
) -> Option<BrowserError> {
    if ev.r#type != ResourceType::Document || ev.canceled == Some(true) {
        return None;
    }
    let doc = doc.lock().expect("doc");
    if doc.request_id.as_deref() != Some(ev.request_id.inner().as_str()) {
        return None;
    }
    Some(BrowserError::Net {
        net_error: ev.error_text.clone(),
        url: doc.url.clone().unwrap_or_else(|| url.to_string()),
    })
}

/// Says whether a committed main-frame document is the one this
/// navigation asked for. Its response, once checked, names its request,
/// and a navigation's request id is its document's loader id; before
/// that (a response not paused, as from a cache), its address must be
/// the one asked for or a redirect of it.
fn is_ours(doc: &MainDocument, loader: &str, committed_url: &str, url: &url::Url) -> bool {
    if let Some(id) = &doc.request_id {
        return id == loader;
    }
    let bare = |u: &str| u.split('#').next().unwrap_or_default().to_string();
    let committed_url = bare(committed_url);
    committed_url == bare(url.as_str()) || doc.redirects.iter().any(|r| bare(r) == committed_url)
}

fn finish(url: &url::Url, doc: MainDocument) -> Navigation {
    Navigation {
        final_url: doc.url.unwrap_or_else(|| url.to_string()),
        status: doc.status.unwrap_or(200),
        content_type: doc.content_type,
        headers: doc.headers,
        redirects: doc.redirects,
        blocked: doc.blocked,
        refused: doc.refused,
        document: None,
        parse_stopped: doc.abandoned_early,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_navigations_own_document_is_taken_for_it() {
        let url = url::Url::parse("http://127.0.0.1:8080/stall?ms=30000#top").unwrap();
        let mut doc = MainDocument::default();
        // Nothing answered yet: a late blank page or another address is not it.
        assert!(!is_ours(&doc, "L1", "about:blank", &url));
        assert!(!is_ours(&doc, "L1", "http://127.0.0.1:8080/other", &url));
        assert!(is_ours(&doc, "L1", "http://127.0.0.1:8080/stall?ms=30000", &url));
        doc.redirects.push("http://127.0.0.1:8080/next".into());
        assert!(is_ours(&doc, "L1", "http://127.0.0.1:8080/next", &url));
        // Once its response named its request, only that loader is it.
        doc.request_id = Some("L2".into());
        assert!(is_ours(&doc, "L2", "http://127.0.0.1:8080/next", &url));
        assert!(!is_ours(&doc, "L1", "http://127.0.0.1:8080/stall?ms=30000", &url));
    }
}
