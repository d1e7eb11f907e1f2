//! `POST /v1/crawls` on the scheduler daemon over the in-memory queue and
//! store, with a worker played here and a real robots.txt server: the
//! crawl takes exactly what its rules allow, each page once, with its
//! depth and parent; `GET /v1/batches/{id}` shows it growing; a cancel
//! stops it releasing pages.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use oxwright_artifacts::{ArtifactStore, MemoryStore};
use oxwright_jobs::{JobKind, JobReport, ReportStatus, keys};
use oxwright_policy::UrlPolicy;
use oxwright_queue::{JobQueue, MemoryQueue};
use oxwright_scheduler::{SchedulerOptions, run_scheduler};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

struct Daemon {
    addr: SocketAddr,
    queue: Arc<MemoryQueue>,
    store: Arc<MemoryStore>,
    shutdown: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

impl Daemon {
    async fn stop(self) {
        self.shutdown.cancel();
        tokio::time::timeout(Duration::from_secs(10), self.task)
            .await
            .expect("the daemon stops")
            .unwrap();
    }
}

async fn start() -> Daemon {
    start_on(Arc::new(MemoryQueue::new()), Arc::new(MemoryStore::new()), true).await
}

/// A daemon on `queue` and `store`, as a scheduler started again on the
/// same broker and bucket is; `durable`: the queue outlives the daemon.
async fn start_on(queue: Arc<MemoryQueue>, store: Arc<MemoryStore>, durable: bool) -> Daemon {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let shutdown = CancellationToken::new();
    let opts = SchedulerOptions {
        flush_interval: Duration::from_millis(50),
        durable_queue: durable,
        ..SchedulerOptions::new(Arc::new(UrlPolicy::allowing(["127.0.0.1".parse().unwrap()])))
    };
    let task = tokio::spawn({
        let (queue, store, shutdown) = (queue.clone(), store.clone(), shutdown.clone());
        async move {
            run_scheduler(queue, store, opts, Some(listener), shutdown)
                .await
                .expect("scheduler runs");
        }
    });
    Daemon {
        addr,
        queue,
        store,
        shutdown,
        task,
    }
}

/// Serves `robots.txt` (and nothing else: the pages are the worker's).
async fn robots_server(robots: &'static str) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((mut stream, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                let n = stream.read(&mut buf).await.unwrap_or(0);
                let head = String::from_utf8_lossy(&buf[..n]);
                let response = if head.starts_with("GET /robots.txt ") {
                    format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{robots}",
                        robots.len()
                    )
                } else {
                    "HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n".to_owned()
                };
                let _ = stream.write_all(response.as_bytes()).await;
            });
        }
    });
    addr
}

/// One HTTP/1.1 request; returns the status and the JSON body.
async fn http(addr: SocketAddr, method: &str, path: &str, body: &str) -> (u16, serde_json::Value) {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!(
        "{method} {path} HTTP/1.1\r\nhost: test\r\nconnection: close\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    let status = response[9..12].parse().unwrap();
    let body = response.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or("");
    (
        status,
        serde_json::from_str(body).unwrap_or(serde_json::Value::Null),
    )
}

/// The links of each page of the site, by path.
fn links_of(origin: &str, path: &str) -> Vec<String> {
    let at = |p: &str| format!("{origin}{p}");
    match path {
        "/" => vec![
            at("/a"),
            at("/b"),
            at("/private/x"),
            "http://other.test/".to_owned(),
            // The same pages spelt otherwise: fetched once.
            at("/a?utm_source=news"),
            at("/#top"),
        ],
        "/a" => vec![at("/"), at("/a/deep")],
        "/b" => vec![at("/b/deep"), at("/a")],
        "/a/deep" => vec![at("/a/deep/deeper")],
        _ => Vec::new(),
    }
}

/// A site's links (`links_of` or `tree_of`), and the page loads the
/// worker made, by URL.
#[derive(Clone)]
struct Site {
    links: fn(&str, &str) -> Vec<String>,
    loads: Arc<std::sync::Mutex<BTreeMap<String, usize>>>,
    /// How long a page load takes.
    load_time: Duration,
}

impl Site {
    fn of(links: fn(&str, &str) -> Vec<String>) -> Self {
        Self {
            links,
            loads: Arc::default(),
            load_time: Duration::ZERO,
        }
    }
}

/// Pages `/p1` to `/p{TREE}` under `/`: `/pN` links to `/p(2N+1)` and
/// `/p(2N+2)`, and every page back to `/`.
const TREE: usize = 80;

fn tree_of(origin: &str, path: &str) -> Vec<String> {
    let n = match path {
        "/" => 0,
        p => p.trim_start_matches("/p").parse::<usize>().unwrap(),
    };
    let mut links = vec![format!("{origin}/")];
    for child in [2 * n + 1, 2 * n + 2] {
        if child <= TREE {
            links.push(format!("{origin}/p{child}"));
        }
    }
    if n == 0 {
        links.retain(|l| l.contains("/p"));
    }
    links
}

/// Plays a worker: answers each fetch job with a result holding its
/// page's links, and an ok report (twice, as a redelivery would), as a
/// real worker does; a job that may have run before and has a stored
/// result is answered from it without a load. Holds its answers while
/// `hold` is set.
async fn play_worker(
    queue: Arc<MemoryQueue>,
    store: Arc<MemoryStore>,
    origin: String,
    site: Site,
    hold: Arc<std::sync::atomic::AtomicBool>,
    stop: CancellationToken,
) {
    let mut consumer = queue.consume(JobKind::Fetch, 8).await.unwrap();
    loop {
        let delivery = tokio::select! {
            () = stop.cancelled() => return,
            next = consumer.next() => match next {
                Some(d) => d,
                None => return,
            },
        };
        while hold.load(std::sync::atomic::Ordering::SeqCst) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let job = delivery.job().as_ref().unwrap().clone();
        let url = url::Url::parse(job.url()).unwrap();
        let cancelled = store
            .exists(&keys::batch_cancelled(job.batch_id.as_deref().unwrap()))
            .await
            .unwrap();
        let result_key = keys::job_result(JobKind::Fetch, job.id);
        let stored = job.may_have_run && store.exists(&result_key).await.unwrap();
        if !stored {
            tokio::time::sleep(site.load_time).await;
            *site
                .loads
                .lock()
                .unwrap()
                .entry(url.path().to_owned())
                .or_default() += 1;
            let links: Vec<serde_json::Value> = (site.links)(&origin, url.path())
                .into_iter()
                .map(|u| serde_json::json!({ "url": u }))
                .collect();
            let result = serde_json::json!({
                "final_url": job.url(),
                "links": { "internal": links, "external": [] },
            });
            store
                .put(&result_key, result.to_string().into(), "application/json")
                .await
                .unwrap();
        }
        let report = JobReport {
            job_id: job.id,
            kind: job.kind(),
            batch_id: job.batch_id.clone(),
            url: job.url().to_owned(),
            status: if cancelled {
                ReportStatus::Failed
            } else {
                ReportStatus::Ok
            },
            error: cancelled.then(|| {
                oxwright_jobs::JobError::new(oxwright_jobs::ErrorKind::Cancelled, "the batch was cancelled")
            }),
            artifacts: vec![keys::job_result(job.kind(), job.id)],
            attempt: job.attempt,
            duration_ms: 1.0,
            finished_at: chrono::Utc::now(),
        };
        queue.publish_report(&report).await.unwrap();
        queue.publish_report(&report).await.unwrap();
        delivery.ack().await.unwrap();
    }
}

async fn wait_for(daemon: &Daemon, batch_id: &str, state: &str) -> serde_json::Value {
    for _ in 0..200 {
        let (status, body) = http(daemon.addr, "GET", &format!("/v1/batches/{batch_id}"), "").await;
        assert_eq!(status, 200, "{body}");
        if body["state"] == state {
            return body;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("crawl {batch_id} never {state}");
}

async fn lines(store: &MemoryStore, key: &str) -> Vec<serde_json::Value> {
    let body = store.get(key).await.unwrap();
    String::from_utf8(body.to_vec())
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crawl_through_the_api_takes_what_its_rules_allow_each_page_once() {
    let site = robots_server("User-agent: *\nDisallow: /private\n").await;
    let origin = format!("http://{site}");
    let daemon = start().await;
    let stop = CancellationToken::new();
    tokio::spawn(play_worker(
        daemon.queue.clone(),
        daemon.store.clone(),
        origin.clone(),
        Site::of(links_of),
        Arc::default(),
        stop.clone(),
    ));

    let (status, refused) = http(daemon.addr, "POST", "/v1/crawls", r#"{"url": "ftp://x/"}"#).await;
    assert_eq!(status, 400, "{refused}");
    let (status, refused) = http(
        daemon.addr,
        "POST",
        "/v1/crawls",
        &format!(r#"{{"url": "{origin}/", "crawl": {{"depth": 2}}}}"#),
    )
    .await;
    assert_eq!(status, 400, "an unknown crawl option is refused: {refused}");
    assert!(
        refused["message"].as_str().unwrap().contains("depth"),
        "{refused}"
    );

    let body = serde_json::json!({
        "url": format!("{origin}/"),
        "crawl": { "max_depth": 2, "per_host_delay_ms": 0 },
        "options": { "render": "never" },
    });
    let (status, accepted) = http(daemon.addr, "POST", "/v1/crawls", &body.to_string()).await;
    assert_eq!(status, 202, "{accepted}");
    let batch_id = accepted["batch_id"].as_str().unwrap().to_owned();
    assert_eq!(accepted["status_url"], format!("/v1/batches/{batch_id}"));

    let done = wait_for(&daemon, &batch_id, "completed").await;
    assert_eq!(
        (done["total"].as_u64(), done["ok"].as_u64()),
        (Some(5), Some(5)),
        "{done}"
    );
    let taken: Vec<(String, u64, Option<String>)> = lines(&daemon.store, &keys::batch_manifest(&batch_id))
        .await
        .iter()
        .map(|l| {
            (
                l["url"].as_str().unwrap().trim_start_matches(&origin).to_owned(),
                l["depth"].as_u64().unwrap(),
                l["parent"]
                    .as_str()
                    .map(|p| p.trim_start_matches(&origin).to_owned()),
            )
        })
        .collect();
    let paths: BTreeSet<&str> = taken.iter().map(|(p, ..)| p.as_str()).collect();
    assert_eq!(taken.len(), paths.len(), "each page once: {taken:?}");
    assert_eq!(
        paths,
        BTreeSet::from(["/", "/a", "/b", "/a/deep", "/b/deep"]),
        "{taken:?}"
    );
    for (path, depth, parent) in &taken {
        let want = match path.as_str() {
            "/" => (0, None),
            "/a" | "/b" => (1, Some("/")),
            "/a/deep" => (2, Some("/a")),
            _ => (2, Some("/b")),
        };
        assert_eq!((*depth, parent.as_deref()), want, "{path}");
    }
    let skipped: BTreeMap<String, String> = lines(&daemon.store, &keys::batch_skipped(&batch_id))
        .await
        .iter()
        .map(|l| {
            (
                l["url"].as_str().unwrap().trim_start_matches(&origin).to_owned(),
                l["reason"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        skipped.get("/private/x").map(String::as_str),
        Some("robots"),
        "{skipped:?}"
    );
    assert_eq!(
        skipped.get("http://other.test/").map(String::as_str),
        Some("off_host"),
        "{skipped:?}"
    );
    assert_eq!(
        skipped.get("/a/deep/deeper").map(String::as_str),
        Some("depth"),
        "{skipped:?}"
    );
    // A finished crawl cannot be cancelled, and its results page as a batch's.
    let (status, _) = http(daemon.addr, "DELETE", &format!("/v1/batches/{batch_id}"), "").await;
    assert_eq!(status, 409);
    let (_, page) = http(daemon.addr, "GET", &format!("/v1/batches/{batch_id}?limit=2"), "").await;
    assert_eq!(page["results"].as_array().unwrap().len(), 2);
    assert_eq!(page["next_offset"], 2);
    stop.cancel();
    daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_crawl_releases_no_further_page_and_ends_cancelled() {
    let site = robots_server("User-agent: *\nAllow: /\n").await;
    let origin = format!("http://{site}");
    let daemon = start().await;
    let hold = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let stop = CancellationToken::new();
    tokio::spawn(play_worker(
        daemon.queue.clone(),
        daemon.store.clone(),
        origin.clone(),
        Site::of(links_of),
        hold.clone(),
        stop.clone(),
    ));
    let body = serde_json::json!({ "url": format!("{origin}/"), "crawl": { "per_host_delay_ms": 0 } });
    let (status, accepted) = http(daemon.addr, "POST", "/v1/crawls", &body.to_string()).await;
    assert_eq!(status, 202, "{accepted}");
    let batch_id = accepted["batch_id"].as_str().unwrap().to_owned();
    let running = wait_for(&daemon, &batch_id, "running").await;
    assert_eq!(running["complete"], false);
    // The start page is out; cancelling now leaves its links unfollowed.
    let (status, answer) = http(daemon.addr, "DELETE", &format!("/v1/batches/{batch_id}"), "").await;
    assert_eq!(status, 202, "{answer}");
    hold.store(false, std::sync::atomic::Ordering::SeqCst);
    let done = wait_for(&daemon, &batch_id, "cancelled").await;
    for _ in 0..100 {
        if daemon
            .store
            .exists(&keys::batch_summary(&batch_id))
            .await
            .unwrap()
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let summary: serde_json::Value =
        serde_json::from_slice(&daemon.store.get(&keys::batch_summary(&batch_id)).await.unwrap()).unwrap();
    assert_eq!(summary["interrupted"], true, "{summary}");
    assert_eq!(
        summary["total"], 1,
        "no page released after the cancel: {summary} {done}"
    );
    let manifest = lines(&daemon.store, &keys::batch_manifest(&batch_id)).await;
    assert_eq!(manifest.len(), 1, "{manifest:?}");
    assert_eq!(manifest[0]["error"]["kind"], "cancelled", "{manifest:?}");
    stop.cancel();
    daemon.stop().await;
}

/// A crawl of the tree, its daemon stopped a third of the way.
struct Stopped {
    origin: String,
    site: Site,
    queue: Arc<MemoryQueue>,
    store: Arc<MemoryStore>,
    batch_id: String,
    /// Stops the worker playing on `queue`.
    worker: CancellationToken,
}

/// Starts a crawl of the tree on a daemon whose queue outlives it, with
/// a worker on that queue, and stops the daemon a third of the way: the
/// crawl is suspended, not cancelled, and stays listed.
async fn crawl_stopped_a_third_of_the_way() -> Stopped {
    let site_addr = robots_server("User-agent: *\nAllow: /\n").await;
    let origin = format!("http://{site_addr}");
    let first = start().await;
    let (queue, store) = (first.queue.clone(), first.store.clone());
    let site = Site {
        load_time: Duration::from_millis(25),
        ..Site::of(tree_of)
    };
    let worker = CancellationToken::new();
    tokio::spawn(play_worker(
        queue.clone(),
        store.clone(),
        origin.clone(),
        site.clone(),
        Arc::default(),
        worker.clone(),
    ));
    let body = serde_json::json!({
        "url": format!("{origin}/"),
        "crawl": { "per_host_delay_ms": 0, "per_host_concurrency": 3, "max_depth": 10 },
        "webhook": { "url": "http://127.0.0.1:9/hook", "events": ["completed"] },
    });
    let (status, accepted) = http(first.addr, "POST", "/v1/crawls", &body.to_string()).await;
    assert_eq!(status, 202, "{accepted}");
    let batch_id = accepted["batch_id"].as_str().unwrap().to_owned();
    let listing = keys::crawl_listing(&batch_id);
    let listed: serde_json::Value = serde_json::from_slice(&store.get(&listing).await.unwrap()).unwrap();
    assert_eq!(listed["webhook"]["url"], "http://127.0.0.1:9/hook", "{listed}");

    let manifest = keys::batch_manifest(&batch_id);
    for _ in 0..400 {
        if store.exists(&manifest).await.unwrap() && lines(&store, &manifest).await.len() >= TREE / 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    first.stop().await;
    let at_stop = lines(&store, &manifest).await.len();
    assert!(at_stop < TREE, "stopped before the crawl ended: {at_stop} lines");
    assert!(store.exists(&listing).await.unwrap(), "still listed");
    assert!(!store.exists(&keys::batch_summary(&batch_id)).await.unwrap());
    assert!(!store.exists(&keys::batch_cancelled(&batch_id)).await.unwrap());
    Stopped {
        origin,
        site,
        queue,
        store,
        batch_id,
        worker,
    }
}

impl Stopped {
    /// Waits for `daemon` to complete the crawl, then checks that it took
    /// every page of the tree once, at its depth, each loaded once.
    async fn completed_on(&self, daemon: &Daemon) {
        let done = wait_for(daemon, &self.batch_id, "completed").await;
        assert_eq!(
            (done["total"].as_u64(), done["ok"].as_u64()),
            (Some(TREE as u64 + 1), Some(TREE as u64 + 1)),
            "{done}"
        );
        let taken = lines(&self.store, &keys::batch_manifest(&self.batch_id)).await;
        let mut seen = BTreeSet::new();
        for line in &taken {
            let path = line["url"]
                .as_str()
                .unwrap()
                .trim_start_matches(&self.origin)
                .to_owned();
            let n = path.trim_start_matches("/p").parse::<usize>().unwrap_or(0);
            let depth = if path == "/" { 0 } else { (n + 1).ilog2() };
            assert_eq!(line["depth"], depth, "{line}");
            assert!(seen.insert(path), "each page one line: {line}");
        }
        assert_eq!(seen.len(), TREE + 1);
        let loads = self.site.loads.lock().unwrap().clone();
        assert_eq!(loads.len(), TREE + 1, "{loads:?}");
        assert!(
            loads.values().all(|n| *n == 1),
            "no page loaded twice: {:?}",
            loads.iter().filter(|(_, n)| **n > 1).collect::<Vec<_>>()
        );
        let skipped = lines(&self.store, &keys::batch_skipped(&self.batch_id)).await;
        assert!(skipped.is_empty(), "{skipped:?}");
        assert!(
            !self
                .store
                .exists(&keys::crawl_listing(&self.batch_id))
                .await
                .unwrap(),
            "unlisted once ended"
        );
        let summary = self
            .store
            .get(&keys::batch_summary(&self.batch_id))
            .await
            .unwrap();
        let summary: serde_json::Value = serde_json::from_slice(&summary).unwrap();
        assert_eq!(summary["interrupted"], false, "{summary}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crawl_outlives_its_scheduler_and_fetches_no_page_twice() {
    let stopped = crawl_stopped_a_third_of_the_way().await;
    // The next scheduler on the same queue and store takes it up.
    let second = start_on(stopped.queue.clone(), stopped.store.clone(), true).await;
    stopped.completed_on(&second).await;
    stopped.worker.cancel();
    second.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crawl_whose_queue_was_lost_publishes_its_pages_again() {
    let stopped = crawl_stopped_a_third_of_the_way().await;
    // The queue is gone with whatever it held (an in-process queue after
    // a crash): a scheduler on a new one publishes every page without a
    // line again, and a worker answers those already fetched from the
    // store.
    stopped.worker.cancel();
    let queue = Arc::new(MemoryQueue::new());
    let second = start_on(queue.clone(), stopped.store.clone(), false).await;
    let worker = CancellationToken::new();
    tokio::spawn(play_worker(
        queue,
        stopped.store.clone(),
        stopped.origin.clone(),
        stopped.site.clone(),
        Arc::default(),
        worker.clone(),
    ));
    stopped.completed_on(&second).await;
    worker.cancel();
    second.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_daemon_on_an_in_process_queue_ends_its_crawls_when_it_stops() {
    let site_addr = robots_server("User-agent: *\nAllow: /\n").await;
    let origin = format!("http://{site_addr}");
    let daemon = start_on(Arc::new(MemoryQueue::new()), Arc::new(MemoryStore::new()), false).await;
    let hold = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let worker = CancellationToken::new();
    tokio::spawn(play_worker(
        daemon.queue.clone(),
        daemon.store.clone(),
        origin.clone(),
        Site::of(tree_of),
        hold,
        worker.clone(),
    ));
    let body = serde_json::json!({ "url": format!("{origin}/"), "crawl": { "per_host_delay_ms": 0 } });
    let (status, accepted) = http(daemon.addr, "POST", "/v1/crawls", &body.to_string()).await;
    assert_eq!(status, 202, "{accepted}");
    let batch_id = accepted["batch_id"].as_str().unwrap().to_owned();
    wait_for(&daemon, &batch_id, "running").await;
    let store = daemon.store.clone();
    daemon.stop().await;
    let summary = store.get(&keys::batch_summary(&batch_id)).await.unwrap();
    let summary: serde_json::Value = serde_json::from_slice(&summary).unwrap();
    assert_eq!(summary["interrupted"], true, "{summary}");
    let manifest = lines(&store, &keys::batch_manifest(&batch_id)).await;
    assert_eq!(manifest.len(), 1, "{manifest:?}");
    assert_eq!(manifest[0]["error"]["kind"], "cancelled", "{manifest:?}");
    assert!(
        !store.exists(&keys::crawl_listing(&batch_id)).await.unwrap(),
        "not listed"
    );
    worker.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crawl_taken_up_shows_its_progress_before_any_page_reports() {
    use oxwright_scheduler::crawl::{CrawlListing, CrawlStop, run_crawl};
    let stopped = crawl_stopped_a_third_of_the_way().await;
    stopped.worker.cancel();
    let at_stop = lines(&stopped.store, &keys::batch_manifest(&stopped.batch_id))
        .await
        .len();
    let listed = CrawlListing::listed(stopped.store.as_ref()).await.unwrap();
    let req = listed[0].request(8, true).unwrap();
    let queue = Arc::new(MemoryQueue::new());
    let mut reports = queue.reports().await.unwrap();
    let stop = CancellationToken::new();
    let mut first = None;
    let run = run_crawl(
        queue.clone(),
        stopped.store.clone(),
        None,
        req,
        reports.as_mut(),
        |report, so_far| {
            if first.is_none() {
                first = Some((report.is_some(), so_far.ok + so_far.failed));
                stop.cancel();
            }
        },
        CrawlStop {
            shutdown: stop.clone(),
            drained: async {},
            suspend: Some(stop.clone()),
        },
    );
    // Without a first call the crawl waits for reports that never come.
    let summary = tokio::time::timeout(Duration::from_secs(10), run)
        .await
        .expect("the take-up shows its progress at once")
        .unwrap();
    assert_eq!(
        first,
        Some((false, at_stop)),
        "the summary the take-up found, before any page's line"
    );
    assert!(summary.suspended, "{summary:?}");
}
