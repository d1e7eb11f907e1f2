//! The shared artefact-store test suite: every [`ArtifactStore`]
//! implementation (memory, filesystem, S3) runs it, so they all behave
//! alike. Each check works under its own fresh prefix, so a store that
//! already holds data (a shared bucket) can run it too.
//!
//! The checks panic on failure, like assertions in a test.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use futures::future::join_all;

use crate::{ArtifactError, ArtifactStore, Expect};

static RUN_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Returns a prefix no earlier check (in this or another process) used.
fn fresh_prefix(name: &str) -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    let n = RUN_COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("suite/{name}-{nanos}-{}-{n}/", std::process::id())
}

/// Runs every check of the suite against `store`.
pub async fn run_all(store: &dyn ArtifactStore) {
    put_get_round_trip(store).await;
    put_overwrites(store).await;
    delete_removes(store).await;
    append_keeps_order(store).await;
    list_by_prefix(store).await;
    not_found_is_typed(store).await;
    invalid_keys_are_refused(store).await;
    binary_bytes_survive(store).await;
    concurrent_appends_lose_no_line(store).await;
    conditional_writes_refuse_what_changed(store).await;
    describe_is_not_empty(store).await;
}

/// Checks that a stored body comes back unchanged and `exists` sees it.
pub async fn put_get_round_trip(store: &dyn ArtifactStore) {
    let key = format!("{}result.json", fresh_prefix("round-trip"));
    assert!(!store.exists(&key).await.unwrap(), "{key} exists before put");
    let body = Bytes::from_static(br#"{"ok":true}"#);
    store.put(&key, body.clone(), "application/json").await.unwrap();
    assert_eq!(store.get(&key).await.unwrap(), body);
    assert!(store.exists(&key).await.unwrap(), "{key} missing after put");
}

/// Checks that `put` replaces the previous body, including a longer one.
pub async fn put_overwrites(store: &dyn ArtifactStore) {
    let key = format!("{}page.md", fresh_prefix("overwrite"));
    store
        .put(&key, Bytes::from_static(b"first, longer body"), "text/markdown")
        .await
        .unwrap();
    store
        .put(&key, Bytes::from_static(b"second"), "text/markdown")
        .await
        .unwrap();
    assert_eq!(store.get(&key).await.unwrap(), Bytes::from_static(b"second"));
    assert_eq!(store.list(&key).await.unwrap(), vec![key.clone()]);
}

/// Checks that `delete` removes an artefact, and that deleting a missing
/// one is no error.
pub async fn delete_removes(store: &dyn ArtifactStore) {
    let key = format!("{}checkpoint.json", fresh_prefix("delete"));
    store
        .put(&key, Bytes::from_static(b"{}"), "application/json")
        .await
        .unwrap();
    store.delete(&key).await.unwrap();
    assert!(!store.exists(&key).await.unwrap(), "{key} exists after delete");
    assert!(matches!(
        store.get(&key).await,
        Err(ArtifactError::NotFound { .. })
    ));
    store.delete(&key).await.unwrap();
}

/// Checks that appended lines come back in order, newline-terminated, and
/// that `append` creates the log.
pub async fn append_keeps_order(store: &dyn ArtifactStore) {
    let key = format!("{}steps.jsonl", fresh_prefix("append"));
    store
        .append(&key, Bytes::from_static(b"{\"n\":1}"))
        .await
        .unwrap();
    store
        .append(&key, Bytes::from_static(b"{\"n\":2}\n"))
        .await
        .unwrap();
    store
        .append(&key, Bytes::from_static(b"{\"n\":3}"))
        .await
        .unwrap();
    assert_eq!(
        store.get(&key).await.unwrap(),
        Bytes::from_static(b"{\"n\":1}\n{\"n\":2}\n{\"n\":3}\n")
    );
}

/// Checks that `list` returns exactly the keys under a prefix, sorted,
/// matching partial segments like S3 does.
pub async fn list_by_prefix(store: &dyn ArtifactStore) {
    let base = fresh_prefix("list");
    let keys = [
        format!("{base}b/2.json"),
        format!("{base}a/1.json"),
        format!("{base}a/sub/3.json"),
        format!("{base}ab/4.json"),
        format!("{base}c.json"),
    ];
    for key in &keys {
        store
            .put(key, Bytes::from_static(b"{}"), "application/json")
            .await
            .unwrap();
    }
    let mut all = keys.to_vec();
    all.sort();
    assert_eq!(store.list(&base).await.unwrap(), all);
    assert_eq!(
        store.list(&format!("{base}a/")).await.unwrap(),
        vec![format!("{base}a/1.json"), format!("{base}a/sub/3.json")]
    );
    assert_eq!(
        store.list(&format!("{base}a")).await.unwrap(),
        vec![
            format!("{base}a/1.json"),
            format!("{base}a/sub/3.json"),
            format!("{base}ab/4.json"),
        ]
    );
    assert!(store.list(&format!("{base}zzz")).await.unwrap().is_empty());
    assert!(store.list(&fresh_prefix("list-empty")).await.unwrap().is_empty());
}

/// Checks that reading a missing key gives [`ArtifactError::NotFound`]
/// naming the key, and that it is not retryable.
pub async fn not_found_is_typed(store: &dyn ArtifactStore) {
    let key = format!("{}missing.json", fresh_prefix("not-found"));
    match store.get(&key).await {
        Err(err @ ArtifactError::NotFound { .. }) => {
            assert_eq!(err.key(), key);
            assert!(!err.is_retryable());
        }
        other => panic!("expected NotFound for {key}, got {other:?}"),
    }
    assert!(!store.exists(&key).await.unwrap());
}

/// Checks that every operation refuses keys that could escape the store
/// or alias another key.
pub async fn invalid_keys_are_refused(store: &dyn ArtifactStore) {
    let bad = [
        "",
        "/etc/passwd",
        "../outside",
        "a/../../outside",
        "a\\b",
        "a//b",
        "a/",
        "a/./b",
    ];
    for key in bad {
        let body = Bytes::from_static(b"x");
        let results = [
            store.put(key, body.clone(), "text/plain").await.err(),
            store.get(key).await.err(),
            store.append(key, body).await.err(),
            store.exists(key).await.err(),
        ];
        for (op, result) in ["put", "get", "append", "exists"].iter().zip(results) {
            match result {
                Some(ArtifactError::InvalidKey { key: k, .. }) => assert_eq!(k, key),
                other => panic!("{op}({key:?}) should be InvalidKey, got {other:?}"),
            }
        }
    }
    for prefix in ["../", "/abs", "a\\"] {
        assert!(
            matches!(store.list(prefix).await, Err(ArtifactError::InvalidKey { .. })),
            "list({prefix:?}) should be InvalidKey"
        );
    }
}

/// Checks that arbitrary bytes (NUL, invalid UTF-8, every byte value)
/// survive a round trip, as do empty bodies.
pub async fn binary_bytes_survive(store: &dyn ArtifactStore) {
    let base = fresh_prefix("binary");
    let mut body: Vec<u8> = (0..=255u8).collect();
    body.extend_from_slice(&[0xff, 0xfe, 0x00, 0xc3, 0x28]);
    let key = format!("{base}shot.png");
    store
        .put(&key, Bytes::from(body.clone()), "image/png")
        .await
        .unwrap();
    assert_eq!(store.get(&key).await.unwrap(), Bytes::from(body));
    let empty = format!("{base}empty");
    store
        .put(&empty, Bytes::new(), "application/octet-stream")
        .await
        .unwrap();
    assert_eq!(store.get(&empty).await.unwrap(), Bytes::new());
    assert!(store.exists(&empty).await.unwrap());
}

/// Checks that appends from several concurrent writers all land, each
/// line whole, each writer's lines in its own order.
pub async fn concurrent_appends_lose_no_line(store: &dyn ArtifactStore) {
    const WRITERS: usize = 8;
    const LINES: usize = 25;
    let key = format!("{}manifest.jsonl", fresh_prefix("concurrent"));
    let writers = (0..WRITERS).map(|w| {
        let key = key.clone();
        async move {
            for n in 0..LINES {
                let line = format!("{{\"writer\":{w},\"n\":{n},\"pad\":\"{}\"}}", "x".repeat(64));
                store.append(&key, Bytes::from(line)).await.unwrap();
            }
        }
    });
    join_all(writers).await;
    let body = store.get(&key).await.unwrap();
    let text = std::str::from_utf8(&body).expect("log is UTF-8");
    assert!(text.ends_with('\n'));
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), WRITERS * LINES, "lines were lost");
    let mut next = [0usize; WRITERS];
    for line in lines {
        let pad = "x".repeat(64);
        let (w, n) = (0..WRITERS)
            .flat_map(|w| (0..LINES).map(move |n| (w, n)))
            .find(|(w, n)| line == format!("{{\"writer\":{w},\"n\":{n},\"pad\":\"{pad}\"}}"))
            .unwrap_or_else(|| panic!("mangled line: {line}"));
        assert_eq!(n, next[w], "writer {w} lines out of order");
        next[w] += 1;
    }
}

/// Checks that the store can describe itself to users.
pub async fn describe_is_not_empty(store: &dyn ArtifactStore) {
    assert!(!store.describe().trim().is_empty());
}

/// Checks conditional writes one after another: a create refused where
/// something is, a write at a stale version refused and the body kept,
/// one at the version read taken, and an expected artefact that went
/// refused.
pub async fn conditional_writes_refuse_what_changed(store: &dyn ArtifactStore) {
    let key = format!("{}state.json", fresh_prefix("conditional"));
    let conflict = |r: Result<crate::Version, ArtifactError>| {
        assert!(
            matches!(r, Err(ArtifactError::Conflict { ref key }) if !key.is_empty()),
            "{r:?}"
        );
    };
    let first = store
        .put_if(
            &key,
            Bytes::from_static(b"{\"runs\":1}"),
            "application/json",
            &Expect::Absent,
        )
        .await
        .unwrap();
    conflict(
        store
            .put_if(
                &key,
                Bytes::from_static(b"{\"runs\":9}"),
                "application/json",
                &Expect::Absent,
            )
            .await,
    );
    let (body, read) = store.get_versioned(&key).await.unwrap();
    assert_eq!(body, Bytes::from_static(b"{\"runs\":1}"));
    assert_eq!(read, first, "the version read is the one written");
    let second = store
        .put_if(
            &key,
            Bytes::from_static(b"{\"runs\":2}"),
            "application/json",
            &Expect::Version(read.clone()),
        )
        .await
        .unwrap();
    assert_ne!(second, read);
    conflict(
        store
            .put_if(
                &key,
                Bytes::from_static(b"{\"runs\":3}"),
                "application/json",
                &Expect::Version(read),
            )
            .await,
    );
    assert_eq!(
        store.get(&key).await.unwrap(),
        Bytes::from_static(b"{\"runs\":2}")
    );
    store.delete(&key).await.unwrap();
    conflict(
        store
            .put_if(
                &key,
                Bytes::from_static(b"{\"runs\":4}"),
                "application/json",
                &Expect::Version(second),
            )
            .await,
    );
    assert!(!store.exists(&key).await.unwrap());
    assert!(matches!(
        store.get_versioned(&key).await,
        Err(ArtifactError::NotFound { .. })
    ));
}

/// Checks that writers racing read-change-write loops over one counter
/// lose no increment: each write that lands was made from the version
/// before it. Needs a server whose conditional check and write are one
/// step (S3 and the local stores; not every S3 stand-in).
pub async fn racing_conditional_updates_lose_none(store: &dyn ArtifactStore) {
    const WRITERS: u64 = 6;
    const EACH: u64 = 15;
    let key = format!("{}counter.json", fresh_prefix("racing"));
    let writers = (0..WRITERS).map(|_| {
        let key = key.clone();
        async move {
            let mut conflicts = 0u64;
            for _ in 0..EACH {
                loop {
                    let (count, expect) = match store.get_versioned(&key).await {
                        Ok((body, version)) => {
                            let n: u64 = std::str::from_utf8(&body).unwrap().parse().unwrap();
                            (n, Expect::Version(version))
                        }
                        Err(ArtifactError::NotFound { .. }) => (0, Expect::Absent),
                        Err(err) => panic!("{err}"),
                    };
                    tokio::task::yield_now().await;
                    let body = Bytes::from((count + 1).to_string());
                    match store.put_if(&key, body, "text/plain", &expect).await {
                        Ok(_) => break,
                        Err(ArtifactError::Conflict { .. }) => conflicts += 1,
                        Err(err) => panic!("{err}"),
                    }
                }
            }
            conflicts
        }
    });
    let conflicts: u64 = join_all(writers).await.into_iter().sum();
    let body = store.get(&key).await.unwrap();
    assert_eq!(
        std::str::from_utf8(&body).unwrap(),
        (WRITERS * EACH).to_string(),
        "increments were lost ({conflicts} conflicts seen)"
    );
    assert!(conflicts > 0, "the writers never raced; the check proves nothing");
}

/// A store for tests of what happens when the store misbehaves: it
/// refuses its first writes (`put`, `append`, `put_if`) as a restarting S3
/// server refuses them, and may take a while over each write, so that
/// read-change-write steps of two writers overlap. Reads pass through.
#[derive(Debug, Clone)]
pub struct FaultyStore {
    inner: std::sync::Arc<dyn ArtifactStore>,
    refusals: std::sync::Arc<std::sync::atomic::AtomicU32>,
    retryable: bool,
    write_delay: std::time::Duration,
}

impl FaultyStore {
    /// Wraps `inner`, misbehaving in no way yet.
    pub fn new(inner: std::sync::Arc<dyn ArtifactStore>) -> Self {
        Self {
            inner,
            refusals: std::sync::Arc::default(),
            retryable: true,
            write_delay: std::time::Duration::ZERO,
        }
    }

    /// Refuses the next `n` writes for a transient reason ("connection
    /// refused", retryable).
    #[must_use]
    pub fn refusing_writes(self, n: u32) -> Self {
        self.refusals.store(n, Ordering::SeqCst);
        Self {
            retryable: true,
            ..self
        }
    }

    /// Refuses the next `n` writes for good (not retryable).
    #[must_use]
    pub fn refusing_writes_for_good(self, n: u32) -> Self {
        self.refusals.store(n, Ordering::SeqCst);
        Self {
            retryable: false,
            ..self
        }
    }

    /// Takes `delay` over every write before making it.
    #[must_use]
    pub fn with_slow_writes(self, delay: std::time::Duration) -> Self {
        Self {
            write_delay: delay,
            ..self
        }
    }

    /// How many writes are still to be refused.
    pub fn refusals_left(&self) -> u32 {
        self.refusals.load(Ordering::SeqCst)
    }

    async fn before_write(&self, key: &str) -> Result<(), ArtifactError> {
        if !self.write_delay.is_zero() {
            tokio::time::sleep(self.write_delay).await;
        }
        let refused = self
            .refusals
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        if refused {
            return Err(ArtifactError::Backend {
                key: key.to_owned(),
                message: "dispatch failure: connection refused".into(),
                retryable: self.retryable,
                source: None,
            });
        }
        Ok(())
    }
}

#[async_trait::async_trait]
impl ArtifactStore for FaultyStore {
    async fn put(&self, key: &str, body: Bytes, content_type: &str) -> Result<(), ArtifactError> {
        self.before_write(key).await?;
        self.inner.put(key, body, content_type).await
    }

    async fn get(&self, key: &str) -> Result<Bytes, ArtifactError> {
        self.inner.get(key).await
    }

    async fn append(&self, key: &str, line: Bytes) -> Result<(), ArtifactError> {
        self.before_write(key).await?;
        self.inner.append(key, line).await
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

    async fn get_versioned(&self, key: &str) -> Result<(Bytes, crate::Version), ArtifactError> {
        self.inner.get_versioned(key).await
    }

    async fn put_if(
        &self,
        key: &str,
        body: Bytes,
        content_type: &str,
        expect: &Expect,
    ) -> Result<crate::Version, ArtifactError> {
        self.before_write(key).await?;
        self.inner.put_if(key, body, content_type, expect).await
    }

    fn describe(&self) -> String {
        format!("{} (with injected faults)", self.inner.describe())
    }
}
