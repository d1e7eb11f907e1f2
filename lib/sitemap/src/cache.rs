//! The document cache: moka in memory in front of JSON files under a `/tmp`
//! directory. An entry keeps a document's validators and its parse, so a 304
//! to a conditional GET reuses the parse. Entries expire after the TTL and
//! nothing is kept outside the cache directory.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::fetch::Validators;
use crate::parse::ParsedDoc;

/// A cached document.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct CachedDoc {
    /// The cache key (the requested URL plus the limits the parse ran under).
    pub key: String,
    pub etag: Option<String>,
    pub last_modified: Option<String>,
    /// When the document was stored, in seconds since the Unix epoch.
    pub stored_at: u64,
    pub doc: ParsedDoc,
}

impl CachedDoc {
    pub(crate) fn validators(&self) -> Validators {
        Validators {
            etag: self.etag.clone(),
            last_modified: self.last_modified.clone(),
        }
    }
}

/// Memory plus disk.
#[derive(Debug, Clone)]
pub(crate) struct DocCache {
    mem: moka::future::Cache<String, Arc<CachedDoc>>,
    dir: Option<PathBuf>,
    ttl: Duration,
}

static TMP_SEQ: AtomicU64 = AtomicU64::new(0);

impl DocCache {
    /// Creates the cache and removes expired files left in `dir`.
    pub(crate) fn new(dir: Option<PathBuf>, ttl: Duration) -> Self {
        let mem = moka::future::Cache::builder()
            .max_capacity(1_000)
            .time_to_live(ttl.max(Duration::from_millis(1)))
            .build();
        if let Some(dir) = &dir {
            sweep(dir, ttl);
        }
        Self { mem, dir, ttl }
    }

    /// Returns the fresh entry for `key`, from memory or else from disk.
    pub(crate) async fn get(&self, key: &str) -> Option<Arc<CachedDoc>> {
        if let Some(hit) = self.mem.get(key).await {
            if self.fresh(&hit) {
                return Some(hit);
            }
            self.mem.invalidate(key).await;
        }
        let path = self.path(key)?;
        let bytes = tokio::fs::read(&path).await.ok()?;
        let entry: CachedDoc = match serde_json::from_slice(&bytes) {
            Ok(e) => e,
            Err(e) => {
                tracing::debug!(path = %path.display(), error = %e, "unreadable sitemap cache file");
                let _ = tokio::fs::remove_file(&path).await;
                return None;
            }
        };
        if entry.key != key || !self.fresh(&entry) {
            let _ = tokio::fs::remove_file(&path).await;
            return None;
        }
        let entry = Arc::new(entry);
        self.mem.insert(key.to_string(), entry.clone()).await;
        Some(entry)
    }

    /// Stores `entry` in memory and on disk; disk failures only lose the disk copy.
    pub(crate) async fn put(&self, entry: CachedDoc) {
        let entry = Arc::new(entry);
        self.mem.insert(entry.key.clone(), entry.clone()).await;
        let Some(path) = self.path(&entry.key) else { return };
        if let Err(e) = write_atomic(&path, &entry).await {
            tracing::debug!(path = %path.display(), error = %e, "sitemap cache write failed");
        }
    }

    fn fresh(&self, entry: &CachedDoc) -> bool {
        now_secs().saturating_sub(entry.stored_at) < self.ttl.as_secs().max(1) && !self.ttl.is_zero()
    }

    fn path(&self, key: &str) -> Option<PathBuf> {
        let dir = self.dir.as_ref()?;
        let digest = Sha256::digest(key.as_bytes());
        Some(dir.join(format!("{}.json", hex::encode(digest))))
    }
}

pub(crate) fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

async fn write_atomic(path: &Path, entry: &CachedDoc) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    // Owner-only: the directory sits in a shared /tmp.
    let mut builder = tokio::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    builder.mode(0o700);
    builder.create(dir).await?;
    let json = serde_json::to_vec(entry)?;
    let tmp = dir.join(format!(
        ".{}.{}.tmp",
        std::process::id(),
        TMP_SEQ.fetch_add(1, Ordering::Relaxed)
    ));
    tokio::fs::write(&tmp, json).await?;
    tokio::fs::rename(&tmp, path).await
}

/// Removes cache files older than the TTL (by modification time).
fn sweep(dir: &Path, ttl: Duration) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age >= ttl);
        if old {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(key: &str, stored_at: u64) -> CachedDoc {
        CachedDoc {
            key: key.into(),
            etag: Some("\"v1\"".into()),
            last_modified: None,
            stored_at,
            doc: ParsedDoc::default(),
        }
    }

    #[tokio::test]
    async fn disk_tier_survives_a_new_memory_tier() {
        let dir = tempfile::tempdir().unwrap();
        let ttl = Duration::from_secs(3600);
        let a = DocCache::new(Some(dir.path().into()), ttl);
        a.put(entry("k", now_secs())).await;
        let b = DocCache::new(Some(dir.path().into()), ttl);
        assert_eq!(b.get("k").await.unwrap().etag.as_deref(), Some("\"v1\""));
        assert!(b.get("other").await.is_none());
    }

    #[tokio::test]
    async fn expired_entries_are_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let ttl = Duration::from_secs(60);
        let c = DocCache::new(Some(dir.path().into()), ttl);
        c.put(entry("k", now_secs() - 61)).await;
        assert!(c.get("k").await.is_none());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
