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

    /// Returns the artefact under `key` with its [`Version`], or
    /// [`ArtifactError::NotFound`]: what a later [`ArtifactStore::put_if`]
    /// compares.
    async fn get_versioned(&self, key: &str) -> Result<(Bytes, Version), ArtifactError>;

    /// Stores `body` under `key` only when what is stored there is what
    /// `expect` says (nothing, or the version read), and returns the new
    /// version; otherwise writes nothing and returns
    /// [`ArtifactError::Conflict`]. Of two writers that read the same
    /// version, one wins and the other is told to read again: the way two
    /// schedulers agree on one record. A plain [`ArtifactStore::put`]
    /// replaces whatever is there, as on S3.
    async fn put_if(
        &self,
        key: &str,
        body: Bytes,
        content_type: &str,
        expect: &Expect,
    ) -> Result<Version, ArtifactError>;

    /// Describes the store for messages to users, e.g.
    /// `file store at ./oxwright-out`.
    fn describe(&self) -> String;
}

/// A stored artefact's version, as a conditional write compares it: the
/// object's ETag on S3, a digest of the body on the other stores. Opaque;
/// equal bodies may share one.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Version(String);

impl Version {
    /// A version named by the backend (an S3 ETag).
    pub fn new(tag: impl Into<String>) -> Self {
        Self(tag.into())
    }

    /// The version of `body` on the stores that keep no tags of their own:
    /// its length and a 64-bit digest.
    pub fn of_body(body: &[u8]) -> Self {
        use std::hash::Hasher;
        let mut hasher = rustc_hash::FxHasher::default();
        hasher.write(body);
        Self(format!("{}-{:016x}", body.len(), hasher.finish()))
    }

    /// The version as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// What a conditional write ([`ArtifactStore::put_if`]) expects to find
/// under its key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expect {
    /// Nothing: the write creates the artefact.
    Absent,
    /// The artefact at this version, as read.
    Version(Version),
}

impl Expect {
    /// What to expect after reading `read`: its version, or nothing when
    /// the key held nothing.
    pub fn after(read: Option<&Version>) -> Self {
        read.map_or(Self::Absent, |v| Self::Version(v.clone()))
    }

    /// Says whether `current` (the stored version, `None` when nothing
    /// is stored) is what is expected.
    pub fn holds(&self, current: Option<&Version>) -> bool {
        match (self, current) {
            (Self::Absent, None) => true,
            (Self::Version(want), Some(have)) => want == have,
            _ => false,
        }
    }
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
