//! The shared engine suite on the scripted page.

use std::sync::Arc;

use oxwright_engine::test_suite::{self, Capabilities};
use oxwright_engine::{Page, ScriptedPage, ScriptedSite, UrlPolicy};

#[tokio::test]
async fn scripted_page_passes_the_engine_suite() {
    let base: url::Url = "http://suite.test/".parse().unwrap();
    let mut site = ScriptedSite::new();
    for (path, html) in test_suite::pages("http://other.test") {
        site = site.page(base.join(&path).unwrap().as_str(), &html);
    }
    let site = Arc::new(site);
    let policy = Arc::new(UrlPolicy::default());
    let open = move || {
        let (site, policy) = (site.clone(), policy.clone());
        Box::pin(async move { Box::new(ScriptedPage::with_policy(site, policy)) as Box<dyn Page> })
            as std::pin::Pin<Box<dyn std::future::Future<Output = Box<dyn Page>> + Send>>
    };
    let caps = Capabilities {
        scripts: false,
        evaluate: false,
        iframes: false,
        cross_origin_iframes: false,
        network: false,
        frame_deferred: false,
    };
    test_suite::run(&open, &base, caps).await;
}
