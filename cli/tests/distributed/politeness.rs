//! Per-host politeness across a fleet: a batch submitted to the scheduler
//! with `per_host_concurrency` is released host by host by the scheduler,
//! so three workers with twelve pages between them never have more than
//! the limit in flight at a host (measured at the server), another host of
//! the same batch runs beside it rather than after it, robots.txt is
//! obeyed, and a scheduler killed mid-batch is replaced by one that takes
//! the batch up where it was, losing no page. A batch `oxwright submit`
//! lists with host limits is taken up by the scheduler already running.
//! A crawl started through `POST /v1/crawls` keeps the same limits while
//! three workers take its pages, each page loaded once, and outlives a
//! scheduler killed or stopped under it.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{Request, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use oxwright_artifacts::ArtifactStore;
use oxwright_jobs::keys;

use crate::cluster::{Cluster, eventually};

/// What one host's server saw: each page's start and end, and the most
/// pages in flight at once.
#[derive(Clone, Default)]
struct Host {
    hits: Arc<Mutex<Vec<(String, Instant, Instant)>>>,
    in_flight: Arc<Mutex<(usize, usize)>>,
}

impl Host {
    fn pages(&self) -> Vec<(String, Instant, Instant)> {
        self.hits
            .lock()
            .unwrap()
            .iter()
            .filter(|(t, _, _)| t != "/robots.txt")
            .cloned()
            .collect()
    }

    fn max_in_flight(&self) -> usize {
        self.in_flight.lock().unwrap().1
    }

    fn last_end(&self) -> Instant {
        self.pages().iter().map(|(_, _, end)| *end).max().unwrap()
    }
}

/// Counts a request in flight until it ends, however it ends.
struct Counted(Host, String, Instant);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.in_flight.lock().unwrap().0 -= 1;
        let target = std::mem::take(&mut self.1);
        self.0.hits.lock().unwrap().push((target, self.2, Instant::now()));
    }
}

async fn serve(State(host): State<Host>, req: Request) -> Response {
    let target = req
        .uri()
        .path_and_query()
        .map(|p| p.to_string())
        .unwrap_or_default();
    {
        let mut f = host.in_flight.lock().unwrap();
        f.0 += 1;
        f.1 = f.1.max(f.0);
    }
    let _counted = Counted(host.clone(), target.clone(), Instant::now());
    if target == "/robots.txt" {
        return (
            [(header::CONTENT_TYPE, "text/plain")],
            "User-agent: *\nDisallow: /private/\n",
        )
            .into_response();
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    // Each page links its two children in a tree, and a private page.
    let links = target
        .strip_prefix("/page/")
        .and_then(|n| n.parse::<u64>().ok())
        .map(|n| {
            format!(
                r#"<nav><a href="/page/{}">next</a> <a href="/page/{}">other</a> <a href="/private/{n}">private</a></nav>"#,
                2 * n + 1,
                2 * n + 2
            )
        })
        .unwrap_or_default();
    let html = format!(
        "<!doctype html><html><head><title>{target}</title></head><body><main><h1>Page {target}</h1>\
         <p>A page of the politeness site, with enough words in it to be read as its content.</p></main>{links}</body></html>"
    );
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], html).into_response()
}

async fn start_host() -> (SocketAddr, Host) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let host = Host::default();
    let app = axum::Router::new().fallback(serve).with_state(host.clone());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (addr, host)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_released_host_by_host_keeps_each_hosts_limit_across_three_workers() {
    let (a, a_host) = start_host().await;
    let (b, b_host) = start_host().await;
    let mut cluster = Cluster::start().await;
    cluster.with_env("OXWRIGHT_ALLOW_HOSTS", &format!("{a},{b}"));
    let (scheduler, base) = cluster.scheduler_api();
    for _ in 0..3 {
        cluster.worker(4, &[]);
    }
    let mut urls: Vec<String> = (0..300).map(|n| format!("http://{a}/page/{n}")).collect();
    urls.extend((0..60).map(|n| format!("http://{b}/page/{n}")));
    urls.push(format!("http://{a}/private/secret"));
    let _ = rustls::crypto::ring::default_provider().install_default();
    let body = serde_json::json!({
        "urls": urls,
        "options": { "render": "never" },
        "per_host_concurrency": 2,
        "respect_robots": true,
    });
    let batch = post_accepted(&base, "/v1/batches", &body).await;
    assert!(
        cluster.store.exists(&keys::gated_batch(&batch)).await.unwrap(),
        "the batch is listed for a restarted scheduler"
    );

    // Killed mid-batch, the scheduler is replaced by one that takes the
    // batch up again from the store.
    eventually("a third of host A's pages done", Duration::from_secs(120), || {
        let n = a_host.pages().len();
        async move { n >= 100 }
    })
    .await;
    cluster.signal(scheduler, libc::SIGKILL);
    cluster.wait(scheduler);
    let served_at_kill = a_host.pages().len();
    cluster.scheduler_logged("scheduler-2");

    let lines = cluster.manifest(&batch, Duration::from_secs(300)).await;
    assert_eq!(lines.len(), 361, "one line per URL");
    let mut by_status: BTreeMap<String, usize> = BTreeMap::new();
    for line in &lines {
        *by_status
            .entry(line["status"].as_str().unwrap().to_owned())
            .or_default() += 1;
    }
    assert_eq!(by_status.get("ok"), Some(&360), "{by_status:?}");
    let denied = lines.iter().find(|l| l["status"] == "failed").unwrap();
    assert_eq!(denied["error"]["kind"], "policy_denied", "{denied}");
    assert!(a_host.pages().iter().all(|(t, _, _)| !t.starts_with("/private/")));

    // The limit held at each host, at the server's clock, through the restart.
    assert_eq!(a_host.max_in_flight(), 2, "host A");
    assert_eq!(b_host.max_in_flight(), 2, "host B");
    // Each page loaded once; a page published in the instant between the
    // broker's confirm and the release log's write may be loaded again.
    let mut loads: BTreeMap<String, usize> = BTreeMap::new();
    for (host, server) in [("a", &a_host), ("b", &b_host)] {
        for (target, _, _) in server.pages() {
            *loads.entry(format!("{host}{target}")).or_default() += 1;
        }
    }
    assert_eq!(loads.len(), 360);
    let again: Vec<_> = loads.iter().filter(|(_, n)| **n > 1).collect();
    assert!(again.len() <= 1, "pages loaded twice: {again:?}");
    assert!(served_at_kill < 300, "the batch ended before the kill");
    // Host B ran beside host A, not after it.
    assert!(
        b_host.last_end() + Duration::from_secs(5) < a_host.last_end(),
        "host B's pages waited for host A's"
    );
    let log = cluster.log("scheduler-2");
    assert!(log.contains("taken up again"), "{log}");
    assert!(
        !cluster.store.exists(&keys::gated_batch(&batch)).await.unwrap(),
        "a completed batch is no longer listed"
    );
}

/// A batch `oxwright submit` lists with per-host limits while the scheduler
/// runs is taken up by it and released under them: one page at a time at
/// the host, starts the delay apart, robots.txt obeyed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_submitted_with_host_limits_is_taken_up_by_the_running_scheduler() {
    let (a, a_host) = start_host().await;
    let mut cluster = Cluster::start().await;
    cluster.with_env("OXWRIGHT_ALLOW_HOSTS", &a.to_string());
    cluster.scheduler();
    cluster.worker(4, &[]);
    let mut urls: Vec<String> = (0..12).map(|n| format!("http://{a}/page/{n}")).collect();
    urls.push(format!("http://{a}/private/secret"));
    let file = std::env::temp_dir().join(format!("urls-{}.txt", uuid::Uuid::new_v4().simple()));
    std::fs::write(&file, urls.join("\n")).unwrap();
    let file_arg = file.display().to_string();
    let batch = cluster.submit_args(&[
        "fetch",
        "--file",
        &file_arg,
        "--render",
        "never",
        "--per-host-concurrency",
        "1",
        "--per-host-delay-ms",
        "300",
        "--respect-robots",
    ]);
    let _ = std::fs::remove_file(&file);
    assert!(
        cluster.store.exists(&keys::gated_batch(&batch)).await.unwrap(),
        "the batch is listed for the scheduler"
    );

    let lines = cluster.manifest(&batch, Duration::from_secs(120)).await;
    assert_eq!(lines.len(), 13, "one line per URL");
    assert_eq!(lines.iter().filter(|l| l["status"] == "ok").count(), 12);
    let denied = lines.iter().find(|l| l["status"] == "failed").unwrap();
    assert_eq!(denied["error"]["kind"], "policy_denied", "{denied}");
    assert_eq!(a_host.max_in_flight(), 1, "one page at a time");
    let mut starts: Vec<Instant> = a_host.pages().iter().map(|(_, start, _)| *start).collect();
    starts.sort();
    assert_eq!(starts.len(), 12, "each page loaded once");
    // The delay is kept between releases; at the server each gap moves by
    // the difference of two deliveries' latencies, and the sum by one.
    let span = *starts.last().unwrap() - starts[0];
    assert!(
        span >= Duration::from_millis(11 * 300 - 100),
        "12 starts over {span:?}"
    );
    for pair in starts.windows(2) {
        let gap = pair[1] - pair[0];
        assert!(gap >= Duration::from_millis(150), "two starts {gap:?} apart");
    }
    assert!(cluster.log("scheduler").contains("taken up"));
    eventually(
        "a completed batch is no longer listed",
        Duration::from_secs(10),
        || {
            let store = cluster.store.clone();
            let key = keys::gated_batch(&batch);
            async move { !store.exists(&key).await.unwrap() }
        },
    )
    .await;
}

/// `POST /v1/crawls` across three workers: the scheduler follows each
/// page's links as its report comes back over the broker, takes the
/// limit's worth of pages, each loaded once, never more than the host's
/// limit at once, and nothing robots.txt disallows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crawl_through_the_api_keeps_each_hosts_limit_across_three_workers() {
    let (a, a_host) = start_host().await;
    let mut cluster = Cluster::start().await;
    cluster.with_env("OXWRIGHT_ALLOW_HOSTS", &a.to_string());
    let (_, base) = cluster.scheduler_api();
    for _ in 0..3 {
        cluster.worker(4, &[]);
    }
    let batch = post_crawl(&base, a, 60).await;

    let lines = cluster.manifest(&batch, Duration::from_secs(180)).await;
    assert_eq!(lines.len(), 60, "the limit's worth of pages");
    assert!(lines.iter().all(|l| l["status"] == "ok"), "{lines:?}");
    let mut loads: BTreeMap<String, usize> = BTreeMap::new();
    for (target, _, _) in a_host.pages() {
        *loads.entry(target).or_default() += 1;
    }
    assert_eq!(loads.len(), 60, "{loads:?}");
    assert!(loads.values().all(|n| *n == 1), "a page loaded twice: {loads:?}");
    assert!(loads.keys().all(|t| t.starts_with("/page/")), "{loads:?}");
    assert_eq!(a_host.max_in_flight(), 2, "the host's limit");
    for line in &lines {
        let depth = line["depth"].as_u64().unwrap();
        assert_eq!(line["parent"].is_null(), depth == 0, "{line}");
    }
    let skipped = cluster.store.get(&keys::batch_skipped(&batch)).await.unwrap();
    let skipped = String::from_utf8(skipped.to_vec()).unwrap();
    assert!(skipped.contains(r#""reason":"robots""#), "{skipped}");
    assert!(skipped.contains(r#""reason":"limit""#), "{skipped}");
}

/// Starts a crawl of `limit` pages of `host` through the API at `base`;
/// returns its batch id.
async fn post_crawl(base: &str, host: SocketAddr, limit: usize) -> String {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let body = serde_json::json!({
        "url": format!("http://{host}/page/0"),
        "crawl": { "limit": limit, "max_depth": 10, "per_host_concurrency": 2, "per_host_delay_ms": 0 },
        "options": { "render": "never" },
    });
    post_accepted(base, "/v1/crawls", &body).await
}

/// POSTs `body` to `path` at `base`, expects 202, returns the batch id.
async fn post_accepted(base: &str, path: &str, body: &serde_json::Value) -> String {
    let answer = reqwest::Client::new()
        .post(format!("{base}{path}"))
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status().as_u16(), 202);
    let accepted: serde_json::Value = serde_json::from_str(&answer.text().await.unwrap()).unwrap();
    accepted["batch_id"].as_str().unwrap().to_owned()
}

/// A crawl outlives its scheduler: SIGKILLed, stopped, and SIGKILLed
/// again while pages are in flight, each time replaced by a scheduler
/// that takes the crawl up from the store. It ends with every page of its
/// limit once in the manifest, each loaded once, the host's limit held.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crawl_outlives_its_scheduler_killed_and_stopped_and_loads_no_page_twice() {
    let (a, a_host) = start_host().await;
    let mut cluster = Cluster::start().await;
    cluster.with_env("OXWRIGHT_ALLOW_HOSTS", &a.to_string());
    let (mut scheduler, base) = cluster.scheduler_api();
    for _ in 0..3 {
        cluster.worker(4, &[]);
    }
    let batch = post_crawl(&base, a, 160).await;
    for (round, (at, signal)) in [(30, libc::SIGKILL), (70, libc::SIGTERM), (110, libc::SIGKILL)]
        .into_iter()
        .enumerate()
    {
        let host = a_host.clone();
        eventually("pages loaded", Duration::from_secs(120), move || {
            let n = host.pages().len();
            async move { n >= at }
        })
        .await;
        cluster.signal(scheduler, signal);
        cluster.wait(scheduler);
        scheduler = cluster.scheduler_logged(&format!("scheduler-{round}"));
    }
    let loaded_at_last_kill = a_host.pages().len();
    let lines = cluster.manifest(&batch, Duration::from_secs(300)).await;
    // The scheduler stopped cleanly has its whole log.
    for (log, said) in [
        ("scheduler-0", "crawl taken up from its manifest"),
        ("scheduler-0", "crawl suspended with its scheduler"),
    ] {
        let text = cluster.log(log);
        assert!(text.contains(said), "{log} should say {said:?}:\n{text}");
    }
    assert!(
        loaded_at_last_kill < 160,
        "the crawl ended before the last kill: the kills proved nothing"
    );
    assert_eq!(lines.len(), 160, "the limit's worth of pages");
    assert!(lines.iter().all(|l| l["status"] == "ok"), "{lines:?}");
    let mut loads: BTreeMap<String, usize> = BTreeMap::new();
    for (target, _, _) in a_host.pages() {
        *loads.entry(target).or_default() += 1;
    }
    assert_eq!(loads.len(), 160, "{loads:?}");
    let twice: Vec<_> = loads.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "pages loaded twice: {twice:?}");
    assert!(a_host.max_in_flight() <= 2, "the host's limit");
    let mut urls: Vec<&str> = lines.iter().map(|l| l["url"].as_str().unwrap()).collect();
    urls.sort_unstable();
    urls.dedup();
    assert_eq!(urls.len(), 160, "one line a page");
    assert!(
        !cluster.store.exists(&keys::crawl_listing(&batch)).await.unwrap(),
        "unlisted once ended"
    );
    let summary = cluster.store.get(&keys::batch_summary(&batch)).await.unwrap();
    let summary: serde_json::Value = serde_json::from_slice(&summary).unwrap();
    assert_eq!(summary["interrupted"], false, "{summary}");
}
