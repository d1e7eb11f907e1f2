//! `FsStore`: artefacts as files under a root directory, the embedded
//! mode's `./oxwright-out/`.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;
use bytes::Bytes;
use tracing::debug;

use crate::key::TEMP_PREFIX;
use crate::store::terminated_line;
use crate::{ArtifactError, ArtifactStore, Expect, Version, validate_key, validate_prefix};

/// Distinguishes temporary files written concurrently by one process.
static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Stores each artefact as the file `<root>/<key>`.
///
/// `put` writes a temporary file in the target directory and renames it
/// over the target, so readers see the old or the new body, never a part.
/// `append` uses `O_APPEND` with one write per line, so concurrent appends
/// (from tasks or processes) do not interleave. Content types are not kept.
#[derive(Debug, Clone)]
pub struct FsStore {
    root: PathBuf,
}

impl FsStore {
    /// Creates a store rooted at `root`; the directory is created on the
    /// first write.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// Returns the root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Returns the file path of a validated key.
    fn path_of(&self, key: &str) -> Result<PathBuf, ArtifactError> {
        validate_key(key)?;
        Ok(self.root.join(key))
    }
}

/// Runs blocking filesystem work off the async threads.
async fn blocking<T, F>(key: &str, f: F) -> Result<T, ArtifactError>
where
    T: Send + 'static,
    F: FnOnce() -> io::Result<T> + Send + 'static,
{
    match tokio::task::spawn_blocking(f).await {
        Ok(result) => result.map_err(|e| ArtifactError::from_io(key, e)),
        Err(join) => Err(ArtifactError::Io {
            key: key.to_owned(),
            source: io::Error::other(format!("filesystem task failed: {join}")),
        }),
    }
}

/// The directory of `path`, created, and its file name.
fn placed(path: &Path) -> io::Result<(&Path, &str)> {
    let dir = path
        .parent()
        .ok_or_else(|| io::Error::other("key has no parent"))?;
    fs::create_dir_all(dir)?;
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| io::Error::other("key has no file name"))?;
    Ok((dir, name))
}

fn write_atomically(path: &Path, body: &[u8]) -> io::Result<()> {
    let (dir, name) = placed(path)?;
    let temp = dir.join(format!(
        "{TEMP_PREFIX}{}-{}-{name}",
        std::process::id(),
        TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let result = (|| {
        let mut file = fs::File::create(&temp)?;
        file.write_all(body)?;
        file.sync_data()?;
        fs::rename(&temp, path)
    })();
    if result.is_err() {
        // Best effort: a leftover temp file is ignored by `list` anyway.
        let _ = fs::remove_file(&temp);
    }
    result
}

fn append_line(path: &Path, line: &[u8]) -> io::Result<()> {
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir)?;
    }
    let mut file = OpenOptions::new().create(true).append(true).open(path)?;
    // One write call per line: O_APPEND makes it land whole at the end.
    file.write_all(line)
}

/// Writes `body` to `path` when the file there is what `expect` says,
/// holding an exclusive lock on a lock file beside it meanwhile, so
/// conditional writers in any process take turns. The lock file's name
/// starts with the temporary prefix, so `list` never shows it.
fn write_if(path: &Path, body: &[u8], expect: &Expect) -> io::Result<Result<Version, ()>> {
    let (dir, name) = placed(path)?;
    let lock = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir.join(format!("{TEMP_PREFIX}lock-{name}")))?;
    lock.lock()?;
    let current = match fs::read(path) {
        Ok(body) => Some(Version::of_body(&body)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(e),
    };
    if !expect.holds(current.as_ref()) {
        return Ok(Err(()));
    }
    write_atomically(path, body)?;
    // The lock goes with the file handle.
    Ok(Ok(Version::of_body(body)))
}

/// Collects keys of regular files under `dir`, skipping temporary files.
fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) -> io::Result<()> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    for entry in entries {
        let entry = entry?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if name.starts_with(TEMP_PREFIX) {
            continue;
        }
        let file_type = entry.file_type()?;
        let path = entry.path();
        if file_type.is_dir() {
            walk(root, &path, out)?;
        } else if file_type.is_file() {
            let rel = path.strip_prefix(root).map_err(io::Error::other)?;
            let segments: Option<Vec<&str>> = rel.iter().map(|s| s.to_str()).collect();
            if let Some(segments) = segments {
                out.push(segments.join("/"));
            }
        }
    }
    Ok(())
}

#[async_trait]
impl ArtifactStore for FsStore {
    async fn put(&self, key: &str, body: Bytes, content_type: &str) -> Result<(), ArtifactError> {
        let path = self.path_of(key)?;
        let len = body.len();
        blocking(key, move || write_atomically(&path, &body)).await?;
        debug!(key, bytes = len, content_type, "artifact written");
        Ok(())
    }

    async fn get(&self, key: &str) -> Result<Bytes, ArtifactError> {
        let path = self.path_of(key)?;
        let body = blocking(key, move || fs::read(path)).await?;
        Ok(Bytes::from(body))
    }

    async fn append(&self, key: &str, line: Bytes) -> Result<(), ArtifactError> {
        let path = self.path_of(key)?;
        let line = terminated_line(line);
        blocking(key, move || append_line(&path, &line)).await
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
        let path = self.path_of(key)?;
        let expect = expect.clone();
        let len = body.len();
        match blocking(key, move || write_if(&path, &body, &expect)).await? {
            Ok(version) => {
                debug!(key, bytes = len, content_type, "artifact written on condition");
                Ok(version)
            }
            Err(()) => Err(ArtifactError::Conflict { key: key.to_owned() }),
        }
    }

    async fn list(&self, prefix: &str) -> Result<Vec<String>, ArtifactError> {
        validate_prefix(prefix)?;
        // Walk only the deepest directory the prefix names in full.
        let dir_part = prefix.rsplit_once('/').map_or("", |(dir, _)| dir);
        let root = self.root.clone();
        let start = if dir_part.is_empty() {
            root.clone()
        } else {
            root.join(dir_part)
        };
        let mut keys = blocking(prefix, move || {
            let mut out = Vec::new();
            walk(&root, &start, &mut out)?;
            Ok(out)
        })
        .await?;
        keys.retain(|k| k.starts_with(prefix) && validate_key(k).is_ok());
        keys.sort();
        Ok(keys)
    }

    async fn exists(&self, key: &str) -> Result<bool, ArtifactError> {
        let path = self.path_of(key)?;
        blocking(key, move || match fs::metadata(path) {
            Ok(meta) => Ok(meta.is_file()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) if e.kind() == io::ErrorKind::NotADirectory => Ok(false),
            Err(e) => Err(e),
        })
        .await
    }

    async fn delete(&self, key: &str) -> Result<(), ArtifactError> {
        let path = self.path_of(key)?;
        blocking(key, move || match fs::remove_file(path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            other => other,
        })
        .await
    }

    fn describe(&self) -> String {
        format!("file store at {}", self.root.display())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn put_leaves_no_temp_files_and_describes_root() {
        let dir = tempfile::tempdir().unwrap();
        let store = FsStore::new(dir.path());
        store
            .put("a/b/c.txt", Bytes::from_static(b"x"), "text/plain")
            .await
            .unwrap();
        let names: Vec<_> = fs::read_dir(dir.path().join("a/b"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec!["c.txt"]);
        assert!(store.describe().starts_with("file store at "));
    }

    #[tokio::test]
    async fn directories_are_not_artifacts() {
        let dir = tempfile::tempdir().unwrap();
        let store = FsStore::new(dir.path());
        store
            .put("a/b", Bytes::from_static(b"x"), "text/plain")
            .await
            .unwrap();
        assert!(!store.exists("a").await.unwrap());
        assert!(matches!(
            store.get("a").await,
            Err(ArtifactError::NotFound { .. })
        ));
        // A file in the way of a directory is not a key either.
        assert!(!store.exists("a/b/c").await.unwrap());
    }
}
