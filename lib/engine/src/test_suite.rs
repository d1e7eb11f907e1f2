//! The shared engine suite: every [`Page`] implementation runs these cases
//! in its own tests (the scripted page in this crate's, Chromium in
//! `tests/tests/engine_suite.rs`, the Playwright MCP backend in its crate).
//! The pages are plain HTML from [`pages`]; a harness serves them under a
//! base URL and hands the suite a way to open fresh pages. What an engine
//! cannot do is declared in [`Capabilities`], so a missing feature is a
//! visible decision, not a silent pass.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

mod network;
mod pages;
mod pointer;
mod roles;
pub use pages::pages;

use crate::{
    Act, ActOptions, EngineErrorKind, GotoOptions, Locator, Page, ScreenshotOptions, SnapshotOptions, Target,
    WaitCondition,
};

/// What the implementation under test can do beyond the common core.
#[derive(Debug, Clone, Copy)]
pub struct Capabilities {
    /// Page scripts run (shadow roots built by script, console, dialogs).
    pub scripts: bool,
    /// `evaluate` runs arbitrary expressions.
    pub evaluate: bool,
    /// Same-origin iframes appear in snapshots and can be targeted.
    pub iframes: bool,
    /// Cross-origin iframes appear in snapshots and can be targeted.
    pub cross_origin_iframes: bool,
    /// The page's requests are recorded, with headers and bodies.
    pub network: bool,
    /// An action's settle waits for what the page deferred to its next
    /// frames (a navigation two animation frames after a click).
    pub frame_deferred: bool,
}

/// Opens a fresh page for one case.
pub type Opener<'a> = &'a (dyn Fn() -> Pin<Box<dyn Future<Output = Box<dyn Page>> + Send>> + Sync);

fn url(base: &url::Url, path: &str) -> url::Url {
    base.join(path).expect("suite path joins")
}

fn goto_opts() -> GotoOptions {
    GotoOptions::load(Duration::from_secs(15))
}

/// Asserts the page shows `text` exactly once; the failure shows the page.
async fn shows(page: &dyn Page, text: &str, case: &str) {
    let seen = count(
        page,
        Locator::Text {
            text: text.into(),
            exact: true,
        },
    )
    .await;
    let log = page
        .snapshot(&SnapshotOptions::default())
        .await
        .map(|s| s.text)
        .unwrap_or_default();
    assert_eq!(seen, 1, "{case}: wanted {text:?}\n{log}");
}

async fn count(page: &dyn Page, l: Locator) -> usize {
    page.locate(&l)
        .await
        .unwrap_or_else(|e| panic!("locate {l}: {e}"))
        .len()
}

/// Runs every case. Panics (failing the calling test) on the first failure,
/// naming the case.
pub async fn run(open: Opener<'_>, base: &url::Url, caps: Capabilities) {
    navigation_and_title(open().await.as_ref(), base).await;
    snapshot_roles_and_refs(open().await.as_ref(), base).await;
    locators_of_every_kind(open().await.as_ref(), base).await;
    roles::presentational_but_focusable(open().await.as_ref(), base).await;
    errors_are_typed(open().await.as_ref(), base).await;
    form_actions(open().await.as_ref(), base).await;
    refs_go_stale(open().await.as_ref(), base).await;
    history(open().await.as_ref(), base).await;
    waits(open().await.as_ref(), base).await;
    policy_refusal(open().await.as_ref()).await;
    screenshots(open().await.as_ref(), base).await;
    if caps.evaluate {
        evaluate(open().await.as_ref(), base).await;
        reading_elements(open().await.as_ref(), base).await;
    }
    if caps.scripts {
        shadow_roots(open().await.as_ref(), base).await;
        console_and_dialogs(open().await.as_ref(), base).await;
        late_navigation(open().await.as_ref(), base).await;
        pointer::clicks_with_buttons_and_keys(open().await.as_ref(), base).await;
        pointer::drags(open().await.as_ref(), base).await;
    }
    if caps.frame_deferred {
        frame_deferred_navigation(open().await.as_ref(), base).await;
    }
    if caps.iframes {
        same_origin_frames(open().await.as_ref(), base).await;
    }
    if caps.cross_origin_iframes {
        cross_origin_frames(open().await.as_ref(), base).await;
    }
    if caps.network {
        network::requests_recorded(open().await.as_ref(), base).await;
    }
}

async fn navigation_and_title(page: &dyn Page, base: &url::Url) {
    let nav = page
        .goto(&url(base, "/suite/index"), &goto_opts())
        .await
        .expect("goto index");
    assert!(
        nav.final_url.ends_with("/suite/index"),
        "final url {}",
        nav.final_url
    );
    assert_eq!(page.title().await.expect("title"), "Suite index");
    assert!(page.url().await.expect("url").ends_with("/suite/index"));
    let html = page.html().await.expect("html");
    assert!(html.contains("Unique paragraph text"), "html lacks the paragraph");
}

async fn snapshot_roles_and_refs(page: &dyn Page, base: &url::Url) {
    page.goto(&url(base, "/suite/index"), &goto_opts())
        .await
        .expect("goto");
    let snap = page
        .snapshot(&SnapshotOptions::default())
        .await
        .expect("snapshot");
    for want in [
        "- heading \"Suite index\" [level=1] [ref=e",
        "- link \"Form page\" [ref=e",
        "- /url: /suite/form",
        "- button \"Plain button\" [ref=e",
        "Unique paragraph text",
    ] {
        assert!(
            snap.text.contains(want),
            "snapshot lacks {want:?}:\n{}",
            snap.text
        );
    }
    assert!(
        !snap.text.contains("Hidden button"),
        "hidden elements are not shown:\n{}",
        snap.text
    );
    let link = snap
        .elements
        .iter()
        .find(|e| e.role == "link" && e.name == "Form page")
        .expect("the link has a ref");
    assert!(link.ref_id.starts_with('e'));
    assert!(snap.url.ends_with("/suite/index"));
    let again = page
        .snapshot(&SnapshotOptions::default())
        .await
        .expect("snapshot again");
    assert_eq!(
        again.element(&link.ref_id).map(|e| e.name.as_str()),
        Some("Form page"),
        "refs are stable within a document"
    );
    let small = page
        .snapshot(&SnapshotOptions { max_chars: 120 })
        .await
        .expect("small snapshot");
    assert!(small.text.len() <= 120, "cap holds: {}", small.text.len());
    assert!(small.pruned > 0);
}

async fn locators_of_every_kind(page: &dyn Page, base: &url::Url) {
    page.goto(&url(base, "/suite/index"), &goto_opts())
        .await
        .expect("goto");
    assert_eq!(
        count(page, Locator::role("button", Some("Plain button"))).await,
        1
    );
    assert_eq!(
        count(page, Locator::role("button", Some("plain"))).await,
        1,
        "substring, any case"
    );
    assert_eq!(
        count(
            page,
            Locator::Role {
                role: "button".into(),
                name: Some("plain".into()),
                exact: true
            }
        )
        .await,
        0,
        "exact is whole and case-sensitive"
    );
    assert_eq!(
        count(page, Locator::role("button", Some("Hidden button"))).await,
        0,
        "hidden: no match"
    );
    assert_eq!(count(page, Locator::role("button", Some("Twin"))).await, 2);
    assert_eq!(count(page, Locator::text("Unique paragraph")).await, 1);
    assert_eq!(
        count(
            page,
            Locator::TestId {
                test_id: "primary".into()
            }
        )
        .await,
        1
    );
    assert_eq!(
        count(
            page,
            Locator::Placeholder {
                text: "Search the suite".into(),
                exact: false
            }
        )
        .await,
        1
    );
    assert_eq!(count(page, Locator::css("#plain")).await, 1);
    assert_eq!(count(page, Locator::css("nav a")).await, 2);
    page.goto(&url(base, "/suite/form"), &goto_opts())
        .await
        .expect("goto form");
    assert_eq!(
        count(
            page,
            Locator::Label {
                text: "Email".into(),
                exact: false
            }
        )
        .await,
        1
    );
    assert_eq!(count(page, Locator::role("checkbox", Some("Subscribe"))).await, 1);
}

async fn errors_are_typed(page: &dyn Page, base: &url::Url) {
    page.goto(&url(base, "/suite/index"), &goto_opts())
        .await
        .expect("goto");
    let quick = ActOptions {
        timeout: Duration::from_millis(500),
        settle: false,
    };
    let twin = Target::locator(Locator::role("button", Some("Twin")));
    let err = page.act(&twin, &Act::Click, &quick).await.expect_err("two match");
    assert_eq!(err.kind, EngineErrorKind::NotUnique, "{err}");
    assert_eq!(err.count, Some(2));
    let nth = Target::Locator {
        locator: Locator::role("button", Some("Twin")),
        nth: Some(1),
    };
    page.act(&nth, &Act::Click, &quick).await.expect("nth picks one");
    let missing = Target::locator(Locator::role("button", Some("No such button")));
    let err = page
        .act(&missing, &Act::Click, &quick)
        .await
        .expect_err("none match");
    assert_eq!(err.kind, EngineErrorKind::NotFound, "{err}");
    let heading = Target::locator(Locator::role("heading", Some("Suite index")));
    let err = page
        .act(
            &heading,
            &Act::Fill {
                value: "x".into(),
                secret: false,
            },
            &quick,
        )
        .await
        .expect_err("a heading is not editable");
    assert_eq!(err.kind, EngineErrorKind::NotInteractable, "{err}");
    let nav = page
        .goto(&url(base, "/suite/no-such-page-404"), &goto_opts())
        .await;
    if let Err(e) = nav {
        assert!(
            matches!(e.kind, EngineErrorKind::HttpStatus | EngineErrorKind::Navigation),
            "{e}"
        );
    }
}

async fn form_actions(page: &dyn Page, base: &url::Url) {
    page.goto(&url(base, "/suite/form"), &goto_opts())
        .await
        .expect("goto form");
    let opts = ActOptions::default();
    let email = Target::locator(Locator::Label {
        text: "Email".into(),
        exact: false,
    });
    page.act(
        &email,
        &Act::Fill {
            value: "ada@example.org".into(),
            secret: false,
        },
        &opts,
    )
    .await
    .expect("fill");
    page.act(
        &Target::locator(Locator::Label {
            text: "Password".into(),
            exact: false,
        }),
        &Act::Fill {
            value: "hunter2-secret".into(),
            secret: true,
        },
        &opts,
    )
    .await
    .expect("fill secret");
    let subscribe = Target::locator(Locator::role("checkbox", Some("Subscribe")));
    page.act(&subscribe, &Act::Check, &opts).await.expect("check");
    page.act(
        &Target::locator(Locator::role("combobox", Some("Country"))),
        &Act::Select {
            values: vec!["Japan".into()],
        },
        &opts,
    )
    .await
    .expect("select by label");
    let snap = page
        .snapshot(&SnapshotOptions::default())
        .await
        .expect("snapshot");
    assert!(
        snap.text.contains("ada@example.org"),
        "filled value shown:\n{}",
        snap.text
    );
    assert!(
        !snap.text.contains("hunter2-secret"),
        "a secret is never shown:\n{}",
        snap.text
    );
    assert!(snap.text.contains("[checked]"), "checked shown:\n{}", snap.text);
    assert!(snap.text.contains("Japan"), "selection shown:\n{}", snap.text);
    page.act(&subscribe, &Act::Uncheck, &opts).await.expect("uncheck");
    page.act(&subscribe, &Act::Check, &opts)
        .await
        .expect("check again");
    let acted = page
        .act(
            &Target::locator(Locator::role("button", Some("Send"))),
            &Act::Click,
            &opts,
        )
        .await
        .expect("submit");
    assert!(acted.navigated, "submitting navigates");
    let now = page.url().await.expect("url");
    assert!(now.contains("/suite/done"), "{now}");
    assert!(now.contains("email=ada%40example.org"), "{now}");
    assert!(
        now.contains("subscribe=yes") && now.contains("country=jp"),
        "{now}"
    );
    assert_eq!(count(page, Locator::role("heading", Some("Done"))).await, 1);
}

async fn refs_go_stale(page: &dyn Page, base: &url::Url) {
    page.goto(&url(base, "/suite/index"), &goto_opts())
        .await
        .expect("goto");
    let snap = page
        .snapshot(&SnapshotOptions::default())
        .await
        .expect("snapshot");
    let link = snap
        .elements
        .iter()
        .find(|e| e.role == "link" && e.name == "Form page")
        .expect("link ref")
        .ref_id
        .clone();
    let acted = page
        .act(&Target::Ref(link.clone()), &Act::Click, &ActOptions::default())
        .await
        .expect("click by ref");
    assert!(acted.navigated);
    assert!(page.url().await.expect("url").ends_with("/suite/form"));
    let err = page
        .act(&Target::Ref(link), &Act::Click, &ActOptions::default())
        .await
        .expect_err("a ref of the old document");
    assert_eq!(err.kind, EngineErrorKind::Stale, "{err}");
    assert!(err.message.contains("snapshot"), "says what to do: {err}");
    let err = page
        .act(&Target::Ref("e9999".into()), &Act::Click, &ActOptions::default())
        .await
        .expect_err("an unknown ref");
    assert_eq!(err.kind, EngineErrorKind::Stale, "{err}");
}

async fn history(page: &dyn Page, base: &url::Url) {
    let t = Duration::from_secs(10);
    page.goto(&url(base, "/suite/index"), &goto_opts())
        .await
        .expect("goto index");
    page.goto(&url(base, "/suite/form"), &goto_opts())
        .await
        .expect("goto form");
    page.back(t).await.expect("back");
    assert!(page.url().await.expect("url").ends_with("/suite/index"));
    page.forward(t).await.expect("forward");
    assert!(page.url().await.expect("url").ends_with("/suite/form"));
    page.reload(t).await.expect("reload");
    assert!(page.url().await.expect("url").ends_with("/suite/form"));
    let tabs = page.tabs().await.expect("tabs");
    assert!(
        tabs.iter().any(|t| t.current && t.url.ends_with("/suite/form")),
        "{tabs:?}"
    );
}

async fn waits(page: &dyn Page, base: &url::Url) {
    page.goto(&url(base, "/suite/index"), &goto_opts())
        .await
        .expect("goto");
    let t = Duration::from_secs(5);
    page.wait_for(&WaitCondition::Text("Unique paragraph".into()), t)
        .await
        .expect("text");
    page.wait_for(&WaitCondition::Selector("#plain".into()), t)
        .await
        .expect("selector");
    page.wait_for(&WaitCondition::Url("/suite/index".into()), t)
        .await
        .expect("url");
    page.wait_for(&WaitCondition::TextGone("Never on the page".into()), t)
        .await
        .expect("text gone");
    let err = page
        .wait_for(
            &WaitCondition::Text("Never on the page".into()),
            Duration::from_millis(300),
        )
        .await
        .expect_err("never appears");
    assert_eq!(err.kind, EngineErrorKind::Timeout, "{err}");
}

async fn policy_refusal(page: &dyn Page) {
    let metadata: url::Url = "http://169.254.169.254/latest/meta-data/".parse().expect("url");
    let err = page
        .goto(&metadata, &goto_opts())
        .await
        .expect_err("metadata address refused");
    assert_eq!(err.kind, EngineErrorKind::PolicyDenied, "{err}");
}

async fn screenshots(page: &dyn Page, base: &url::Url) {
    page.goto(&url(base, "/suite/index"), &goto_opts())
        .await
        .expect("goto");
    let png = page
        .screenshot(&ScreenshotOptions::default())
        .await
        .expect("screenshot");
    assert!(png.starts_with(&[0x89, b'P', b'N', b'G']), "a PNG");
    let png = page
        .screenshot(&ScreenshotOptions {
            full_page: true,
            element: None,
            mask_secrets: false,
        })
        .await
        .expect("full page");
    assert!(png.starts_with(&[0x89, b'P', b'N', b'G']));
    let el = page
        .screenshot(&ScreenshotOptions {
            full_page: false,
            element: Some(Target::locator(Locator::css("#plain"))),
            mask_secrets: false,
        })
        .await
        .expect("element");
    assert!(el.starts_with(&[0x89, b'P', b'N', b'G']));
}

async fn evaluate(page: &dyn Page, base: &url::Url) {
    page.goto(&url(base, "/suite/index"), &goto_opts())
        .await
        .expect("goto");
    let v = page
        .evaluate("document.title", Duration::from_secs(5))
        .await
        .expect("evaluate");
    assert_eq!(v, serde_json::json!("Suite index"));
    let v = page
        .evaluate("Promise.resolve(20 + 22)", Duration::from_secs(5))
        .await
        .expect("promise");
    assert_eq!(v, serde_json::json!(42));
    let err = page
        .evaluate("(() => { throw new Error('boom') })()", Duration::from_secs(5))
        .await
        .expect_err("throws");
    assert_eq!(err.kind, EngineErrorKind::Script, "{err}");
}

/// What a control shows (never a password field's value) and a table's
/// rows by its header cells, read alike on every engine that runs scripts
/// on an element.
async fn reading_elements(page: &dyn Page, base: &url::Url) {
    page.goto(&url(base, "/suite/form"), &goto_opts())
        .await
        .expect("goto form");
    let opts = ActOptions::default();
    let label = |text: &str| {
        Target::locator(Locator::Label {
            text: text.into(),
            exact: false,
        })
    };
    let fill = |value: &str, secret| Act::Fill {
        value: value.into(),
        secret,
    };
    page.act(&label("Email"), &fill("ada@example.org", false), &opts)
        .await
        .expect("fill");
    let email = page
        .inspect(&label("Email"))
        .await
        .expect("inspect the email field");
    assert_eq!(email.value.as_deref(), Some("ada@example.org"), "{email:?}");
    assert_eq!(email.role.as_deref(), Some("textbox"), "{email:?}");
    page.act(&label("Password"), &fill("hunter2-secret", true), &opts)
        .await
        .expect("fill the password");
    let password = page
        .inspect(&label("Password"))
        .await
        .expect("inspect the password field");
    assert!(password.secret && password.value.is_none(), "{password:?}");
    let country = page
        .inspect(&Target::locator(Locator::role("combobox", Some("Country"))))
        .await
        .expect("inspect the select");
    assert_eq!(country.value.as_deref(), Some("United States"), "{country:?}");

    page.goto(&url(base, "/suite/table"), &goto_opts())
        .await
        .expect("goto table");
    let orders = page
        .table_rows(&Target::locator(Locator::css("#orders")))
        .await
        .expect("read the orders");
    assert_eq!(
        orders,
        serde_json::json!([
            { "Order": "A-1", "Total": "$10.00" },
            { "Order": "B-2", "Total": "$7.50" },
        ])
    );
    let bare = page
        .table_rows(&Target::locator(Locator::css("#bare")))
        .await
        .expect("read the header-less table");
    assert_eq!(bare, serde_json::json!([["x", "1"], ["y", "2"]]));
}

async fn shadow_roots(page: &dyn Page, base: &url::Url) {
    page.goto(&url(base, "/suite/shadow"), &goto_opts())
        .await
        .expect("goto");
    let snap = page
        .snapshot(&SnapshotOptions::default())
        .await
        .expect("snapshot");
    assert!(snap.text.contains("button \"Shadow button\""), "{}", snap.text);
    assert_eq!(
        count(page, Locator::role("button", Some("Shadow button"))).await,
        1
    );
    assert_eq!(
        count(page, Locator::text("Inside shadow")).await,
        1,
        "text inside an open shadow root"
    );
    assert_eq!(
        count(page, Locator::css("button")).await,
        1,
        "css pierces open shadow roots"
    );
    page.act(
        &Target::locator(Locator::role("button", Some("Shadow button"))),
        &Act::Click,
        &ActOptions::default(),
    )
    .await
    .expect("click in shadow root");
    page.wait_for(
        &WaitCondition::Text("Shadow clicked".into()),
        Duration::from_secs(5),
    )
    .await
    .expect("the click took effect");
}

async fn console_and_dialogs(page: &dyn Page, base: &url::Url) {
    page.goto(&url(base, "/suite/scripted"), &goto_opts())
        .await
        .expect("goto");
    page.wait_for(&WaitCondition::Text("Late text".into()), Duration::from_secs(5))
        .await
        .expect("late text appears");
    let console = page.console().await;
    assert!(
        console.iter().any(|m| m.text.contains("hello from suite")),
        "{console:?}"
    );
    assert!(page.console().await.is_empty(), "console is drained");
    page.act(
        &Target::locator(Locator::role("button", Some("Alert"))),
        &Act::Click,
        &ActOptions::default(),
    )
    .await
    .expect("click opens an alert");
    page.wait_for(&WaitCondition::Text("after alert".into()), Duration::from_secs(5))
        .await
        .expect("the alert did not block the page");
    let dialogs = page.dialogs().await;
    assert!(
        dialogs
            .iter()
            .any(|d| d.kind == "alert" && d.message == "Hi there"),
        "{dialogs:?}"
    );
}

/// Clicks the element of `role` named `name`.
async fn click(page: &dyn Page, role: &str, name: &str) -> crate::Acted {
    page.act(
        &Target::locator(Locator::role(role, Some(name))),
        &Act::Click,
        &ActOptions::default(),
    )
    .await
    .unwrap_or_else(|e| panic!("click {role} {name:?}: {e}"))
}

/// The page is the one `/suite/late`'s buttons lead to.
async fn on_done(page: &dyn Page) {
    let now = page.url().await.expect("url");
    assert!(now.ends_with("/suite/done"), "{now}");
    assert_eq!(count(page, Locator::role("heading", Some("Done"))).await, 1);
}

/// An action whose navigation starts after a task the page queued (a
/// form's submit, a handler's zero-delay timer), slow on a loaded machine,
/// still reports that it navigated and returns on the new document; a
/// fragment link is not a navigation.
async fn late_navigation(page: &dyn Page, base: &url::Url) {
    page.goto(&url(base, "/suite/late"), &goto_opts())
        .await
        .expect("goto");
    let acted = click(page, "link", "To the bottom").await;
    assert!(!acted.navigated, "a fragment link does not navigate");
    assert!(page.url().await.expect("url").ends_with("/suite/late#bottom"));
    let acted = click(page, "button", "Go later").await;
    assert!(acted.navigated, "a navigation from a queued task is seen");
    on_done(page).await;
}

/// An action whose handler waits for the page to draw twice before it
/// navigates still reports that it navigated.
async fn frame_deferred_navigation(page: &dyn Page, base: &url::Url) {
    page.goto(&url(base, "/suite/late"), &goto_opts())
        .await
        .expect("goto");
    let acted = click(page, "button", "Go after two frames").await;
    assert!(acted.navigated, "a navigation deferred by two frames is seen");
    on_done(page).await;
}

async fn same_origin_frames(page: &dyn Page, base: &url::Url) {
    page.goto(&url(base, "/suite/frames"), &goto_opts())
        .await
        .expect("goto");
    page.wait_for(
        &WaitCondition::LoadState(crate::WaitUntil::Load),
        Duration::from_secs(5),
    )
    .await
    .expect("load");
    // Every engine accepts the default fetch wait as a wait condition.
    page.wait_for(
        &WaitCondition::LoadState(crate::WaitUntil::Ready),
        Duration::from_secs(10),
    )
    .await
    .expect("ready");
    let snap = page
        .snapshot(&SnapshotOptions::default())
        .await
        .expect("snapshot");
    assert!(snap.text.contains("button \"Inner button\""), "{}", snap.text);
    assert_eq!(
        count(page, Locator::role("button", Some("Inner button"))).await,
        1
    );
    assert_eq!(count(page, Locator::text("Inner button")).await, 1);
    page.act(
        &Target::locator(Locator::role("button", Some("Inner button"))),
        &Act::Click,
        &ActOptions::default(),
    )
    .await
    .expect("click in a frame");
    let snap = page
        .snapshot(&SnapshotOptions::default())
        .await
        .expect("snapshot");
    assert!(snap.text.contains("Inner clicked"), "{}", snap.text);
}

async fn cross_origin_frames(page: &dyn Page, base: &url::Url) {
    page.goto(&url(base, "/suite/frames"), &goto_opts())
        .await
        .expect("goto");
    let snap = page
        .snapshot(&SnapshotOptions::default())
        .await
        .expect("snapshot");
    assert!(snap.text.contains("button \"Remote button\""), "{}", snap.text);
    page.act(
        &Target::locator(Locator::role("button", Some("Remote button"))),
        &Act::Click,
        &ActOptions::default(),
    )
    .await
    .expect("click in a cross-origin frame");
    let snap = page
        .snapshot(&SnapshotOptions::default())
        .await
        .expect("snapshot");
    assert!(snap.text.contains("Remote clicked"), "{}", snap.text);
}
