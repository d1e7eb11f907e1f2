//! The consumer loop over the in-memory queue, settling jobs by outcome.
//!
//! A store that fails transiently must not dead-letter a job: a job whose
//! artefact writes fail a few times is retried and ends ok, and a job that
//! fails for good while its `error.json` cannot be written is retried until
//! that artefact exists. A job past its deadline is not run: it ends
//! `expired`, with its report and `error.json`.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use common::Env;
use oxwright_artifacts::{ArtifactError, ArtifactStore, MemoryStore};
use oxwright_jobs::{ErrorKind, Job, JobKind, JobReport, JobSpec, ReportStatus, SitemapSpec, keys};
use oxwright_queue::{JobQueue, MemoryQueue};
use oxwright_worker::{ConsumerOptions, HandlerContext, run_consumer};
use tokio_util::sync::CancellationToken;

/// A memory store whose first `failures` puts fail like an S3 server that
/// refuses connections (retryable backend errors).
#[derive(Debug)]
struct FlakyStore {
    inner: MemoryStore,
    failures: AtomicU32,
}

impl FlakyStore {
    fn new(inner: MemoryStore, failures: u32) -> Self {
        Self {
            inner,
            failures: AtomicU32::new(failures),
        }
    }

    fn fail_once(&self, key: &str) -> Result<(), ArtifactError> {
        let failing = self
            .failures
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        if failing {
            return Err(ArtifactError::Backend {
                key: key.to_owned(),
                message: "dispatch failure: connection refused".into(),
                retryable: true,
                source: None,
            });
        }
        Ok(())
    }
}

#[async_trait]
impl ArtifactStore for FlakyStore {
    async fn put(&self, key: &str, body: Bytes, content_type: &str) -> Result<(), ArtifactError> {
        self.fail_once(key)?;
        self.inner.put(key, body, content_type).await
    }

    async fn get(&self, key: &str) -> Result<Bytes, ArtifactError> {
        self.inner.get(key).await
    }

    async fn append(&self, key: &str, line: Bytes) -> Result<(), ArtifactError> {
        self.fail_once(key)?;
        self.inner.append(key, line).await
    }

    async fn get_versioned(&self, key: &str) -> Result<(Bytes, oxwright_artifacts::Version), ArtifactError> {
        self.inner.get_versioned(key).await
    }

    async fn put_if(
        &self,
        key: &str,
        body: Bytes,
        content_type: &str,
        expect: &oxwright_artifacts::Expect,
    ) -> Result<oxwright_artifacts::Version, ArtifactError> {
        self.fail_once(key)?;
        self.inner.put_if(key, body, content_type, expect).await
    }

    async fn list(&self, prefix: &str) -> Result<Vec<String>, ArtifactError> {
        self.inner.list(prefix).await
    }

    async fn exists(&self, key: &str) -> Result<bool, ArtifactError> {
        self.inner.exists(key).await
    }

    async fn delete(&self, key: &str) -> Result<(), ArtifactError> {
        self.inner.delete(key).await
    }

    fn describe(&self) -> String {
        "flaky memory store".into()
    }
}

/// Runs `job` through a sitemap consumer (3 attempts, 10 ms retry delay)
/// over a store failing its first `failures` writes; returns the single
/// report published, the dead-letter kinds and the store.
async fn run_through_consumer(env: &Env, job: Job, failures: u32) -> (JobReport, Vec<String>, MemoryStore) {
    let memory = MemoryStore::new();
    let store = Arc::new(FlakyStore::new(memory.clone(), failures));
    let ctx = HandlerContext::new(env.pool.clone(), env.policy.clone(), store);
    let queue = Arc::new(MemoryQueue::new());
    let mut reports = queue.reports().await.expect("report stream");
    queue.publish(&job).await.expect("publish");
    let mut opts = ConsumerOptions::new(JobKind::Sitemap, 2);
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
