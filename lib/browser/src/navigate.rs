//! Navigation driven by events: chromiumoxide holds a `Page.navigate`
//! answer until its own idea of "loaded", so the command is sent in the
//! background and completion is read from lifecycle, frame and network
//! events, matched to the committed loader.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use chromiumoxide::cdp::browser_protocol::network::{EventLoadingFailed, ResourceType};
use chromiumoxide::cdp::browser_protocol::page::{EventFrameNavigated, EventLifecycleEvent, NavigateParams};
use futures::StreamExt;
use oxwright_jobs::WaitUntil;

use crate::error::cdp;
use crate::intercept::{Interceptor, MainDocument};
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
        let result = self.navigate_inner(url, opts).await;
        self.note(result)
    }

    // One event loop over the navigation's lifecycle, frame, failure and
    // hint streams, whose state the arms share; it stays whole until it
    // is made a state machine of its own.
    #[allow(clippy::too_many_lines)]
    async fn navigate_inner(
        &self,
        url: &url::Url,
        opts: &NavigateOptions,
    ) -> Result<Navigation, BrowserError> {
        let started = Instant::now();
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
        // An earlier navigation still waiting for its `load` would hold this
        // one back; what it takes to end that is over before this one listens.
        self.unstick_navigation().await;
        self.skip_frames(opts.skip_frames).await?;
        self.prepare().await?;
        let page = self.raw_page().clone();
        let main_frame = page.target_id().as_ref().to_string();
        let listen_err = |e| cdp("event subscription", e);
        let mut lifecycle = page
            .event_listener::<EventLifecycleEvent>()
            .await
            .map_err(listen_err)?;
        let mut navigated = page
            .event_listener::<EventFrameNavigated>()
            .await
            .map_err(listen_err)?;
        let mut failed = page
            .event_listener::<EventLoadingFailed>()
            .await
            .map_err(listen_err)?;
        let interceptor = Interceptor::start(self, main_frame.clone(), opts).await?;
        let doc = interceptor.document();
        *self.job_doc.lock().expect("job doc") = Some(crate::tab::JobDoc {
            doc: doc.clone(),
            reported: 0,
            error_reported: false,
        });
        // The earlier navigations' interceptors stop once this one answers
        // (both would answer the same requests, each by its own document).
        let earlier = std::mem::replace(
            &mut *self.tasks.lock().expect("tasks"),
            vec![interceptor.into_task()],
        );
        for task in earlier {
            task.abort();
        }

        let (nav_tx, mut nav_rx) = tokio::sync::oneshot::channel();
        let sender = page.clone();
        let target = url.to_string();
        *self.nav_task.lock().expect("nav task") = Some(tokio::spawn(async move {
            let _ = nav_tx.send(sender.execute(NavigateParams::new(target)).await);
        }));

        let event_name = match opts.wait_until {
            WaitUntil::Load => "load",
            WaitUntil::Domcontentloaded | WaitUntil::Ready => "DOMContentLoaded",
            WaitUntil::Networkidle => "networkIdle",
        };
        let what = format!("{event_name} of {url}");
        let recorded = || doc.lock().expect("doc").error.clone();
        // A navigation of the main frame after the first one (a script's
        // `location`, a meta refresh) that the policy refused.
        let refused_later = || recorded().filter(|e| matches!(e, BrowserError::Policy { .. }));
        let limit = opts.timeout;
        // The loader of the navigated document, once committed.
        let mut committed: Option<String> = None;
        // When `load` (or network idle) is awaited, the document's resource
        // hints are read as soon as it reached `DOMContentLoaded` (its head
        // is parsed by then), while the sub-resources still load.
        let early_hints = matches!(opts.wait_until, WaitUntil::Load | WaitUntil::Networkidle);
        let mut hints: Option<std::pin::Pin<Box<dyn std::future::Future<Output = Vec<String>> + Send + '_>>> =
            None;
        let mut hints_read: Option<Vec<String>> = None;
        let waited = self
            .guard(&what, limit, async {
                let mut seen: HashSet<String> = HashSet::new();
                let mut dom_ready: HashSet<String> = HashSet::new();
                let mut doc_failure: Option<String> = None;
                let mut error_page = false;
                let mut nav_done = false;
                // `ready` reads a document whose parsing never ends (a
                // response that never finishes) once it has had SOFT.
                let mut parse_deadline: Option<tokio::time::Instant> = None;
                let ready = opts.wait_until == WaitUntil::Ready;
                loop {
                    let unparsed = tokio::time::sleep_until(
                        parse_deadline.unwrap_or_else(|| tokio::time::Instant::now() + limit),
                    );
                    tokio::select! {
                        _ = unparsed, if ready && parse_deadline.is_some() => {
                            // Nothing to read yet (the parser waits on a slow head
                            // script): the wait goes on while the page shows no text.
                            let shown = self
                                .evaluate_quiet("(document.body && document.body.innerText || '').trim().length")
                                .await
                                .and_then(|v| v.as_u64());
                            if shown == Some(0) {
                                parse_deadline = Some(tokio::time::Instant::now() + TEXTLESS_RECHECK);
                                continue;
                            }
                            doc.lock().expect("doc").notes.push(format!(
                                "the document was still loading {} s after it arrived (no DOMContentLoaded); it was read as it stood",
                                SOFT.as_secs()
                            ));
                            return Ok(());
                        }
                        res = &mut nav_rx, if !nav_done => {
                            nav_done = true;
                            if let Ok(Ok(resp)) = res
                                && let Some(text) = resp.result.error_text.filter(|t| !t.is_empty())
                            {
                                    return Err(recorded().unwrap_or(BrowserError::Net { net_error: text, url: url.to_string() }));
                            }
                        }
                        Some(ev) = navigated.next() => {
                            if ev.frame.parent_id.is_some() || ev.frame.id.as_ref() != main_frame {
                                continue;
                            }
                            if ev.frame.url.starts_with("chrome-error:") {
                                if let Some(err) = recorded() {
                                    return Err(err);
                                }
                                if let Some(text) = doc_failure.clone() {
                                    return Err(BrowserError::Net { net_error: text, url: url.to_string() });
                                }
                                // The reason follows as Page.navigate's error text.
                                error_page = true;
                                continue;
                            }
                            if committed.is_none() {
                                let loader = ev.frame.loader_id.as_ref();
                                if !is_ours(&doc.lock().expect("doc"), loader, &ev.frame.url, url) {
                                    // A document an earlier navigation (or the
                                    // unsticking of one) committed late.
                                    tracing::debug!(url = %ev.frame.url, "a document not of this navigation committed");
                                    continue;
                                }
                                committed = Some(loader.to_string());
                                parse_deadline = Some(tokio::time::Instant::now() + SOFT);
                            }
                        }
                        Some(ev) = lifecycle.next() => {
                            if ev.frame_id.as_ref() == main_frame {
                                if ev.name == event_name {
                                    seen.insert(ev.loader_id.as_ref().to_string());
                                }
                                if ev.name == "DOMContentLoaded" {
                                    dom_ready.insert(ev.loader_id.as_ref().to_string());
                                }
                            }
                        }
                        Some(ev) = failed.next() => {
                            if ev.r#type == ResourceType::Document && doc.lock().expect("doc").taken() {
                                // A PDF taken whole or a 304, its rendering aborted: handed back below.
                                return Err(BrowserError::Net { net_error: ev.error_text.clone(), url: url.to_string() });
                            }
                            if let Some(err) = main_document_failed(&ev, &doc, url) {
                                // Its body was reset or cut short: no wait can mend it.
                                return Err(recorded().unwrap_or(err));
                            }
                            if ev.r#type == ResourceType::Document
                                && committed.is_some()
                                && doc.lock().expect("doc").abandoned_early
                            {
                                // The page's own navigation failed and was
                                // aborted; the parsing it stopped does not
                                // resume, so the document is read as it stands.
                                return Ok(());
                            }
                            if ev.r#type == ResourceType::Document {
                                doc_failure = Some(ev.error_text.clone());
                                if error_page {
                                    return Err(recorded().unwrap_or(BrowserError::Net {
                                        net_error: ev.error_text.clone(),
                                        url: url.to_string(),
                                    }));
                                }
                            }
                        }
                        read = async { hints.as_mut().expect("hints pending").await }, if hints.is_some() => {
                            hints_read = Some(read);
                            hints = None;
                        }
                        else => return Err(BrowserError::Crashed("event streams ended".into())),
                    }
                    if committed.as_ref().is_some_and(|loader| dom_ready.contains(loader)) {
                        // From here on, a failed navigation of the page keeps this document.
                        doc.lock().expect("doc").rendered = true;
                        if early_hints && hints.is_none() && hints_read.is_none() {
                            hints = Some(Box::pin(self.refused_hints(opts)));
                        }
                    }
                    if committed.as_ref().is_some_and(|loader| seen.contains(loader)) {
                        return Ok(());
                    }
                }
            })
            .await;
        if let Err(err) = waited {
            // A PDF taken whole: its rendering was aborted on purpose.
            let captured = {
                let mut d = doc.lock().expect("doc");
                d.document.take().map(|bytes| (bytes, d.clone()))
            };
            if let Some((bytes, d)) = captured {
                let mut nav = finish(url, d);
                nav.document = Some(bytes);
                return Ok(nav);
            }
            // The conditional request was answered 304: nothing to wait for.
            let unchanged = doc.lock().expect("doc").not_modified;
            if unchanged {
                return Ok(finish(url, doc.lock().expect("doc").clone()));
            }
            // A refusal recorded by the interceptor explains a timeout or error page best,
            // then one by the egress proxy of the document itself.
            return Err(recorded()
                .or_else(|| self.egress_refusal_of(url, &doc.lock().expect("doc").redirects))
                .unwrap_or(err));
        }

        if opts.wait_until == WaitUntil::Ready {
            let remaining = limit.saturating_sub(started.elapsed());
            self.settle_ready(&main_frame, committed, &mut lifecycle, remaining, &doc)
                .await?;
        }
        if let Some(selector) = &opts.wait_for {
            let remaining = limit.saturating_sub(started.elapsed());
            let script = format!(
                "new Promise(resolve => {{ const sel = {sel}; const found = () => document.querySelector(sel) !== null; \
                 if (found()) return resolve(true); const o = new MutationObserver(() => {{ if (found()) {{ o.disconnect(); resolve(true); }} }}); \
                 o.observe(document, {{subtree: true, childList: true, attributes: true}}); }})",
                sel = serde_json::to_string(selector).expect("string serialises")
            );
            match self.evaluate(&script, remaining).await {
                Ok(_) => {}
                // The main frame was sent somewhere the policy refused while waiting.
                Err(_) if refused_later().is_some() => return Err(refused_later().expect("recorded refusal")),
                Err(BrowserError::Timeout { .. }) => {
                    return Err(BrowserError::WaitFor {
                        selector: selector.clone(),
                        ms: limit.as_millis() as u64,
                    });
                }
                Err(err) => return Err(err),
            }
        }
        if let Some(err) = refused_later() {
            // A later navigation of the main frame was refused before the page was read.
            return Err(err);
        }
        // The document's body failed while the waits above ran.
        while let Some(Some(ev)) = futures::FutureExt::now_or_never(failed.next()) {
            if let Some(err) = main_document_failed(&ev, &doc, url) {
                return Err(err);
            }
        }
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
        let hints = match (hints_read, hints) {
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
        doc: &std::sync::Arc<std::sync::Mutex<MainDocument>>,
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
