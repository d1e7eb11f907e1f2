//! The consumer loop over the in-memory queue, settling jobs by outcome.
//!
//! A store that fails transiently must not dead-letter a job: a job whose
//! artefact writes fail a few times is retried and ends ok, and a job that
//! fails for good while its `error.json` cannot be written is retried until
//! that artefact exists. A job past its deadline is not run: it ends
//! `expired`, with its report and `error.json`. A worker waits out a
//! short store outage in place, so a page loaded once is not loaded again,
//! and a fetch delivered again after its result was stored is answered
//! from the store.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::Env;
use oxwright_artifacts::test_suite::FaultyStore;
use oxwright_artifacts::{ArtifactStore, MemoryStore};
use oxwright_fixtures::ARTICLE_PATHS;
use oxwright_jobs::{ErrorKind, Job, JobReport, JobSpec, ReportStatus, SitemapSpec, keys};
use oxwright_queue::{JobQueue, MemoryQueue};
use oxwright_worker::{
    ConsumerOptions, HandlerContext, STORE_PATIENCE, run_consumer, run_job, run_job_attempt,
};
use tokio_util::sync::CancellationToken;

/// Runs `job` through a sitemap consumer (3 attempts, 10 ms retry delay)
/// over a store failing its first `failures` writes, which the worker
/// does not wait out; returns the single report published, the
/// dead-letter kinds and the store.
async fn run_through_consumer(env: &Env, job: Job, failures: u32) -> (JobReport, Vec<String>, MemoryStore) {
    run_with_patience(env, job, failures, Duration::ZERO).await
}

/// Runs `job` as [`run_through_consumer`] does, through a consumer of its
/// kind whose writes wait up to `patience` for the store.
async fn run_with_patience(
    env: &Env,
    job: Job,
    failures: u32,
    patience: Duration,
) -> (JobReport, Vec<String>, MemoryStore) {
    let memory = MemoryStore::new();
    let store = Arc::new(FaultyStore::new(Arc::new(memory.clone())).refusing_writes(failures));
    let ctx = HandlerContext::with_store_patience(env.pool.clone(), env.policy.clone(), store, patience);
    let queue = Arc::new(MemoryQueue::new());
    let mut reports = queue.reports().await.expect("report stream");
    queue.publish(&job).await.expect("publish");
    let mut opts = ConsumerOptions::new(job.kind(), 2);
    opts.max_attempts = 3;
    opts.retry_delay = Duration::from_millis(10);
    let shutdown = CancellationToken::new();
    let consumer = tokio::spawn(run_consumer(ctx, queue.clone(), opts, shutdown.clone()));
    let report = tokio::time::timeout(Duration::from_secs(30), reports.next())
        .await
        .expect("a report within 30 s")
        .expect("stream open")
        .expect("report decodes");
    // Nothing else may follow: one job, one report.
    let extra = tokio::time::timeout(Duration::from_millis(300), reports.next()).await;
    assert!(extra.is_err(), "a second report arrived: {extra:?}");
    shutdown.cancel();
    consumer
        .await
        .expect("consumer task")
        .expect("consumer ends cleanly");
    let dead: Vec<String> = queue
        .dead_letters()
        .await
        .expect("dead letters")
        .iter()
        .map(|d| d.reason.kind.clone())
        .collect();
    (report, dead, memory)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transient_store_failures_are_retried_not_dead_lettered() {
    let env = Env::start().await;
    let job = Job::new(
        JobSpec::Sitemap(SitemapSpec {
            target: env.site.url("/"),
        }),
        None,
    );
    // The first attempt's urls.txt and its error.json fail.
    let (report, dead, store) = run_through_consumer(&env, job.clone(), 2).await;
    assert_eq!(report.status, ReportStatus::Ok, "{:?}", report.error);
    assert_eq!(report.attempt, 2, "one failed attempt, then success");
    assert!(dead.is_empty(), "dead-lettered: {dead:?}");
    assert!(store.exists(&keys::job_result(job.kind(), job.id)).await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_job_is_retried_until_its_error_artefact_is_written() {
    let env = Env::start().await;
    let job = Job::new(
        JobSpec::Sitemap(SitemapSpec {
            target: "http://169.254.169.254/sitemap.xml".into(),
        }),
        None,
    );
    // The job fails for good (policy); its first error.json write fails.
    let (report, dead, store) = run_through_consumer(&env, job.clone(), 1).await;
    assert_eq!(report.status, ReportStatus::Failed);
    let err = report.error.as_ref().expect("typed error");
    assert_eq!(err.kind, ErrorKind::PolicyDenied, "{err}");
    assert_eq!(report.attempt, 2);
    let error_key = keys::job_artifact(job.kind(), job.id, "error.json");
    assert_eq!(report.artifacts, vec![error_key.clone()]);
    assert!(store.exists(&error_key).await.unwrap());
    assert_eq!(dead, vec!["policy_denied".to_owned()]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn last_attempt_keeps_the_jobs_own_error() {
    let env = Env::start().await;
    let job = Job::new(
        JobSpec::Sitemap(SitemapSpec {
            target: "http://169.254.169.254/sitemap.xml".into(),
        }),
        None,
    );
    // The store stays down for every attempt: the final report names the
    // job's own error, without an error artefact.
    let (report, dead, _store) = run_through_consumer(&env, job, 100).await;
    assert_eq!(report.attempt, 3);
    assert_eq!(
        report.error.as_ref().map(|e| e.kind),
        Some(ErrorKind::PolicyDenied)
    );
    assert!(report.artifacts.is_empty());
    assert_eq!(dead, vec!["policy_denied".to_owned()]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn job_past_its_deadline_is_not_run() {
    let env = Env::start().await;
    let mut job = Job::new(
        JobSpec::Sitemap(SitemapSpec {
            target: env.site.url("/"),
        }),
        Some("b-expired".into()),
    );
    job.deadline = Some(job.created_at - chrono::Duration::seconds(1));
    let (report, dead, store) = run_through_consumer(&env, job.clone(), 0).await;
    assert_eq!(report.status, ReportStatus::Failed);
    assert_eq!(report.batch_id.as_deref(), Some("b-expired"));
    let err = report.error.as_ref().expect("typed error");
    assert_eq!(err.kind, ErrorKind::Expired, "{err}");
    assert_eq!(report.attempt, 1, "an expired job is not retried");
    let error_key = keys::job_artifact(job.kind(), job.id, "error.json");
    assert_eq!(report.artifacts, vec![error_key.clone()]);
    assert!(store.exists(&error_key).await.unwrap());
    assert_eq!(dead, vec!["expired".to_owned()]);
    assert_eq!(env.site.hits("/robots.txt"), 0, "the job ran");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn job_before_its_deadline_runs() {
    let env = Env::start().await;
    let mut job = Job::new(
        JobSpec::Sitemap(SitemapSpec {
            target: env.site.url("/"),
        }),
        None,
    );
    job.deadline = Some(chrono::Utc::now() + chrono::Duration::minutes(5));
    let (report, dead, _store) = run_through_consumer(&env, job, 0).await;
    assert_eq!(report.status, ReportStatus::Ok, "{:?}", report.error);
    assert!(dead.is_empty(), "{dead:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_outage_within_the_patience_is_waited_out_without_loading_the_page_again() {
    let env = Env::start().await;
    let path = ARTICLE_PATHS[0];
    let job = Job::new(JobSpec::Fetch(env.spec(path)), None);
    // page.md is refused three times: about 1.4 s of outage.
    let (report, dead, store) = run_with_patience(&env, job.clone(), 3, STORE_PATIENCE).await;
    assert_eq!(report.status, ReportStatus::Ok, "{:?}", report.error);
    assert_eq!(
        report.attempt, 1,
        "waited out in place, not retried through the queue"
    );
    assert!(dead.is_empty(), "{dead:?}");
    assert!(store.exists(&keys::job_result(job.kind(), job.id)).await.unwrap());
    assert_eq!(env.site.hits(path), 1, "the page was loaded once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_outage_past_the_patience_runs_the_job_again() {
    let env = Env::start().await;
    let path = ARTICLE_PATHS[1];
    let job = Job::new(JobSpec::Fetch(env.spec(path)), None);
    // 300 ms of patience allows one wait of 200 ms: page.md is refused
    // twice, then error.json once, and the job goes back to the queue.
    let (report, dead, store) = run_with_patience(&env, job.clone(), 3, Duration::from_millis(300)).await;
    assert_eq!(report.status, ReportStatus::Ok, "{:?}", report.error);
    assert_eq!(report.attempt, 2, "the outage outlasted the patience");
    assert!(dead.is_empty(), "{dead:?}");
    assert!(store.exists(&keys::job_result(job.kind(), job.id)).await.unwrap());
    assert_eq!(
        env.site.hits(path),
        2,
        "nothing was stored, so the page was loaded again"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_delivered_again_after_its_result_was_stored_is_not_loaded_again() {
    let env = Env::start().await;
    let path = ARTICLE_PATHS[2];
    let (ctx, store) = env.handler();
    let job = Job::new(JobSpec::Fetch(env.spec(path)), None);
    let first = run_job(&ctx, &job).await;
    assert_eq!(first.status, ReportStatus::Ok, "{:?}", first.error);
    assert_eq!(env.site.hits(path), 1);
    // The worker died before its report went out: the broker gives the
    // job back, marked as delivered before.
    let again = run_job_attempt(&ctx, &job, true, true).await;
    assert_eq!(again.status, ReportStatus::Ok, "{:?}", again.error);
    assert_eq!(again.artifacts, first.artifacts);
    assert_eq!(env.site.hits(path), 1, "answered from the store");
    // A first delivery never asks the store: a fresh job with the same
    // spec loads the page.
    let fresh = Job::new(JobSpec::Fetch(env.spec(path)), None);
    assert_eq!(
        run_job_attempt(&ctx, &fresh, true, false).await.status,
        ReportStatus::Ok
    );
    assert_eq!(env.site.hits(path), 2);
    // A delivery given back whose result never landed runs.
    let lost = Job::new(JobSpec::Fetch(env.spec(path)), None);
    store
        .put(
            &keys::job_artifact(lost.kind(), lost.id, "page.md"),
            "half".into(),
            "text/markdown",
        )
        .await
        .unwrap();
    assert_eq!(
        run_job_attempt(&ctx, &lost, true, true).await.status,
        ReportStatus::Ok
    );
    assert_eq!(env.site.hits(path), 3);
    // Published again by a restarted scheduler under the same id: a first
    // delivery, marked as a job that may have run, answered from the store.
    let mut republished = job.clone();
    republished.may_have_run = true;
    let answered = run_job_attempt(&ctx, &republished, true, false).await;
    assert_eq!(answered.artifacts, first.artifacts);
    assert_eq!(env.site.hits(path), 3, "answered from the store");
    // One whose first publication never ran loads its page.
    let mut never_ran = Job::new(JobSpec::Fetch(env.spec(path)), None);
    never_ran.may_have_run = true;
    assert_eq!(
        run_job_attempt(&ctx, &never_ran, true, false).await.status,
        ReportStatus::Ok
    );
    assert_eq!(env.site.hits(path), 4);
}
