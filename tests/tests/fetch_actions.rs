//! A fetch's `actions` against real Chromium and the
//! fixture site: structured workflow steps run on the ready page before
//! it is read — accept a consent dialog, load more items, follow a link —
//! with a bad step refused before any navigation and a step whose element
//! is missing ending the job with a typed error that names it.

mod common;

use common::Env;
use oxwright_fetch::fetch_page;
use oxwright_fixtures::actions::{FEED_ITEM, STORY_TEXT};
use oxwright_jobs::{ErrorKind, FetchSpec};

fn item(n: usize) -> String {
    format!("{FEED_ITEM} {n}:")
}

fn feed(env: &Env, actions: &[&str]) -> FetchSpec {
    let mut spec = env.spec("/actions/feed");
    spec.actions = actions.iter().map(|a| a.to_string()).collect();
    spec
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn actions_accept_the_dialog_and_load_more_before_the_read() {
    let env = Env::start().await;
    // Without actions the feed is hidden behind its consent dialog.
    let plain = fetch_page(&env.pool, &env.policy, &feed(&env, &[]))
        .await
        .unwrap()
        .result;
    assert!(!plain.markdown.contains(&item(1)), "{}", plain.markdown);

    let spec = feed(
        &env,
        &[
            r#"click: button "Accept""#,
            r#"click: button "Load more""#,
            r#"wait: text "Feed item 40:""#,
        ],
    );
    let r = fetch_page(&env.pool, &env.policy, &spec).await.unwrap().result;
    for n in [1, 20, 21, 40] {
        assert!(r.markdown.contains(&item(n)), "item {n}: {}", r.markdown);
    }
    assert!(!r.markdown.contains(&item(41)), "{}", r.markdown);
    assert_eq!(r.final_url, env.site.url("/actions/feed"));

    // Only the dialog: the first twenty, not the ones "Load more" adds.
    let r = fetch_page(
        &env.pool,
        &env.policy,
        &feed(&env, &[r#"click: button "Accept""#]),
    )
    .await
    .unwrap()
    .result;
    assert!(
        r.markdown.contains(&item(20)) && !r.markdown.contains(&item(21)),
        "{}",
        r.markdown
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_navigation_an_action_causes_is_followed_and_read() {
    let env = Env::start().await;
    let spec = feed(
        &env,
        &[r#"click: button "Accept""#, r#"click: link "Full story""#],
    );
    let r = fetch_page(&env.pool, &env.policy, &spec).await.unwrap().result;
    assert!(r.markdown.contains(STORY_TEXT), "{}", r.markdown);
    assert_eq!(r.final_url, env.site.url("/actions/story"));
    assert_eq!(r.title, "The full story");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_step_is_invalid_input_before_any_navigation() {
    let env = Env::start().await;
    for bad in [
        r#"clik: button "Accept""#,
        r#"click: button "Accept" twice"#,
        r#"fill: textbox "Password" = {{PASSWORD}}"#,
    ] {
        let spec = feed(&env, &[r#"click: button "Accept""#, bad]);
        let err = fetch_page(&env.pool, &env.policy, &spec).await.unwrap_err();
        assert_eq!(err.kind, ErrorKind::InvalidInput, "{bad}: {err}");
        assert!(err.message.contains("action 2"), "{err}");
        assert!(err.message.contains(bad), "the step is named: {err}");
    }
    assert_eq!(env.site.hits("/actions/feed"), 0, "no navigation started");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_whose_element_is_missing_names_the_step() {
    let env = Env::start().await;
    let mut spec = feed(
        &env,
        &[r#"click: button "Accept""#, r#"click: button "Subscribe""#],
    );
    spec.timeout_ms = 3_000;
    spec.retry_count = 2;
    let err = fetch_page(&env.pool, &env.policy, &spec).await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::StepFailed, "{err}");
    assert!(
        err.message.contains(r#"action 2 (click: button "Subscribe")"#),
        "{err}"
    );
    assert!(err.message.contains("PRECHECK_NO_MATCH"), "{err}");
    assert_eq!(err.attempts, 1, "a missing element is not retried: {err}");

    // Two matches for a step that wants one: says so.
    let mut spec = feed(&env, &[r#"click: button"#]);
    spec.timeout_ms = 3_000;
    let err = fetch_page(&env.pool, &env.policy, &spec).await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::StepFailed, "{err}");
    assert!(
        err.message.contains("action 1") && err.message.contains("PRECHECK_NOT_UNIQUE"),
        "{err}"
    );
}

/// A long read whose three sections each load when they come into view is
/// read whole with `scroll`, which goes down a screen at a time and waits
/// at each for what it set off; `scroll: bottom` jumps past the first two,
/// and a plain fetch reads none. `auto` renders for it; `never` refuses it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scroll_reads_every_section_that_loads_when_seen() {
    let env = Env::start().await;
    let parts = |markdown: &str| {
        (1..=3)
            .filter(|n| markdown.contains(&format!("LAZY-PART-{n}")))
            .collect::<Vec<_>>()
    };
    let plain = fetch_page(&env.pool, &env.policy, &env.spec("/lazy-sections"))
        .await
        .unwrap()
        .result;
    assert_eq!(parts(&plain.markdown), Vec::<usize>::new(), "{}", plain.markdown);
    let mut jump = env.spec("/lazy-sections");
    jump.actions = vec!["scroll: bottom".to_owned()];
    let jumped = fetch_page(&env.pool, &env.policy, &jump).await.unwrap().result;
    assert_eq!(parts(&jumped.markdown), [3], "{}", jumped.markdown);
    let mut through = env.spec("/lazy-sections");
    through.scroll = true;
    let read = fetch_page(&env.pool, &env.policy, &through).await.unwrap().result;
    assert_eq!(parts(&read.markdown), [1, 2, 3], "{}", read.markdown);
    through.render = oxwright_jobs::Render::Auto;
    let auto = fetch_page(&env.pool, &env.policy, &through).await.unwrap().result;
    assert!(auto.rendered, "{:?}", auto.render_reason);
    assert_eq!(parts(&auto.markdown), [1, 2, 3]);
    through.render = oxwright_jobs::Render::Never;
    let err = fetch_page(&env.pool, &env.policy, &through).await.unwrap_err();
    assert!(err.message.contains("scroll"), "{err}");
}

/// A section a page asks for only when it comes into view is read after a
/// `scroll:` action: the scroll waits for what it set off, as a click
/// waits for what it started.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scroll_waits_for_the_section_it_brought_into_view() {
    let env = Env::start().await;
    let plain = fetch_page(&env.pool, &env.policy, &env.spec("/lazy-section"))
        .await
        .unwrap()
        .result;
    assert!(
        !plain.markdown.contains("LAZY-SECTION-TEXT"),
        "{}",
        plain.markdown
    );
    let mut spec = env.spec("/lazy-section");
    spec.actions = vec!["scroll: bottom".to_owned()];
    let r = fetch_page(&env.pool, &env.policy, &spec).await.unwrap().result;
    assert!(r.markdown.contains("LAZY-SECTION-TEXT"), "{}", r.markdown);
}
