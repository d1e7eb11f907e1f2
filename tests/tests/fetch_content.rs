//! Page fetch against real Chromium and the fixture site: what ends up in
//! the Markdown and the result.

mod common;

use common::Env;
use oxwright_fetch::fetch_page;
use oxwright_fixtures::{ARTICLE_PATHS, ARTICLE_PHRASES, markers};
use oxwright_jobs::{ContentMode, WaitUntil};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn articles_convert_to_clean_markdown_with_large_token_reduction() {
    let env = Env::start().await;
    for path in ARTICLE_PATHS {
        let out = fetch_page(&env.pool, &env.policy, &env.spec(path))
            .await
            .expect(path);
        let r = &out.result;
        let md = &r.markdown;
        let phrase = ARTICLE_PHRASES.iter().find(|(p, _)| p == path).unwrap().1;
        assert!(md.contains(phrase), "{path}: phrase missing:\n{md}");
        for sentinel in markers::ARTICLE_SENTINELS.iter().chain([&markers::NAV_SENTINEL]) {
            assert!(!md.contains(sentinel), "{path}: {sentinel} leaked");
        }
        assert!(
            md.starts_with("# "),
            "{path}: no h1 first:\n{}",
            &md[..200.min(md.len())]
        );
        assert!(md.contains("\n## "), "{path}: no h2");
        assert!(
            md.contains("| --- |") || md.contains("|---|") || md.contains("| ---"),
            "{path}: no table separator"
        );
        assert!(md.contains("\\|"), "{path}: pipe in a cell not escaped");
        assert!(md.contains("```rust"), "{path}: no rust fence");
        assert_eq!(r.status, 200);
        assert_eq!(r.content_type.as_deref(), Some("text/html; charset=utf-8"));
        assert_eq!(r.final_url, env.site.url(path));
        assert!(!r.title.is_empty());
        assert_eq!(r.metadata.lang.as_deref(), Some("en"));
        assert!(r.metadata.description.is_some(), "{path}: description");
        assert_eq!(r.metadata.canonical.as_deref(), Some(env.site.url(path).as_str()));
        assert!(
            r.tokens.reduction() >= 0.5,
            "{path}: reduction {:.2}",
            r.tokens.reduction()
        );
        assert_eq!(r.attempts, 1);
        assert!(r.timings.navigate_ms > 0.0 && r.timings.extract_ms > 0.0 && r.timings.convert_ms > 0.0);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn full_mode_keeps_navigation_main_mode_drops_it() {
    let env = Env::start().await;
    let path = ARTICLE_PATHS[0];
    let mut spec = env.spec(path);
    spec.content = ContentMode::Full;
    let full = fetch_page(&env.pool, &env.policy, &spec).await.unwrap().result;
    assert!(full.markdown.contains(markers::NAV_SENTINEL));
    for sentinel in markers::ARTICLE_SENTINELS {
        assert!(
            !full.markdown.contains(sentinel),
            "{sentinel} leaked in full mode"
        );
    }
    assert!(
        full.tokens.reduction() >= 0.5,
        "full-mode reduction {:.2}",
        full.tokens.reduction()
    );
    let main = fetch_page(&env.pool, &env.policy, &env.spec(path))
        .await
        .unwrap()
        .result;
    assert!(!main.markdown.contains(markers::NAV_SENTINEL));
    assert!(main.markdown.len() < full.markdown.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redirects_are_followed_to_the_final_url() {
    let env = Env::start().await;
    let r = fetch_page(&env.pool, &env.policy, &env.spec("/redirect/chain"))
        .await
        .unwrap()
        .result;
    assert_eq!(r.final_url, env.site.url("/redirect/final"));
    assert_eq!(r.url, env.site.url("/redirect/chain"));
    assert_eq!(r.status, 200);
    assert_eq!(r.title, markers::REDIRECT_FINAL_TITLE);
    assert!(r.markdown.contains(markers::REDIRECT_FINAL_CONTENT));
    assert_eq!(env.site.hits("/redirect/step2"), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_for_selector_sees_js_rendered_content() {
    let env = Env::start().await;
    let mut spec = env.spec("/js-rendered");
    spec.wait_for = Some("#late".into());
    spec.content = ContentMode::Full;
    let r = fetch_page(&env.pool, &env.policy, &spec).await.unwrap().result;
    assert!(
        r.markdown.contains(markers::JS_RENDERED_CONTENT),
        "{}",
        r.markdown
    );
    assert!(r.markdown.contains(markers::JS_RENDERED_HEADING));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn networkidle_waits_for_late_requests() {
    let env = Env::start().await;
    let mut spec = env.spec("/networkidle");
    spec.wait_until = WaitUntil::Networkidle;
    spec.content = ContentMode::Full;
    let r = fetch_page(&env.pool, &env.policy, &spec).await.unwrap().result;
    assert!(
        r.markdown.contains(markers::NETWORK_IDLE_CONTENT),
        "{}",
        r.markdown
    );
    assert_eq!(env.site.hits("/api/late-data"), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn domcontentloaded_does_not_wait_for_stalled_images() {
    let env = Env::start().await;
    let mut spec = env.spec("/slow-subresource");
    spec.wait_until = WaitUntil::Domcontentloaded;
    spec.timeout_ms = 3_000;
    spec.retry_count = 0;
    spec.content = ContentMode::Full;
    let r = fetch_page(&env.pool, &env.policy, &spec).await.unwrap().result;
    assert!(r.markdown.contains(markers::SLOW_SUBRESOURCE_CONTENT));
    // The same page waiting for `load` runs into the stalled image (5 s).
    spec.wait_until = WaitUntil::Load;
    spec.timeout_ms = 1_500;
    let err = fetch_page(&env.pool, &env.policy, &spec).await.unwrap_err();
    assert_eq!(err.kind, oxwright_jobs::ErrorKind::Timeout, "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn empty_pages_give_empty_markdown_and_a_warning() {
    let env = Env::start().await;
    for path in ["/empty", "/empty-body"] {
        let r = fetch_page(&env.pool, &env.policy, &env.spec(path))
            .await
            .expect(path)
            .result;
        assert_eq!(r.markdown, "", "{path}");
        assert!(
            r.warnings
                .iter()
                .any(|w| w == oxwright_markdown::EMPTY_PAGE_WARNING),
            "{path}: {:?}",
            r.warnings
        );
    }
}

/// A page hidden whole until a script shows it (AMP's boilerplate,
/// anti-flicker snippets) whose script never arrives is read as it would
/// be shown, not as an empty page; what is hidden on its own stays out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_hidden_whole_until_its_script_runs_is_still_read() {
    let env = Env::start().await;
    let r = fetch_page(&env.pool, &env.policy, &env.spec("/hidden-until-script"))
        .await
        .expect("fetch")
        .result;
    assert!(r.markdown.contains("# Harbour ferries return"), "{}", r.markdown);
    assert!(
        r.markdown.contains("twelve thousand passengers"),
        "{}",
        r.markdown
    );
    assert!(!r.markdown.contains("newsletter"), "{}", r.markdown);
    assert!(!r.markdown.contains("hidden on its own"), "{}", r.markdown);
    assert!(
        !r.warnings
            .iter()
            .any(|w| w == oxwright_markdown::EMPTY_PAGE_WARNING),
        "{:?}",
        r.warnings
    );
}

/// The same one level down: the page's content in a wrapper hidden until
/// a script reveals it (the body and a skip link are visible). It is read;
/// a menu and a paragraph hidden on their own stay out. Before this, the
/// page came back `ok` with empty Markdown.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn content_in_a_wrapper_hidden_until_its_script_runs_is_still_read() {
    let env = Env::start().await;
    let r = fetch_page(&env.pool, &env.policy, &env.spec("/hidden-wrapper-until-script"))
        .await
        .expect("fetch")
        .result;
    assert!(
        r.markdown.contains("# Night trains return to the coast line"),
        "{}",
        r.markdown
    );
    assert!(r.markdown.contains("four hundred travellers"), "{}", r.markdown);
    assert!(
        !r.markdown.contains("dropdown menu nobody opened"),
        "{}",
        r.markdown
    );
    assert!(!r.markdown.contains("hidden on its own"), "{}", r.markdown);
    let mut spec = env.spec("/hidden-wrapper-until-script");
    spec.content = ContentMode::Full;
    let full = fetch_page(&env.pool, &env.policy, &spec)
        .await
        .expect("fetch")
        .result;
    assert!(full.markdown.contains("Skip to content"), "{}", full.markdown);
    assert!(
        full.markdown.contains("four hundred travellers"),
        "{}",
        full.markdown
    );
    assert!(
        !full.markdown.contains("dropdown menu nobody opened"),
        "{}",
        full.markdown
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn javascript_errors_are_ignored() {
    let env = Env::start().await;
    let mut spec = env.spec("/js-error");
    spec.content = ContentMode::Full;
    let r = fetch_page(&env.pool, &env.policy, &spec).await.unwrap().result;
    assert!(r.markdown.contains(markers::JS_ERROR_PAGE_CONTENT));
    let r = fetch_page(
        &env.pool,
        &env.policy,
        &env.spec(oxwright_fixtures::JS_ERROR_ARTICLE_PATH),
    )
    .await
    .unwrap()
    .result;
    let phrase = ARTICLE_PHRASES
        .iter()
        .find(|(p, _)| *p == oxwright_fixtures::JS_ERROR_ARTICLE_PATH)
        .unwrap()
        .1;
    assert!(r.markdown.contains(phrase));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn non_utf8_pages_are_decoded() {
    let env = Env::start().await;
    for (path, text) in [
        ("/latin1", markers::LATIN1_TEXT),
        ("/shift_jis", markers::SHIFT_JIS_TEXT),
    ] {
        let mut spec = env.spec(path);
        spec.content = ContentMode::Full;
        let r = fetch_page(&env.pool, &env.policy, &spec)
            .await
            .expect(path)
            .result;
        assert!(r.markdown.contains(text), "{path}: {}", r.markdown);
    }
}

/// A big page's HTML comes back in slices (so no DevTools message grows the
/// connection's read buffer for the browser's life); no slice ends inside
/// a surrogate pair, on either page, whichever the slice ends fall on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn big_page_read_in_slices_keeps_every_character() {
    let env = Env::start().await;
    for path in ["/emoji", "/emoji-odd"] {
        let mut spec = env.spec(path);
        spec.content = ContentMode::Full;
        spec.timeout_ms = 60_000;
        let r = fetch_page(&env.pool, &env.policy, &spec)
            .await
            .expect(path)
            .result;
        let emoji = r.markdown.chars().filter(|c| *c == '\u{1F600}').count();
        assert_eq!(emoji, oxwright_fixtures::EMOJI_COUNT, "{path}");
        assert!(!r.markdown.contains('\u{FFFD}'), "{path}: a pair was cut");
        assert!(r.markdown.contains("EMOJI-PAGE-END"), "{path}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn very_large_page_converts_completely() {
    let env = Env::start().await;
    let mut spec = env.spec("/large");
    spec.content = ContentMode::Full;
    spec.timeout_ms = 60_000;
    let r = fetch_page(&env.pool, &env.policy, &spec).await.unwrap().result;
    assert!(r.markdown.contains(markers::LARGE_PAGE_END));
    assert!(r.tokens.html > 500_000, "html tokens {}", r.tokens.html);
}
