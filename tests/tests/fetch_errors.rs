//! Page-fetch failures against real Chromium and the fixture site: retries
//! and backoff, HTTP errors, non-HTML documents, timeouts, missing selectors,
//! refused connections, cut bodies, 204s and downloads, each with its typed
//! error kind; failures a second attempt cannot change are tried once.

mod common;

use std::time::{Duration, Instant};

use common::{Env, closed_port, policy_allowing};
use oxwright_fetch::fetch_page;
use oxwright_fixtures::markers;
use oxwright_jobs::ErrorKind;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_failures_then_success_counts_three_attempts() {
    let env = Env::start().await;
    let mut spec = env.spec("/flaky/errors-fail-twice?fail=2");
    spec.retry_count = 3;
    spec.retry_delay_ms = 10;
    let r = fetch_page(&env.pool, &env.policy, &spec)
        .await
        .expect("third attempt succeeds")
        .result;
    assert_eq!(r.attempts, 3);
    assert_eq!(r.status, 200);
    assert!(r.markdown.contains(markers::FLAKY_OK), "{}", r.markdown);
    assert_eq!(env.site.hits("/flaky/errors-fail-twice"), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exhausted_retries_give_the_last_http_status() {
    let env = Env::start().await;
    let mut spec = env.spec("/flaky/errors-exhaust?fail=5");
    spec.retry_count = 2;
    spec.retry_delay_ms = 10;
    let err = fetch_page(&env.pool, &env.policy, &spec).await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::HttpStatus, "{err}");
    assert_eq!(err.status, Some(503));
    assert_eq!(err.attempts, 3);
    let text = err.to_string();
    assert!(text.contains("503"), "display lacks the status: {text}");
    assert!(
        text.contains("after 3 attempts"),
        "display lacks attempts: {text}"
    );
    assert_eq!(env.site.hits("/flaky/errors-exhaust"), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn too_many_requests_is_retried_not_found_is_not() {
    let env = Env::start().await;
    let mut spec = env.spec("/flaky/errors-429?fail=1&status=429");
    spec.retry_count = 2;
    let r = fetch_page(&env.pool, &env.policy, &spec)
        .await
        .expect("429 is retried")
        .result;
    assert_eq!(r.attempts, 2);
    assert_eq!(env.site.hits("/flaky/errors-429"), 2);

    let mut spec = env.spec("/flaky/errors-404?fail=5&status=404");
    spec.retry_count = 3;
    let err = fetch_page(&env.pool, &env.policy, &spec).await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::HttpStatus, "{err}");
    assert_eq!(err.status, Some(404));
    assert_eq!(err.attempts, 1);
    assert_eq!(env.site.hits("/flaky/errors-404"), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backoff_grows_exponentially() {
    let env = Env::start().await;
    let mut spec = env.spec("/flaky/errors-backoff?fail=2");
    spec.retry_count = 3;
    spec.retry_delay_ms = 200;
    let started = Instant::now();
    let r = fetch_page(&env.pool, &env.policy, &spec)
        .await
        .expect("third attempt succeeds")
        .result;
    let elapsed = started.elapsed();
    assert_eq!(r.attempts, 3);
    // 200 ms before the second attempt, 400 ms before the third.
    assert!(
        elapsed >= Duration::from_millis(600),
        "elapsed {elapsed:?} < 600 ms"
    );
    assert!(r.timings.total_ms >= 600.0, "total_ms {}", r.timings.total_ms);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn non_html_documents_are_refused_without_retry() {
    let env = Env::start().await;
    for (path, mime) in [
        ("/data.json", "application/json"),
        ("/image.png", "image/png"),
        ("/plain.txt", "text/plain"),
    ] {
        let mut spec = env.spec(path);
        spec.retry_count = 3;
        let err = fetch_page(&env.pool, &env.policy, &spec).await.expect_err(path);
        assert_eq!(err.kind, ErrorKind::NonHtml, "{path}: {err}");
        let content_type = err.content_type.clone().unwrap_or_default();
        assert!(
            content_type.starts_with(mime),
            "{path}: content type {content_type:?}"
        );
        assert_eq!(err.attempts, 1, "{path}");
        assert_eq!(env.site.hits(path), 1, "{path}: retried");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_page_times_out_and_is_retried() {
    let env = Env::start().await;
    let mut spec = env.spec("/slow?ms=5000");
    spec.timeout_ms = 800;
    spec.retry_count = 1;
    let err = fetch_page(&env.pool, &env.policy, &spec).await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::Timeout, "{err}");
    assert_eq!(err.attempts, 2);
    assert_eq!(env.site.hits("/slow"), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_selector_is_a_wait_for_timeout() {
    let env = Env::start().await;
    let mut spec = env.spec("/");
    spec.wait_for = Some("#never-there".into());
    spec.timeout_ms = 1_500;
    spec.retry_count = 0;
    let err = fetch_page(&env.pool, &env.policy, &spec).await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::WaitForTimeout, "{err}");
    assert!(err.message.contains("#never-there"), "{err}");
    assert_eq!(err.attempts, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_selector_that_never_appears_is_tried_once_and_says_why() {
    let env = Env::start().await;
    let mut spec = env.spec("/flaky/errors-wait-for?fail=0");
    spec.wait_for = Some("#never-there".into());
    spec.timeout_ms = 1_000;
    spec.retry_count = 3;
    spec.retry_delay_ms = 10;
    let started = Instant::now();
    let err = fetch_page(&env.pool, &env.policy, &spec).await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::WaitForTimeout, "{err}");
    assert_eq!(err.attempts, 1, "{err}");
    assert_eq!(env.site.hits("/flaky/errors-wait-for"), 1, "retried: {err}");
    assert!(err.message.contains("not retried"), "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?} for a 1 s limit",
        started.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unsafe_port_is_refused_once_with_a_hint() {
    let env = Env::start().await;
    // 6000 is X11's port, on Chromium's list of ports it never connects to.
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], 6000));
    let policy = policy_allowing(&[addr]);
    let mut spec = oxwright_jobs::FetchSpec::new(format!("http://{addr}/").parse().unwrap());
    spec.retry_count = 2;
    spec.retry_delay_ms = 10;
    spec.timeout_ms = 15_000;
    let err = fetch_page(&env.pool, &policy, &spec).await.unwrap_err();
    assert!(err.message.contains("ERR_UNSAFE_PORT"), "{err}");
    assert_eq!(err.kind, ErrorKind::InvalidInput, "{err}");
    assert_eq!(err.attempts, 1, "{err}");
    assert!(err.message.contains("another port"), "{err}");
    assert!(err.message.contains("not retried"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_connection_is_a_retried_connection_error() {
    let env = Env::start().await;
    let port = closed_port();
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let policy = policy_allowing(&[addr]);
    let mut spec = oxwright_jobs::FetchSpec::new(format!("http://{addr}/").parse().unwrap());
    spec.retry_count = 2;
    spec.retry_delay_ms = 10;
    spec.timeout_ms = 15_000;
    let err = fetch_page(&env.pool, &policy, &spec).await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::Connection, "{err}");
    assert!(err.message.contains("CONNECTION_REFUSED"), "{err}");
    assert_eq!(err.attempts, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dialogs_are_answered_and_reported_not_waited_out() {
    let env = Env::start().await;
    let mut spec = env.spec("/dialogs");
    spec.timeout_ms = 8_000;
    spec.retry_count = 0;
    let started = Instant::now();
    let r = fetch_page(&env.pool, &env.policy, &spec)
        .await
        .expect("a page with an alert and a confirm before load is read")
        .result;
    assert!(
        started.elapsed() < Duration::from_secs(6),
        "{:?}",
        started.elapsed()
    );
    assert!(
        r.markdown.contains("only parsed once the alert"),
        "{}",
        r.markdown
    );
    let dialogs: Vec<&String> = r.warnings.iter().filter(|w| w.contains("dialog")).collect();
    assert!(
        dialogs
            .iter()
            .any(|w| w.contains("alert") && w.contains("Welcome to the dialog page")),
        "{:?}",
        r.warnings
    );
    assert!(
        dialogs
            .iter()
            .any(|w| w.contains("confirm") && w.contains("dismissed")),
        "{:?}",
        r.warnings
    );
}

/// A navigation that timed out leaves the page usable: the next navigation
/// reads its own document, not the late response of the one before — right
/// away and after that response has arrived.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timed_out_navigation_does_not_poison_the_next_one() {
    use oxwright_engine::{BrowserEngine as _, EngineErrorKind, GotoOptions, OpenOptions};
    let env = Env::start().await;
    let page = env
        .pool
        .open(&OpenOptions::new(env.policy.clone()))
        .await
        .unwrap();
    let base = url::Url::parse(&env.site.url("/")).unwrap();
    let stall = base.join("/stall?ms=1500").unwrap();
    let err = page
        .goto(&stall, &GotoOptions::load(Duration::from_millis(400)))
        .await
        .unwrap_err();
    assert_eq!(err.kind, EngineErrorKind::Timeout, "{err}");
    for (round, path) in ["/app/login", "/app/search"].into_iter().enumerate() {
        let url = base.join(path).unwrap();
        // The app's pages render their form from a script.
        let form = GotoOptions {
            wait_for: Some("form".into()),
            ..GotoOptions::load(Duration::from_secs(10))
        };
        let nav = page
            .goto(&url, &form)
            .await
            .unwrap_or_else(|e| panic!("round {round}: {path}: {e}"));
        assert_eq!(nav.status, 200, "round {round}: {nav:?}");
        assert!(
            page.url().await.unwrap().ends_with(path),
            "round {round}: {}",
            page.url().await.unwrap()
        );
        let html = page.html().await.unwrap();
        assert!(
            html.contains("<form"),
            "round {round}: {path} read as {html:.300}"
        );
        // Let the stalled response arrive before the second round.
        tokio::time::sleep(Duration::from_millis(1_500)).await;
    }
    // A document read before its `load` (which never comes) holds no later
    // navigation back: chromiumoxide alone would queue it for 30 s.
    let ready = GotoOptions {
        wait_until: oxwright_jobs::WaitUntil::Ready,
        ..GotoOptions::load(Duration::from_secs(10))
    };
    page.goto(&base.join("/never-loads").unwrap(), &ready)
        .await
        .unwrap();
    let login = base.join("/app/login").unwrap();
    let form = GotoOptions {
        wait_for: Some("form".into()),
        ..GotoOptions::load(Duration::from_secs(5))
    };
    page.goto(&login, &form)
        .await
        .expect("a navigation after a page that never loaded");
    assert!(page.html().await.unwrap().contains("<form"));
}

/// Failures the answer already shows are not waited out: a body reset or
/// cut short of its `Content-Length`, a 204 (no document to read) and an
/// HTML page sent as a download each end with their typed error, not
/// `timeout` (the deadline is far; no retry is made).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_that_cannot_become_a_page_fail_with_their_kind() {
    use oxwright_fixtures::{Cut, HandServer};
    let env = Env::start().await;
    let fetch = |policy: std::sync::Arc<oxwright_policy::UrlPolicy>, url: String| {
        let env = &env;
        async move {
            let mut spec = oxwright_jobs::FetchSpec::new(url.parse().unwrap());
            spec.timeout_ms = 60_000;
            spec.retry_count = 0;
            fetch_page(&env.pool, &policy, &spec).await
        }
    };
    for cut in [Cut::Reset, Cut::Short] {
        let server = HandServer::cut_body(cut).await.unwrap();
        let policy = policy_allowing(&[server.addr()]);
        let err = fetch(policy, server.url("/cut"))
            .await
            .expect_err("a cut body is not a page");
        assert_eq!(err.kind, ErrorKind::Connection, "{cut:?}: {err}");
        // Chromium reaches the origin through the egress proxy, which ends
        // its side of a reset connection too: either name is the cut.
        assert!(
            err.message.contains("ERR_CONNECTION_RESET")
                || err.message.contains("ERR_CONTENT_LENGTH_MISMATCH"),
            "{cut:?}: {err}"
        );
    }
    let err = fetch(env.policy.clone(), env.site.url("/status/204"))
        .await
        .expect_err("a 204 has no document");
    assert_eq!(err.kind, ErrorKind::HttpStatus, "{err}");
    assert_eq!(err.status, Some(204), "{err}");
    assert!(err.message.contains("no content"), "{err}");
    let err = fetch(env.policy.clone(), env.site.url("/attachment"))
        .await
        .expect_err("a download is not a page");
    assert_eq!(err.kind, ErrorKind::NonHtml, "{err}");
    assert!(err.message.contains("attachment"), "{err}");
}

/// A server that does not answer in HTTP (another protocol's greeting, a
/// close without a word, a head too large, a header value with control
/// bytes) fails the page as `connection` with what the server did, in
/// every render mode; no status is reported that the server never sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_does_not_answer_in_http_is_a_connection_failure() {
    use oxwright_fixtures::{HandServer, Misbehaviour};
    let env = Env::start().await;
    for how in Misbehaviour::ALL {
        let server = HandServer::misbehaving(how).await.unwrap();
        let policy = policy_allowing(&[server.addr()]);
        for render in [oxwright_jobs::Render::Always, oxwright_jobs::Render::Never] {
            let mut spec = oxwright_jobs::FetchSpec::new(server.url("/page").parse().unwrap());
            spec.retry_count = 0;
            spec.render = render;
            let err = fetch_page(&env.pool, &policy, &spec)
                .await
                .expect_err("no page came");
            let said = match how {
                Misbehaviour::NotHttp | Misbehaviour::BadHeaderValue => "not HTTP",
                Misbehaviour::Empty => "without a response",
                Misbehaviour::HugeHead => "headers were too large",
            };
            assert_eq!(err.kind, ErrorKind::Connection, "{how:?} {render:?}: {err}");
            assert_eq!(err.status, None, "{how:?} {render:?}: {err}");
            assert!(err.message.contains(said), "{how:?} {render:?}: {err}");
            assert!(!err.message.contains("HTTP 502"), "{how:?} {render:?}: {err}");
        }
    }
}

/// A page whose timer floods `history.pushState` is read like any other:
/// same-document navigations are not new documents to wait for.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_flooding_push_state_is_read() {
    let env = Env::start().await;
    let mut spec = env.spec("/pushstate-flood");
    spec.retry_count = 0;
    spec.timeout_ms = 20_000;
    let started = Instant::now();
    let r = fetch_page(&env.pool, &env.policy, &spec)
        .await
        .unwrap_or_else(|e| panic!("after {:?}: {e}", started.elapsed()))
        .result;
    assert!(
        r.markdown.contains(markers::PUSHSTATE_FLOOD_CONTENT),
        "{}",
        r.markdown
    );
}

/// A server that trickles its answer one byte at a time is a slow host:
/// the fetch ends as `timeout` at its deadline and says how much the
/// server had sent in that time, in every render mode; it is never blamed
/// on the page's renderer (which waits on the network, not on the page).
/// The browser's deadline here is past the renderer-silence limit, so a
/// navigation still waiting for its response is seen not to trip it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_trickling_its_answer_is_a_named_timeout() {
    use oxwright_fixtures::{HandServer, Trickle};
    let env = Env::start().await;
    for what in [Trickle::Head, Trickle::Body] {
        let server = HandServer::trickle(what, Duration::from_millis(200))
            .await
            .unwrap();
        let policy = policy_allowing(&[server.addr()]);
        for render in [oxwright_jobs::Render::Always, oxwright_jobs::Render::Never] {
            let mut spec = oxwright_jobs::FetchSpec::new(server.url("/page").parse().unwrap());
            spec.retry_count = 0;
            spec.render = render;
            spec.timeout_ms = match (what, render) {
                (Trickle::Head, oxwright_jobs::Render::Always) => 10_000,
                _ => 3_000,
            };
            let started = Instant::now();
            let err = fetch_page(&env.pool, &policy, &spec)
                .await
                .expect_err("no page came in time");
            let case = format!("{what:?} {render:?}: {err}");
            assert_eq!(err.kind, ErrorKind::Timeout, "{case}");
            assert!(err.message.contains("the server had sent"), "{case}");
            assert!(!err.message.contains("renderer"), "{case}");
            let said = match what {
                Trickle::Head => "response head",
                Trickle::Body => "of its body",
            };
            assert!(err.message.contains(said), "{case}");
            assert!(
                started.elapsed() < Duration::from_millis(spec.timeout_ms) + Duration::from_secs(5),
                "{case}: took {:?}",
                started.elapsed()
            );
        }
    }
}
