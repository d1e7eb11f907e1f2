//! Screenshots land only under one directory, each under a size cap, and the
//! oldest go when there are more than the count cap (seed 000 §11.3).

use std::path::{Path, PathBuf};

/// Where screenshots are written and how many are kept.
#[derive(Debug)]
pub struct ScreenshotStore {
    dir: PathBuf,
    max_bytes: usize,
    max_files: usize,
}

/// A screenshot that cannot be kept.
#[derive(Debug, thiserror::Error)]
pub enum ScreenshotError {
    /// Over the size cap.
    #[error(
        "the screenshot is {size} bytes, over the {max} byte limit: take the viewport (no fullPage) or one element instead"
    )]
    TooLarge {
        /// Its size.
        size: usize,
        /// The cap.
        max: usize,
    },
    /// The directory cannot be written.
    #[error("cannot write screenshots under {dir}: {source}")]
    Io {
        /// The directory.
        dir: String,
        /// Why.
        source: std::io::Error,
    },
}

impl ScreenshotStore {
    /// A store under `dir` (created when needed).
    pub fn new(dir: PathBuf, max_bytes: usize, max_files: usize) -> Self {
        Self {
            dir,
            max_bytes,
            max_files: max_files.max(1),
        }
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Writes `png` as `name` (its directories dropped; `.png` added) or a
    /// time-stamped name, then removes the oldest files over the count cap.
    pub fn save(&self, name: Option<&str>, png: &[u8]) -> Result<PathBuf, ScreenshotError> {
        if png.len() > self.max_bytes {
            return Err(ScreenshotError::TooLarge {
                size: png.len(),
                max: self.max_bytes,
            });
        }
        let io = |source| ScreenshotError::Io {
            dir: self.dir.display().to_string(),
            source,
        };
        std::fs::create_dir_all(&self.dir).map_err(io)?;
        let path = self.dir.join(file_name(name));
        std::fs::write(&path, png).map_err(io)?;
        self.prune(&path).map_err(io)?;
        Ok(path)
    }

    fn prune(&self, keep: &Path) -> std::io::Result<()> {
        let mut files: Vec<(std::time::SystemTime, PathBuf)> = std::fs::read_dir(&self.dir)?
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
            .filter(|e| e.path().extension().is_some_and(|x| x == "png"))
            .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
            .collect();
        if files.len() <= self.max_files {
            return Ok(());
        }
        files.sort();
        let over = files.len() - self.max_files;
        for (_, path) in files.into_iter().filter(|(_, p)| p != keep).take(over) {
            std::fs::remove_file(path)?;
        }
        Ok(())
    }
}

/// A safe file name: the last path component, only `[A-Za-z0-9._-]`, `.png`.
fn file_name(name: Option<&str>) -> String {
    let stamp = || {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        format!("page-{}-{:03}", now.as_secs(), now.subsec_millis())
    };
    let base = name
        .and_then(|n| n.rsplit(['/', '\\']).next())
        .map(|n| {
            n.chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || "._-".contains(c) {
                        c
                    } else {
                        '_'
                    }
                })
                .collect::<String>()
        })
        .map(|n| n.trim_start_matches('.').to_string())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(stamp);
    let stem = base
        .strip_suffix(".png")
        .or_else(|| base.strip_suffix(".jpeg"))
        .or_else(|| base.strip_suffix(".jpg"))
        .unwrap_or(&base);
    format!("{stem}.png")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_stay_inside_the_directory() {
        assert_eq!(file_name(Some("../../etc/passwd")), "passwd.png");
        assert_eq!(file_name(Some("a b.png")), "a_b.png");
        assert!(file_name(Some("..")).starts_with("page-"));
        assert!(file_name(Some("/")).starts_with("page-"));
        assert!(file_name(None).starts_with("page-"));
        assert_eq!(file_name(Some(".hidden.jpeg")), "hidden.png");
    }

    #[test]
    fn caps_size_and_count() {
        let dir = tempfile::tempdir().unwrap();
        let store = ScreenshotStore::new(dir.path().join("shots"), 10, 3);
        assert!(matches!(
            store.save(Some("big"), &[0u8; 11]),
            Err(ScreenshotError::TooLarge { size: 11, max: 10 })
        ));
        for i in 0..5 {
            store.save(Some(&format!("s{i}")), b"png").unwrap();
            std::thread::sleep(std::time::Duration::from_millis(15));
        }
        let mut left: Vec<String> = std::fs::read_dir(store.dir())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left, ["s2.png", "s3.png", "s4.png"]);
    }
}
