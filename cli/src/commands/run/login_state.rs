//! Saved login states (`--storage-state FILE`, `--save-storage-state FILE`):
//! Playwright's `storageState` JSON, read before a browser starts and
//! written readable by its owner only, as it holds credentials.

use std::io::Write as _;
use std::path::Path;

use anyhow::Context as _;
use oxwright_engine::StorageState;

use crate::exit::usage;

/// Reads a saved state; a missing or malformed file is a usage error.
pub(crate) fn read(path: &Path) -> anyhow::Result<StorageState> {
    StorageState::read_file(path)
        .map(|(state, _)| state)
        .map_err(|e| usage(format!("storage state {e}")))
}

/// Writes `state` to `path` in Playwright's shape, mode 0600, through a
/// file beside it renamed into place (a reader never sees half a state).
pub(crate) fn save(path: &Path, state: &StorageState) -> anyhow::Result<()> {
    let body = serde_json::to_vec_pretty(&state.to_file_json())?;
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".{}.part", std::process::id()));
    let part = path.with_file_name(name);
    let mut open = std::fs::OpenOptions::new();
    open.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut open, 0o600);
    let written = open.open(&part).and_then(|mut f| {
        f.write_all(&body)?;
        f.sync_all()
    });
    let renamed = written.and_then(|()| std::fs::rename(&part, path));
    if renamed.is_err() {
        let _ = std::fs::remove_file(&part);
    }
    renamed.with_context(|| format!("writing the storage state {}", path.display()))
}
