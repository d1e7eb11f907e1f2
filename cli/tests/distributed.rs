//! The distributed mode end to end, against real RabbitMQ, the S3 server
//! (both started by `infra/services.sh start`), Chromium, and `oxwright
//! worker` / `oxwright scheduler` / `oxwright submit` processes: batches
//! land every result in S3 with a complete manifest; killed workers,
//! terminated workers and a restarted broker lose nothing and duplicate
//! nothing; poison pages and malformed messages end in the dead-letter
//! queue with their reason; no Chromium outlives its worker.
//!
//! Each test has its own queue prefix and bucket on the shared services;
//! the broker-restart test starts a private broker. Environment:
//! `OXWRIGHT_TEST_AMQP_URL`, `OXWRIGHT_TEST_S3_ENDPOINT`, as in the
//! queue and artefact tests.

use std::collections::{BTreeMap, HashSet};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use cluster::*;
use oxwright_artifacts::ArtifactStore;
use oxwright_fixtures::{PRIVATE_S3_ACCESS_KEY, PRIVATE_S3_SECRET_KEY, PrivateBroker, PrivateS3};
use oxwright_jobs::{JobKind, keys};
use oxwright_queue::{Headers, JobQueue};
use support::{members, wait_until};

#[path = "distributed/cluster.rs"]
mod cluster;
#[path = "distributed/dashboard.rs"]
mod dashboard;
#[path = "distributed/politeness.rs"]
mod politeness;
#[path = "distributed/resume.rs"]
mod resume;
#[path = "distributed/stores.rs"]
mod stores;
mod support;
#[path = "distributed/telemetry.rs"]
mod telemetry;

/// `POST /v1/fetch` through the broker and a worker, and a batch
/// cancelled mid-way: the worker skips what it had not started, and the
/// skipped jobs are settled, not dead-lettered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_v1_api_fetches_through_workers_and_cancels_a_batch() {
    let mut cluster = Cluster::start().await;
    let (_, base) = cluster.scheduler_api();
    cluster.worker(2, &[]);
    let _ = rustls::crypto::ring::default_provider().install_default();
    let http = reqwest::Client::new();
    let call = |method: reqwest::Method, path: String, body: Option<serde_json::Value>| {
        let mut request = http.request(method, format!("{base}{path}"));
        if let Some(body) = body {
            request = request
                .header("content-type", "application/json")
                .body(body.to_string());
        }
        async move {
            let response = request.send().await.expect("the API answers");
            let status = response.status().as_u16();
            let body: serde_json::Value = serde_json::from_str(&response.text().await.unwrap()).unwrap();
            (status, body)
        }
    };
    let (path, phrase) = oxwright_fixtures::ARTICLE_PHRASES[1];
    let url = cluster.site.url(path);
    let (status, body) = call(
        reqwest::Method::POST,
        "/v1/fetch".into(),
        Some(serde_json::json!({ "url": url })),
    )
    .await;
    assert_eq!(status, 200, "{body}\n{}", cluster.log("scheduler"));
    assert!(
        body["result"]["markdown"].as_str().unwrap().contains(phrase),
        "{body}"
    );

    let urls: Vec<String> = (0..24)
        .map(|i| cluster.site.url(&format!("/slow?ms=1000&n={i}")))
        .collect();
    let (status, accepted) = call(
        reqwest::Method::POST,
        "/v1/batches".into(),
        Some(serde_json::json!({ "urls": urls })),
    )
    .await;
    assert_eq!(status, 202, "{accepted}");
    let batch_id = accepted["batch_id"].as_str().unwrap().to_owned();
    let (status, body) = call(reqwest::Method::DELETE, format!("/v1/batches/{batch_id}"), None).await;
    assert_eq!(status, 202, "{body}");
    let lines = cluster.manifest(&batch_id, Duration::from_secs(120)).await;
    let ids: HashSet<&str> = lines.iter().map(|l| l["job_id"].as_str().unwrap()).collect();
    assert_eq!((lines.len(), ids.len()), (24, 24), "one line per job");
    let cancelled = lines.iter().filter(|l| l["error"]["kind"] == "cancelled").count();
    assert!(cancelled >= 16, "most jobs were skipped: {cancelled} of 24");
    let (status, view) = call(
        reqwest::Method::GET,
        format!("/v1/batches/{batch_id}?limit=5"),
        None,
    )
    .await;
    assert_eq!(
        (status, view["state"].as_str()),
        (200, Some("cancelled")),
        "{view}"
    );
    assert_eq!(view["results"].as_array().unwrap().len(), 5);
    assert_eq!(view["next_offset"], 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sitemap_jobs_and_sitemap_expansion_run_through_the_workers() {
    let mut cluster = Cluster::start().await;
    cluster.scheduler();
    cluster.worker(4, &[]);
    let site = cluster.site.url("/");
    let batch = cluster.submit_args(&["sitemap", &site]);
    let lines = cluster.manifest(&batch, Duration::from_secs(120)).await;
    let ids = assert_complete(&lines, 1);
    let id = ids.iter().next().unwrap();
    let urls = cluster
        .store
        .get(&format!("jobs/sitemap/{id}/urls.txt"))
        .await
        .expect("urls.txt artefact");
    let urls: Vec<String> = String::from_utf8(urls.to_vec())
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    assert!(
        urls.len() >= 6,
        "the fixture sitemap lists the articles: {urls:?}"
    );
    assert!(
        cluster
            .store
            .exists(&format!("jobs/sitemap/{id}/result.json"))
            .await
            .unwrap()
    );

    // `submit fetch --sitemap` expands the same sitemap into fetch jobs.
    let batch = cluster.submit_args(&["fetch", "--sitemap", &site]);
    let lines = cluster.manifest(&batch, Duration::from_secs(300)).await;
    let ids = assert_complete(&lines, urls.len());
    assert_results_in_s3(&cluster.store, &ids).await;
    let fetched: HashSet<&str> = lines.iter().map(|l| l["url"].as_str().unwrap()).collect();
    assert_eq!(fetched, urls.iter().map(String::as_str).collect::<HashSet<_>>());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_url_batch_through_two_workers_lands_every_result() {
    let mut cluster = Cluster::start().await;
    cluster.scheduler();
    let a = cluster.worker(4, &[]);
    let b = cluster.worker(4, &[]);
    let batch = cluster.submit(
        &slow_pages(1000, 0),
        &["--retries", "1", "--retry-delay-ms", "200"],
    );
    let lines = cluster.manifest(&batch, Duration::from_secs(1500)).await;
    let ids = assert_complete(&lines, 1000);
    assert_results_in_s3(&cluster.store, &ids).await;
    let record = cluster.store.get(&keys::batch_record(&batch)).await.unwrap();
    let record: serde_json::Value = serde_json::from_slice(&record).unwrap();
    assert_eq!(record["total"], 1000);
    // Both workers took part.
    let hits_by_worker = [a, b].map(|w| cluster.log(&format!("worker-{w}")));
    assert!(
        hits_by_worker.iter().all(|log| log.contains("worker ready")),
        "{hits_by_worker:?}"
    );
    for w in [a, b] {
        let groups = cluster.browsers_of(w).await;
        cluster.signal(w, libc::SIGTERM);
        assert!(cluster.wait(w).success());
        wait_until("the worker's Chromium to exit", Duration::from_secs(15), || {
            members(&groups).is_empty()
        })
        .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_mid_batch_loses_nothing_and_duplicates_nothing() {
    let mut cluster = Cluster::start().await;
    cluster.scheduler();
    let victim = cluster.worker(4, &[]);
    let groups = cluster.browsers_of(victim).await;
    let batch = cluster.submit(&slow_pages(60, 700), &[]);
    // The victim holds deliveries in flight when it dies.
    wait_until("pages in flight", Duration::from_secs(60), || {
        cluster.site.hits("/slow") >= 6
    })
    .await;
    cluster.signal(victim, libc::SIGKILL);
    cluster.wait(victim);
    wait_until(
        "the killed worker's Chromium to exit",
        Duration::from_secs(15),
        || members(&groups).is_empty(),
    )
    .await;
    cluster.worker(4, &[]);
    let lines = cluster.manifest(&batch, Duration::from_secs(300)).await;
    let ids = assert_complete(&lines, 60);
    assert_results_in_s3(&cluster.store, &ids).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_requeues_the_jobs_a_worker_cannot_finish() {
    let mut cluster = Cluster::start().await;
    cluster.scheduler();
    // In-flight pages take 6 s; the worker may drain for 1 s only.
    let leaving = cluster.worker(2, &["--drain-timeout-s", "1"]);
    let groups = cluster.browsers_of(leaving).await;
    let batch = cluster.submit(&slow_pages(8, 6_000), &[]);
    wait_until("pages in flight", Duration::from_secs(60), || {
        cluster.site.hits("/slow") >= 2
    })
    .await;
    cluster.signal(leaving, libc::SIGTERM);
    let status = cluster.wait(leaving);
    assert!(status.success(), "worker exit status {status:?}");
    wait_until("the worker's Chromium to exit", Duration::from_secs(15), || {
        members(&groups).is_empty()
    })
    .await;
    let log = cluster.log(&format!("worker-{leaving}"));
    assert!(log.contains("unfinished jobs return to the queue"), "{log}");
    // Nothing was finished by the leaving worker; another takes it all.
    eventually("every job back on the queue", Duration::from_secs(30), || async {
        cluster.queue.depth(JobKind::Fetch).await.unwrap() == 8
    })
    .await;
    cluster.worker(4, &[]);
    let lines = cluster.manifest(&batch, Duration::from_secs(300)).await;
    assert_complete(&lines, 8);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn poison_pages_are_dead_lettered_at_the_attempt_limit_or_at_once() {
    let mut cluster = Cluster::start().await;
    // A small V8 heap makes the memory hog's renderer die in moments.
    cluster.with_config("[browser]\nextra_args = [\"--js-flags=--max-old-space-size=32\"]\n");
    cluster.scheduler();
    cluster.worker(2, &["--max-attempts", "2", "--retry-delay-ms", "200"]);
    // A page that never answers in time (retried by the queue until the
    // limit), one that runs its renderer out of memory (final at once),
    // and a healthy one.
    let batch = cluster.submit(
        &[
            "/stall?ms=60000".to_owned(),
            "/crash".to_owned(),
            "/slow?ms=1".to_owned(),
        ],
        &["--retries", "0", "--timeout-ms", "4000"],
    );
    let lines = cluster.manifest(&batch, Duration::from_secs(180)).await;
    assert_eq!(lines.len(), 3);
    let line = |suffix: &str| {
        lines
            .iter()
            .find(|l| l["url"].as_str().unwrap().ends_with(suffix))
            .unwrap()
            .clone()
    };
    let stall = line("ms=60000");
    assert_eq!(stall["status"], "failed");
    assert_eq!(stall["error"]["kind"], "timeout", "{stall}");
    assert_eq!(stall["attempt"], 2, "the limit is two deliveries");
    let hog = line("/crash");
    assert_eq!(hog["error"]["kind"], "resource_limit", "{hog}");
    assert_eq!(hog["attempt"], 1, "a page over the memory limit is not retried");
    for poison in [&stall, &hog] {
        let job_id = poison["job_id"].as_str().unwrap();
        let kind = poison["error"]["kind"].as_str().unwrap();
        let error = cluster
            .store
            .get(&format!("jobs/fetch/{job_id}/error.json"))
            .await
            .expect("error artefact");
        assert!(String::from_utf8_lossy(&error).contains(kind));
    }
    let dead = cluster.queue.dead_letters().await.unwrap();
    assert_eq!(dead.len(), 2, "{dead:?}");
    for d in &dead {
        let id = d.message.message_id.as_deref().unwrap();
        let poison = if Some(id) == stall["job_id"].as_str() {
            &stall
        } else {
            &hog
        };
        assert_eq!(d.error_kind(), poison["error"]["kind"].as_str());
        assert!(!d.reason.message.is_empty());
    }
    assert_eq!(
        line("/slow?ms=1")["status"],
        "ok",
        "the healthy page is unaffected"
    );
    assert_eq!(cluster.site.hits("/stall"), 2, "one attempt per delivery");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_messages_are_dead_lettered_and_the_worker_carries_on() {
    let mut cluster = Cluster::start().await;
    cluster.scheduler();
    let worker = cluster.worker(2, &[]);
    let valid = oxwright_jobs::Job::new(
        oxwright_jobs::JobSpec::Fetch(oxwright_jobs::FetchSpec::new(
            "https://example.com/".parse().unwrap(),
        )),
        None,
    );
    let mut wrong_version = serde_json::to_value(&valid).unwrap();
    wrong_version["schema_version"] = 99.into();
    let mut unknown_kind = serde_json::to_value(&valid).unwrap();
    unknown_kind["kind"] = "teleport".into();
    let oversized = vec![b'x'; cluster.queue.max_message_bytes() + 1];
    let bodies: Vec<Bytes> = vec![
        Bytes::from_static(b"{not json"),
        Bytes::from(serde_json::to_vec(&wrong_version).unwrap()),
        Bytes::from(serde_json::to_vec(&unknown_kind).unwrap()),
        Bytes::from(oversized),
    ];
    for body in bodies {
        cluster
            .queue
            .publish_raw(JobKind::Fetch, body, Headers::new())
            .await
            .unwrap();
    }
    let batch = cluster.submit(&["/slow?ms=1".to_owned()], &[]);
    let lines = cluster.manifest(&batch, Duration::from_secs(120)).await;
    assert_complete(&lines, 1);
    eventually("four dead letters", Duration::from_secs(30), || async {
        cluster.queue.dead_letters().await.unwrap().len() >= 4
    })
    .await;
    let dead = cluster.queue.dead_letters().await.unwrap();
    let kinds: BTreeMap<String, usize> = dead.iter().fold(BTreeMap::new(), |mut m, d| {
        *m.entry(d.error_kind().unwrap_or("?").to_owned()).or_default() += 1;
        m
    });
    assert_eq!(kinds.len(), 4, "each malformation has its own reason: {kinds:?}");
    assert!(kinds.keys().all(|k| k.starts_with("decode_")), "{kinds:?}");
    assert!(dead.iter().all(|d| !d.reason.message.is_empty()));
    let status = cluster.children[worker].try_wait().unwrap();
    assert!(status.is_none(), "the worker is still running");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broker_restart_mid_batch_is_survived() {
    let broker = Arc::new(PrivateBroker::start());
    let mut cluster = Cluster::start_on(broker.url().to_owned()).await;
    cluster.scheduler();
    cluster.worker(4, &[]);
    cluster.worker(4, &[]);
    let batch = cluster.submit(&slow_pages(40, 500), &[]);
    wait_until("some pages done", Duration::from_secs(120), || {
        cluster.site.hits("/slow") >= 10
    })
    .await;
    let restarting = broker.clone();
    tokio::task::spawn_blocking(move || restarting.restart())
        .await
        .unwrap();
    let lines = cluster.manifest(&batch, Duration::from_secs(300)).await;
    let ids = assert_complete(&lines, 40);
    assert_results_in_s3(&cluster.store, &ids).await;
    drop(cluster);
    drop(broker);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scheduler_killed_again_and_again_mid_batch_loses_no_manifest_line() {
    let mut cluster = Cluster::start().await;
    let mut scheduler = cluster.scheduler();
    cluster.worker(4, &[]);
    cluster.worker(4, &[]);
    let batch = cluster.submit(&slow_pages(300, 0), &[]);
    wait_until("pages done", Duration::from_secs(120), || {
        cluster.site.hits("/slow") >= 20
    })
    .await;
    // SIGKILL while reports flow, at varying points of the 500 ms window
    // between two manifest writes; a new scheduler takes over each time.
    for round in 0..6u64 {
        tokio::time::sleep(Duration::from_millis(1_300 + round * 170)).await;
        cluster.signal(scheduler, libc::SIGKILL);
        cluster.wait(scheduler);
        scheduler = cluster.scheduler_logged(&format!("scheduler-{round}"));
    }
    let done_at_last_kill = cluster.site.hits("/slow");
    let lines = cluster.manifest(&batch, Duration::from_secs(600)).await;
    let ids = assert_complete(&lines, 300);
    assert_results_in_s3(&cluster.store, &ids).await;
    assert!(
        done_at_last_kill < 300,
        "the batch ended before the last kill ({done_at_last_kill} pages): the kills proved nothing"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_and_a_scheduler_started_before_the_broker_wait_for_it() {
    let broker = Arc::new(PrivateBroker::start());
    let mut cluster = Cluster::start_on(broker.url().to_owned()).await;
    let stopping = broker.clone();
    tokio::task::spawn_blocking(move || stopping.stop())
        .await
        .unwrap();
    let worker = cluster.worker(2, &[]);
    let scheduler = cluster.scheduler();
    tokio::time::sleep(Duration::from_secs(4)).await;
    for (name, index) in [("worker", worker), ("scheduler", scheduler)] {
        let status = cluster.children[index].try_wait().unwrap();
        assert!(
            status.is_none(),
            "the {name} gave up while the broker was down ({status:?}):\n{}",
            cluster.log(if index == worker { "worker-0" } else { "scheduler" })
        );
    }
    let starting = broker.clone();
    tokio::task::spawn_blocking(move || starting.start_again())
        .await
        .unwrap();
    let batch = cluster.submit(&slow_pages(3, 1), &[]);
    let lines = cluster.manifest(&batch, Duration::from_secs(180)).await;
    assert_complete(&lines, 3);
    for log in [cluster.log("worker-0"), cluster.log("scheduler")] {
        let said = log.matches("cannot reach the broker").count();
        assert_eq!(said, 1, "said once while the broker was down:\n{log}");
    }
    drop(cluster);
    drop(broker);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_past_their_deadline_end_expired_without_running() {
    let mut cluster = Cluster::start().await;
    cluster.scheduler();
    // No worker yet: the jobs wait on the queue past their deadline.
    let batch = cluster.submit(&slow_pages(3, 1), &["--deadline-s", "1"]);
    tokio::time::sleep(Duration::from_secs(3)).await;
    cluster.worker(2, &[]);
    let lines = cluster.manifest(&batch, Duration::from_secs(120)).await;
    assert_eq!(lines.len(), 3, "one line per job: {lines:?}");
    for line in &lines {
        assert_eq!(line["status"], "failed", "{line}");
        assert_eq!(line["error"]["kind"], "expired", "{line}");
        let id = line["job_id"].as_str().unwrap();
        assert!(
            cluster
                .store
                .exists(&format!("jobs/fetch/{id}/error.json"))
                .await
                .unwrap(),
            "no error.json for {id}"
        );
    }
    assert_eq!(cluster.site.hits("/slow"), 0, "an expired job ran");
    let summary = cluster.store.get(&keys::batch_summary(&batch)).await.unwrap();
    let summary: serde_json::Value = serde_json::from_slice(&summary).unwrap();
    assert_eq!(summary["failed_by_kind"]["expired"], 3, "{summary}");
    // Jobs submitted with a deadline still ahead run as usual.
    let batch = cluster.submit(&slow_pages(2, 1), &["--deadline-s", "600"]);
    let lines = cluster.manifest(&batch, Duration::from_secs(120)).await;
    assert_complete(&lines, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_never_holds_more_browser_jobs_than_it_has_pages() {
    let broker = Arc::new(PrivateBroker::start());
    let mut cluster = Cluster::start_on(broker.url().to_owned()).await;
    // Two pages, no adaptive headroom: the pool's capacity is 2.
    cluster.with_config("[browser]\nmax_pages_per_browser = 2\n");
    // A queue of 100 browser jobs of both kinds, each holding a page.
    for i in 0..60 {
        let url = cluster.site.url(&format!("/slow?ms=1500&n={i}")).parse().unwrap();
        let job = oxwright_jobs::Job::new(
            oxwright_jobs::JobSpec::Fetch(oxwright_jobs::FetchSpec::new(url)),
            None,
        );
        cluster.queue.publish(&job).await.unwrap();
    }
    for i in 0..40 {
        let start = cluster.site.url(&format!("/slow?ms=1&w={i}")).parse().unwrap();
        let spec = oxwright_jobs::WorkflowSpec::new("wait: 1500ms", start);
        let job = oxwright_jobs::Job::new(oxwright_jobs::JobSpec::Workflow(Box::new(spec)), None);
        cluster.queue.publish(&job).await.unwrap();
    }
    let worker = cluster.worker_of("fetch,sitemap,workflow", 2, &[]);
    let mut samples = Vec::new();
    let started = std::time::Instant::now();
    while started.elapsed() < Duration::from_secs(25) {
        let prefix = format!("{}.", cluster.prefix);
        let probe = broker.clone();
        let counts = tokio::task::spawn_blocking(move || probe.queue_counts(&prefix))
            .await
            .unwrap();
        let count = |kind: &str| {
            counts
                .get(&format!("{}.{kind}", cluster.prefix))
                .copied()
                .unwrap_or_default()
        };
        let (fetch, workflow) = (count("fetch"), count("workflow"));
        samples.push((fetch.unacked, workflow.unacked));
        assert!(
            fetch.unacked + workflow.unacked <= 2,
            "{} fetch and {} workflow jobs unacked with 2 pages (samples so far {samples:?})\n{}",
            fetch.unacked,
            workflow.unacked,
            cluster.log(&format!("worker-{worker}"))
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let busy = samples.iter().filter(|(f, w)| f + w == 2).count();
    assert!(busy >= 3, "the worker hardly ran: {samples:?}");
    let prefix = format!("{}.", cluster.prefix);
    let probe = broker.clone();
    let counts = tokio::task::spawn_blocking(move || probe.queue_counts(&prefix))
        .await
        .unwrap();
    let ready = |kind: &str| counts[&format!("{}.{kind}", cluster.prefix)].ready;
    assert!(
        ready("fetch") < 60 || ready("workflow") < 40,
        "no job was taken: {counts:?}"
    );
    drop(cluster);
    drop(broker);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_s3_outage_mid_batch_loads_no_page_twice_and_dead_letters_none() {
    let s3 = Arc::new(tokio::task::spawn_blocking(PrivateS3::start).await.unwrap());
    let keys = (PRIVATE_S3_ACCESS_KEY.to_owned(), PRIVATE_S3_SECRET_KEY.to_owned());
    let mut cluster = Cluster::start_with(amqp_url(), s3.endpoint().to_owned(), keys).await;
    cluster.scheduler();
    // A worker waits up to 20 s, in place, for a store that refuses its
    // writes: a 10 s outage is waited out, and no page loaded before it is
    // loaded again.
    let worker = cluster.worker(4, &[]);
    let batch = cluster.submit(&slow_pages(60, 1_000), &[]);
    wait_until("pages in flight", Duration::from_secs(120), || {
        cluster.site.hits("/slow") >= 8
    })
    .await;
    let outage = s3.clone();
    tokio::task::spawn_blocking(move || {
        outage.stop();
        std::thread::sleep(Duration::from_secs(10));
        outage.start_again();
    })
    .await
    .unwrap();
    let lines = cluster.manifest(&batch, Duration::from_secs(300)).await;
    let ids = assert_complete(&lines, 60);
    assert_results_in_s3(&cluster.store, &ids).await;
    let dead = cluster.queue.dead_letters().await.unwrap();
    assert!(dead.is_empty(), "dead-lettered: {dead:?}");
    let log = cluster.log(&format!("worker-{worker}"));
    assert!(
        log.contains("the store refused a write; trying again in place"),
        "the outage did not reach a write: the test proves nothing\n{log}"
    );
    assert_eq!(
        cluster.site.hits("/slow"),
        60,
        "a page was loaded more than once\n{log}"
    );
    drop(cluster);
    drop(s3);
}

/// Runs `oxwright submit fetch` of `paths` with `extra` flags off the
/// runtime; returns its output (stderr included).
async fn submit_output(cluster: &Cluster, paths: &[String], extra: &[&str]) -> std::process::Output {
    let list: String = paths
        .iter()
        .map(|p| format!("{}\n", cluster.site.url(p)))
        .collect();
    let file = cluster.dir.path().join("wait-urls.txt");
    std::fs::write(&file, list).unwrap();
    let mut cmd = cluster.command("submit-wait");
    cmd.args(["submit", "fetch", "--file"])
        .arg(&file)
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    tokio::task::spawn_blocking(move || cmd.output().expect("oxwright submit runs"))
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn submit_wait_shows_progress_with_failures_by_kind() {
    let mut cluster = Cluster::start().await;
    cluster.scheduler();
    cluster.worker(2, &[]);
    // A 404 fails at once (not retried); the slow pages keep the batch open.
    let mut paths = vec!["/status/404".to_string()];
    paths.extend(slow_pages(3, 4000));
    let out = submit_output(&cluster, &paths, &["--wait", "--wait-timeout-s", "300"]).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "stdout:\n{stdout}\nstderr:\n{stderr}");
    let batch = stdout.lines().next().unwrap_or_default().to_string();
    assert!(
        stderr.contains(&format!("batch {batch}: 0/4 done")),
        "no first progress line:\n{stderr}"
    );
    assert!(
        stderr
            .lines()
            .any(|l| l.contains("/4 done, 1 failed (http_status 1)") && !l.contains(" 4/4 ")),
        "no progress line with the failure by kind before the end:\n{stderr}"
    );
    assert!(stdout.contains("4 jobs, 3 ok, 1 failed"), "{stdout}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn submit_wait_that_runs_out_says_how_far_the_batch_got() {
    // No scheduler, no worker: nothing will ever report.
    let cluster = Cluster::start().await;
    let started = std::time::Instant::now();
    let out = submit_output(&cluster, &["/".to_string()], &["--wait", "--wait-timeout-s", "2"]).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    assert!(
        stderr.contains("stopped waiting for batch")
            && stderr.contains("after 2 s (--wait-timeout-s) at 0/1 done"),
        "{stderr}"
    );
    assert!(
        stderr.contains("are `oxwright scheduler` and `oxwright worker` running"),
        "{stderr}"
    );
}
