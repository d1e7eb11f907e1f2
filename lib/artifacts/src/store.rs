//! The `ArtifactStore` trait: the one interface workers and the scheduler
//! use to read and write artefacts, whatever holds them.

use async_trait::async_trait;
use bytes::Bytes;

use crate::ArtifactError;

/// A flat key → bytes store with the same key layout on every backend
/// (`jobs/<kind>/<id>/result.json`, see `oxwright_jobs::keys`).
///
/// Keys are `/`-separated relative paths; [`crate::validate_key`] says which
/// are accepted, and every implementation refuses the others with
/// [`ArtifactError::InvalidKey`].
#[async_trait]
pub trait ArtifactStore: Send + Sync + std::fmt::Debug {
    /// Stores `body` under `key`, replacing any previous artefact; readers
    /// never see a half-written body.
    async fn put(&self, key: &str, body: Bytes, content_type: &str) -> Result<(), ArtifactError>;

    /// Returns the artefact under `key`, or [`ArtifactError::NotFound`].
    async fn get(&self, key: &str) -> Result<Bytes, ArtifactError>;

    /// Appends one line to the log under `key` (JSONL), creating it when
    /// missing. A `\n` is added when `line` does not end with one.
    /// Concurrent appends to one key lose no line and never interleave.
    async fn append(&self, key: &str, line: Bytes) -> Result<(), ArtifactError>;

    /// Returns every key starting with `prefix` (a plain string prefix, as in
    /// S3), sorted.
    async fn list(&self, prefix: &str) -> Result<Vec<String>, ArtifactError>;

    /// Says whether an artefact is stored under `key`.
    async fn exists(&self, key: &str) -> Result<bool, ArtifactError>;

    /// Removes the artefact under `key`; a missing one is no error.
    async fn delete(&self, key: &str) -> Result<(), ArtifactError>;

    /// Describes the store for messages to users, e.g.
    /// `file store at ./oxwright-out`.
    fn describe(&self) -> String;
}

/// Returns `line` with a trailing `\n`, adding one only when missing.
pub(crate) fn terminated_line(line: Bytes) -> Bytes {
    if line.ends_with(b"\n") {
        line
    } else {
        let mut buf = Vec::with_capacity(line.len() + 1);
        buf.extend_from_slice(&line);
        buf.push(b'\n');
        Bytes::from(buf)
    }
}
