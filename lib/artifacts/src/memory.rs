//! `MemoryStore`: artefacts in a shared in-process map, for embedded runs
//! and tests.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use async_trait::async_trait;
use bytes::Bytes;

use crate::store::terminated_line;
use crate::{ArtifactError, ArtifactStore, Expect, Version, validate_key, validate_prefix};

/// One stored artefact.
#[derive(Debug, Clone)]
struct Entry {
    body: Bytes,
    content_type: String,
}

/// Keeps artefacts in memory; clones share the same map.
#[derive(Debug, Clone, Default)]
pub struct MemoryStore {
    entries: Arc<Mutex<BTreeMap<String, Entry>>>,
}

impl MemoryStore {
    /// Creates an empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Returns the content type recorded for `key`, if it is stored.
    pub fn content_type(&self, key: &str) -> Option<String> {
        self.lock().get(key).map(|e| e.content_type.clone())
    }

    /// Returns how many artefacts are stored.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Says whether the store holds no artefact.
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<String, Entry>> {
        // A panic while holding the lock cannot leave an entry half-written:
        // every critical section is a single map operation.
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[async_trait]
impl ArtifactStore for MemoryStore {
    async fn put(&self, key: &str, body: Bytes, content_type: &str) -> Result<(), ArtifactError> {
        validate_key(key)?;
        let entry = Entry {
            body,
            content_type: content_type.to_owned(),
        };
        self.lock().insert(key.to_owned(), entry);
        Ok(())
    }

    async fn get(&self, key: &str) -> Result<Bytes, ArtifactError> {
        validate_key(key)?;
        self.lock()
            .get(key)
            .map(|e| e.body.clone())
            .ok_or_else(|| ArtifactError::NotFound { key: key.to_owned() })
    }

    async fn append(&self, key: &str, line: Bytes) -> Result<(), ArtifactError> {
        validate_key(key)?;
        let line = terminated_line(line);
        let mut entries = self.lock();
        let entry = entries.entry(key.to_owned()).or_insert_with(|| Entry {
            body: Bytes::new(),
            content_type: "application/x-ndjson".to_owned(),
        });
        let mut body = Vec::with_capacity(entry.body.len() + line.len());
        body.extend_from_slice(&entry.body);
        body.extend_from_slice(&line);
        entry.body = Bytes::from(body);
        Ok(())
    }

    async fn get_versioned(&self, key: &str) -> Result<(Bytes, Version), ArtifactError> {
        let body = self.get(key).await?;
        let version = Version::of_body(&body);
        Ok((body, version))
    }

    async fn put_if(
        &self,
        key: &str,
        body: Bytes,
        content_type: &str,
        expect: &Expect,
    ) -> Result<Version, ArtifactError> {
        validate_key(key)?;
        let version = Version::of_body(&body);
        let mut entries = self.lock();
        let current = entries.get(key).map(|e| Version::of_body(&e.body));
        if !expect.holds(current.as_ref()) {
            return Err(ArtifactError::Conflict { key: key.to_owned() });
        }
        entries.insert(
            key.to_owned(),
            Entry {
                body,
                content_type: content_type.to_owned(),
            },
        );
        Ok(version)
    }

    async fn list(&self, prefix: &str) -> Result<Vec<String>, ArtifactError> {
        validate_prefix(prefix)?;
        Ok(self
            .lock()
            .range(prefix.to_owned()..)
            .take_while(|(k, _)| k.starts_with(prefix))
            .map(|(k, _)| k.clone())
            .collect())
    }

    async fn exists(&self, key: &str) -> Result<bool, ArtifactError> {
        validate_key(key)?;
        Ok(self.lock().contains_key(key))
    }

    async fn delete(&self, key: &str) -> Result<(), ArtifactError> {
        validate_key(key)?;
        self.lock().remove(key);
        Ok(())
    }

    fn describe(&self) -> String {
        "in-memory store".to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn clones_share_entries_and_keep_content_type() {
        let store = MemoryStore::new();
        let clone = store.clone();
        clone
            .put("a/b.json", Bytes::from_static(b"{}"), "application/json")
            .await
            .unwrap();
        assert_eq!(store.get("a/b.json").await.unwrap(), Bytes::from_static(b"{}"));
        assert_eq!(
            store.content_type("a/b.json").as_deref(),
            Some("application/json")
        );
        assert_eq!(store.len(), 1);
    }
}
