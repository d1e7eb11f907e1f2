//! Reading a page without a browser: one GET of one document under the URL
//! policy. Every redirect hop is judged (scheme, host, every address the
//! name resolves to) and the client dials only the addresses judged for
//! that hop, so there is no second DNS lookup to rebind. The request is
//! shaped as a render's would be (extra headers and basic credentials to
//! their one host, cookies, user agent, the locale as `Accept-Language`,
//! an upstream proxy), the whole exchange has one deadline, and the body
//! has a byte cap. [`charset`] decodes it as a browser picks encodings.
//!
//! What this reads is the document the server sent; `oxwright-fetch`
//! decides whether that is the page (`render: never | auto`).

pub mod charset;
mod cookies;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use oxwright_jobs::{ErrorKind, JobError, RequestShape};
use oxwright_policy::{PolicyError, Resolver, SystemResolver, UrlPolicy};
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use reqwest::header::{HeaderMap, LOCATION};
use url::Url;

pub use charset::{decode_html, sniff};
use cookies::Jar;

/// Most redirect hops followed for one document (Chromium's limit).
pub const MAX_REDIRECTS: usize = 20;

/// The `User-Agent` of a request that names none: the desktop Chromium
/// oxwright renders with, so a server answers the HTTP read as it answers
/// the browser.
pub const DESKTOP_USER_AGENT: &str =
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36";

/// The `User-Agent` of a `mobile` request that names none.
pub const MOBILE_USER_AGENT: &str = "Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) \
     Chrome/156.0.0.0 Mobile Safari/537.36";

/// What a browser sends as `Accept` for a document.
const ACCEPT_DOCUMENT: &str =
    "text/html,application/xhtml+xml,application/xml;q=0.9,application/pdf;q=0.8,*/*;q=0.7";

/// Why a document could not be read; [`JobError`] names the kinds a fetch reports.
#[derive(Debug, Clone, thiserror::Error)]
pub enum HttpError {
    /// The URL policy refused the URL or a redirect hop (or its name does not resolve).
    #[error("{url}: {source}")]
    Policy {
        /// The refused URL.
        url: String,
        /// The policy's reason.
        source: PolicyError,
    },
    /// No complete answer within the deadline.
    #[error("timed out after {timeout_ms} ms waiting for the document from {url}: {seen}")]
    Timeout {
        /// The URL asked for.
        url: String,
        /// The deadline.
        timeout_ms: u64,
        /// What the server had sent by then, in words.
        seen: String,
    },
    /// The body is over the cap (decoded bytes count).
    #[error("the document at {url} is over the {limit}-byte limit")]
    TooLarge {
        /// The document's URL.
        url: String,
        /// The cap.
        limit: usize,
    },
    /// Too many redirects, or one without a usable `Location`.
    #[error("{url} redirected badly: {reason}")]
    Redirect {
        /// The URL that redirected last.
        url: String,
        /// What was wrong.
        reason: String,
    },
    /// A redirect led to a URL the request said not to read again.
    #[error("{url}: redirects to {target}, which this load already read")]
    Cycle {
        /// The URL asked for.
        url: String,
        /// Where it led.
        target: String,
    },
    /// The server answered with an error status (or one with no document: 204, 205).
    #[error("HTTP {status} from {url}{}", if *.status == 204 || *.status == 205 { " (no content: the server sent no document to read)" } else { "" })]
    Status {
        /// The URL that answered.
        url: String,
        /// The status.
        status: u16,
        /// Its `Retry-After`, in seconds, when it gave one.
        retry_after_s: Option<u64>,
    },
    /// The connection failed, or the server's answer was not HTTP.
    #[error("reading {url} failed: {message}")]
    Connection {
        /// The URL asked for.
        url: String,
        /// What happened on the wire.
        message: String,
    },
}

impl HttpError {
    /// The URL the failure is about.
    pub fn url(&self) -> &str {
        match self {
            HttpError::Policy { url, .. }
            | HttpError::Timeout { url, .. }
            | HttpError::TooLarge { url, .. }
            | HttpError::Redirect { url, .. }
            | HttpError::Cycle { url, .. }
            | HttpError::Status { url, .. }
            | HttpError::Connection { url, .. } => url,
        }
    }
}

impl From<HttpError> for JobError {
    fn from(err: HttpError) -> JobError {
        let kind = match &err {
            HttpError::Policy {
                source: PolicyError::Resolve { .. },
                ..
            } => ErrorKind::Dns,
            HttpError::Policy { .. } => ErrorKind::PolicyDenied,
            HttpError::Timeout { .. } => ErrorKind::Timeout,
            HttpError::TooLarge { .. } => ErrorKind::ResourceLimit,
            HttpError::Redirect { .. } | HttpError::Cycle { .. } | HttpError::Connection { .. } => {
                ErrorKind::Connection
            }
            HttpError::Status { .. } => ErrorKind::HttpStatus,
        };
        let mut out = JobError::new(kind, err.to_string()).with_url(err.url());
        if let HttpError::Status {
            status,
            retry_after_s,
            ..
        } = err
        {
            out = out.with_status(status);
            if let Some(secs) = retry_after_s {
                out = out.with_retry_after(secs);
            }
        }
        out
    }
}

/// One document to GET.
#[derive(Debug, Clone)]
pub struct DocumentRequest<'a> {
    /// The URL asked for.
    pub url: &'a Url,
    /// The policy every hop is judged by.
    pub policy: &'a UrlPolicy,
    /// Headers, cookies, user agent, locale, credentials, proxy.
    pub shape: &'a RequestShape,
    /// Deadline of the whole exchange, body included.
    pub timeout: Duration,
    /// The largest body read; a longer one fails the request unless
    /// `truncate` is set.
    pub max_bytes: usize,
    /// Keeps the first `max_bytes` of a longer body instead of failing:
    /// for formats read from the start whose tail may be ignored
    /// (robots.txt, whose RFC lets a reader stop at a size cap).
    pub truncate: bool,
    /// Conditional headers for the first hop (`If-None-Match`, …).
    pub conditional: &'a [(String, String)],
    /// The `Accept` header; `None`: what a browser sends for a document.
    pub accept: Option<&'a str>,
    /// Most redirect hops followed.
    pub max_redirects: usize,
    /// Documents (URLs without fragment) a redirect may not lead to: a
    /// redirect to one of them, other than the URL asked for, is a cycle.
    pub read_before: Option<&'a std::collections::HashSet<String>>,
}

impl<'a> DocumentRequest<'a> {
    /// A plain request for `url`: nothing shaped, a browser's `Accept`, [`MAX_REDIRECTS`].
    pub fn new(
        url: &'a Url,
        policy: &'a UrlPolicy,
        shape: &'a RequestShape,
        timeout: Duration,
        max_bytes: usize,
    ) -> Self {
        Self {
            url,
            policy,
            shape,
            timeout,
            max_bytes,
            truncate: false,
            conditional: &[],
            accept: None,
            max_redirects: MAX_REDIRECTS,
            read_before: None,
        }
    }
}

/// The identity of a document within one load: the URL without its fragment.
pub fn doc_key(url: &Url) -> String {
    let mut u = url.clone();
    u.set_fragment(None);
    u.into()
}

/// The document a server answered with, after redirects.
#[derive(Debug, Clone)]
pub struct Document {
    /// The URL after redirects.
    pub url: Url,
    /// Its status (2xx, or 304 to a conditional request).
    pub status: u16,
    /// Its response headers, names lowercase, in the order sent.
    pub headers: Vec<(String, String)>,
    /// Redirect targets followed, in order.
    pub redirects: Vec<String>,
    /// The body, decompressed.
    pub body: Vec<u8>,
}

impl Document {
    /// The value of response header `name` (the first one).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The `Content-Type` header.
    pub fn content_type(&self) -> Option<&str> {
        self.header("content-type")
    }

    /// The media type, lowercase, without parameters (empty when none was sent).
    pub fn mime(&self) -> String {
        self.content_type()
            .map(|c| c.split(';').next().unwrap_or("").trim().to_ascii_lowercase())
            .unwrap_or_default()
    }

    /// Says whether a browser would render this as an HTML page: declared
    /// HTML, or nothing declared.
    pub fn is_html(&self) -> bool {
        matches!(self.mime().as_str(), "" | "text/html" | "application/xhtml+xml")
    }

    /// Says whether this is a PDF: by its type, or an untyped or binary
    /// download named `.pdf`, or bytes that start as one.
    pub fn is_pdf(&self) -> bool {
        let mime = self.mime();
        if mime == "application/pdf" || mime == "application/x-pdf" {
            return true;
        }
        let binary = mime.is_empty() || mime == "application/octet-stream" || mime == "binary/octet-stream";
        let named = |n: &str| {
            n.trim_matches(|c| c == '"' || c == '\'' || c == ' ')
                .to_ascii_lowercase()
                .ends_with(".pdf")
        };
        let by_name = self.header("content-disposition").is_some_and(|d| {
            d.split(';')
                .filter_map(|p| p.trim().split_once('='))
                .any(|(k, v)| k.trim().eq_ignore_ascii_case("filename") && named(v))
        }) || named(self.url.path());
        binary && (by_name || self.body.starts_with(b"%PDF-"))
    }

    /// The `Content-Disposition` when it makes the answer a download.
    pub fn attachment(&self) -> Option<&str> {
        self.header("content-disposition").filter(|d| {
            d.split(';')
                .next()
                .is_some_and(|kind| kind.trim().eq_ignore_ascii_case("attachment"))
        })
    }

    /// The body as text, decoded as a browser would (see [`charset`]).
    pub fn text(&self) -> String {
        decode_html(&self.body, self.content_type()).0
    }
}

/// The HTTP client that reads documents under the URL policy. Cheap to
/// share: connections are pooled per judged address.
#[derive(Debug, Clone)]
pub struct HttpClient {
    direct: reqwest::Client,
    pinned: Arc<Pinned>,
    resolver: Arc<dyn Resolver>,
}

/// The addresses the policy judged, per host name: the client's only DNS.
/// A name no hop judged does not resolve.
#[derive(Debug, Default)]
struct Pinned(Mutex<HashMap<String, Vec<SocketAddr>>>);

impl Resolve for Pinned {
    fn resolve(&self, name: Name) -> Resolving {
        let addrs = self
            .0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(name.as_str())
            .cloned();
        let host = name.as_str().to_owned();
        Box::pin(async move {
            match addrs {
                Some(addrs) => Ok(Box::new(addrs.into_iter()) as Addrs),
                None => Err(format!("{host} was not checked by the URL policy").into()),
            }
        })
    }
}

impl Default for HttpClient {
    fn default() -> Self {
        Self::new()
    }
}

impl HttpClient {
    /// A client resolving names with the system resolver.
    pub fn new() -> Self {
        Self::with_resolver(Arc::new(SystemResolver))
    }

    /// A client resolving names with `resolver` (each answer judged).
    pub fn with_resolver(resolver: Arc<dyn Resolver>) -> Self {
        let pinned = Arc::new(Pinned::default());
        let direct = build(&pinned, None).expect("the HTTP client builds: rustls with ring is compiled in");
        Self {
            direct,
            pinned,
            resolver,
        }
    }

    /// GETs the document `req` names, following redirects (each hop
    /// judged). A status of 400 or more (and 204/205, which hold no
    /// document) is an `http_status` error; a 304 to a conditional
    /// request is returned as it is.
    pub async fn get(&self, req: &DocumentRequest<'_>) -> Result<Document, HttpError> {
        let client = match &req.shape.proxy {
            None => self.direct.clone(),
            Some(proxy) => {
                build(&self.pinned, Some(proxy.0.as_str())).map_err(|e| HttpError::Connection {
                    url: req.url.to_string(),
                    message: format!("proxy {}: {e}", proxy.redacted()),
                })?
            }
        };
        let seen = Seen::default();
        let started = std::time::Instant::now();
        match tokio::time::timeout(req.timeout, self.get_inner(&client, req, &seen)).await {
            Ok(res) => res,
            Err(_) => Err(HttpError::Timeout {
                url: req.url.to_string(),
                timeout_ms: req.timeout.as_millis() as u64,
                seen: seen.describe(started.elapsed()),
            }),
        }
    }

    async fn get_inner(
        &self,
        client: &reqwest::Client,
        req: &DocumentRequest<'_>,
        seen: &Seen,
    ) -> Result<Document, HttpError> {
        let mut jar = Jar::new(req.url, &req.shape.cookies);
        let only = OneHost::new(req.url, req.shape);
        let mut current = req.url.clone();
        let mut redirects = Vec::new();
        for hop in 0..=req.max_redirects {
            self.judge(req.policy, &current).await?;
            if hop > 0
                && let Some(seen) = req.read_before
                && doc_key(&current) != doc_key(req.url)
                && seen.contains(&doc_key(&current))
            {
                return Err(HttpError::Cycle {
                    url: req.url.to_string(),
                    target: current.to_string(),
                });
            }
            let mut rb = client
                .get(current.clone())
                .header("accept", req.accept.unwrap_or(ACCEPT_DOCUMENT));
            let ua = req.shape.user_agent.as_deref().unwrap_or(if req.shape.mobile {
                MOBILE_USER_AGENT
            } else {
                DESKTOP_USER_AGENT
            });
            rb = rb.header("user-agent", ua);
            if let Some(locale) = &req.shape.locale {
                rb = rb.header("accept-language", accept_language(locale));
            }
            for (n, v) in only.headers_for(&current) {
                rb = rb.header(n, v);
            }
            if let Some(cookie) = jar.header_for(&current) {
                rb = rb.header("cookie", cookie);
            }
            if hop == 0 {
                for (n, v) in req.conditional {
                    rb = rb.header(n.as_str(), v.as_str());
                }
            }
            seen.body.store(0, Ordering::Relaxed);
            seen.head.store(false, Ordering::Relaxed);
            let resp = rb.send().await.map_err(|e| head_failure(&current, &e))?;
            seen.head.store(true, Ordering::Relaxed);
            let status = resp.status().as_u16();
            jar.store(&current, resp.headers());
            if (300..400).contains(&status) && status != 304 {
                if hop == req.max_redirects {
                    break;
                }
                current = next_hop(&current, resp.headers())?;
                redirects.push(current.to_string());
                continue;
            }
            if status >= 400 || status == 204 || status == 205 {
                let retry_after_s = resp
                    .headers()
                    .get("retry-after")
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| oxwright_jobs::parse_retry_after(v, chrono::Utc::now()));
                return Err(HttpError::Status {
                    url: current.to_string(),
                    status,
                    retry_after_s,
                });
            }
            let headers = header_list(resp.headers());
            let body = read_body(resp, &current, req.max_bytes, req.truncate, seen).await?;
            return Ok(Document {
                url: current,
                status,
                headers,
                redirects,
                body,
            });
        }
        Err(HttpError::Redirect {
            url: current.to_string(),
            reason: format!("more than {} redirects", req.max_redirects),
        })
    }

    /// Judges `url` and pins the addresses judged for its host name.
    async fn judge(&self, policy: &UrlPolicy, url: &Url) -> Result<(), HttpError> {
        let addrs = policy
            .resolve_checked(url, self.resolver.as_ref())
            .await
            .map_err(|source| HttpError::Policy {
                url: url.to_string(),
                source,
            })?;
        if let Some(url::Host::Domain(host)) = url.host() {
            self.pinned
                .0
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(host.to_owned(), addrs);
        }
        Ok(())
    }
}

/// Builds a client: no automatic redirects (each hop is judged here), the
/// judged addresses as its DNS, no proxy from the environment; or through
/// `proxy`, which then reaches the judged host by name (`http://`,
/// `socks5h://`) or at the judged address (`socks5://`, resolved by the
/// pinned DNS here).
fn build(pinned: &Arc<Pinned>, proxy: Option<&str>) -> Result<reqwest::Client, reqwest::Error> {
    // The ring provider backs rustls; a provider installed earlier by the process wins.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut b = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .dns_resolver(pinned.clone())
        .pool_idle_timeout(Duration::from_secs(30))
        .pool_max_idle_per_host(8);
    if let Some(p) = proxy {
        b = b.proxy(reqwest::Proxy::all(p)?);
    }
    b.build()
}

/// The extra headers and basic credentials of a shape, for their one host.
struct OneHost {
    host: String,
    headers: Vec<(String, String)>,
    auth: Option<(String, String)>,
}

impl OneHost {
    fn new(url: &Url, shape: &RequestShape) -> Self {
        let host = url.host_str().unwrap_or_default().to_ascii_lowercase();
        let auth = shape
            .basic_auth
            .as_ref()
            .map(|a| (a.authority(url), a.header_value()));
        Self {
            host,
            headers: shape
                .headers
                .iter()
                .map(|(n, v)| (n.clone(), v.clone()))
                .collect(),
            auth,
        }
    }

    fn headers_for(&self, url: &Url) -> Vec<(String, String)> {
        let host = url.host_str().unwrap_or_default().to_ascii_lowercase();
        let mut out = Vec::new();
        if host == self.host {
            out.extend(self.headers.iter().cloned());
        }
        if let Some((at, value)) = &self.auth
            && *at == format!("{host}:{}", url.port_or_known_default().unwrap_or(443))
        {
            out.push(("authorization".to_owned(), value.clone()));
        }
        out
    }
}

/// `de-DE` → `de-DE,de;q=0.9`, as Chromium sends a locale.
pub fn accept_language(locale: &str) -> String {
    let locale = locale.trim();
    match locale.split_once(['-', '_']) {
        Some((lang, _)) if !lang.is_empty() => format!("{locale},{lang};q=0.9"),
        _ => locale.to_owned(),
    }
}

fn next_hop(current: &Url, headers: &HeaderMap) -> Result<Url, HttpError> {
    let bad = |reason: &str| HttpError::Redirect {
        url: current.to_string(),
        reason: reason.to_string(),
    };
    let location = headers
        .get(LOCATION)
        .and_then(|v| v.to_str().ok())
        .ok_or_else(|| bad("redirect without a Location header"))?;
    let mut next = current
        .join(location.trim())
        .map_err(|_| bad("redirect to an unparsable Location"))?;
    // A fragment of the first URL survives a redirect without one.
    if next.fragment().is_none() {
        next.set_fragment(current.fragment());
    }
    Ok(next)
}

fn header_list(headers: &HeaderMap) -> Vec<(String, String)> {
    headers
        .iter()
        .map(|(n, v)| {
            (
                n.as_str().to_owned(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect()
}

async fn read_body(
    mut resp: reqwest::Response,
    url: &Url,
    max: usize,
    truncate: bool,
    seen: &Seen,
) -> Result<Vec<u8>, HttpError> {
    let too_large = |_seen: u64| HttpError::TooLarge {
        url: url.to_string(),
        limit: max,
    };
    // A declared length counts only when the body is not compressed (it
    // then names the bytes that follow, not the decoded ones).
    if !truncate
        && resp.headers().get("content-encoding").is_none()
        && let Some(n) = resp.content_length().filter(|n| *n > max as u64)
    {
        return Err(too_large(n));
    }
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(|e| transport(url, &e))? {
        seen.body.fetch_add(chunk.len() as u64, Ordering::Relaxed);
        if body.len() + chunk.len() > max {
            if truncate {
                body.extend_from_slice(&chunk[..max - body.len()]);
                return Ok(body);
            }
            return Err(too_large((body.len() + chunk.len()) as u64));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// How far the answer of the hop being read had come: whether its
/// response head was whole, and the body bytes (as decoded) since.
#[derive(Debug, Default)]
struct Seen {
    head: AtomicBool,
    body: AtomicU64,
}

impl Seen {
    /// What the server had sent in `elapsed`, in words.
    fn describe(&self, elapsed: Duration) -> String {
        let secs = elapsed.as_secs_f64();
        if self.head.load(Ordering::Relaxed) {
            format!(
                "the server had sent its response head and {} bytes of its body in {secs:.1} s, and the body \
                 was not yet whole",
                self.body.load(Ordering::Relaxed)
            )
        } else {
            format!("the server had sent no whole response head in {secs:.1} s")
        }
    }
}

/// A failure before the response head was read: what the server did
/// wrong, in words, when it answered but not in HTTP; else as
/// [`transport`] says.
fn head_failure(url: &Url, err: &reqwest::Error) -> HttpError {
    let mut source = std::error::Error::source(err);
    while let Some(s) = source {
        if let Some(h) = s.downcast_ref::<hyper::Error>() {
            // `is_parse_too_large` exists only with hyper's server side.
            let why = if h.is_parse() && h.to_string().contains("too large") {
                Some("the server's response headers were too large")
            } else if h.is_parse() {
                Some("the server's response was not HTTP")
            } else if h.is_incomplete_message() {
                Some("the server closed the connection without a response")
            } else {
                None
            };
            if let Some(why) = why {
                return HttpError::Connection {
                    url: url.to_string(),
                    message: why.into(),
                };
            }
        }
        source = s.source();
    }
    transport(url, err)
}

/// A failure on the wire, named for the party that failed.
fn transport(url: &Url, err: &reqwest::Error) -> HttpError {
    let mut message = err.to_string();
    let mut source = std::error::Error::source(err);
    while let Some(s) = source {
        message.push_str(": ");
        message.push_str(&s.to_string());
        source = s.source();
    }
    HttpError::Connection {
        url: url.to_string(),
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locales_become_accept_language() {
        assert_eq!(accept_language("de-DE"), "de-DE,de;q=0.9");
        assert_eq!(accept_language("fr"), "fr");
    }

    #[test]
    fn headers_and_credentials_go_to_their_host_only() {
        let url = Url::parse("http://a.example:8080/x").unwrap();
        let mut shape = RequestShape::default();
        shape.headers.insert("X-Team".into(), "blue".into());
        shape.basic_auth = Some(oxwright_jobs::BasicAuth {
            username: "u".into(),
            password: "p".into(),
            host: None,
        });
        let only = OneHost::new(&url, &shape);
        let here = only.headers_for(&url);
        assert!(here.iter().any(|(n, _)| n == "X-Team"));
        assert!(
            here.iter()
                .any(|(n, v)| n == "authorization" && v == "Basic dTpw")
        );
        let elsewhere = only.headers_for(&Url::parse("http://b.example:8080/").unwrap());
        assert!(elsewhere.is_empty(), "{elsewhere:?}");
        let other_port = only.headers_for(&Url::parse("http://a.example:9090/").unwrap());
        assert!(other_port.iter().all(|(n, _)| n != "authorization"));
    }
}
