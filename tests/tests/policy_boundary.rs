//! The URL policy as a boundary: hostile pages on the one allowed loopback
//! origin try every way out to a canary on a second loopback port — which
//! must never receive a TCP connection — and every fetch must end with a
//! typed warning or `policy_denied`, never a silent `ok`.

mod common;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::pool_config;
use oxwright_browser::{BrowserPool, UrlPolicy};
use oxwright_fetch::fetch_page;
use oxwright_jobs::{ErrorKind, FetchSpec, Frames, WaitUntil};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// A listener that records every connection it accepts and what arrived first.
struct Canary {
    addr: SocketAddr,
    seen: Arc<Mutex<Vec<String>>>,
}

impl Canary {
    async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("canary binds");
        let addr = listener.local_addr().expect("canary addr");
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        tokio::spawn(async move {
            while let Ok((mut s, peer)) = listener.accept().await {
                let log = log.clone();
                let index = {
                    let mut log = log.lock().unwrap();
                    log.push(format!("connection from {peer}"));
                    log.len() - 1
                };
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 512];
                    if let Ok(Ok(n)) = tokio::time::timeout(Duration::from_secs(2), s.read(&mut buf)).await {
                        let first = String::from_utf8_lossy(&buf[..n]);
                        let line = first.lines().next().unwrap_or_default().to_string();
                        log.lock().unwrap()[index] = format!("connection from {peer}: {line}");
                    }
                    let _ = s
                        .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nno")
                        .await;
                });
            }
        });
        Self { addr, seen }
    }

    fn seen(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }
}

/// Pages by path: content type (or `redirect:`) and body (or location).
type Pages = BTreeMap<String, (&'static str, String)>;

/// The allowed origin: serves fixed pages by path.
async fn site(pages: Pages) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("site binds");
    let addr = listener.local_addr().expect("site addr");
    let pages = Arc::new(pages);
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            let pages = pages.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                    match s.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
                let head = String::from_utf8_lossy(&buf).to_string();
                let target = head.split_whitespace().nth(1).unwrap_or("/").to_string();
                let path = target.split('?').next().unwrap_or("/").to_string();
                if std::env::var_os("BOUNDARY_DEBUG").is_some() {
                    eprintln!("  site: {}", head.lines().next().unwrap_or_default());
                }
                let resp = match pages.get(&path) {
                    Some((ctype, body)) if ctype.starts_with("redirect:") => format!(
                        "HTTP/1.1 302 Found\r\nLocation: {body}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                    ),
                    Some((ctype, body)) => format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n{body}",
                        body.len()
                    ),
                    None => {
                        "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_string()
                    }
                };
                let _ = s.write_all(resp.as_bytes()).await;
            });
        }
    });
    addr
}

/// Wraps `body` in a page that marks itself done after `ms`.
fn page(body: &str, ms: u32) -> (&'static str, String) {
    (
        "text/html; charset=utf-8",
        format!(
            "<!doctype html><html><head><title>vector</title></head><body><h1>Vector page</h1>\
             <p>Some text so the page is not empty.</p>{body}\
             <script>setTimeout(() => {{ const d = document.createElement('div'); d.id = 'done'; \
             d.textContent = 'done'; document.body.appendChild(d); }}, {ms});</script></body></html>"
        ),
    )
}

/// Every vector of the issue, as (name, path) on the allowed origin.
fn vectors(b: SocketAddr) -> (Vec<(&'static str, &'static str)>, Pages) {
    let mut pages = BTreeMap::new();
    let mut add = |path: &str, content: (&'static str, String)| {
        pages.insert(path.to_string(), content);
    };
    let js = "application/javascript";
    add(
        "/websocket",
        page(
            &format!("<script>try {{ new WebSocket('ws://{b}/ws'); }} catch (e) {{}}</script>"),
            1500,
        ),
    );
    add(
        "/shared-worker.js",
        (
            js,
            format!("fetch('http://{b}/from-shared-worker').catch(() => {{}}); onconnect = () => {{}};"),
        ),
    );
    add(
        "/shared-worker",
        page("<script>new SharedWorker('/shared-worker.js');</script>", 2000),
    );
    add(
        "/service-worker.js",
        (
            js,
            format!(
                "self.addEventListener('install', e => e.waitUntil(fetch('http://{b}/from-service-worker').catch(() => {{}})));"
            ),
        ),
    );
    add(
        "/service-worker",
        page(
            "<p id='sw'>sw: none</p><script>const sw = document.getElementById('sw'); \
             if (navigator.serviceWorker) navigator.serviceWorker.register('/service-worker.js') \
             .then(r => { sw.textContent = 'sw: registered ' + !!(r.installing || r.waiting || r.active); }) \
             .catch(e => { sw.textContent = 'sw: failed ' + e; }); else sw.textContent = 'sw: unavailable'; \
             setTimeout(() => { if (sw.textContent === 'sw: none') sw.textContent = 'sw: pending ' + typeof navigator.serviceWorker; }, 1000);</script>",
            6000,
        ),
    );
    add(
        "/window-open",
        page(
            &format!("<script>window.open('http://{b}/window-open');</script>"),
            2000,
        ),
    );
    add(
        "/popup-inner",
        page(
            &format!(
                "<img src='http://{b}/popup-img.png'><script>fetch('http://{b}/popup-fetch').catch(() => {{}});</script>"
            ),
            500,
        ),
    );
    add(
        "/popup-of-allowed",
        page("<script>window.open('/popup-inner');</script>", 2500),
    );
    add(
        "/blank-link",
        page(
            &format!(
                "<a id='l' href='http://{b}/blank-link' target='_blank'>out</a><script>document.getElementById('l').click();</script>"
            ),
            2000,
        ),
    );
    add(
        "/speculation-prefetch",
        page(
            &format!(
                "<script type='speculationrules'>{{\"prefetch\": [{{\"source\": \"list\", \"urls\": [\"http://{b}/prefetch\"]}}]}}</script>\
                 <a href='http://{b}/prefetch'>next</a>"
            ),
            2000,
        ),
    );
    add(
        "/speculation-prerender",
        page(
            &format!(
                "<script type='speculationrules'>{{\"prerender\": [{{\"source\": \"list\", \"urls\": [\"http://{b}/prerender\"]}}]}}</script>\
                 <a href='http://{b}/prerender'>next</a>"
            ),
            2000,
        ),
    );
    add(
        "/iframe",
        page(&format!("<iframe src='http://{b}/iframe'></iframe>"), 1500),
    );
    add(
        "/object",
        page(
            &format!("<object data='http://{b}/object' type='text/html'></object>"),
            1500,
        ),
    );
    add(
        "/form",
        page(
            &format!(
                "<form id='f' method='post' action='http://{b}/form'><input name='a' value='1'></form><script>document.getElementById('f').submit();</script>"
            ),
            1500,
        ),
    );
    add(
        "/js-location",
        page(
            &format!(
                "<script>setTimeout(() => {{ location.href = 'http://{b}/js-location'; }}, 100);</script>"
            ),
            3000,
        ),
    );
    add(
        "/meta-refresh",
        page(
            &format!("<meta http-equiv='refresh' content='0;url=http://{b}/meta-refresh'>"),
            3000,
        ),
    );
    add(
        "/preconnect",
        page(
            &format!(
                "<link rel='preconnect' href='http://{b}'><link rel='preconnect' href='https://{b}'>\
                 <link rel='dns-prefetch' href='http://{b}'><link rel='preload' as='image' href='http://{b}/preload.png'>"
            ),
            1500,
        ),
    );
    add(
        "/preconnect-only",
        page(
            &format!(
                "<link rel='preconnect' href='http://{b}'><link rel='preconnect' href='https://{b}'>\
                 <link rel='dns-prefetch' href='http://{b}'><link rel='dns-prefetch' href='//{b}'>"
            ),
            1500,
        ),
    );
    add("/redirect", ("redirect:", format!("http://{b}/redirected")));
    let list = vec![
        ("websocket", "/websocket"),
        ("shared worker", "/shared-worker"),
        ("service worker", "/service-worker"),
        ("window.open", "/window-open"),
        ("popup of an allowed page", "/popup-of-allowed"),
        ("target=_blank link", "/blank-link"),
        ("speculation rules prefetch", "/speculation-prefetch"),
        ("speculation rules prerender", "/speculation-prerender"),
        ("iframe", "/iframe"),
        ("object", "/object"),
        ("auto-submitted form", "/form"),
        ("js location", "/js-location"),
        ("meta refresh", "/meta-refresh"),
        ("preconnect, dns-prefetch, preload", "/preconnect"),
        ("preconnect, dns-prefetch only", "/preconnect-only"),
        ("redirect", "/redirect"),
    ];
    (list, pages)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_vector_reaches_the_canary_and_none_ends_silently() {
    let canary = Canary::start().await;
    let (list, pages) = vectors(canary.addr);
    let a = site(pages).await;
    let pool = BrowserPool::start(pool_config())
        .await
        .expect("chromium starts (apt-get install chromium)");
    let policy = Arc::new(UrlPolicy::allowing([a.to_string().parse().unwrap()]));
    let mut silent = Vec::new();
    let only = std::env::var("BOUNDARY_ONLY").ok();
    for (name, path) in &list {
        if only.as_deref().is_some_and(|o| !path.contains(o)) {
            continue;
        }
        let mut spec = FetchSpec::new(format!("http://{a}{path}").parse().unwrap());
        spec.timeout_ms = 10_000;
        spec.retry_count = 0;
        // The boundary must hold for frames that load too (a fetch skips
        // them by default, which would leave the iframe vector untried).
        spec.frames = Frames::Load;
        if !matches!(*path, "/redirect" | "/form") {
            spec.wait_for = Some("#done".into());
        }
        match fetch_page(&pool, &policy, &spec).await {
            Ok(out) => {
                let warned = out
                    .result
                    .warnings
                    .iter()
                    .any(|w| w.contains("url policy refused"));
                eprintln!("{name}: ok, warnings {:?}", out.result.warnings);
                // The service worker must really start (its install-time
                // fetch is the vector), not stay registered-but-held.
                if *path == "/service-worker" && !out.result.markdown.contains("sw: registered") {
                    silent.push(format!(
                        "{name}: the worker never started: {}",
                        out.result.markdown
                    ));
                }
                if !warned {
                    silent.push(format!("{name}: ok without a policy warning"));
                }
            }
            Err(err) => {
                eprintln!("{name}: {:?} {err}", err.kind);
                if err.kind != ErrorKind::PolicyDenied {
                    silent.push(format!("{name}: ended {:?} ({err}), not policy_denied", err.kind));
                }
            }
        }
    }
    // Hints are read while `load` is awaited too (at DOMContentLoaded).
    if only.is_none() {
        for path in ["/preconnect-only", "/speculation-prefetch"] {
            let mut spec = FetchSpec::new(format!("http://{a}{path}").parse().unwrap());
            spec.timeout_ms = 10_000;
            spec.retry_count = 0;
            spec.wait_until = WaitUntil::Load;
            let out = fetch_page(&pool, &policy, &spec).await.expect(path);
            if !out
                .result
                .warnings
                .iter()
                .any(|w| w.contains("url policy refused"))
            {
                silent.push(format!("{path} (load): ok without a policy warning"));
            }
        }
    }
    // Late connections (a prefetch, a worker) get time to show up.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    pool.shutdown().await;
    let seen = canary.seen();
    assert!(seen.is_empty(), "the canary received connections: {seen:#?}");
    assert!(silent.is_empty(), "vectors without a typed outcome: {silent:#?}");
}

/// Speculative loads are switched off, not merely refused: with the canary
/// allowed by the policy, speculation rules, preconnect and DNS prefetch
/// hints still make no connection to it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn speculative_loads_are_off_even_where_allowed() {
    let canary = Canary::start().await;
    let (_, pages) = vectors(canary.addr);
    let a = site(pages).await;
    let pool = BrowserPool::start(pool_config())
        .await
        .expect("chromium starts (apt-get install chromium)");
    let policy = Arc::new(UrlPolicy::allowing([
        a.to_string().parse().unwrap(),
        canary.addr.to_string().parse().unwrap(),
    ]));
    for path in [
        "/speculation-prefetch",
        "/speculation-prerender",
        "/preconnect-only",
    ] {
        let mut spec = FetchSpec::new(format!("http://{a}{path}").parse().unwrap());
        spec.timeout_ms = 10_000;
        spec.retry_count = 0;
        spec.wait_for = Some("#done".into());
        let out = fetch_page(&pool, &policy, &spec).await.expect(path);
        assert!(
            out.result.warnings.iter().all(|w| !w.contains("url policy")),
            "{path}: {:?}",
            out.result.warnings
        );
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    pool.shutdown().await;
    let seen = canary.seen();
    assert!(seen.is_empty(), "speculative loads reached the canary: {seen:#?}");
}
