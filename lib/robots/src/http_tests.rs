//! The real fetcher against an in-process server on loopback: answers,
//! redirect chains up to the RFC's five hops, the size cap, statuses,
//! an address nobody listens on, and the URL policy.

use std::net::SocketAddr;
use std::sync::Mutex;

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use super::*;
use crate::{RobotsCache, RobotsConfig};

/// The `User-Agent` headers the server saw.
type Seen = Arc<Mutex<Vec<String>>>;

const ROBOTS: &str =
    "User-agent: *\nDisallow: /private\n\nUser-agent: oxwright\nDisallow: /ox-only\nCrawl-delay: 1\n";

async fn robots(State(seen): State<Seen>, headers: HeaderMap) -> Response {
    let ua = headers
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    seen.lock().unwrap().push(ua.to_owned());
    ([(header::CACHE_CONTROL, "public, max-age=120")], ROBOTS).into_response()
}

/// `/hop/N` redirects to `/hop/N-1`, and `/hop/0` to `/robots.txt`.
async fn hop(Path(n): Path<u32>) -> Response {
    let next = if n == 0 {
        "/robots.txt".to_owned()
    } else {
        format!("/hop/{}", n - 1)
    };
    (StatusCode::MOVED_PERMANENTLY, [(header::LOCATION, next)]).into_response()
}

/// A file over the cap: a rule at the start, one past 500 KiB.
async fn big() -> String {
    let mut body = String::from("User-agent: *\nDisallow: /early\n");
    while body.len() < MAX_ROBOTS_BYTES + 10_000 {
        body.push_str("# padding padding padding padding padding padding\n");
    }
    body.push_str("Disallow: /late\n");
    body
}

async fn serve() -> (SocketAddr, Seen) {
    let seen = Seen::default();
    let app = Router::new()
        .route("/robots.txt", get(robots))
        .route("/hop/{n}", get(hop))
        .route("/big.txt", get(big))
        .route("/gone.txt", get(|| async { StatusCode::NOT_FOUND }))
        .route("/down.txt", get(|| async { StatusCode::SERVICE_UNAVAILABLE }))
        .with_state(seen.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (addr, seen)
}

fn fetcher(addr: SocketAddr) -> HttpRobotsFetcher {
    let policy = UrlPolicy::allowing([addr.to_string().parse().unwrap()]);
    HttpRobotsFetcher::new(HttpClient::new(), Arc::new(policy))
}

fn at(addr: SocketAddr, path: &str) -> Url {
    Url::parse(&format!("http://{addr}{path}")).unwrap()
}

#[tokio::test]
async fn reads_the_file_its_status_and_cache_control() {
    let (addr, seen) = serve().await;
    let got = fetcher(addr).fetch(&at(addr, "/robots.txt")).await.unwrap();
    assert_eq!(got.status, 200);
    assert_eq!(got.body, ROBOTS.as_bytes());
    assert_eq!(got.cache_control.as_deref(), Some("public, max-age=120"));
    assert_eq!(*seen.lock().unwrap(), [DEFAULT_ROBOTS_HTTP_USER_AGENT]);
}

#[tokio::test]
async fn sends_the_configured_user_agent() {
    let (addr, seen) = serve().await;
    let f = fetcher(addr).with_user_agent("oxwright/9 (+https://crawler.example)");
    f.fetch(&at(addr, "/robots.txt")).await.unwrap();
    assert_eq!(*seen.lock().unwrap(), ["oxwright/9 (+https://crawler.example)"]);
}

#[tokio::test]
async fn follows_five_redirects_and_no_more() {
    let (addr, _) = serve().await;
    // /hop/4 .. /hop/0, then /robots.txt: five redirects.
    let got = fetcher(addr).fetch(&at(addr, "/hop/4")).await.unwrap();
    assert_eq!(got.body, ROBOTS.as_bytes());
    let err = fetcher(addr).fetch(&at(addr, "/hop/5")).await.unwrap_err();
    assert!(matches!(err, FetchError::Redirect { .. }), "{err:?}");
    assert!(!err.is_retryable());
}

#[tokio::test]
async fn keeps_the_first_500_kib_of_a_larger_file() {
    let (addr, _) = serve().await;
    let got = fetcher(addr).fetch(&at(addr, "/big.txt")).await.unwrap();
    assert_eq!(got.body.len(), MAX_ROBOTS_BYTES);
    let r = crate::Robots::parse(&got.body, &at(addr, "/robots.txt"), "oxwright", got.status);
    assert!(!r.allowed(&at(addr, "/early")));
    assert!(r.allowed(&at(addr, "/late")));
}

#[tokio::test]
async fn error_statuses_are_answers() {
    let (addr, _) = serve().await;
    let f = fetcher(addr);
    assert_eq!(
        f.fetch(&at(addr, "/gone.txt")).await.unwrap(),
        RobotsResponse::status(404)
    );
    assert_eq!(
        f.fetch(&at(addr, "/down.txt")).await.unwrap(),
        RobotsResponse::status(503)
    );
}

#[tokio::test]
async fn a_closed_port_is_unreachable() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let err = fetcher(addr).fetch(&at(addr, "/robots.txt")).await.unwrap_err();
    assert!(matches!(err, FetchError::Unreachable { .. }), "{err:?}");
    assert!(err.is_retryable());
}

#[tokio::test]
async fn the_url_policy_is_applied() {
    let (addr, seen) = serve().await;
    // The default policy refuses loopback before any connection.
    let f = HttpRobotsFetcher::new(HttpClient::new(), Arc::new(UrlPolicy::default()));
    let err = f.fetch(&at(addr, "/robots.txt")).await.unwrap_err();
    assert!(matches!(err, FetchError::Refused { .. }), "{err:?}");
    assert_eq!(err.kind(), oxwright_jobs::ErrorKind::PolicyDenied);
    assert!(seen.lock().unwrap().is_empty());
}

#[tokio::test]
async fn the_cache_over_the_real_fetcher() {
    let (addr, seen) = serve().await;
    let cache = RobotsCache::new(Arc::new(fetcher(addr)), RobotsConfig::default()).unwrap();
    assert!(!cache.allowed(&at(addr, "/ox-only/a")).await.unwrap());
    assert!(
        cache.allowed(&at(addr, "/private/a")).await.unwrap(),
        "the oxwright group replaces `*`"
    );
    let r = cache.robots_for(&at(addr, "/")).await.unwrap();
    assert_eq!(r.crawl_delay(), Some(Duration::from_secs(1)));
    assert_eq!(seen.lock().unwrap().len(), 1);
}

/// What every fetcher does: the file where there is one (body and
/// caching header as served), a 404 as an answer where there is none.
async fn fetcher_suite(f: &dyn RobotsFetcher, present: &Url, missing: &Url) {
    let got = f.fetch(present).await.unwrap();
    assert_eq!(got.status, 200);
    assert_eq!(got.body, ROBOTS.as_bytes());
    assert_eq!(got.cache_control.as_deref(), Some("public, max-age=120"));
    assert_eq!(f.fetch(missing).await.unwrap(), RobotsResponse::status(404));
}

#[tokio::test]
async fn the_real_and_the_memory_fetcher_pass_one_suite() {
    let (addr, _) = serve().await;
    let present = at(addr, "/robots.txt");
    let missing = at(addr, "/nothing/robots.txt");
    fetcher_suite(&fetcher(addr), &present, &missing).await;
    let memory = crate::MemoryRobotsFetcher::new();
    memory.set(
        &present,
        Ok(RobotsResponse::ok(ROBOTS).with_cache_control("public, max-age=120")),
    );
    fetcher_suite(&memory, &present, &missing).await;
}
