//! Request interception through the DevTools Fetch domain: the URL policy on
//! every request (redirect hops included), resource blocking, and the main
//! document's status and content-type check before it renders. Once the
//! main frame has a rendered document, a later navigation of it that the
//! policy refuses or that fails (a network error, an error status, a
//! non-HTML answer) is aborted rather than failed: an aborted navigation
//! commits no error page, so the rendered document stays to be read, and
//! the attempt is noted for the fetch's warnings.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use chromiumoxide::Page;
use chromiumoxide::cdp::browser_protocol::fetch::{
    ContinueRequestParams, EnableParams, EventRequestPaused, FailRequestParams, FulfillRequestParams,
    GetResponseBodyParams, HeaderEntry, RequestPattern, RequestStage,
};
use chromiumoxide::cdp::browser_protocol::network::{ErrorReason, ResourceType};
use futures::StreamExt;
use oxwright_jobs::BlockResource;
use oxwright_policy::{PolicyError, UrlPolicy};
use tokio::task::JoinHandle;

use crate::error::cdp;
use crate::main_document::MainDocument;
use crate::tab::Tab;
use crate::{BrowserError, HostHeaders, NavigateOptions};

/// How long a main-frame navigation of a document that may just have
/// reached `DOMContentLoaded` waits for the navigation to say so.
const RENDER_GRACE: Duration = Duration::from_millis(250);

/// The running interception task of one tab.
pub(crate) struct Interceptor {
    task: JoinHandle<()>,
    doc: Arc<Mutex<MainDocument>>,
}

struct Shared {
    page: Page,
    main_frame: String,
    policy: Arc<UrlPolicy>,
    blocked: Vec<ResourceType>,
    doc: Arc<Mutex<MainDocument>>,
    hosts: Mutex<HashMap<String, Result<(), PolicyError>>>,
    /// The egress proxy of the tab's context, for its refusals' reasons.
    egress: Option<Arc<oxwright_egress::EgressProxy>>,
    /// The tab's record of origins requested, cleared by its reset.
    origins: Arc<Mutex<BTreeSet<String>>>,
    call_timeout: Duration,
    /// Headers (and credentials) for one host, added at the request stage.
    headers: Option<Arc<HostHeaders>>,
    /// PDFs up to this size are taken as the main document's bytes.
    capture_pdf: Option<usize>,
    /// Validators the navigation's main document request carries.
    conditional: Vec<(String, String)>,
    /// The main document already read over HTTP, answered once to the
    /// main frame's first request for its URL.
    served: Mutex<Option<Arc<oxwright_engine::ServedDocument>>>,
}

/// Returns the DevTools resource types behind a block name.
fn resource_types(block: BlockResource) -> &'static [ResourceType] {
    match block {
        BlockResource::Image => &[ResourceType::Image],
        BlockResource::Font => &[ResourceType::Font],
        BlockResource::Media => &[ResourceType::Media, ResourceType::TextTrack],
        BlockResource::Stylesheet => &[ResourceType::Stylesheet],
        BlockResource::Script => &[ResourceType::Script],
        BlockResource::Xhr => &[ResourceType::Xhr],
        BlockResource::Fetch => &[ResourceType::Fetch],
        BlockResource::Websocket => &[ResourceType::WebSocket],
        BlockResource::Eventsource => &[ResourceType::EventSource],
        BlockResource::Manifest => &[ResourceType::Manifest],
        BlockResource::Other => &[ResourceType::Other, ResourceType::Prefetch, ResourceType::Ping],
    }
}

/// The Fetch domain's patterns a page is intercepted with: every request
/// at its request stage, and documents again at their response (whose
/// headers decide a PDF, a 304 or a refusal).
pub fn fetch_patterns() -> EnableParams {
    EnableParams::builder()
        .pattern(
            RequestPattern::builder()
                .url_pattern("*")
                .request_stage(RequestStage::Request)
                .build(),
        )
        .pattern(
            RequestPattern::builder()
                .url_pattern("*")
                .resource_type(ResourceType::Document)
                .request_stage(RequestStage::Response)
                .build(),
        )
        .build()
}

impl Interceptor {
    /// Subscribes to paused requests, enables the Fetch domain and starts
    /// answering every paused request.
    pub(crate) async fn start(
        tab: &Tab,
        main_frame: String,
        opts: &NavigateOptions,
    ) -> Result<Self, BrowserError> {
        let page = tab.raw_page().clone();
        let mut events = page
            .event_listener::<EventRequestPaused>()
            .await
            .map_err(|e| cdp("Fetch.requestPaused", e))?;
        let enable = fetch_patterns();
        // The patterns never change (blocking is decided per request below),
        // and switching interception on and off costs Chromium far more
        // than the interception itself: enable it once per page.
        if !tab.fetch_enabled.load(std::sync::atomic::Ordering::SeqCst) {
            tab.call_own(enable).await?;
            tab.fetch_enabled.store(true, std::sync::atomic::Ordering::SeqCst);
        }
        let doc = Arc::new(Mutex::new(MainDocument::default()));
        let shared = Arc::new(Shared {
            page,
            main_frame,
            policy: opts.policy.clone(),
            blocked: opts
                .goto
                .block
                .iter()
                .flat_map(|b| resource_types(*b).iter().cloned())
                .collect(),
            doc: doc.clone(),
            hosts: Mutex::new(HashMap::new()),
            egress: tab.egress.clone(),
            origins: tab.origins.clone(),
            call_timeout: tab.call_timeout(),
            headers: opts.headers.clone(),
            capture_pdf: opts.goto.capture_pdf,
            conditional: opts.goto.conditional.clone(),
            served: Mutex::new(opts.goto.served.clone()),
        });
        let task = tokio::spawn(async move {
            while let Some(ev) = events.next().await {
                let shared = shared.clone();
                tokio::spawn(async move { shared.on_paused(&ev).await });
            }
        });
        Ok(Self { task, doc })
    }

    pub(crate) fn document(&self) -> Arc<Mutex<MainDocument>> {
        self.doc.clone()
    }

    pub(crate) fn into_task(self) -> JoinHandle<()> {
        self.task
    }
}

impl Shared {
    /// A response paused before the page sees it: the main document's
    /// checks (its status, a PDF taken whole, a 304), and a later
    /// navigation's failure kept from replacing the document.
    async fn on_response(&self, ev: &EventRequestPaused, is_main_doc: bool, later: bool) {
        let url = ev.request.url.clone();
        if is_main_doc && !later && self.navigated_by_page(ev) {
            // The page sent itself elsewhere after its document
            // arrived: a failure keeps that document; a success is
            // followed as the navigation's document.
            if let Some(reason) = failure_of(ev) {
                self.doc.lock().expect("doc").abandon_early(&url, &reason);
                return self.fail(ev, ErrorReason::Aborted).await;
            }
        }
        if later {
            let failure = match &ev.response_error_reason {
                Some(reason) => Some(format!("{reason:?}")),
                None => self.check_main_response(ev).map(|e| e.to_string()),
            };
            if let Some(reason) = failure {
                self.doc.lock().expect("doc").abandon(&url, &reason);
                return self.fail(ev, ErrorReason::Aborted).await;
            }
            return self.proceed(ev).await;
        }
        if is_main_doc && !self.conditional.is_empty() && ev.response_status_code == Some(304) {
            return self.not_modified(ev).await;
        }
        if is_main_doc
            && let Some(max) = self.capture_pdf
            && is_pdf(ev)
        {
            return self.capture(ev, max).await;
        }
        if is_main_doc && let Some(err) = self.check_main_response(ev) {
            self.doc.lock().expect("doc").error = Some(err);
            return self.fail(ev, ErrorReason::BlockedByResponse).await;
        }
        self.proceed(ev).await
    }

    /// Lets a request go on with the job's request shaping and, for the
    /// navigation's own document, its conditional validators.
    async fn continue_shaped(&self, ev: &EventRequestPaused, first_document: bool) {
        let conditional = first_document && !self.conditional.is_empty();
        let url = &ev.request.url;
        if self.headers.is_some() || conditional {
            let original: Vec<(String, String)> = ev
                .request
                .headers
                .inner()
                .as_object()
                .map(|m| {
                    m.iter()
                        .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                        .collect()
                })
                .unwrap_or_default();
            let mut headers = self
                .headers
                .as_ref()
                .and_then(|rules| rules.for_request(url, &original));
            if conditional {
                // The validators replace any the browser chose itself.
                let mut with = headers.unwrap_or(original);
                with.retain(|(n, _)| !self.conditional.iter().any(|(c, _)| c.eq_ignore_ascii_case(n)));
                with.extend(self.conditional.iter().cloned());
                headers = Some(with);
            }
            if let Some(headers) = headers {
                let mut cmd = ContinueRequestParams::new(ev.request_id.clone());
                cmd.headers = Some(headers.into_iter().map(|(n, v)| HeaderEntry::new(n, v)).collect());
                let _ = tokio::time::timeout(self.call_timeout, self.page.execute(cmd)).await;
                return;
            }
        }
        self.proceed(ev).await
    }

    async fn on_paused(&self, ev: &EventRequestPaused) {
        let is_main_doc =
            ev.resource_type == ResourceType::Document && ev.frame_id.as_ref() == self.main_frame;
        let url = ev.request.url.clone();
        let response_stage = ev.response_status_code.is_some() || ev.response_error_reason.is_some();
        let later = is_main_doc && self.later_navigation(ev).await;
        if response_stage {
            return self.on_response(ev, is_main_doc, later).await;
        }
        if let Err(source) = self.allowed(&url).await {
            tracing::debug!(url = %url, error = %source, "request refused by url policy");
            if later {
                {
                    let mut doc = self.doc.lock().expect("doc");
                    doc.abandon(&url, &format!("refused by the url policy: {source}"));
                    doc.refused.push(url);
                }
                return self.fail(ev, ErrorReason::Aborted).await;
            }
            if is_main_doc && matches!(source, PolicyError::Resolve { .. }) && self.navigated_by_page(ev) {
                // The page sent itself, before it had loaded, to a host
                // that does not resolve: a failure, not a refusal, so the
                // document that arrived stays, as for a failed response.
                self.doc
                    .lock()
                    .expect("doc")
                    .abandon_early(&url, &source.to_string());
                return self.fail(ev, ErrorReason::Aborted).await;
            }
            {
                let mut doc = self.doc.lock().expect("doc");
                if is_main_doc && doc.error.is_none() {
                    doc.error = Some(BrowserError::Policy {
                        url: url.clone(),
                        source,
                    });
                } else {
                    doc.refused.push(url);
                }
            }
            return self.fail(ev, ErrorReason::AccessDenied).await;
        }
        if self.blocked.contains(&ev.resource_type) {
            self.doc.lock().expect("doc").blocked += 1;
            return self.fail(ev, ErrorReason::BlockedByClient).await;
        }
        if is_main_doc && ev.redirected_request_id.is_some() {
            self.doc.lock().expect("doc").redirects.push(url.clone());
        }
        // Only a request let through can leave data behind for its origin
        // (a refused or blocked one never reaches the network, so the
        // reset has nothing of its origin to clear).
        self.reached(&url);
        if is_main_doc
            && !later
            && let Some(served) = self.take_served(&url)
        {
            return self.fulfil(ev, &served).await;
        }
        self.continue_shaped(ev, is_main_doc && !later).await
    }

    /// Records `url`'s origin for the tab's reset to clear.
    fn reached(&self, url: &str) {
        if let Ok(parsed) = url::Url::parse(url)
            && matches!(parsed.scheme(), "http" | "https")
            && let origin @ url::Origin::Tuple(..) = parsed.origin()
        {
            self.origins
                .lock()
                .expect("origins")
                .insert(origin.ascii_serialization());
        }
    }

    /// Says whether a main-frame document request is a later navigation
    /// of a rendered document. The navigation marks the document rendered
    /// when it reads `DOMContentLoaded`; but a page that navigates from its
    /// own `DOMContentLoaded` handler sends the request before Chromium
    /// reports the event. So a new request (not a redirect hop) after the
    /// first document's response waits up to [`RENDER_GRACE`] for the mark;
    /// only navigations of a document still parsing pay that.
    async fn later_navigation(&self, ev: &EventRequestPaused) -> bool {
        let unsure = {
            let doc = self.doc.lock().expect("doc");
            if doc.rendered {
                return true;
            }
            doc.status.is_some() && ev.redirected_request_id.is_none() && ev.response_status_code.is_none()
        };
        if !unsure {
            return false;
        }
        let until = tokio::time::Instant::now() + RENDER_GRACE;
        while tokio::time::Instant::now() < until {
            tokio::time::sleep(Duration::from_millis(10)).await;
            if self.doc.lock().expect("doc").rendered {
                return true;
            }
        }
        false
    }

    /// Says whether a main-frame document response belongs to a navigation
    /// the page started itself after its own document had arrived (another
    /// network request than the accepted document's).
    fn navigated_by_page(&self, ev: &EventRequestPaused) -> bool {
        let doc = self.doc.lock().expect("doc");
        let Some(accepted) = doc.request_id.as_deref() else {
            return false;
        };
        ev.network_id.as_ref().is_some_and(|n| n.inner() != accepted)
    }

    /// Checks the main document's response; returns the error that refuses it.
    fn check_main_response(&self, ev: &EventRequestPaused) -> Option<BrowserError> {
        let status = ev.response_status_code? as u16;
        let url = ev.request.url.clone();
        if (300..400).contains(&status) {
            return None;
        }
        if status >= 400 {
            let retry_after_s = response_header(ev, "retry-after")
                .and_then(|v| oxwright_jobs::parse_retry_after(&v, chrono::Utc::now()));
            return Some(self.egress_error(ev, &url).unwrap_or(BrowserError::HttpStatus {
                status,
                url,
                retry_after_s,
            }));
        }
        // No content: Chromium keeps the page it had and commits nothing,
        // so nothing would ever be read.
        if status == 204 || status == 205 {
            return Some(BrowserError::HttpStatus {
                status,
                url,
                retry_after_s: None,
            });
        }
        let header = |name: &str| response_header(ev, name);
        let content_type = header("content-type");
        // A download: Chromium would save it, not render it.
        if let Some(disposition) = header("content-disposition").filter(|d| {
            d.split(';')
                .next()
                .is_some_and(|kind| kind.trim().eq_ignore_ascii_case("attachment"))
        }) {
            return Some(BrowserError::Download {
                disposition,
                content_type: content_type.unwrap_or_default(),
                url,
            });
        }
        let mime = content_type
            .as_deref()
            .map(|c| c.split(';').next().unwrap_or("").trim().to_ascii_lowercase())
            .unwrap_or_default();
        if !(mime.is_empty() || mime == "text/html" || mime == "application/xhtml+xml") {
            return Some(BrowserError::NonHtml {
                content_type: content_type.unwrap_or_default(),
                url,
            });
        }
        let mut doc = self.doc.lock().expect("doc");
        doc.url = Some(url);
        doc.status = Some(status);
        doc.content_type = content_type;
        doc.headers = response_headers(ev);
        doc.request_id = ev.network_id.as_ref().map(|id| id.inner().clone());
        None
    }

    /// Reads an answer the egress proxy gave itself instead of an origin's:
    /// a refusal (the proxy's own check, with its reason) or a network error.
    fn egress_error(&self, ev: &EventRequestPaused, url: &str) -> Option<BrowserError> {
        let header = |name: &str| response_header(ev, name);
        if let Some(net_error) = header(oxwright_egress::NET_ERROR_HEADER) {
            return Some(BrowserError::Net {
                net_error,
                url: url.to_string(),
            });
        }
        if header("x-oxwright-egress").as_deref() == Some("refused") {
            let refusal = self
                .egress
                .as_ref()?
                .refusals()
                .into_iter()
                .find(|r| r.target == url)?;
            return Some(BrowserError::Policy {
                url: url.to_string(),
                source: refusal.error,
            });
        }
        None
    }

    /// Applies the URL policy, resolving each host once per tab.
    async fn allowed(&self, raw: &str) -> Result<(), PolicyError> {
        let mut url = url::Url::parse(raw).map_err(|_| PolicyError::Invalid(raw.to_string()))?;
        // WebSockets follow the rules of their HTTP twin.
        let twin = match url.scheme() {
            "ws" => Some("http"),
            "wss" => Some("https"),
            _ => None,
        };
        if let Some(scheme) = twin {
            let _ = url.set_scheme(scheme);
        }
        let Some(host) = self.policy.check_static(&url)? else {
            return Ok(());
        };
        if let Some(known) = self.hosts.lock().expect("hosts").get(&host) {
            return known.clone();
        }
        let verdict = self.policy.check(&url).await;
        self.hosts.lock().expect("hosts").insert(host, verdict.clone());
        verdict
    }

    /// Takes the served document when it answers a request for `url`.
    fn take_served(&self, url: &str) -> Option<Arc<oxwright_engine::ServedDocument>> {
        let mut served = self.served.lock().expect("served");
        let same = served.as_ref().is_some_and(|s| {
            let strip = |u: &str| u.split('#').next().unwrap_or(u).to_owned();
            strip(&s.url) == strip(url)
        });
        if same { served.take() } else { None }
    }

    /// Answers the main document's request with the body already read:
    /// the server is not asked twice. The headers go as sent, less those
    /// that described the encoded body.
    async fn fulfil(&self, ev: &EventRequestPaused, served: &oxwright_engine::ServedDocument) {
        let headers: Vec<HeaderEntry> = served
            .headers
            .iter()
            .filter(|(n, _)| {
                ![
                    "content-encoding",
                    "content-length",
                    "transfer-encoding",
                    "connection",
                    "keep-alive",
                ]
                .iter()
                .any(|h| n.eq_ignore_ascii_case(h))
            })
            .map(|(n, v)| HeaderEntry::new(n.clone(), v.clone()))
            .collect();
        {
            let mut doc = self.doc.lock().expect("doc");
            doc.url = Some(served.url.clone());
            doc.status = Some(served.status);
            doc.content_type = served
                .headers
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case("content-type"))
                .map(|(_, v)| v.clone());
            doc.headers = served.headers.clone();
            doc.request_id = ev.network_id.as_ref().map(|id| id.inner().clone());
        }
        let mut cmd = FulfillRequestParams::new(ev.request_id.clone(), i64::from(served.status));
        cmd.response_headers = Some(headers);
        cmd.body = Some(
            base64::engine::general_purpose::STANDARD
                .encode(&served.body)
                .into(),
        );
        let ok = matches!(
            tokio::time::timeout(self.call_timeout, self.page.execute(cmd)).await,
            Ok(Ok(_))
        );
        if !ok {
            // Not answered from memory: the network answers instead.
            self.proceed(ev).await;
        }
    }

    async fn proceed(&self, ev: &EventRequestPaused) {
        let cmd = ContinueRequestParams::new(ev.request_id.clone());
        let _ = tokio::time::timeout(self.call_timeout, self.page.execute(cmd)).await;
    }

    /// Takes a PDF main document's bytes (at most `max`) and aborts its
    /// rendering: the navigation hands the bytes back.
    async fn capture(&self, ev: &EventRequestPaused, max: usize) {
        let url = ev.request.url.clone();
        let content_type = response_header(ev, "content-type").unwrap_or_else(|| "application/pdf".into());
        let declared = response_header(ev, "content-length").and_then(|v| v.trim().parse::<usize>().ok());
        let too_large = |size: usize| BrowserError::NonHtml {
            content_type: format!("{content_type}; a PDF of {size} bytes, over the {max}-byte limit"),
            url: url.clone(),
        };
        if let Some(size) = declared.filter(|s| *s > max) {
            self.doc.lock().expect("doc").error = Some(too_large(size));
            return self.fail(ev, ErrorReason::BlockedByResponse).await;
        }
        let body = GetResponseBodyParams::new(ev.request_id.clone());
        let body = match tokio::time::timeout(
            self.call_timeout.max(Duration::from_secs(30)),
            self.page.execute(body),
        )
        .await
        {
            Ok(Ok(r)) => {
                let r = r.result;
                if r.base64_encoded {
                    base64::engine::general_purpose::STANDARD
                        .decode(r.body.as_bytes())
                        .map_err(|e| e.to_string())
                } else {
                    Ok(r.body.into_bytes())
                }
            }
            Ok(Err(e)) => Err(e.to_string()),
            Err(_) => Err("reading the body timed out".into()),
        };
        {
            let mut doc = self.doc.lock().expect("doc");
            match body {
                Ok(bytes) if bytes.len() > max => doc.error = Some(too_large(bytes.len())),
                Ok(bytes) => {
                    doc.url = Some(url.clone());
                    doc.status = ev.response_status_code.map(|s| s as u16);
                    doc.content_type = Some(content_type.clone());
                    doc.headers = response_headers(ev);
                    doc.document = Some(bytes);
                }
                Err(message) => {
                    doc.error = Some(BrowserError::Net {
                        net_error: format!("reading the PDF failed: {message}"),
                        url: url.clone(),
                    })
                }
            }
        }
        self.fail(ev, ErrorReason::Aborted).await
    }

    /// Notes a `304 Not Modified` answer to the conditional main document
    /// request and aborts it: there is nothing to render, and the
    /// navigation hands the status back.
    async fn not_modified(&self, ev: &EventRequestPaused) {
        {
            let mut doc = self.doc.lock().expect("doc");
            doc.url = Some(ev.request.url.clone());
            doc.status = Some(304);
            doc.headers = response_headers(ev);
            doc.not_modified = true;
        }
        self.fail(ev, ErrorReason::Aborted).await
    }

    async fn fail(&self, ev: &EventRequestPaused, reason: ErrorReason) {
        let cmd = FailRequestParams::new(ev.request_id.clone(), reason);
        let _ = tokio::time::timeout(self.call_timeout, self.page.execute(cmd)).await;
    }
}

/// Why a paused document response failed, if it did: a network error, an
/// error status or an answer that is no page (no side effects, unlike the
/// main document's own check).
fn failure_of(ev: &EventRequestPaused) -> Option<String> {
    if let Some(reason) = &ev.response_error_reason {
        return Some(format!("{reason:?}"));
    }
    let status = ev.response_status_code?;
    if status >= 400 {
        return Some(format!("HTTP {status}"));
    }
    if (300..400).contains(&status) {
        return None;
    }
    let mime = response_header(ev, "content-type")
        .map(|c| c.split(';').next().unwrap_or("").trim().to_ascii_lowercase())
        .unwrap_or_default();
    (!(mime.is_empty() || mime == "text/html" || mime == "application/xhtml+xml"))
        .then(|| format!("{mime}, not HTML"))
}

/// Says whether a paused main-document response is a PDF: its content
/// type says so, or it is a download (or untyped binary) named `.pdf`.
fn is_pdf(ev: &EventRequestPaused) -> bool {
    if !ev.response_status_code.is_some_and(|s| (200..300).contains(&s)) {
        return false;
    }
    let mime = response_header(ev, "content-type")
        .map(|c| c.split(';').next().unwrap_or("").trim().to_ascii_lowercase())
        .unwrap_or_default();
    if mime == "application/pdf" || mime == "application/x-pdf" {
        return true;
    }
    let named_pdf = |name: &str| {
        name.trim_matches(|c| c == '"' || c == '\'' || c == ' ')
            .to_ascii_lowercase()
            .ends_with(".pdf")
    };
    let disposition = response_header(ev, "content-disposition").unwrap_or_default();
    let by_disposition = disposition
        .split(';')
        .filter_map(|p| p.trim().split_once('='))
        .any(|(k, v)| k.trim().eq_ignore_ascii_case("filename") && named_pdf(v));
    let binary = mime.is_empty() || mime == "application/octet-stream" || mime == "binary/octet-stream";
    binary && (by_disposition || url::Url::parse(&ev.request.url).is_ok_and(|u| named_pdf(u.path())))
}

/// Returns the response headers of a paused request, as sent.
fn response_headers(ev: &EventRequestPaused) -> Vec<(String, String)> {
    ev.response_headers
        .iter()
        .flatten()
        .map(|h| (h.name.clone(), h.value.clone()))
        .collect()
}

/// Returns the value of the response header `name` of a paused request.
fn response_header(ev: &EventRequestPaused, name: &str) -> Option<String> {
    ev.response_headers
        .iter()
        .flatten()
        .find(|h| h.name.eq_ignore_ascii_case(name))
        .map(|h| h.value.clone())
}
