//! The dashboard's actions over the in-memory queue and store: the failed
//! jobs submitted again without the credentials the store never keeps, an
//! action cache entry forgotten, and both refused without the CSRF token;
//! the daemon's bare address leads to the dashboard.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use oxwright_artifacts::{ArtifactStore, MemoryStore};
use oxwright_jobs::{ErrorKind, FetchSpec, Job, JobError, JobKind, JobReport, JobSpec, ReportStatus, keys};
use oxwright_queue::{JobQueue, MemoryQueue};
use oxwright_scheduler::{SchedulerOptions, run_scheduler, submit_batch};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

struct Daemon {
    addr: SocketAddr,
    queue: Arc<MemoryQueue>,
    store: Arc<MemoryStore>,
    shutdown: CancellationToken,
}

async fn start() -> Daemon {
    let queue = Arc::new(MemoryQueue::new());
    let store = Arc::new(MemoryStore::new());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let shutdown = CancellationToken::new();
    let opts = SchedulerOptions {
        flush_interval: Duration::from_millis(50),
        ..SchedulerOptions::new(Arc::new(oxwright_policy::UrlPolicy::default()))
    };
    tokio::spawn({
        let (queue, store, shutdown) = (queue.clone(), store.clone(), shutdown.clone());
        async move {
            run_scheduler(queue, store, opts, Some(listener), shutdown)
                .await
                .unwrap()
        }
    });
    Daemon {
        addr,
        queue,
        store,
        shutdown,
    }
}

/// One request as a browser on this machine sends it; the status and body.
async fn request(addr: SocketAddr, method: &str, path: &str, form: &str) -> (u16, String) {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!(
        "{method} {path} HTTP/1.1\r\nhost: 127.0.0.1:{}\r\nconnection: close\r\nsec-fetch-site: same-origin\r\n\
         content-type: application/x-www-form-urlencoded\r\ncontent-length: {}\r\n\r\n{form}",
        addr.port(),
        form.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    let status = response[9..12].parse().unwrap();
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status, body)
}

/// The CSRF token of the forms on `path`.
async fn csrf(addr: SocketAddr, path: &str) -> String {
    let (_, page) = request(addr, "GET", path, "").await;
    let at = page
        .find("name=\"csrf\" value=\"")
        .expect("a form with its token")
        + 19;
    page[at..].split('"').next().unwrap().to_owned()
}

fn encode(value: &str) -> String {
    url::form_urlencoded::byte_serialize(value.as_bytes()).collect()
}

async fn wait_complete(store: &MemoryStore, batch: &str) {
    for _ in 0..100 {
        if store.exists(&keys::batch_summary(batch)).await.unwrap() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("batch {batch} did not complete");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_jobs_go_again_without_the_credentials_the_store_never_keeps() {
    let daemon = start().await;
    let batch = "20261129T120000Z-0badf00d";
    let mut with_auth = FetchSpec::new("https://a.example/private".parse().unwrap());
    with_auth.basic_auth =
        Some(serde_json::from_value(serde_json::json!({"username": "u", "password": "hunter2"})).unwrap());
    let jobs = vec![
        Job::new(
            JobSpec::Fetch(FetchSpec::new("https://a.example/one".parse().unwrap())),
            Some(batch.into()),
        ),
        Job::new(JobSpec::Fetch(with_auth), Some(batch.into())),
        Job::new(
            JobSpec::Fetch(FetchSpec::new("https://a.example/ok".parse().unwrap())),
            Some(batch.into()),
        ),
    ];
    submit_batch(
        daemon.queue.as_ref(),
        daemon.store.as_ref(),
        batch,
        jobs.clone(),
        Vec::new(),
        "test",
    )
    .await
    .unwrap();
    let stored = daemon.store.get(&keys::batch_jobs(batch)).await.unwrap();
    let stored = String::from_utf8(stored.to_vec()).unwrap();
    assert!(!stored.contains("hunter2"), "{stored}");
    assert!(stored.contains("\"withheld\":[\"basic_auth\"]"), "{stored}");
    for (i, job) in jobs.iter().enumerate() {
        let failed = i < 2;
        let report = JobReport {
            job_id: job.id,
            kind: JobKind::Fetch,
            batch_id: Some(batch.into()),
            url: job.url().to_owned(),
            status: if failed {
                ReportStatus::Failed
            } else {
                ReportStatus::Ok
            },
            error: failed.then(|| JobError::new(ErrorKind::Timeout, "timed out")),
            artifacts: Vec::new(),
            attempt: 0,
            duration_ms: 1.0,
            finished_at: chrono::Utc::now(),
        };
        daemon.queue.publish_report(&report).await.unwrap();
    }
    wait_complete(&daemon.store, batch).await;
    let path = format!("/ui/batches/{batch}");

    let (status, _) = request(daemon.addr, "POST", &format!("{path}/resubmit"), "csrf=forged").await;
    assert_eq!(status, 403);
    let token = csrf(daemon.addr, &path).await;
    let (status, page) = request(
        daemon.addr,
        "POST",
        &format!("{path}/resubmit"),
        &format!("csrf={token}"),
    )
    .await;
    assert_eq!(status, 200, "{page}");
    assert!(
        page.contains("submits 1 failed jobs again") && page.contains("Left out: 1 jobs"),
        "{page}"
    );
    let again = page
        .split("/ui/batches/")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap()
        .to_owned();
    let record: serde_json::Value =
        serde_json::from_slice(&daemon.store.get(&keys::batch_record(&again)).await.unwrap()).unwrap();
    assert_eq!(record["resubmit_of"], batch);
    assert_eq!(record["jobs"][0]["url"], "https://a.example/one");
    assert_eq!(record["jobs"].as_array().unwrap().len(), 1);
    daemon.shutdown.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_action_cache_entry_is_forgotten() {
    let daemon = start().await;
    let key = serde_json::json!({"url_pattern": "/profile", "instruction": "Click Save", "placeholders": []});
    let entry = |instruction: &str, key: serde_json::Value| {
        serde_json::json!({
            "key": key, "successes": 3, "updated_at": "2026-11-01T00:00:00Z",
            "resolved": {"locator": {"method": "getByRole", "role": "button", "name": instruction}, "action": "click",
                         "fingerprint": {"role": "button", "name": instruction, "landmarks": []}, "url_after": "/profile"},
        })
    };
    let other =
        serde_json::json!({"url_pattern": "/profile", "instruction": "Click Cancel", "placeholders": []});
    let cache = serde_json::json!({
        "workflow_id": "checkout", "start_url": "https://a.example/", "checklist": [], "runs": 3,
        "entries": [entry("Save", key.clone()), entry("Cancel", other)],
    });
    daemon
        .store
        .put(
            "workflows/checkout/actions.json",
            cache.to_string().into(),
            "application/json",
        )
        .await
        .unwrap();
    let (status, page) = request(daemon.addr, "GET", "/ui/workflows/checkout", "").await;
    assert_eq!(status, 200);
    assert!(
        page.contains("Click Save") && page.contains("Click Cancel"),
        "{page}"
    );

    let form = format!("key={}", encode(&key.to_string()));
    let (status, _) = request(daemon.addr, "POST", "/ui/workflows/checkout/forget", &form).await;
    assert_eq!(status, 403, "no CSRF token");
    let token = csrf(daemon.addr, "/ui/workflows/checkout").await;
    let (status, _) = request(
        daemon.addr,
        "POST",
        "/ui/workflows/checkout/forget",
        &format!("{form}&csrf={token}"),
    )
    .await;
    assert_eq!(status, 303);
    let (_, page) = request(daemon.addr, "GET", "/ui/workflows/checkout", "").await;
    assert!(
        !page.contains("Click Save") && page.contains("Click Cancel"),
        "{page}"
    );
    let files = daemon.store.list("workflows/checkout/actions/").await.unwrap();
    assert_eq!(files.len(), 1);
    let file: serde_json::Value =
        serde_json::from_slice(&daemon.store.get(&files[0]).await.unwrap()).unwrap();
    assert_eq!(
        file["events"][0],
        serde_json::json!({"event": "forgotten", "key": key})
    );
    daemon.shutdown.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_daemons_address_leads_to_the_dashboard() {
    let daemon = start().await;
    let mut stream = tokio::net::TcpStream::connect(daemon.addr).await.unwrap();
    let ask = format!(
        "GET / HTTP/1.1\r\nhost: 127.0.0.1:{}\r\nconnection: close\r\n\r\n",
        daemon.addr.port()
    );
    stream.write_all(ask.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    let head = response
        .split("\r\n\r\n")
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase();
    assert!(head.starts_with("http/1.1 303"), "{head}");
    assert!(head.contains("\r\nlocation: /ui\r\n"), "{head}");
    let (status, page) = request(daemon.addr, "GET", "/ui", "").await;
    assert_eq!(status, 200, "{page}");
    // Other unknown paths still answer as the API does.
    let (status, body) = request(daemon.addr, "GET", "/nowhere", "").await;
    assert_eq!(status, 404);
    assert!(body.contains("not_found"), "{body}");
    daemon.shutdown.cancel();
}
