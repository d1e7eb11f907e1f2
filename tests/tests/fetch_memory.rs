//! A page that grows without end (a DOM of ever more links, a heap of kept
//! arrays, canvases outside the heap) ends its job with a typed
//! `resource_limit` error at the per-job ceiling; a script allocating in one loop that never yields is
//! stopped by V8's cap a quarter above it (its renderer only). Either way
//! the job beside it on the same browser is spared.

mod common;

use std::time::{Duration, Instant};

use common::{Env, pool_config};
use oxwright_browser::PoolConfig;
use oxwright_fetch::fetch_page;
use oxwright_fixtures::ARTICLE_PATHS;
use oxwright_jobs::ErrorKind;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_over_the_job_memory_limit_ends_resource_limit_and_spares_its_neighbour() {
    let env = Env::with_config(PoolConfig {
        pages_per_browser: 2,
        max_pages_per_browser: Some(2),
        job_memory_mb: 192,
        // Below one tick of the DOM hog (20,000 links), so its first tick
        // is over the limit however slowly a loaded machine runs the next.
        job_dom_nodes: 15_000,
        ..pool_config()
    })
    .await;
    for (kind, says) in [
        ("dom", "DOM nodes"),
        ("heap", "MiB of JavaScript and DOM heap"),
        ("sync", "ran out of JavaScript heap"),
        // Canvases the heap does not count: the renderer's own size stops it.
        ("canvas", "proportional set size"),
    ] {
        let path = format!("/memory-hog?kind={kind}");
        let mut hog = env.spec(&path);
        hog.retry_count = 2;
        hog.timeout_ms = 30_000;
        // Read at `load`, which the page holds back while it grows.
        hog.wait_until = oxwright_jobs::WaitUntil::Load;
        let neighbour = env.spec(ARTICLE_PATHS[0]);
        let started = Instant::now();
        let (hog, neighbour) = tokio::join!(
            fetch_page(&env.pool, &env.policy, &hog),
            fetch_page(&env.pool, &env.policy, &neighbour)
        );
        let err = hog.expect_err(&path);
        assert_eq!(err.kind, ErrorKind::ResourceLimit, "{kind}: {err}");
        assert!(err.message.contains(says), "{kind}: {err}");
        assert_eq!(err.attempts, 1, "{kind}: a page over the limit is not retried");
        assert!(
            started.elapsed() < Duration::from_secs(25),
            "{kind}: ended by the limit, not the deadline ({:?})",
            started.elapsed()
        );
        let neighbour = neighbour.unwrap_or_else(|e| panic!("{kind}: the neighbour failed: {e}"));
        assert!(!neighbour.result.markdown.is_empty());
    }
    // The browser is fine afterwards.
    let again = fetch_page(&env.pool, &env.policy, &env.spec(ARTICLE_PATHS[1]))
        .await
        .unwrap();
    assert!(!again.result.markdown.is_empty());
}

/// A script nests elements deeper than a renderer can lay out: 100,000
/// deep leaves the renderer stuck for good, 20,000 stuck and then crashed,
/// 3,000 crashed at once on every attempt. Each ends `resource_limit`
/// (not the deadline's `timeout`, not a `browser_crashed` that promises a
/// retry might help), and the job beside it on the same browser is read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dom_too_deep_to_lay_out_ends_resource_limit_and_spares_its_neighbour() {
    let env = Env::with_config(PoolConfig {
        pages_per_browser: 2,
        max_pages_per_browser: Some(2),
        ..pool_config()
    })
    .await;
    for (depth, says) in [
        (100_000, "stopped answering for 8 s"),
        (20_000, "stopped answering"),
        (3_000, "crashed its renderer on each of 3 attempts"),
    ] {
        let path = format!("/deep-dom?depth={depth}");
        let mut deep = env.spec(&path);
        deep.retry_count = 2;
        deep.timeout_ms = 45_000;
        let neighbour = env.spec(ARTICLE_PATHS[0]);
        let (deep, neighbour) = tokio::join!(
            fetch_page(&env.pool, &env.policy, &deep),
            fetch_page(&env.pool, &env.policy, &neighbour)
        );
        let err = deep.expect_err(&path);
        assert_eq!(err.kind, ErrorKind::ResourceLimit, "{depth}: {err}");
        assert!(err.message.contains(says), "{depth}: {err}");
        let neighbour = neighbour.unwrap_or_else(|e| panic!("{depth}: the neighbour failed: {e}"));
        assert!(!neighbour.result.markdown.is_empty());
    }
    let again = fetch_page(&env.pool, &env.policy, &env.spec(ARTICLE_PATHS[1]))
        .await
        .unwrap();
    assert!(!again.result.markdown.is_empty());
}
