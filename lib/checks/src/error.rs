//! Why a check file cannot be used: the file, the key and the line at fault.

use std::fmt;
use std::path::PathBuf;

/// A check file that cannot be read or used as written.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// The file (or its `steps_file`, or the directory) could not be read.
    #[error("{}: {source}", path.display())]
    Read {
        /// The path that failed.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file's text is not a valid check.
    #[error("{0}")]
    Invalid(Invalid),
    /// Two check files in one directory tree carry the same name.
    #[error("{}: check name `{name}` is taken by {}", path.display(), first.display())]
    Duplicate {
        /// The name both files carry.
        name: String,
        /// The file read first.
        first: PathBuf,
        /// The file refused.
        path: PathBuf,
    },
}

impl CheckError {
    /// Returns the invalid-file detail, when that is the failure.
    pub fn invalid(&self) -> Option<&Invalid> {
        match self {
            CheckError::Invalid(i) => Some(i),
            _ => None,
        }
    }
}

/// Where a check file is wrong and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid {
    /// The check file.
    pub path: PathBuf,
    /// The key at fault (`alert.after` for a key of a table), when one is.
    pub key: Option<String>,
    /// The 1-based line of the key or its value, when known.
    pub line: Option<usize>,
    /// What is wrong (never a secret: check files hold placeholders only).
    pub message: String,
}

impl fmt::Display for Invalid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.path.display())?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        if let Some(key) = &self.key {
            write!(f, ": `{key}`")?;
        }
        write!(f, ": {}", self.message)
    }
}

/// Returns the 1-based line holding byte `offset` of `text`.
pub(crate) fn line_of(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    text.as_bytes()[..end].iter().filter(|b| **b == b'\n').count() + 1
}

/// Returns the dotted key written on the line holding byte `offset`
/// (`alert.after` under an `[alert]` header), when that line is a
/// `key = value` line.
pub(crate) fn key_at(text: &str, offset: usize) -> Option<String> {
    let line_no = line_of(text, offset);
    let line = text.lines().nth(line_no - 1)?;
    let (key, _) = line.split_once('=')?;
    let key = key.trim().trim_matches('"');
    if key.is_empty() || key.starts_with('#') || key.starts_with('[') {
        return None;
    }
    // The nearest table header above the line, if any.
    let table = text
        .lines()
        .take(line_no - 1)
        .filter_map(|l| {
            let l = l.trim();
            l.strip_prefix('[')
                .and_then(|r| r.split_once(']'))
                .map(|(name, _)| name.trim().to_string())
        })
        .last();
    Some(match table {
        Some(t) if !t.is_empty() => format!("{t}.{key}"),
        _ => key.to_string(),
    })
}
