//! The URL policy on page fetches: refused input URLs, refused redirect
//! targets (metadata address, another loopback port) and what
//! `allow_private` lets through.

mod common;

use std::sync::Arc;

use common::{Env, redirect_to};
use oxwright_browser::UrlPolicy;
use oxwright_fetch::fetch_page;
use oxwright_fixtures::{FixtureServer, markers};
use oxwright_jobs::{ErrorKind, FetchSpec};
use oxwright_policy::PolicyError;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn non_http_schemes_are_refused_at_parse_time() {
    let env = Env::start().await;
    for input in ["file:///etc/passwd", "data:text/html,x", "javascript:alert(1)"] {
        let err = env.policy.parse_input(input).unwrap_err();
        assert!(matches!(err, PolicyError::Scheme { .. }), "{input}: {err:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn private_input_urls_are_refused_before_browser_work() {
    let env = Env::start().await;
    let leases_before = env.pool.stats().leases;
    let localhost = format!("http://localhost:{}/", env.site.addr().port());
    for input in ["http://169.254.169.254/latest/meta-data/", localhost.as_str()] {
        let mut spec = FetchSpec::new(input.parse().unwrap());
        spec.retry_count = 2;
        spec.retry_delay_ms = 10;
        let err = fetch_page(&env.pool, &env.policy, &spec).await.expect_err(input);
        assert_eq!(err.kind, ErrorKind::PolicyDenied, "{input}: {err}");
        assert_eq!(err.attempts, 1, "{input}");
    }
    assert_eq!(
        env.pool.stats().leases,
        leases_before,
        "a refused input url took a browser page"
    );
    assert!(
        env.site.requests().is_empty(),
        "fixture server was reached: {:?}",
        env.site.requests()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redirect_to_metadata_address_is_refused_without_retry() {
    let env = Env::start().await;
    let target = "http://169.254.169.254/";
    let path = redirect_to(target);
    let mut spec = env.spec(&path);
    spec.retry_count = 3;
    let err = fetch_page(&env.pool, &env.policy, &spec).await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::PolicyDenied, "{err}");
    assert_eq!(err.url.as_deref(), Some(target));
    assert!(err.to_string().contains(target), "{err}");
    assert_eq!(err.attempts, 1);
    assert_eq!(env.site.hits("/redirect/to"), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redirect_to_another_loopback_port_is_refused_unless_private_allowed() {
    let env = Env::start().await;
    let other = FixtureServer::start().await.expect("second fixture server");
    let target = other.url("/redirect/final");
    let path = redirect_to(&target);

    let mut spec = env.spec(&path);
    spec.retry_count = 2;
    let err = fetch_page(&env.pool, &env.policy, &spec).await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::PolicyDenied, "{err}");
    assert_eq!(err.url.as_deref(), Some(target.as_str()));
    assert_eq!(err.attempts, 1);
    assert!(
        other.requests().is_empty(),
        "second server was reached: {:?}",
        other.requests()
    );

    let open = Arc::new(UrlPolicy {
        allow_private: true,
        allow_hosts: Vec::new(),
    });
    let r = fetch_page(&env.pool, &open, &spec)
        .await
        .expect("allow_private lets the redirect through")
        .result;
    assert_eq!(r.final_url, target);
    assert_eq!(r.status, 200);
    assert!(
        r.markdown.contains(markers::REDIRECT_FINAL_CONTENT),
        "{}",
        r.markdown
    );
    assert_eq!(other.hits("/redirect/final"), 1);
}
