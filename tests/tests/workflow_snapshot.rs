//! The accessibility snapshot on the fixture app: Playwright's format,
//! flags, /url lines, refs stable within a document and renumbered after a
//! navigation, same-origin iframes, and a cap that prunes instead of failing.

mod wf;

use std::time::Duration;

use oxwright_engine::{Locator, SnapshotOptions};
use wf::{Wf, goto};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshot_uses_playwright_format_with_stable_refs() {
    snapshot_uses_playwright_format_with_stable_refs_on(false).await;
}

// Not run on the Playwright MCP backend: its refs carry a frame prefix
// after a navigation (`f1e2`, not `e1` again) and its snapshot names no
// iframe (`- iframe [ref=…]`, not `- iframe "Newsletter signup"`); see
// lib/playwright_mcp/design.md.
async fn snapshot_uses_playwright_format_with_stable_refs_on(playwright_mcp: bool) {
    let wf = Wf::start_on(playwright_mcp).await;
    let page = wf.page().await;
    goto(page.as_ref(), &wf.url("/app/login")).await;
    let opts = SnapshotOptions::default();
    let first = page.snapshot(&opts).await.expect("snapshot");
    let text = &first.text;
    for wanted in [
        "- heading \"Sign in\" [level=1] [ref=e",
        "- textbox \"Username\" [ref=e",
        "- textbox \"Password\" [ref=e",
        "- checkbox \"Remember me\" [ref=e",
        "- button \"Sign in\" [ref=e",
        "- link \"Browse without signing in\" [ref=e",
        "- /url: /app/search",
        "- navigation \"Footer\" [ref=e",
    ] {
        assert!(text.contains(wanted), "{wanted:?} missing:\n{text}");
    }
    assert!(
        !text.contains("StaticText") && !text.contains("RootWebArea") && !text.contains("generic"),
        "{text}"
    );
    assert!(first.url.ends_with("/app/login"));
    assert_eq!(first.pruned, 0);

    // The same document keeps its refs; a state change shows as a flag.
    page.evaluate(
        "document.getElementById('remember').click(); true",
        Duration::from_secs(5),
    )
    .await
    .unwrap();
    let second = page.snapshot(&opts).await.unwrap();
    let ref_of = |text: &str, what: &str| {
        let line = text
            .lines()
            .find(|l| l.contains(what))
            .unwrap_or_default()
            .to_string();
        line.split("[ref=")
            .nth(1)
            .map(|r| r.trim_end_matches(|c| c != ']').to_string())
            .unwrap_or_default()
    };
    assert_eq!(
        ref_of(text, "button \"Sign in\""),
        ref_of(&second.text, "button \"Sign in\"")
    );
    assert!(
        second.text.contains("- checkbox \"Remember me\" [checked] [ref="),
        "{}",
        second.text
    );

    // A new document starts again at e1, and includes the same-origin iframe's form.
    goto(page.as_ref(), &wf.url("/app/frame")).await;
    let framed = page.snapshot(&opts).await.unwrap();
    assert!(framed.text.contains("[ref=e1]"), "{}", framed.text);
    assert!(
        framed.text.contains("- iframe \"Newsletter signup\" [ref="),
        "{}",
        framed.text
    );
    assert!(
        framed.text.contains("textbox \"Email address\" [ref="),
        "{}",
        framed.text
    );
    assert!(
        framed.text.contains("button \"Subscribe\" [ref="),
        "{}",
        framed.text
    );
    let iframe_line = framed.text.lines().position(|l| l.contains("- iframe")).unwrap();
    let email_line = framed
        .text
        .lines()
        .position(|l| l.contains("Email address"))
        .unwrap();
    assert!(email_line > iframe_line);

    // Select options and their selected flag.
    goto(page.as_ref(), &wf.url("/app/item?id=1")).await;
    let item = page.snapshot(&opts).await.unwrap();
    assert!(
        item.text.contains("- combobox \"Shipping country\" [ref="),
        "{}",
        item.text
    );
    assert!(item.text.contains("- option \"Japan\""), "{}", item.text);
    assert!(
        item.text.contains("- option \"Choose a country\" [selected]"),
        "{}",
        item.text
    );
    assert_eq!(
        item.elements
            .iter()
            .filter(|e| e.role == "button" && e.name == "Add to cart")
            .count(),
        2
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshot_cap_prunes_rather_than_fails() {
    snapshot_cap_prunes_rather_than_fails_on(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshot_cap_prunes_rather_than_fails_on_playwright_mcp() {
    snapshot_cap_prunes_rather_than_fails_on(true).await;
}

async fn snapshot_cap_prunes_rather_than_fails_on(playwright_mcp: bool) {
    let wf = Wf::start_on(playwright_mcp).await;
    let page = wf.page().await;
    goto(page.as_ref(), &wf.url("/app/item?id=1")).await;
    let snap = page
        .snapshot(&SnapshotOptions { max_chars: 300 })
        .await
        .expect("a capped snapshot");
    assert!(snap.text.len() <= 300, "{}", snap.text.len());
    assert!(snap.pruned > 0);
    assert!(snap.text.contains("pruned to fit"), "{}", snap.text);
    // Locators still see every element, pruned or not.
    assert!(snap.elements.iter().any(|e| e.name == "Shipping country"));
    let found = page
        .locate(&Locator::TestId {
            test_id: "add-main".into(),
        })
        .await
        .expect("locate");
    assert_eq!(found.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn css_text_transform_does_not_change_names() {
    let wf = Wf::start().await;
    let page = wf.page().await;
    goto(page.as_ref(), &wf.url("/app/help")).await;
    let snap = page
        .snapshot(&SnapshotOptions::default())
        .await
        .expect("snapshot");
    // As the DOM writes them (Playwright's names), not as CSS shows them.
    assert!(snap.text.contains("button \"Print this page\""), "{}", snap.text);
    assert!(
        snap.text.contains("link \"frequently asked questions\""),
        "{}",
        snap.text
    );
    assert!(!snap.text.contains("PRINT THIS PAGE"), "{}", snap.text);
    // The structured grammar's exact names find them too.
    let (result, _page) = wf
        .run(
            "caps",
            "/app/help",
            "click: button \"Print this page\" exact\nexpect: text \"Printed\"",
            None,
        )
        .await;
    assert_eq!(
        result.status,
        oxwright_jobs::RunStatus::Completed,
        "{result:#?}\n{}",
        wf.console_text()
    );
}
