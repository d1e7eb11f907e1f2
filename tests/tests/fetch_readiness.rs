//! When a fetch reads the page: the default `ready` wait (the DOM's text
//! went quiet after DOMContentLoaded, `load` not needed), the lifecycle
//! waits still honoured when asked, `wait_ms`, and a page that navigates
//! itself after it rendered to somewhere that fails or is refused (the
//! rendered document is read, with a warning naming the attempted URL).

mod common;

use std::time::{Duration, Instant};

use common::{Env, closed_port, policy_allowing};
use oxwright_fetch::fetch_page;
use oxwright_fixtures::markers;
use oxwright_jobs::{ContentMode, ErrorKind, FetchSpec, Frames, WaitUntil};

fn full(env: &Env, path: &str) -> FetchSpec {
    let mut spec = env.spec(path);
    spec.content = ContentMode::Full;
    spec.retry_count = 0;
    spec
}

/// Fetches `spec` and expects `/js-rendered`'s late content, and no warning.
async fn reads_js_rendered_content_quietly(env: &Env, spec: &FetchSpec) {
    let r = fetch_page(&env.pool, &env.policy, spec).await.unwrap().result;
    assert!(
        r.markdown.contains(markers::JS_RENDERED_CONTENT),
        "{}",
        r.markdown
    );
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
}

fn navigates_to(target: &str, ms: u64) -> String {
    let encoded: String = url::form_urlencoded::byte_serialize(target.as_bytes()).collect();
    format!("/navigates-away?to={encoded}&ms={ms}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_default_wait_reads_content_a_script_renders_after_load() {
    let env = Env::start().await;
    let spec = full(&env, "/js-rendered");
    assert_eq!(spec.wait_until, WaitUntil::Ready);
    reads_js_rendered_content_quietly(&env, &spec).await;
    // `domcontentloaded` alone reads before the script renders.
    let mut spec = full(&env, "/js-rendered");
    spec.wait_until = WaitUntil::Domcontentloaded;
    let r = fetch_page(&env.pool, &env.policy, &spec).await.unwrap().result;
    assert!(!r.markdown.contains(markers::JS_RENDERED_CONTENT));
    // A fixed extra wait catches it too.
    spec.wait_ms = 1_000;
    let r = fetch_page(&env.pool, &env.policy, &spec).await.unwrap().result;
    assert!(r.markdown.contains(markers::JS_RENDERED_CONTENT));
    assert!(r.timings.navigate_ms >= 1_000.0, "{:?}", r.timings);
}

/// Fetches `path` with the default wait and expects it back within
/// `within` (ms), holding `content` and a warning containing `warning`.
async fn read_as_it_stands(
    env: &Env,
    path: &str,
    within: std::ops::Range<u64>,
    content: &str,
    warning: &str,
) -> FetchSpec {
    let mut spec = full(env, path);
    spec.timeout_ms = 30_000;
    let started = Instant::now();
    let r = fetch_page(&env.pool, &env.policy, &spec).await.unwrap().result;
    let took = started.elapsed();
    let within = Duration::from_millis(within.start)..Duration::from_millis(within.end);
    assert!(within.contains(&took), "{path} took {took:?}");
    assert!(r.markdown.contains(content), "{path}: {}", r.markdown);
    assert!(
        r.warnings.iter().any(|w| w.contains(warning)),
        "{path}: {:?}",
        r.warnings
    );
    spec
}

/// Expects `spec` to time out when it waits for `wait`, an event that never comes.
async fn never_reaches(env: &Env, mut spec: FetchSpec, wait: WaitUntil) {
    spec.wait_until = wait;
    spec.timeout_ms = 1_500;
    let err = fetch_page(&env.pool, &env.policy, &spec).await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::Timeout, "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_whose_load_never_fires_is_read_without_holding_its_slot() {
    let env = Env::start().await;
    let spec = read_as_it_stands(
        &env,
        "/never-loads",
        0..5_000,
        markers::NEVER_LOADS_CONTENT,
        "before its load event",
    )
    .await;
    let r = fetch_page(&env.pool, &env.policy, &spec).await.unwrap().result;
    assert!(r.markdown.contains(markers::NEVER_LOADS_LATE), "{}", r.markdown);
    // `load` is still honoured when asked: here it never comes.
    never_reaches(&env, spec, WaitUntil::Load).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_document_that_never_finishes_is_read_as_it_stands() {
    let env = Env::start().await;
    let spec = read_as_it_stands(
        &env,
        "/never-ends",
        0..15_000,
        markers::NEVER_ENDS_CONTENT,
        "still loading",
    )
    .await;
    // `domcontentloaded` is still honoured when asked: here it never comes.
    never_reaches(&env, spec, WaitUntil::Domcontentloaded).await;
}

/// A document whose parser waits on a slow head script has nothing to read
/// at the 5 s mark: the wait goes on until there is text (here the parser
/// resumes at 7 s), rather than returning an empty page as a success.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_document_with_no_text_yet_is_not_read_at_the_soft_deadline() {
    let env = Env::start().await;
    let mut spec = full(&env, "/late-parse");
    spec.timeout_ms = 30_000;
    let started = Instant::now();
    let r = fetch_page(&env.pool, &env.policy, &spec).await.unwrap().result;
    assert!(
        r.markdown.contains(markers::LATE_PARSE_CONTENT),
        "read after {:?}: {:?} {:?}",
        started.elapsed(),
        r.markdown,
        r.warnings
    );
    assert!(started.elapsed() >= Duration::from_secs(7));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_that_never_stops_changing_is_read_at_the_soft_deadline() {
    let env = Env::start().await;
    read_as_it_stands(
        &env,
        "/ticking",
        5_000..9_000,
        markers::TICKING_CONTENT,
        "still changing",
    )
    .await;
}

/// Fetches `/navigates-away` towards `target` and checks that the rendered
/// document came back with a warning naming `target`.
async fn keeps_the_rendered_document(
    env: &Env,
    policy: &std::sync::Arc<oxwright_browser::UrlPolicy>,
    target: &str,
) {
    // 0 ms: the navigation starts in the page's load handler itself; and
    // in its DOMContentLoaded handler, racing the wait that sees it.
    let cases = [
        (WaitUntil::Ready, 100, 1_500, ""),
        (WaitUntil::Load, 100, 1_000, ""),
        (WaitUntil::Ready, 0, 1_000, ""),
        (WaitUntil::Load, 0, 1_000, ""),
        (WaitUntil::Ready, 0, 1_000, "&on=domcontentloaded"),
        (WaitUntil::Domcontentloaded, 0, 1_000, "&on=domcontentloaded"),
    ];
    for (wait, after_ms, wait_ms, on) in cases {
        let mut spec = full(env, &format!("{}{on}", navigates_to(target, after_ms)));
        spec.wait_until = wait;
        spec.wait_ms = wait_ms;
        let out = fetch_page(&env.pool, policy, &spec)
            .await
            .unwrap_or_else(|e| panic!("{target} ({wait:?}, {after_ms} ms{on}): {e}"));
        let r = out.result;
        assert!(
            r.markdown.contains(markers::NAVIGATES_AWAY_CONTENT),
            "{target} ({wait:?}): {}",
            r.markdown
        );
        assert!(
            r.warnings
                .iter()
                .any(|w| w.contains("navigated itself") && w.contains(target)),
            "{target} ({wait:?}): {:?}",
            r.warnings
        );
        assert!(r.final_url.contains("/navigates-away"), "{}", r.final_url);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_navigation_after_load_keeps_the_rendered_document() {
    let env = Env::start().await;
    let port = closed_port();
    let policy = policy_allowing(&[env.site.addr(), format!("127.0.0.1:{port}").parse().unwrap()]);
    keeps_the_rendered_document(&env, &policy, &format!("http://127.0.0.1:{port}/gone")).await;
    keeps_the_rendered_document(&env, &policy, &format!("https://127.0.0.1:{port}/gone")).await;
    // An error status is a failed navigation too.
    keeps_the_rendered_document(&env, &policy, &env.site.url("/status/404")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_navigation_after_load_keeps_the_rendered_document() {
    let env = Env::start().await;
    let target = format!("http://127.0.0.1:{}/private", closed_port());
    keeps_the_rendered_document(&env, &env.policy, &target).await;
    let mut spec = full(&env, &navigates_to(&target, 100));
    spec.wait_ms = 1_000;
    let r = fetch_page(&env.pool, &env.policy, &spec).await.unwrap().result;
    assert!(
        r.warnings.iter().any(|w| w.contains("url policy refused")),
        "{:?}",
        r.warnings
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_navigation_after_load_that_succeeds_is_followed() {
    let env = Env::start().await;
    let spec = full(&env, &navigates_to(&env.site.url("/js-rendered"), 50));
    reads_js_rendered_content_quietly(&env, &spec).await;
}

/// A fetch takes the page's frames out before they load unless asked to
/// load them, and the choice holds per fetch on a reused tab.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn frames_are_skipped_unless_asked_for() {
    let env = Env::start().await;
    let read = |frames: Frames| {
        let mut spec = full(&env, "/frames");
        spec.frames = frames;
        spec.wait_until = WaitUntil::Load;
        let env = &env;
        async move {
            fetch_page(&env.pool, &env.policy, &spec)
                .await
                .unwrap()
                .result
                .markdown
        }
    };
    for round in 0..2 {
        let md = read(Frames::default()).await;
        assert!(md.contains(markers::FRAMES_PAGE_CONTENT), "round {round}: {md}");
        assert!(md.contains("FRAMES-BUILT-0"), "round {round}: {md}");
        assert!(!md.contains(markers::FRAME_CHILD_RAN), "round {round}: {md}");
        let md = read(Frames::Load).await;
        assert!(md.contains(markers::FRAMES_PAGE_CONTENT), "round {round}: {md}");
        assert!(md.contains("FRAMES-BUILT-4"), "round {round}: {md}");
        assert!(md.contains(markers::FRAME_CHILD_RAN), "round {round}: {md}");
    }
}

/// `frames: inline` reads each same-origin frame's visible content in place
/// of its frame element, nested frames too; a cross-origin frame stays out,
/// and `auto` renders such a fetch (only a browser loads frames).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn same_origin_frames_are_read_in_place_when_asked() {
    let mut env = Env::start().await;
    let port = env.site.addr().port();
    env.policy = std::sync::Arc::new(oxwright_policy::UrlPolicy::allowing([
        env.site.addr().to_string().parse().unwrap(),
        format!("localhost:{port}").parse().unwrap(),
    ]));
    for render in [oxwright_jobs::Render::Always, oxwright_jobs::Render::Auto] {
        let mut spec = full(&env, "/frames-inline");
        spec.render = render;
        spec.frames = Frames::Inline;
        spec.wait_until = WaitUntil::Load;
        let out = fetch_page(&env.pool, &env.policy, &spec).await.unwrap();
        let md = &out.result.markdown;
        let page = md.find("FRAMES-INLINE-PAGE").expect(md);
        let framed = md.find("FRAME-ARTICLE-TEXT").expect(md);
        assert!(
            page < framed,
            "the frame's content sits where the frame was: {md}"
        );
        assert!(md.contains("FRAME-NESTED-TEXT"), "{md}");
        assert!(!md.contains("FRAME-HIDDEN-TEXT"), "{md}");
        assert!(!md.contains("FRAME-PARTNER-TEXT"), "{md}");
    }
    // Loaded but not asked for: the frames' content stays out.
    let mut spec = full(&env, "/frames-inline");
    spec.frames = Frames::Load;
    spec.wait_until = WaitUntil::Load;
    let md = fetch_page(&env.pool, &env.policy, &spec)
        .await
        .unwrap()
        .result
        .markdown;
    assert!(
        md.contains("FRAMES-INLINE-PAGE") && !md.contains("FRAME-ARTICLE-TEXT"),
        "{md}"
    );
}
