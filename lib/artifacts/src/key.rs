//! Artefact key rules shared by every store, so that a key accepted in
//! memory is accepted on disk and in S3 alike.

use crate::ArtifactError;

/// Longest key accepted, in bytes (S3's limit).
pub const MAX_KEY_BYTES: usize = 1024;

/// Prefix of the temporary files `FsStore` writes before renaming; keys may
/// not use it for a path segment.
pub(crate) const TEMP_PREFIX: &str = ".oxwright-tmp-";

/// Checks that `key` can name an artefact: a non-empty relative path of
/// `/`-separated segments, none of them empty, `.` or `..`, without
/// backslashes, NUL or other control characters, at most
/// [`MAX_KEY_BYTES`] long.
pub fn validate_key(key: &str) -> Result<(), ArtifactError> {
    if key.is_empty() {
        return Err(ArtifactError::invalid_key(key, "key is empty"));
    }
    check_common(key)?;
    for segment in key.split('/') {
        check_segment(key, segment)?;
    }
    Ok(())
}

/// Checks that `prefix` can select keys in `list`: empty, or a key prefix
/// that may end with `/` or mid-segment but never climbs out of the store.
pub fn validate_prefix(prefix: &str) -> Result<(), ArtifactError> {
    if prefix.is_empty() {
        return Ok(());
    }
    check_common(prefix)?;
    let mut segments: Vec<&str> = prefix.split('/').collect();
    // The last segment is a partial name (or empty after a trailing slash).
    let last = segments.pop().unwrap_or_default();
    for segment in segments {
        check_segment(prefix, segment)?;
    }
    if last == ".." {
        return Err(ArtifactError::invalid_key(prefix, "`..` segment"));
    }
    Ok(())
}

fn check_common(key: &str) -> Result<(), ArtifactError> {
    if key.len() > MAX_KEY_BYTES {
        return Err(ArtifactError::invalid_key(
            key,
            format!("longer than {MAX_KEY_BYTES} bytes"),
        ));
    }
    if key.starts_with('/') {
        return Err(ArtifactError::invalid_key(key, "absolute path"));
    }
    if key.contains('\\') {
        return Err(ArtifactError::invalid_key(key, "backslash"));
    }
    if key.chars().any(char::is_control) {
        return Err(ArtifactError::invalid_key(key, "control character"));
    }
    Ok(())
}

fn check_segment(key: &str, segment: &str) -> Result<(), ArtifactError> {
    match segment {
        "" => Err(ArtifactError::invalid_key(key, "empty path segment")),
        "." | ".." => Err(ArtifactError::invalid_key(key, format!("`{segment}` segment"))),
        s if s.starts_with(TEMP_PREFIX) => Err(ArtifactError::invalid_key(
            key,
            format!("segment uses the reserved prefix {TEMP_PREFIX}"),
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_layout_keys() {
        for key in [
            "jobs/fetch/0190f0f0-0000-7000-8000-000000000000/result.json",
            "batches/b1/manifest.jsonl",
            "a",
            "a/.hidden",
            "sessions/s/errors/step-1-2026.json",
        ] {
            validate_key(key).unwrap();
        }
    }

    #[test]
    fn refuses_bad_keys() {
        for key in [
            "",
            "/abs",
            "a/../b",
            "..",
            "a/./b",
            "a//b",
            "a/",
            "a\\b",
            "a\0b",
            "a/.oxwright-tmp-1",
        ] {
            let err = validate_key(key).unwrap_err();
            assert!(matches!(err, ArtifactError::InvalidKey { .. }), "{key:?}");
        }
        assert!(validate_key(&"x".repeat(MAX_KEY_BYTES + 1)).is_err());
    }

    #[test]
    fn prefixes() {
        for prefix in ["", "jobs/", "jobs/fe", "a/b/"] {
            validate_prefix(prefix).unwrap();
        }
        for prefix in ["/", "../", "a/../", "a//", "..", "a\\"] {
            assert!(validate_prefix(prefix).is_err(), "{prefix:?}");
        }
    }
}
