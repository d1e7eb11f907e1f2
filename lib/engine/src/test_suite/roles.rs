//! Role cases: ARIA's presentational-role conflict rule, on markup shaped
//! as jQuery UI's tabs write it.

use super::*;

/// A focusable element marked `role="presentation"` keeps its implicit
/// role (jQuery UI's tab links are links); an element with a global ARIA
/// attribute keeps it too; a plain element marked so has none.
pub(super) async fn presentational_but_focusable(page: &dyn Page, base: &url::Url) {
    page.goto(&url(base, "/suite/tabs"), &goto_opts())
        .await
        .expect("goto tabs");
    let link = |name: &str| Locator::role("link", Some(name));
    assert_eq!(
        count(page, link("Shipping")).await,
        1,
        "a focusable link marked presentation is still a link"
    );
    assert_eq!(
        count(page, Locator::role("tab", None)).await,
        2,
        "the tabs themselves"
    );
    assert_eq!(
        count(page, Locator::role("heading", Some("Described heading"))).await,
        1,
        "a global ARIA attribute keeps the role"
    );
    assert_eq!(
        count(page, Locator::role("heading", Some("Plain heading"))).await,
        0,
        "a plain heading marked presentation is no heading"
    );
    assert_eq!(
        count(page, link("Not focusable")).await,
        0,
        "an anchor without href is no link"
    );
    let opts = ActOptions::default();
    page.act(&Target::locator(link("Shipping")), &Act::Click, &opts)
        .await
        .expect("the tab link is clicked");
    let url = page.url().await.expect("url");
    assert!(
        url.ends_with("/suite/tabs#tab-shipping"),
        "the link was followed: {url}"
    );
}
