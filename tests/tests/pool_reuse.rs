//! Context reuse against real Chromium: a reset context shows the next job
//! nothing of the previous one (whether it was read or driven by steps),
//! and contexts that failed, were driven through raw DevTools access or are
//! configured fresh-per-job are never handed out again.

mod common;

use std::time::Duration;

use common::{Env, pool_config, wait_until};
use oxwright_browser::{Isolation, NavigateOptions, PoolConfig};
use oxwright_fetch::fetch_page;
use serde_json::json;

const LIMIT: Duration = Duration::from_secs(15);

/// One page at a time, so every lease lands on the same parked page.
async fn single_page_env(context_reuse: u32) -> Env {
    Env::with_config(PoolConfig {
        browsers: 1,
        pages_per_browser: 1,
        context_reuse,
        ..pool_config()
    })
    .await
}

fn nav(env: &Env) -> NavigateOptions {
    NavigateOptions::load(env.policy.clone(), LIMIT)
}

/// Writes every kind of per-origin state a page can leave behind.
const WRITE_STATE: &str = r#"(async () => {
  document.cookie = 'job=a; max-age=3600; path=/';
  localStorage.setItem('job', 'a');
  sessionStorage.setItem('job', 'a');
  await new Promise((resolve, reject) => {
    const req = indexedDB.open('jobdb', 1);
    req.onupgradeneeded = () => req.result.createObjectStore('s');
    req.onsuccess = () => { req.result.close(); resolve(); };
    req.onerror = () => reject(req.error);
  });
  await caches.open('jobcache');
  history.pushState({}, '', '?one');
  history.pushState({}, '', '?two');
  history.pushState({}, '', '?three');
  window.name = 'job-a';
  return true;
})()"#;

/// Reads the same state back.
const READ_STATE: &str = r#"(async () => ({
  cookie: document.cookie,
  local: localStorage.getItem('job'),
  session: sessionStorage.getItem('job'),
  idb: (await indexedDB.databases()).map(d => d.name),
  caches: await caches.keys(),
  history: history.length,
  name: window.name,
}))()"#;

async fn wait_idle(env: &Env) {
    assert!(
        wait_until(Duration::from_secs(10), || env.pool.in_use() == 0).await,
        "the lease was not given back"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reused_context_shows_nothing_of_the_previous_job() {
    let env = single_page_env(50).await;
    let url = env.site.url("/").parse().unwrap();

    let a = env.pool.acquire(true).await.expect("lease A");
    a.navigate(&url, &nav(&env)).await.expect("job A navigates");
    a.evaluate(WRITE_STATE, LIMIT).await.expect("job A writes state");
    let own = a.evaluate(READ_STATE, LIMIT).await.expect("job A reads state");
    assert_eq!(own["cookie"], "job=a", "{own}");
    assert_eq!(own["local"], "a", "{own}");
    assert_eq!(own["session"], "a", "{own}");
    assert_eq!(own["idb"], json!(["jobdb"]), "{own}");
    assert_eq!(own["caches"], json!(["jobcache"]), "{own}");
    assert!(own["history"].as_u64().unwrap() >= 4, "{own}");
    drop(a);
    wait_idle(&env).await;

    let b = env.pool.acquire(true).await.expect("lease B");
    b.navigate(&url, &nav(&env)).await.expect("job B navigates");
    let seen = b.evaluate(READ_STATE, LIMIT).await.expect("job B reads state");
    drop(b);
    assert_eq!(
        seen,
        json!({
            "cookie": "",
            "local": null,
            "session": null,
            "idb": [],
            "caches": [],
            "history": seen["history"],
            "name": "",
        }),
        "job B saw job A's state"
    );
    assert!(
        seen["history"].as_u64().unwrap() <= 2,
        "job A's history leaked: {seen}"
    );

    // Proof that B ran in A's context, not in a new one.
    let stats = env.pool.stats();
    assert_eq!(
        (stats.leases, stats.contexts, stats.reused),
        (2, 1, 1),
        "{stats:?}"
    );
}

/// A page driven as a workflow drives it — snapshot, locate, fill, click
/// (here a fetch's structured actions, the same executor) — is reset and
/// handed to the next job like a read-only fetch's, and the next job sees
/// nothing of it: the session the sign-in stored is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_context_driven_by_steps_is_reused_and_shows_nothing_of_its_job() {
    let env = single_page_env(50).await;
    let mut spec = env.spec("/app/login");
    spec.actions = vec![
        r#"fill: textbox "Username" = ada"#.to_string(),
        format!(
            r#"fill: textbox "Password" = {}"#,
            oxwright_fixtures::APP_PASSWORD
        ),
        r#"click: button "Sign in""#.to_string(),
    ];
    let signed_in = fetch_page(&env.pool, &env.policy, &spec)
        .await
        .expect("job A signs in")
        .result;
    assert!(
        signed_in.final_url.ends_with("/app/search"),
        "{}",
        signed_in.final_url
    );
    wait_idle(&env).await;

    let b = env.pool.acquire(true).await.expect("lease B");
    b.navigate(&env.site.url("/app/search").parse().unwrap(), &nav(&env))
        .await
        .expect("job B navigates");
    let seen = b
        .evaluate("sessionStorage.getItem('user')", LIMIT)
        .await
        .expect("job B reads state");
    drop(b);
    assert_eq!(seen, json!(null), "job B saw job A's sign-in");
    let stats = env.pool.stats();
    assert_eq!(
        (stats.leases, stats.contexts, stats.reused),
        (2, 1, 1),
        "the steps' context was not reused: {stats:?}"
    );
}

/// A frame of another site renders in a process of its own (site
/// isolation) and stores under a partition of the page's site, out of the
/// reset's reach: the context it ran in is disposed, not reused, and the
/// next job sees nothing it stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reused_context_shows_nothing_a_frame_of_another_site_stored() {
    let mut env = single_page_env(50).await;
    let port = env.site.addr().port();
    env.policy = std::sync::Arc::new(oxwright_browser::UrlPolicy::allowing([
        env.site.addr().to_string().parse().unwrap(),
        format!("localhost:{port}").parse().unwrap(),
    ]));
    let url: url::Url = env.site.url("/app/xstate").parse().unwrap();
    let seen = "document.getElementById('seen').textContent";
    for job in ["A", "B"] {
        let lease = env.pool.acquire(true).await.expect("lease");
        lease.navigate(&url, &nav(&env)).await.expect("the job navigates");
        let mut text = String::new();
        for _ in 0..100 {
            text = lease
                .evaluate(seen, LIMIT)
                .await
                .expect("reads the page")
                .as_str()
                .unwrap_or_default()
                .to_string();
            if text.starts_with("frame saw") {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        drop(lease);
        wait_idle(&env).await;
        assert_eq!(text, "frame saw local=null idb=none", "job {job}");
    }
    let stats = env.pool.stats();
    assert_eq!(
        (stats.leases, stats.contexts, stats.reused),
        (2, 2, 0),
        "{stats:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fetches_reuse_one_context_until_its_budget() {
    let env = single_page_env(3).await;
    for i in 0..7 {
        let r = fetch_page(
            &env.pool,
            &env.policy,
            &env.spec(oxwright_fixtures::ARTICLE_PATHS[i % 6]),
        )
        .await
        .unwrap_or_else(|e| panic!("fetch {i}: {e}"))
        .result;
        assert_eq!(r.status, 200, "fetch {i}");
        assert!(r.markdown.len() > 1000, "fetch {i}: {} bytes", r.markdown.len());
        wait_idle(&env).await;
    }
    let stats = env.pool.stats();
    // 3 jobs per context: contexts for jobs 1-3, 4-6 and 7.
    assert_eq!(
        (stats.leases, stats.contexts, stats.reused),
        (7, 3, 4),
        "{stats:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fresh_context_per_job_when_reuse_is_off() {
    let env = single_page_env(1).await;
    for i in 0..3 {
        fetch_page(&env.pool, &env.policy, &env.spec("/"))
            .await
            .unwrap_or_else(|e| panic!("fetch {i}: {e}"));
        wait_idle(&env).await;
    }
    let stats = env.pool.stats();
    assert_eq!(
        (stats.leases, stats.contexts, stats.reused),
        (3, 3, 0),
        "{stats:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_or_raw_driven_contexts_are_not_reused() {
    let env = single_page_env(50).await;
    let opts = nav(&env);

    // A failed navigation (non-HTML main document) leaves the page in an unknown state.
    let lease = env.pool.acquire(true).await.expect("lease");
    let pdf = env.site.url("/doc.pdf").parse().unwrap();
    lease.navigate(&pdf, &opts).await.expect_err("a PDF is refused");
    drop(lease);
    wait_idle(&env).await;

    // Raw DevTools access may change what no reset undoes.
    let lease = env.pool.acquire(true).await.expect("lease");
    let _ = lease.page();
    drop(lease);
    wait_idle(&env).await;

    // A clean job parks its page; the next one takes it.
    for _ in 0..2 {
        let lease = env.pool.acquire(true).await.expect("lease");
        lease
            .navigate(&env.site.url("/").parse().unwrap(), &opts)
            .await
            .expect("navigates");
        drop(lease);
        wait_idle(&env).await;
    }
    let stats = env.pool.stats();
    assert_eq!(
        (stats.leases, stats.contexts, stats.reused),
        (4, 3, 1),
        "{stats:?}"
    );
}

/// The renderer processes (Chromium's `--type=renderer`) under `browsers`.
fn renderers_of(browsers: &[i32]) -> std::collections::BTreeSet<i32> {
    let mut parent = std::collections::HashMap::new();
    let mut renderers = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let Some(ppid) = stat
            .rfind(')')
            .and_then(|i| stat[i + 2..].split_whitespace().nth(1))
            .and_then(|p| p.parse::<i32>().ok())
        else {
            continue;
        };
        parent.insert(pid, ppid);
        // Zygote children rewrite their argv as one space-separated title.
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        if cmdline.windows(15).any(|w| w == b"--type=renderer") {
            renderers.push(pid);
        }
    }
    let under = |mut pid: i32| {
        for _ in 0..8 {
            match parent.get(&pid) {
                Some(p) if browsers.contains(p) => return true,
                Some(p) => pid = *p,
                None => return false,
            }
        }
        false
    };
    renderers.into_iter().filter(|pid| under(*pid)).collect()
}

/// Reused contexts keep their renderer processes: no job starts one. (With
/// Chromium's spare renderer on, every navigation in one context threw away
/// the spare made for another and forked a new one — a third of a renderer
/// start per page, ~40 % of the pool's Chromium CPU.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reused_contexts_start_no_renderer_per_job() {
    let env = Env::with_config(PoolConfig {
        browsers: 1,
        pages_per_browser: 2,
        ..pool_config()
    })
    .await;
    let fetch_pair = |round: usize| {
        let env = &env;
        async move {
            let jobs = (0..2).map(|i| {
                let path = oxwright_fixtures::ARTICLE_PATHS[(2 * round + i) % 6];
                async move {
                    fetch_page(&env.pool, &env.policy, &env.spec(path))
                        .await
                        .unwrap_or_else(|e| panic!("fetch {path}: {e}"))
                }
            });
            futures::future::join_all(jobs).await;
            wait_idle(env).await;
        }
    };
    fetch_pair(0).await;
    let browsers = env.pool.pids().await;
    let before = renderers_of(&browsers);
    // One renderer per page, nothing else: Chromium 156's headless windows
    // preloaded an omnibox-popup WebUI renderer per context, and the
    // startup tab had its own (5 renderers here before they were turned off).
    assert_eq!(before.len(), 2, "renderers {before:?} under {browsers:?}");
    for round in 1..=6 {
        fetch_pair(round).await;
    }
    let after = renderers_of(&browsers);
    let stats = env.pool.stats();
    assert_eq!((stats.leases, stats.contexts), (14, 2), "{stats:?}");
    assert_eq!(after, before, "renderers changed over 12 reused jobs");
}

/// `Isolation::Shared`: a browser's pages live in its default context, so
/// jobs, consecutive or concurrent, see each other's cookies and storage;
/// a page that saw an error is closed (not its context) and replaced.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shared_isolation_shares_one_context_between_jobs() {
    let env = Env::with_config(PoolConfig {
        browsers: 1,
        pages_per_browser: 2,
        isolation: Isolation::Shared,
        ..pool_config()
    })
    .await;
    let url = env.site.url("/").parse().unwrap();
    let opts = nav(&env);

    let a = env.pool.acquire(true).await.expect("lease A");
    a.navigate(&url, &opts).await.expect("job A navigates");
    a.evaluate(WRITE_STATE, LIMIT).await.expect("job A writes state");
    // A concurrent job on the browser's other page shares the context.
    let b = env.pool.acquire(true).await.expect("lease B");
    b.navigate(&url, &opts).await.expect("job B navigates");
    let seen = b.evaluate(READ_STATE, LIMIT).await.expect("job B reads state");
    assert_eq!(seen["cookie"], "job=a", "{seen}");
    assert_eq!(seen["local"], "a", "{seen}");
    assert_eq!(seen["idb"], json!(["jobdb"]), "{seen}");
    drop((a, b));
    wait_idle(&env).await;

    // The next job takes a parked page, not reset: A's state is still there.
    let c = env.pool.acquire(true).await.expect("lease C");
    c.navigate(&url, &opts).await.expect("job C navigates");
    let kept = c.evaluate(READ_STATE, LIMIT).await.expect("job C reads state");
    assert_eq!(kept["cookie"], "job=a", "{kept}");
    // A failed job's page is closed and the next lease gets a new one.
    let pdf = env.site.url("/doc.pdf").parse().unwrap();
    c.navigate(&pdf, &opts).await.expect_err("a PDF is refused");
    drop(c);
    wait_idle(&env).await;
    // Two jobs at once: one takes B's parked page, the other needs a new
    // page, since C's was closed.
    let spec = env.spec("/");
    let (x, y) = tokio::join!(
        fetch_page(&env.pool, &env.policy, &spec),
        fetch_page(&env.pool, &env.policy, &spec),
    );
    assert_eq!(x.expect("fetch x").result.status, 200);
    assert_eq!(y.expect("fetch y").result.status, 200);
    wait_idle(&env).await;

    let stats = env.pool.stats();
    // Pages opened: A's, B's, and one after C's was closed.
    assert_eq!(
        (stats.leases, stats.contexts, stats.reused),
        (5, 3, 2),
        "{stats:?}"
    );
}

/// Resident memory of `pid` in MiB (`VmRSS`).
fn rss_mib(pid: i32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|kib| kib.parse::<u64>().ok())
        .map_or(0, |kib| kib / 1024)
}

/// A reused context's renderer starts the next job without the previous
/// one's JavaScript heap: the reset has V8 collect the old document's
/// objects once they are more than a few MiB. (Before, a parked renderer
/// kept them until V8's heuristics ran, and four renderers carried one
/// page's garbage each into their next load: ~170 MiB of the Chromium peak
/// on real pages.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reset_collects_the_previous_jobs_javascript_heap() {
    let env = single_page_env(50).await;
    let url = env.site.url("/").parse().unwrap();

    let a = env.pool.acquire(true).await.expect("lease A");
    a.navigate(&url, &nav(&env)).await.expect("job A navigates");
    let browsers = env.pool.pids().await;
    let renderers = renderers_of(&browsers);
    assert_eq!(renderers.len(), 1, "renderers {renderers:?}");
    let renderer = *renderers.first().unwrap();
    let base = rss_mib(renderer);
    // 300 arrays of 100,000 doubles: ~230 MiB the page holds until it is left.
    a.evaluate(
        "window.junk = Array.from({length: 300}, (_, i) => new Array(100000).fill(i + 0.5)); window.junk.length",
        LIMIT,
    )
    .await
    .expect("job A allocates");
    let loaded = rss_mib(renderer);
    assert!(
        loaded >= base + 200,
        "the arrays did not show in the renderer's RSS: {base} → {loaded} MiB"
    );
    drop(a);
    wait_idle(&env).await;

    // The reset is done; V8 may hand the freed pages back on a background
    // thread, so allow it a moment, not the seconds its own GC would wait.
    let freed = wait_until(Duration::from_secs(2), || rss_mib(renderer) < base + 60).await;
    assert!(
        freed,
        "the reset renderer still holds job A's heap: {base} → {loaded} → {} MiB",
        rss_mib(renderer)
    );
    assert_eq!(
        renderers_of(&browsers),
        renderers,
        "the renderer was replaced, not reset"
    );
    assert_eq!(env.pool.stats().contexts, 1);
}
