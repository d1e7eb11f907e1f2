//! The scheduler daemon over the in-memory queue and store: the HTTP API
//! submits batches and reports their progress, manifests get exactly one
//! line per job whatever the redeliveries, webhooks check their secret,
//! and cron schedules fire.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use oxwright_artifacts::{ArtifactStore, MemoryStore};
use oxwright_jobs::{JobKind, JobReport, ReportStatus, keys};
use oxwright_policy::UrlPolicy;
use oxwright_queue::{JobQueue, MemoryQueue};
use oxwright_scheduler::{
    ExpandTemplate, JobTemplate, ScheduleConfig, SchedulerOptions, WebhookConfig, run_scheduler,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

struct Daemon {
    addr: SocketAddr,
    queue: Arc<MemoryQueue>,
    store: Arc<MemoryStore>,
    shutdown: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

fn template(urls: &[&str]) -> JobTemplate {
    JobTemplate {
        kind: JobKind::Fetch,
        urls: urls.iter().map(|u| (*u).to_owned()).collect(),
        options: serde_json::Map::new(),
    }
}

async fn start(
    schedules: Vec<ScheduleConfig>,
    webhooks: Vec<WebhookConfig>,
    secrets: &[(&str, &str)],
) -> Daemon {
    let queue = Arc::new(MemoryQueue::new());
    let store = Arc::new(MemoryStore::new());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let shutdown = CancellationToken::new();
    let opts = SchedulerOptions {
        flush_interval: Duration::from_millis(50),
        schedules,
        webhooks,
        webhook_secrets: secrets
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect::<BTreeMap<_, _>>(),
        ..SchedulerOptions::new(Arc::new(UrlPolicy::default()))
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

/// One HTTP/1.1 request; returns the status and the JSON body.
async fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, serde_json::Value) {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut request = format!(
        "{method} {path} HTTP/1.1\r\nhost: test\r\nconnection: close\r\ncontent-type: application/json\r\ncontent-length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
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

/// Plays a worker: takes `n` jobs and publishes an ok report for each
/// (twice, as a redelivery would).
async fn play_worker(queue: &MemoryQueue, n: usize) -> Vec<JobReport> {
    let mut consumer = queue.consume(JobKind::Fetch, 8).await.unwrap();
    let mut reports = Vec::new();
    for _ in 0..n {
        let delivery = tokio::time::timeout(Duration::from_secs(5), consumer.next())
            .await
            .expect("a job arrives")
            .expect("queue open");
        let job = delivery.job().as_ref().unwrap().clone();
        let report = JobReport {
            job_id: job.id,
            kind: job.kind(),
            batch_id: job.batch_id.clone(),
            url: job.url().to_owned(),
            status: ReportStatus::Ok,
            error: None,
            artifacts: vec![keys::job_result(job.kind(), job.id)],
            attempt: job.attempt,
            duration_ms: 1.0,
            finished_at: chrono::Utc::now(),
        };
        queue.publish_report(&report).await.unwrap();
        queue.publish_report(&report).await.unwrap();
        delivery.ack().await.unwrap();
        reports.push(report);
    }
    reports
}

async fn wait_complete(daemon: &Daemon, batch_id: &str) -> serde_json::Value {
    for _ in 0..100 {
        let (status, body) = http(daemon.addr, "GET", &format!("/batches/{batch_id}"), &[], "").await;
        assert_eq!(status, 200, "{body}");
        if body["complete"] == true {
            return body;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("batch {batch_id} did not complete");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_batches_get_one_manifest_line_per_job() {
    let daemon = start(Vec::new(), Vec::new(), &[]).await;
    let (status, receipt) = http(
        daemon.addr,
        "POST",
        "/batches",
        &[],
        r#"{"urls": ["https://example.com/a", "https://example.com/b", "javascript:alert(1)"], "options": {"content": "full"}}"#,
    )
    .await;
    assert_eq!(status, 202, "{receipt}");
    assert_eq!(receipt["total"], 3);
    assert_eq!(receipt["refused"], 1);
    let batch_id = receipt["batch_id"].as_str().unwrap().to_owned();
    play_worker(&daemon.queue, 2).await;
    let done = wait_complete(&daemon, &batch_id).await;
    assert_eq!((done["ok"].as_u64(), done["failed"].as_u64()), (Some(2), Some(1)));
    assert_eq!(done["failed_by_kind"]["policy_denied"], 1);
    let manifest = daemon.store.get(&keys::batch_manifest(&batch_id)).await.unwrap();
    let lines: Vec<serde_json::Value> = String::from_utf8(manifest.to_vec())
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3, "redelivered reports add no line");
    assert!(
        daemon
            .store
            .exists(&keys::batch_summary(&batch_id))
            .await
            .unwrap()
    );

    let (status, body) = http(daemon.addr, "GET", "/batches/no-such-batch", &[], "").await;
    assert_eq!((status, body["error"].as_str()), (404, Some("not_found")));
    let (status, body) = http(daemon.addr, "POST", "/batches", &[], r#"{"urls": "nope"}"#).await;
    assert_eq!((status, body["error"].as_str()), (400, Some("invalid_input")));
    daemon.shutdown.cancel();
    daemon.task.await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_jobs_submit_a_single_job() {
    let daemon = start(Vec::new(), Vec::new(), &[]).await;
    let (status, body) = http(
        daemon.addr,
        "POST",
        "/v1/jobs",
        &[],
        r#"{"kind": "fetch", "spec": {"url": "https://example.com/one", "screenshot": true}}"#,
    )
    .await;
    assert_eq!(status, 202, "{body}");
    let reports = play_worker(&daemon.queue, 1).await;
    assert_eq!(body["job_id"], reports[0].job_id.to_string());
    wait_complete(&daemon, body["batch_id"].as_str().unwrap()).await;
    let (status, body) = http(
        daemon.addr,
        "POST",
        "/jobs",
        &[],
        r#"{"kind": "fetch", "spec": {"url": "http://169.254.169.254/latest/meta-data/"}}"#,
    )
    .await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("policy_denied")),
        "{body}"
    );
    daemon.shutdown.cancel();
    daemon.task.await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhooks_need_their_secret() {
    let hook = WebhookConfig {
        name: "deploy".into(),
        secret_env: Some("DEPLOY_SECRET".into()),
        job: Some(template(&["https://example.com/after-deploy"])),
        checks: Vec::new(),
        url_field: None,
        metadata_fields: Vec::new(),
    };
    let daemon = start(Vec::new(), vec![hook], &[("deploy", "s3cret-token")]).await;
    let (status, _) = http(daemon.addr, "POST", "/webhooks/deploy", &[], "").await;
    assert_eq!(status, 401);
    let (status, _) = http(
        daemon.addr,
        "POST",
        "/webhooks/deploy",
        &[("authorization", "Bearer wrong")],
        "",
    )
    .await;
    assert_eq!(status, 401);
    let (status, _) = http(daemon.addr, "POST", "/webhooks/other", &[], "").await;
    assert_eq!(status, 404);
    assert_eq!(
        daemon.queue.depth(JobKind::Fetch).await.unwrap(),
        0,
        "nothing enqueued"
    );
    let (status, receipt) = http(
        daemon.addr,
        "POST",
        "/webhooks/deploy",
        &[("authorization", "Bearer s3cret-token")],
        "",
    )
    .await;
    assert_eq!(status, 202, "{receipt}");
    assert!(receipt["batch_id"].as_str().unwrap().starts_with("deploy-"));
    let reports = play_worker(&daemon.queue, 1).await;
    assert_eq!(reports[0].url, "https://example.com/after-deploy");
    daemon.shutdown.cancel();
    daemon.task.await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cron_schedules_submit_batches() {
    let schedule = ScheduleConfig {
        name: "every-second".into(),
        cron: "* * * * * *".into(),
        job: template(&["https://example.com/scheduled"]),
    };
    let daemon = start(vec![schedule], Vec::new(), &[]).await;
    let reports = play_worker(&daemon.queue, 2).await;
    assert!(reports.iter().all(|r| r.url == "https://example.com/scheduled"));
    let batches: Vec<_> = reports.iter().map(|r| r.batch_id.clone().unwrap()).collect();
    assert_ne!(batches[0], batches[1], "one batch per tick");
    assert!(batches.iter().all(|b| b.starts_with("every-second-")));
    daemon.shutdown.cancel();
    daemon.task.await.unwrap();
}

#[tokio::test]
async fn a_bad_cron_expression_is_a_typed_error() {
    let schedule = ScheduleConfig {
        name: "broken".into(),
        cron: "every tuesday".into(),
        job: template(&["https://example.com/"]),
    };
    let err = run_scheduler(
        Arc::new(MemoryQueue::new()),
        Arc::new(MemoryStore::new()),
        SchedulerOptions {
            flush_interval: Duration::from_millis(50),
            schedules: vec![schedule],
            ..SchedulerOptions::new(Arc::new(UrlPolicy::default()))
        },
        None,
        CancellationToken::new(),
    )
    .await
    .unwrap_err();
    assert!(err.to_string().contains("broken"), "{err}");
}

#[tokio::test]
async fn a_restarted_tracker_resumes_the_manifest_without_duplicates() {
    let store: Arc<dyn ArtifactStore> = Arc::new(MemoryStore::new());
    let queue = MemoryQueue::new();
    let template = template(&["https://example.com/1", "https://example.com/2"]);
    let (jobs, refused) = template.jobs("b-restart", &UrlPolicy::default()).unwrap();
    oxwright_scheduler::submit_batch(&queue, store.as_ref(), "b-restart", jobs.clone(), refused, "test")
        .await
        .unwrap();
    let report = |i: usize| JobReport {
        job_id: jobs[i].id,
        kind: JobKind::Fetch,
        batch_id: Some("b-restart".into()),
        url: jobs[i].url().to_owned(),
        status: ReportStatus::Ok,
        error: None,
        artifacts: Vec::new(),
        attempt: 1,
        duration_ms: 1.0,
        finished_at: chrono::Utc::now(),
    };
    let mut first = oxwright_scheduler::BatchTracker::new(store.clone());
    first.record(&report(0)).await.unwrap();
    first.flush().await.unwrap();
    drop(first);
    let mut second = oxwright_scheduler::BatchTracker::new(store.clone());
    assert_eq!(
        second.record(&report(0)).await.unwrap(),
        oxwright_scheduler::Recorded::Duplicate
    );
    assert_eq!(
        second.record(&report(1)).await.unwrap(),
        oxwright_scheduler::Recorded::New
    );
    let done = second.flush().await.unwrap();
    assert_eq!(done.len(), 1);
    assert_eq!(done[0].ok, 2);
    let manifest = store.get(&keys::batch_manifest("b-restart")).await.unwrap();
    assert_eq!(manifest.iter().filter(|b| **b == b'\n').count(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_jobs_refuse_unknown_top_level_fields() {
    let daemon = start(Vec::new(), Vec::new(), &[]).await;
    for body in [
        r#"{"kind": "fetch", "spec": {"url": "https://example.com/one"}, "priority": 9}"#,
        r#"{"kind": "fetch", "spec": {"url": "https://example.com/one"}, "url": "https://example.com/two"}"#,
        r#"["https://example.com/one"]"#,
    ] {
        let (status, answer) = http(daemon.addr, "POST", "/jobs", &[], body).await;
        assert_eq!(
            (status, answer["error"].as_str()),
            (400, Some("invalid_input")),
            "{body}: {answer}"
        );
    }
    let (status, answer) = http(
        daemon.addr,
        "POST",
        "/jobs",
        &[],
        r#"{"kind": "fetch", "spec": {"url": "https://example.com/one"}, "priority": 9}"#,
    )
    .await;
    assert!(
        answer["message"].as_str().unwrap().contains("priority"),
        "{status} {answer}"
    );
    assert_eq!(
        daemon.queue.depth(JobKind::Fetch).await.unwrap(),
        0,
        "nothing was published"
    );
    daemon.shutdown.cancel();
    daemon.task.await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_jobs_refuse_unbounded_durations() {
    let daemon = start(Vec::new(), Vec::new(), &[]).await;
    for body in [
        r#"{"kind": "fetch", "spec": {"url": "https://example.com/one", "retry_delay_ms": 18446744073709551615}}"#,
        r#"{"kind": "fetch", "spec": {"url": "https://example.com/one", "timeout_ms": 86400000}}"#,
        r#"{"kind": "workflow", "spec": {"workflow": "click: button \"Go\"", "start_url": "https://example.com/", "action_timeout_ms": 18446744073709551615}}"#,
    ] {
        let (status, answer) = http(daemon.addr, "POST", "/jobs", &[], body).await;
        assert_eq!(
            (status, answer["error"].as_str()),
            (400, Some("invalid_input")),
            "{body}: {answer}"
        );
    }
    let (status, answer) = http(
        daemon.addr,
        "POST",
        "/batches",
        &[],
        r#"{"urls": ["https://example.com/a"], "options": {"retry_delay_ms": 18446744073709551615}}"#,
    )
    .await;
    assert_eq!(
        (status, answer["error"].as_str()),
        (400, Some("invalid_input")),
        "{answer}"
    );
    daemon.shutdown.cancel();
    daemon.task.await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_batch_entries_are_each_one_job_or_one_refusal() {
    let daemon = start(Vec::new(), Vec::new(), &[]).await;
    let body = serde_json::json!({
        "urls": [
            "https://example.com/a",
            "",
            "  ",
            "# not a comment here",
            "https://example.com/b\nhttps://example.com/c",
        ]
    })
    .to_string();
    let (status, receipt) = http(daemon.addr, "POST", "/batches", &[], &body).await;
    assert_eq!(status, 202, "{receipt}");
    assert_eq!(receipt["total"], 5, "{receipt}");
    assert_eq!(receipt["published"], 1, "{receipt}");
    assert_eq!(receipt["refused"], 4, "{receipt}");
    let batch_id = receipt["batch_id"].as_str().unwrap().to_owned();
    play_worker(&daemon.queue, 1).await;
    let done = wait_complete(&daemon, &batch_id).await;
    assert_eq!(done["failed_by_kind"]["invalid_input"], 4, "{done}");

    // The versioned route takes the same body, and a `kind`.
    let body = r#"{"kind": "sitemap", "urls": ["example.com", "javascript:alert(1)"]}"#;
    let (status, receipt) = http(daemon.addr, "POST", "/v1/batches", &[], body).await;
    assert_eq!(status, 202, "{receipt}");
    assert_eq!(
        (receipt["published"].as_u64(), receipt["refused"].as_u64()),
        (Some(1), Some(1))
    );
    let sitemap_batch = receipt["batch_id"].as_str().unwrap();
    assert_eq!(receipt["status_url"], format!("/v1/batches/{sitemap_batch}"));
    let mut sitemaps = daemon.queue.consume(JobKind::Sitemap, 1).await.unwrap();
    let delivery = tokio::time::timeout(Duration::from_secs(5), sitemaps.next())
        .await
        .expect("a sitemap job arrives")
        .expect("queue open");
    assert_eq!(delivery.job().as_ref().unwrap().kind(), JobKind::Sitemap);
    let manifest = daemon.store.get(&keys::batch_manifest(&batch_id)).await.unwrap();
    assert_eq!(String::from_utf8(manifest.to_vec()).unwrap().lines().count(), 5);
    daemon.shutdown.cancel();
    daemon.task.await.unwrap();
}

/// A memory store that fails every operation, like an S3 server that
/// refuses connections, while `down` is set.
#[derive(Debug, Default)]
struct SwitchedStore {
    inner: MemoryStore,
    down: std::sync::atomic::AtomicBool,
}

impl SwitchedStore {
    fn check(&self, key: &str) -> Result<(), oxwright_artifacts::ArtifactError> {
        if self.down.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(oxwright_artifacts::ArtifactError::Backend {
                key: key.to_owned(),
                message: "dispatch failure: connection refused".into(),
                retryable: true,
                source: None,
            });
        }
        Ok(())
    }

    fn set_down(&self, down: bool) {
        self.down.store(down, std::sync::atomic::Ordering::SeqCst);
    }
}

#[async_trait::async_trait]
impl ArtifactStore for SwitchedStore {
    async fn put(
        &self,
        key: &str,
        body: bytes::Bytes,
        content_type: &str,
    ) -> Result<(), oxwright_artifacts::ArtifactError> {
        self.check(key)?;
        self.inner.put(key, body, content_type).await
    }

    async fn get(&self, key: &str) -> Result<bytes::Bytes, oxwright_artifacts::ArtifactError> {
        self.check(key)?;
        self.inner.get(key).await
    }

    async fn append(&self, key: &str, line: bytes::Bytes) -> Result<(), oxwright_artifacts::ArtifactError> {
        self.check(key)?;
        self.inner.append(key, line).await
    }

    async fn get_versioned(
        &self,
        key: &str,
    ) -> Result<(bytes::Bytes, oxwright_artifacts::Version), oxwright_artifacts::ArtifactError> {
        self.check(key)?;
        self.inner.get_versioned(key).await
    }

    async fn put_if(
        &self,
        key: &str,
        body: bytes::Bytes,
        content_type: &str,
        expect: &oxwright_artifacts::Expect,
    ) -> Result<oxwright_artifacts::Version, oxwright_artifacts::ArtifactError> {
        self.check(key)?;
        self.inner.put_if(key, body, content_type, expect).await
    }

    async fn list(&self, prefix: &str) -> Result<Vec<String>, oxwright_artifacts::ArtifactError> {
        self.check(prefix)?;
        self.inner.list(prefix).await
    }

    async fn exists(&self, key: &str) -> Result<bool, oxwright_artifacts::ArtifactError> {
        self.check(key)?;
        self.inner.exists(key).await
    }

    async fn delete(&self, key: &str) -> Result<(), oxwright_artifacts::ArtifactError> {
        self.check(key)?;
        self.inner.delete(key).await
    }

    fn describe(&self) -> String {
        "switched memory store".into()
    }
}

/// Runs a daemon without the API on `queue` and `store`, writing manifests
/// every `flush`.
fn spawn_daemon(
    queue: Arc<MemoryQueue>,
    store: Arc<dyn ArtifactStore>,
    flush: Duration,
) -> (CancellationToken, tokio::task::JoinHandle<()>) {
    let shutdown = CancellationToken::new();
    let opts = SchedulerOptions {
        flush_interval: flush,
        ..SchedulerOptions::new(Arc::new(UrlPolicy::default()))
    };
    let task = tokio::spawn({
        let shutdown = shutdown.clone();
        async move {
            run_scheduler(queue, store, opts, None, shutdown)
                .await
                .expect("scheduler runs");
        }
    });
    (shutdown, task)
}

/// Submits a batch of `n` fetches straight to the queue and store.
async fn submit(queue: &MemoryQueue, store: &dyn ArtifactStore, batch_id: &str, n: usize) {
    let urls: Vec<String> = (0..n).map(|i| format!("https://example.com/{i}")).collect();
    let urls: Vec<&str> = urls.iter().map(String::as_str).collect();
    let (jobs, refused) = template(&urls).jobs(batch_id, &UrlPolicy::default()).unwrap();
    oxwright_scheduler::submit_batch(queue, store, batch_id, jobs, refused, "test")
        .await
        .unwrap();
}

/// Waits until `batch_id` has its summary; returns the manifest's lines.
async fn manifest_when_complete(store: &dyn ArtifactStore, batch_id: &str) -> Vec<serde_json::Value> {
    for _ in 0..200 {
        if store
            .exists(&keys::batch_summary(batch_id))
            .await
            .unwrap_or(false)
        {
            let body = store.get(&keys::batch_manifest(batch_id)).await.unwrap();
            return String::from_utf8(body.to_vec())
                .unwrap()
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("batch {batch_id} did not complete");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scheduler_killed_before_its_flush_loses_no_report() {
    let queue = Arc::new(MemoryQueue::new());
    let store = Arc::new(MemoryStore::new());
    submit(&queue, store.as_ref(), "b-killed", 3).await;
    // This scheduler writes its manifests once, at start, then never again.
    let (_, first) = spawn_daemon(queue.clone(), store.clone(), Duration::from_secs(3_600));
    play_worker(&queue, 3).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    // Killed: nothing runs after this, no flush, no ack.
    first.abort();
    let _ = first.await;
    assert!(
        !store.exists(&keys::batch_manifest("b-killed")).await.unwrap(),
        "the first scheduler wrote no manifest"
    );
    let (shutdown, second) = spawn_daemon(queue.clone(), store.clone(), Duration::from_millis(50));
    let lines = manifest_when_complete(store.as_ref(), "b-killed").await;
    assert_eq!(lines.len(), 3, "one line per job: {lines:?}");
    shutdown.cancel();
    second.await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reports_that_arrive_while_the_store_is_down_are_recorded_once_it_is_back() {
    let queue = Arc::new(MemoryQueue::new());
    let store = Arc::new(SwitchedStore::default());
    submit(&queue, store.as_ref(), "b-outage", 2).await;
    let (shutdown, daemon) = spawn_daemon(queue.clone(), store.clone(), Duration::from_millis(50));
    // The batch's first report comes while its record cannot be read.
    store.set_down(true);
    play_worker(&queue, 2).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    store.set_down(false);
    let lines = manifest_when_complete(store.as_ref(), "b-outage").await;
    assert_eq!(lines.len(), 2, "one line per job: {lines:?}");
    shutdown.cancel();
    daemon.await.unwrap();
}
