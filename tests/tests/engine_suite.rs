//! The shared engine suite (`oxwright_engine::test_suite`) on Chromium: the
//! suite's pages served on loopback by a small HTTP server, a second origin
//! (`localhost` on the same port) for cross-origin frames, and fresh pages
//! from a warm pool for every case.

use std::sync::Arc;

use oxwright_browser::BrowserPool;
use oxwright_engine::test_suite::{self, Capabilities};
use oxwright_engine::{BrowserEngine, EngineErrorKind, OpenOptions};

mod common;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chromium_page_passes_the_engine_suite() {
    let (base, policy) = common::suite_site().await;
    let pool = BrowserPool::start(common::pool_config())
        .await
        .expect("chromium starts (apt-get install chromium)");
    let open = common::suite_opener(Arc::new(pool.clone()), policy.clone());
    let caps = Capabilities {
        scripts: true,
        evaluate: true,
        iframes: true,
        // Without site isolation cross-origin frames are in-process.
        cross_origin_iframes: true,
        network: true,
        frame_deferred: true,
    };
    test_suite::run(&open, &base, caps).await;
    // A page opened without `record_requests` (a workflow's) records nothing.
    let page = pool.open(&OpenOptions::new(policy)).await.expect("a page opens");
    let err = page.requests().await.expect_err("no recorder");
    assert_eq!(err.kind, EngineErrorKind::Unsupported, "{err}");
    let err = page.response_body("1").await.expect_err("no recorder");
    assert_eq!(err.kind, EngineErrorKind::Unsupported, "{err}");
    drop(page);
    pool.shutdown().await;
}
