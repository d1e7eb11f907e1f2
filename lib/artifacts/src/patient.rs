//! A store that waits out a short outage: a plain write the backend
//! refuses for a transient reason is tried again in place, backing off,
//! for a bounded time, before the refusal reaches the caller.
//!
//! Workers write through it. A page already loaded whose result cannot be
//! stored would otherwise go back to the queue and be loaded again: once
//! more at the site for every page in flight during an S3 restart.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use tokio::time::Instant;

use crate::{ArtifactError, ArtifactStore, Expect, Version};

/// The first wait before a refused write is tried again; each further
/// wait doubles, up to [`LONGEST_WAIT`].
pub const FIRST_WAIT: Duration = Duration::from_millis(200);

/// The longest single wait between two tries of one write.
pub const LONGEST_WAIT: Duration = Duration::from_secs(4);

/// Wraps a store so that [`ArtifactStore::put`] and
/// [`ArtifactStore::delete`], which are safe to repeat, are tried again
/// in place while the backend refuses them for a retryable reason, for up
/// to `patience` in all. Appends and conditional writes are passed
/// through as they are: repeating an append whose answer was lost could
/// write its line twice, and a conditional write is settled by reading
/// again, not by repeating it.
#[derive(Debug, Clone)]
pub struct PatientStore {
    inner: Arc<dyn ArtifactStore>,
    patience: Duration,
}

impl PatientStore {
    /// Wraps `inner`, waiting up to `patience` for each write.
    pub fn new(inner: Arc<dyn ArtifactStore>, patience: Duration) -> Self {
        Self { inner, patience }
    }

    /// Runs `op` until it succeeds, fails for good, or the next wait would
    /// pass the patience.
    async fn patiently<F, Fut>(&self, key: &str, what: &str, mut op: F) -> Result<(), ArtifactError>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<(), ArtifactError>>,
    {
        let deadline = Instant::now() + self.patience;
        let mut wait = FIRST_WAIT;
        let mut tries = 1u32;
        loop {
            match op().await {
                Ok(()) => {
                    if tries > 1 {
                        tracing::info!(key, tries, "the store took the {what} after refusing it");
                    }
                    return Ok(());
                }
                Err(err) if err.is_retryable() && Instant::now() + wait <= deadline => {
                    tracing::warn!(
                        key, error = %err, wait_ms = wait.as_millis() as u64, tries,
                        "the store refused a {what}; trying again in place"
                    );
                    tokio::time::sleep(wait).await;
                    wait = (wait * 2).min(LONGEST_WAIT);
                    tries += 1;
                }
                Err(err) => return Err(err),
            }
        }
    }
}

#[async_trait]
impl ArtifactStore for PatientStore {
    async fn put(&self, key: &str, body: Bytes, content_type: &str) -> Result<(), ArtifactError> {
        self.patiently(key, "write", || self.inner.put(key, body.clone(), content_type))
            .await
    }

    async fn get(&self, key: &str) -> Result<Bytes, ArtifactError> {
        self.inner.get(key).await
    }

    async fn append(&self, key: &str, line: Bytes) -> Result<(), ArtifactError> {
        self.inner.append(key, line).await
    }

    async fn list(&self, prefix: &str) -> Result<Vec<String>, ArtifactError> {
        self.inner.list(prefix).await
    }

    async fn exists(&self, key: &str) -> Result<bool, ArtifactError> {
        self.inner.exists(key).await
    }

    async fn delete(&self, key: &str) -> Result<(), ArtifactError> {
        self.patiently(key, "delete", || self.inner.delete(key)).await
    }

    async fn get_versioned(&self, key: &str) -> Result<(Bytes, Version), ArtifactError> {
        self.inner.get_versioned(key).await
    }

    async fn put_if(
        &self,
        key: &str,
        body: Bytes,
        content_type: &str,
        expect: &Expect,
    ) -> Result<Version, ArtifactError> {
        self.inner.put_if(key, body, content_type, expect).await
    }

    fn describe(&self) -> String {
        self.inner.describe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MemoryStore;
    use crate::test_suite::FaultyStore;

    fn faulty() -> (FaultyStore, MemoryStore) {
        let inner = MemoryStore::new();
        (FaultyStore::new(Arc::new(inner.clone())), inner)
    }

    #[tokio::test(start_paused = true)]
    async fn a_write_refused_for_a_while_lands_within_the_patience() {
        let (store, inner) = faulty();
        let store = store.refusing_writes(3);
        let patient = PatientStore::new(Arc::new(store.clone()), Duration::from_secs(20));
        let started = Instant::now();
        patient
            .put(
                "jobs/fetch/a/result.json",
                Bytes::from_static(b"{}"),
                "application/json",
            )
            .await
            .expect("the fourth try lands");
        assert_eq!(store.refusals_left(), 0);
        assert!(inner.exists("jobs/fetch/a/result.json").await.unwrap());
        // 200 + 400 + 800 ms of waiting.
        assert_eq!(started.elapsed(), Duration::from_millis(1_400));
    }

    #[tokio::test(start_paused = true)]
    async fn an_outage_longer_than_the_patience_reaches_the_caller() {
        let (store, inner) = faulty();
        let patient = PatientStore::new(Arc::new(store.refusing_writes(1_000)), Duration::from_secs(20));
        let started = Instant::now();
        let err = patient
            .put("k", Bytes::from_static(b"x"), "text/plain")
            .await
            .expect_err("still refused");
        assert!(
            err.is_retryable(),
            "the caller still sees a transient failure: {err}"
        );
        assert!(
            started.elapsed() <= Duration::from_secs(20),
            "{:?}",
            started.elapsed()
        );
        assert!(
            started.elapsed() >= Duration::from_secs(15),
            "{:?}",
            started.elapsed()
        );
        assert!(!inner.exists("k").await.unwrap());
    }

    #[tokio::test(start_paused = true)]
    async fn a_refusal_for_good_is_not_tried_again() {
        let (store, _inner) = faulty();
        let patient = PatientStore::new(
            Arc::new(store.refusing_writes_for_good(1)),
            Duration::from_secs(20),
        );
        let started = Instant::now();
        patient
            .put("k", Bytes::from_static(b"x"), "text/plain")
            .await
            .expect_err("refused for good");
        assert_eq!(started.elapsed(), Duration::ZERO);
        // No patience at all: the first refusal is the answer.
        let (store, _inner) = faulty();
        let hasty = PatientStore::new(Arc::new(store.refusing_writes(1)), Duration::ZERO);
        hasty
            .put("k", Bytes::from_static(b"x"), "text/plain")
            .await
            .expect_err("no wait allowed");
    }

    #[tokio::test]
    async fn an_append_is_not_repeated() {
        let (store, inner) = faulty();
        let patient = PatientStore::new(Arc::new(store.refusing_writes(1)), Duration::from_secs(20));
        patient
            .append("log.jsonl", Bytes::from_static(b"one"))
            .await
            .expect_err("passed through as refused");
        assert!(!inner.exists("log.jsonl").await.unwrap());
    }

    #[tokio::test]
    async fn the_wrapped_store_passes_the_shared_suite() {
        let patient = PatientStore::new(Arc::new(MemoryStore::new()), Duration::from_secs(1));
        crate::test_suite::run_all(&patient).await;
    }
}
