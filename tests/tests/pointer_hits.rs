//! Clicks that land: on the fixture app's pointer pages (a link pushed down
//! on its first mouseover, an accordion still animating, a veil that goes
//! away, a wall that does not, a message a press makes appear above it) a
//! pointer action reaches the element it names, or fails naming what took
//! the pointer instead.

use std::time::Duration;

use oxwright_engine::{Act, ActOptions, BrowserEngine, EngineErrorKind, Locator, OpenOptions, Page, Target};

mod common;

fn button(name: &str) -> Target {
    Target::locator(Locator::role("button", Some(name)))
}

async fn open(env: &common::Env, path: &str) -> Box<dyn Page> {
    let page = env
        .pool
        .open(&OpenOptions::new(env.policy.clone()))
        .await
        .expect("a page opens");
    page.goto(
        &env.site.url(path).parse().unwrap(),
        &oxwright_engine::GotoOptions::load(Duration::from_secs(15)),
    )
    .await
    .expect("the page loads");
    page
}

async fn log(page: &dyn Page) -> String {
    page.evaluate(
        "document.getElementById('log').textContent",
        Duration::from_secs(5),
    )
    .await
    .expect("the log reads")
    .as_str()
    .unwrap_or_default()
    .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pointer_actions_land_on_their_target_or_name_what_is_in_the_way() {
    let env = common::Env::start().await;
    let opts = ActOptions::default();

    // A link that a promotion pushes down when the pointer first reaches it:
    // the press lands on the promotion unless the click is retried.
    let page = open(&env, "/app/pointer/shy").await;
    let link = Target::locator(Locator::role("link", Some("Read the terms")));
    page.act(&link, &Act::Click, &opts)
        .await
        .expect("the link is clicked");
    assert_eq!(
        log(page.as_ref()).await,
        "Clicked Read the terms",
        "the click landed elsewhere"
    );
    drop(page);

    // Hovering it ends with the pointer, where the page last saw it, on the
    // link and not on the promotion.
    let page = open(&env, "/app/pointer/shy").await;
    page.act(&link, &Act::Hover, &opts)
        .await
        .expect("the link is hovered");
    let under = page
        .evaluate(
            "(() => { const [x, y] = window.pointerAt || [-1, -1]; \
             const e = document.elementFromPoint(x, y); return e ? e.outerHTML : 'nothing'; })()",
            Duration::from_secs(5),
        )
        .await
        .expect("the pointer's place reads");
    assert!(
        under.as_str().is_some_and(|h| h.contains("id=\"shy\"")),
        "the pointer rests on {under}, not on the link"
    );
    drop(page);

    // An accordion that opens the hovered section: the section below moves
    // up as the pointer arrives and keeps moving for 600 ms.
    let page = open(&env, "/app/pointer/accordion").await;
    page.act(&button("Payment"), &Act::Click, &opts)
        .await
        .expect("the section is clicked");
    assert_eq!(
        log(page.as_ref()).await,
        "Clicked Payment",
        "the click landed elsewhere"
    );
    drop(page);

    // A double click on the same accordion lands both clicks on the target.
    let page = open(&env, "/app/pointer/accordion").await;
    page.act(&button("Payment"), &Act::DoubleClick, &opts)
        .await
        .expect("the section is double-clicked");
    assert_eq!(
        log(page.as_ref()).await,
        "Clicked Payment",
        "the clicks landed elsewhere"
    );
    drop(page);

    // A veil over the page for 300 ms after Save: Publish waits for it.
    let page = open(&env, "/app/pointer/veil").await;
    let quick = ActOptions {
        settle: false,
        ..ActOptions::default()
    };
    page.act(&button("Save"), &Act::Click, &quick)
        .await
        .expect("save");
    page.act(&button("Publish"), &Act::Click, &quick)
        .await
        .expect("publish once the veil is gone");
    assert_eq!(log(page.as_ref()).await, "Clicked Publish");
    drop(page);

    // A field checked as it loses focus puts its message above Send when
    // the press on Send takes the focus: the release lands below Send, and
    // the click, which would reach only the form, is made again.
    let page = open(&env, "/app/pointer/blur").await;
    page.act(&button("Send"), &Act::Click, &opts)
        .await
        .expect("send is clicked");
    assert_eq!(
        log(page.as_ref()).await,
        "Clicked Send",
        "the release landed elsewhere"
    );
    drop(page);

    // A wall that never goes away: a typed error naming the wall, and no
    // click reached the page.
    let page = open(&env, "/app/pointer/wall").await;
    let short = ActOptions {
        timeout: Duration::from_millis(1500),
        settle: false,
    };
    let err = page
        .act(&button("Read more"), &Act::Click, &short)
        .await
        .expect_err("the wall is in the way");
    assert_eq!(err.kind, EngineErrorKind::NotInteractable, "{err}");
    assert!(
        err.message.contains("id=\"consent-wall\"") && err.message.contains("intercepts pointer events"),
        "the error does not name the wall: {err}"
    );
    assert_eq!(log(page.as_ref()).await, "Nothing clicked");
    drop(page);
    env.pool.shutdown().await;
}
