//! The warm browser pool against real Chromium: renderer crashes, a killed
//! browser, recycling, capacity limits and shutdown.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::{Env, pool_config, wait_until};
use oxwright_browser::{Admission, BrowserError, NavigateOptions, PoolConfig};
use oxwright_fetch::fetch_page;

fn proc_exists(pid: i32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn renderer_crash_fails_fast_and_the_pool_keeps_serving() {
    let env = Env::start().await;
    let lease = env.pool.acquire(true).await.expect("lease");
    lease.crash_renderer().await;
    let opts = NavigateOptions::load(env.policy.clone(), Duration::from_secs(30));
    let url = env.site.url("/").parse().unwrap();
    let started = Instant::now();
    let err = lease.navigate(&url, &opts).await.unwrap_err();
    let elapsed = started.elapsed();
    assert!(matches!(err, BrowserError::Crashed(_)), "{err:?}");
    assert!(
        elapsed < Duration::from_secs(10),
        "crash noticed after {elapsed:?}"
    );
    assert!(lease.crashed());
    drop(lease);

    let r = fetch_page(&env.pool, &env.policy, &env.spec("/"))
        .await
        .expect("a new lease fetches fine")
        .result;
    assert_eq!(r.status, 200);
    assert_eq!(r.attempts, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_browser_is_replaced() {
    let env = Env::start().await;
    let pids = env.pool.pids().await;
    assert_eq!(pids.len(), 1, "{pids:?}");
    let old = pids[0];
    // SAFETY: plain syscall on a process this pool launched.
    let rc = unsafe { libc::kill(old, libc::SIGKILL) };
    assert_eq!(rc, 0, "kill -9 {old}");

    let r = fetch_page(&env.pool, &env.policy, &env.spec("/"))
        .await
        .expect("fetch after the browser was killed")
        .result;
    assert_eq!(r.status, 200);
    let stats = env.pool.stats();
    assert!(stats.replaced >= 1, "{stats:?}");
    assert!(stats.launched >= 2, "{stats:?}");
    let now = env.pool.pids().await;
    assert_eq!(now.len(), 1, "{now:?}");
    assert_ne!(now[0], old, "the dead browser is still in the pool");
}

/// Opening a page starts a renderer, which a busy machine can take longer
/// than one call's deadline to do: a page still opens, on the first browser.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opening_a_page_is_not_held_to_one_calls_deadline() {
    let env = Env::with_config(PoolConfig {
        // No DevTools round trip that opens a page fits in a millisecond.
        call_timeout: Duration::from_millis(1),
        health_interval: Duration::from_secs(3600),
        ..pool_config()
    })
    .await;
    for i in 0..2 {
        let lease = env
            .pool
            .acquire(true)
            .await
            .unwrap_or_else(|e| panic!("page {i} opens: {e}"));
        drop(lease);
    }
    let stats = env.pool.stats();
    assert_eq!(stats.launched, 1, "{stats:?}");
    assert_eq!(stats.replaced, 0, "{stats:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn browsers_are_recycled_after_their_job_budget() {
    let env = Env::with_config(PoolConfig {
        recycle_after: 2,
        ..pool_config()
    })
    .await;
    for i in 0..5 {
        fetch_page(&env.pool, &env.policy, &env.spec("/"))
            .await
            .unwrap_or_else(|e| panic!("fetch {i}: {e}"));
    }
    let stats = env.pool.stats();
    assert!(stats.launched >= 3, "{stats:?}");
    assert!(stats.recycled >= 2, "{stats:?}");
    assert_eq!(stats.replaced, 0, "{stats:?}");
    assert_eq!(env.pool.pids().await.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_fetches_never_exceed_capacity() {
    let env = Env::with_config(PoolConfig {
        browsers: 1,
        pages_per_browser: 2,
        max_pages_per_browser: Some(2),
        ..pool_config()
    })
    .await;
    assert_eq!(env.pool.capacity(), 2);
    let (results, peak) = fetch_all_sampling(&env, "/slow?ms=600", 4).await;
    for (i, r) in results.into_iter().enumerate() {
        let r = r.unwrap_or_else(|e| panic!("fetch {i}: {e}")).result;
        assert_eq!(r.status, 200, "fetch {i}");
        assert_eq!(r.attempts, 1, "fetch {i}");
    }
    assert!(peak <= 2, "in_use peaked at {peak}");
    assert!(peak >= 1, "sampler never saw a lease");
    assert_eq!(env.site.hits("/slow"), 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_kills_browsers_and_refuses_leases() {
    let env = Env::start().await;
    fetch_page(&env.pool, &env.policy, &env.spec("/"))
        .await
        .expect("fetch before shutdown");
    let pids = env.pool.pids().await;
    assert!(!pids.is_empty());
    for pid in &pids {
        assert!(proc_exists(*pid), "browser {pid} not running before shutdown");
    }
    env.pool.shutdown().await;
    for pid in &pids {
        assert!(
            wait_until(Duration::from_secs(5), || !proc_exists(*pid)).await,
            "browser {pid} still running 5 s after shutdown"
        );
    }
    let err = env.pool.acquire(true).await.unwrap_err();
    assert!(matches!(err, BrowserError::Unavailable(_)), "{err:?}");
}

/// Adaptive admission: with jobs waiting and the CPU counted as idle, the
/// pool admits pages beyond its start up to the maximum, never more; with
/// the CPU counted as saturated it admits none beyond the start and takes
/// none below it. (Trials are off here: whether a page more pays is the
/// controller's, unit-tested in `admission.rs`.)
/// (The thresholds make the CPU reading decide one way, so the test does
/// not depend on this machine's load.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admission_follows_the_cpu_between_its_bounds() {
    let always_idle = Admission {
        interval: Duration::from_millis(100),
        idle_below: 1.01,
        busy_above: 1.01,
        sustain: Duration::from_millis(200),
        trial: Duration::ZERO,
        backoff: Duration::ZERO,
        min_free_mib: 0,
    };
    let env = Env::with_config(PoolConfig {
        browsers: 1,
        pages_per_browser: 1,
        max_pages_per_browser: Some(3),
        admission: always_idle,
        ..pool_config()
    })
    .await;
    assert_eq!((env.pool.limit(), env.pool.capacity()), (1, 3));
    let (results, peak) = fetch_all_sampling(&env, "/slow?ms=1500", 6).await;
    for (i, r) in results.into_iter().enumerate() {
        r.unwrap_or_else(|e| panic!("fetch {i}: {e}"));
    }
    assert_eq!(peak, 3, "admitted beyond the start, up to the maximum");
    env.pool.shutdown().await;

    let always_busy = Admission {
        interval: Duration::from_millis(100),
        idle_below: -1.0,
        busy_above: -1.0,
        sustain: Duration::from_millis(200),
        trial: Duration::ZERO,
        backoff: Duration::ZERO,
        min_free_mib: 0,
    };
    let env = Env::with_config(PoolConfig {
        browsers: 1,
        pages_per_browser: 2,
        admission: always_busy,
        ..pool_config()
    })
    .await;
    assert_eq!((env.pool.limit(), env.pool.capacity()), (2, 4));
    // Jobs wait, the CPU counts as saturated: nothing beyond the start,
    // and nothing taken below it.
    let (results, peak) = fetch_all_sampling(&env, "/slow?ms=800", 4).await;
    for (i, r) in results.into_iter().enumerate() {
        r.unwrap_or_else(|e| panic!("fetch {i}: {e}"));
    }
    assert_eq!(peak, 2, "held at the start");
    assert_eq!(env.pool.limit(), 2);
    fetch_page(&env.pool, &env.policy, &env.spec("/")).await.unwrap();
}

/// Fetches `n` copies of `path` at once; returns the results and the most
/// pages the pool had on loan at any moment meanwhile.
async fn fetch_all_sampling(
    env: &Env,
    path: &str,
    n: usize,
) -> (
    Vec<Result<oxwright_fetch::FetchOutput, oxwright_jobs::JobError>>,
    usize,
) {
    let done = Arc::new(AtomicBool::new(false));
    let peak = Arc::new(AtomicUsize::new(0));
    let sampler = {
        let (pool, done, peak) = (env.pool.clone(), done.clone(), peak.clone());
        tokio::spawn(async move {
            while !done.load(Ordering::SeqCst) {
                peak.fetch_max(pool.in_use(), Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
    };
    let specs: Vec<_> = (0..n).map(|_| env.spec(path)).collect();
    let results =
        futures::future::join_all(specs.iter().map(|spec| fetch_page(&env.pool, &env.policy, spec))).await;
    done.store(true, Ordering::SeqCst);
    sampler.await.unwrap();
    (results, peak.load(Ordering::SeqCst))
}
