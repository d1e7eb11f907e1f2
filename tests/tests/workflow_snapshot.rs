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

/// The snapshot's usual source (the flattened DOM, roles and names worked
/// out by oxwright) held to Chromium's own accessibility tree, line by
/// line, on every page of the fixture app and on a page of the constructs
/// names and roles come from. Where they differ on purpose, the DOM reader
/// follows Playwright's snapshot: no `[level]` on a list item.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dom_reader_agrees_with_chromiums_accessibility_tree() {
    use oxwright_browser::{ChromiumPage, SnapshotSource};
    let mut wf = Wf::start_on(false).await;
    let port = wf.site.addr().port();
    wf.policy = std::sync::Arc::new(oxwright_policy::UrlPolicy::allowing([
        wf.site.addr().to_string().parse().unwrap(),
        format!("localhost:{port}").parse().unwrap(),
    ]));
    let page = wf.page().await;
    let chromium = page
        .as_any()
        .downcast_ref::<ChromiumPage>()
        .expect("a Chromium page");
    let opts = SnapshotOptions::default();
    let unlevel = |l: &str| -> String {
        match (l.trim_start().starts_with("- listitem"), l.find(" [level=")) {
            (true, Some(at)) => {
                let end = at + l[at..].find(']').map_or(0, |e| e + 1);
                format!("{}{}", &l[..at], &l[end..])
            }
            _ => l.to_string(),
        }
    };
    let mut report = String::new();
    let mut compared = 0;
    for path in [
        "/app/login",
        "/app/search",
        "/app/item?id=1",
        "/app/checkout",
        "/app/controls",
        "/app/frame",
        "/app/xframe",
        "/app/help",
        "/app/orders",
        "/app/profile",
        "/app/shadow",
        "/app/late",
        "/app",
        "/app/canvas",
        "/",
        "constructs",
    ] {
        if path == "constructs" {
            goto(page.as_ref(), &wf.url("/app/stuck")).await;
            page.evaluate(CONSTRUCTS, Duration::from_secs(5)).await.unwrap();
        } else {
            goto(page.as_ref(), &wf.url(path)).await;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        let ax = chromium
            .snapshot_from(SnapshotSource::AccessibilityTree, &opts)
            .await
            .expect("accessibility tree");
        let dom = chromium
            .snapshot_from(SnapshotSource::Dom, &opts)
            .await
            .expect("dom");
        assert!(!dom.elements.is_empty(), "{path}: nothing read");
        // The accessibility tree gives list items a level; the DOM reader
        // does not (so a fallback to the tree cannot pass for agreement).
        assert!(
            !dom.text.contains("- listitem [level="),
            "{path}: read from the accessibility tree"
        );
        compared += dom.elements.len();
        // A password field's value never shows, whatever the source.
        assert!(
            !dom.text.contains("hunter2"),
            "{path}: a password shows:\n{}",
            dom.text
        );
        let a: Vec<String> = ax.text.lines().map(unlevel).collect();
        let d: Vec<String> = dom.text.lines().map(str::to_owned).collect();
        if a != d {
            report.push_str(&format!("== {path}\n"));
            for l in a.iter().filter(|l| !d.contains(l)) {
                report.push_str(&format!("  ax only:  {l}\n"));
            }
            for l in d.iter().filter(|l| !a.contains(l)) {
                report.push_str(&format!("  dom only: {l}\n"));
            }
        }
    }
    assert!(compared > 300, "only {compared} elements compared");
    assert!(report.is_empty(), "the two sources differ:\n{report}");
}

/// A page of what roles, names, states and values are made of.
const CONSTRUCTS: &str = r#"(() => {
document.body.innerHTML = `
<header><a href="/">Home</a></header>
<nav aria-label="Main"><ul><li><a href="/a?x=1#y">With query</a></li><li><a href="https://other.example/">Away</a></li></ul></nav>
<main>
<h2>Second level</h2><h3 aria-level="5">Overridden</h3><div role="heading" aria-level="4">By role</div>
<section aria-label="Named section"><p>In a region.</p></section><section><p>An unnamed section.</p></section>
<article><header>Article head</header><footer>Article foot</footer></article>
<aside aria-label="Related"><p>Side</p></aside><aside><p>Unnamed side in main</p></aside>
<a href="/fig" title="Figure link"><figure><p>Figure text</p></figure></a><a href="/art"><article><p>In article</p></article></a>
<a href="/list"><ul><li>In list</li></ul></a><a href="/sec"><section aria-label="Named"><p>In region</p></section></a>
<form aria-label="Order"><fieldset><legend>Shipping</legend>
<label>Street <input name="street" value="1 Main St"></label>
<label for="zip">ZIP</label><input id="zip" placeholder="00000">
<input id="city" aria-label="City name" value="Oslo">
<span id="l1">Phone</span><span id="l2">number</span><input aria-labelledby="l1 l2">
<input title="Titled field">
<input placeholder="Only a placeholder">
<input type="email" value="a@b.c"><input type="search" aria-label="Find"><input type="number" aria-label="Count" value="3">
<input type="range" aria-label="Volume" value="30"><input type="password" aria-label="Secret" value="hunter2">
<input type="submit"><input type="reset"><input type="button" value="Plain">
<input type="checkbox" aria-label="Agree" checked><input type="radio" name="r" aria-label="One"><input type="radio" name="r" aria-label="Two" checked>
<textarea aria-label="Notes">Some notes</textarea>
<select aria-label="Pick"><option>First</option><optgroup label="More"><option selected>Second</option></optgroup></select>
<select aria-label="Many" multiple><option selected>M1</option><option>M2</option></select>
</fieldset>
<fieldset disabled><legend>Locked</legend><input aria-label="Locked field"><button>Locked button</button></fieldset>
<button aria-pressed="true">Bold</button><button aria-expanded="true">Menu</button><button disabled>Off</button>
<button><img src="/x.png" alt="Search icon"></button><button><svg aria-label="Close"><path d="M0 0"/></svg></button>
<a href="/img"><img src="/y.png" alt="Logo"></a>
</form>
<div role="checkbox" aria-checked="mixed" tabindex="0">Some</div>
<div role="switch" aria-checked="true" tabindex="0">Wifi</div>
<div role="tablist"><div role="tab" aria-selected="true">Tab one</div><div role="tab">Tab two</div></div>
<table><caption>Prices</caption><thead><tr><th>Item</th><th>Price</th></tr></thead><tbody><tr><th scope="row">Tea</th><td>2</td></tr></tbody></table>
<figure><img src="/z.png" alt="Chart"><figcaption>Figure one</figcaption></figure>
<ol><li>First <b>bold</b> item</li><li><p>Block item</p></li></ol>
<dl><dt>Term</dt><dd>Definition</dd></dl>
<details open><summary>Shown details</summary><p>Inside open details</p></details>
<details><summary>Closed details</summary><p>Inside closed details</p></details>
<div aria-hidden="true"><button>Hidden by aria</button></div>
<div style="display:none"><button>Hidden by display</button></div>
<div style="visibility:hidden"><button>Hidden by visibility</button><span style="visibility:visible">Shown inside hidden</span></div>
<div style="display:contents"><button>In contents</button></div>
<blockquote>Quoted</blockquote><p>Text with <code>code</code> and <a href="/in">a link</a> inside.</p>
<hr><progress aria-label="Loading" value="40" max="100"></progress>
<div role="dialog" aria-label="Notice"><p>Dialog text</p><button>OK</button></div>
<div role="alert">Alert text</div><div role="status">Status text</div>
<div id="host"></div>
<p title="Has a title">Paragraph with title</p>
<span aria-label="Labelled span">span text</span>
</main>
<footer><p>Page foot</p></footer>`;
const root = document.getElementById('host').attachShadow({ mode: 'open' });
root.innerHTML = '<button>Shadow button</button><slot></slot>';
document.getElementById('host').innerHTML = '<a href="/slotted">Slotted link</a>';
return true;
})()"#;

/// A rich-text editor (`contenteditable`) is a text box in the snapshot,
/// its text as its value, and what an agent fills through its ref shows in
/// the next snapshot. Chromium's own tree calls it an unnamed-role generic.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_contenteditable_editor_is_a_textbox_an_agent_can_fill() {
    use oxwright_engine::{Act, ActOptions, Target};
    let wf = Wf::start_on(false).await;
    let page = wf.page().await;
    goto(page.as_ref(), &wf.url("/app/stuck")).await;
    page.evaluate(
        r#"document.body.insertAdjacentHTML('beforeend',
          '<div contenteditable="true" aria-label="Comment"><p>Draft <b>one</b></p></div>' +
          '<div contenteditable="true" aria-placeholder="Reply"></div>'); true"#,
        Duration::from_secs(5),
    )
    .await
    .unwrap();
    let snap = page.snapshot(&SnapshotOptions::default()).await.unwrap();
    let line = snap
        .text
        .lines()
        .find(|l| l.contains("textbox \"Comment\""))
        .unwrap_or_else(|| panic!("no editor line:\n{}", snap.text));
    assert!(line.ends_with(": Draft one"), "{line}");
    assert!(snap.text.contains("- textbox \"Reply\" [ref="), "{}", snap.text);
    // Its text is its value, not lines of its own under it.
    assert!(!snap.text.contains("- paragraph: Draft"), "{}", snap.text);
    let editor = snap
        .elements
        .iter()
        .find(|e| e.role == "textbox" && e.name == "Comment")
        .expect("the editor has a ref");
    let opts = ActOptions {
        timeout: Duration::from_secs(5),
        settle: false,
    };
    page.act(
        &Target::Ref(editor.ref_id.clone()),
        &Act::Fill {
            value: "Looks good".into(),
            secret: false,
        },
        &opts,
    )
    .await
    .expect("fills the editor");
    let after = page.snapshot(&SnapshotOptions::default()).await.unwrap();
    assert!(
        after.text.contains("textbox \"Comment\"") && after.text.contains(": Looks good"),
        "{}",
        after.text
    );
    // A role locator finds it too.
    let found = page
        .locate(&Locator::role("textbox", Some("Comment")))
        .await
        .unwrap();
    assert_eq!(found.len(), 1);
}
