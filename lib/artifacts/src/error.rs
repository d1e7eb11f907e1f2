//! The typed error every artefact store returns.

use std::io;

/// Why an artefact operation failed.
#[derive(Debug, thiserror::Error)]
pub enum ArtifactError {
    /// No artefact is stored under the key.
    #[error("artifact not found: {key}")]
    NotFound {
        /// The key that was asked for.
        key: String,
    },
    /// A conditional write found another version than it expected: the
    /// artefact changed (or appeared, or went) since it was read.
    #[error("artifact {key} changed since it was read: the conditional write was refused")]
    Conflict {
        /// The artefact's key.
        key: String,
    },
    /// The key cannot name an artefact (see [`crate::validate_key`]).

    #[error("invalid artifact key {key:?}: {reason}")]
    InvalidKey {
        /// The refused key.
        key: String,
        /// Why it was refused.
        reason: String,
    },
    /// Local I/O failed.
    #[error("i/o error on artifact {key}: {source}")]
    Io {
        /// The key being read or written.
        key: String,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// A remote backend (S3, …) refused or failed the request.
    #[error("storage backend error on artifact {key}: {message}")]
    Backend {
        /// The key being read or written.
        key: String,
        /// What the backend said.
        message: String,
        /// Whether the backend failure is transient (throttling, 5xx, timeouts).
        retryable: bool,
        /// The underlying error, when there is one.
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
}

impl ArtifactError {
    /// Creates an [`ArtifactError::InvalidKey`].
    pub fn invalid_key(key: impl Into<String>, reason: impl Into<String>) -> Self {
        Self::InvalidKey {
            key: key.into(),
            reason: reason.into(),
        }
    }

    /// Creates an [`ArtifactError::Io`], or [`ArtifactError::NotFound`] when
    /// the I/O error says the file is missing.
    pub fn from_io(key: impl Into<String>, source: io::Error) -> Self {
        let key = key.into();
        match source.kind() {
            io::ErrorKind::NotFound | io::ErrorKind::IsADirectory | io::ErrorKind::NotADirectory => {
                Self::NotFound { key }
            }
            _ => Self::Io { key, source },
        }
    }

    /// Returns the key the failed operation was about.
    pub fn key(&self) -> &str {
        match self {
            Self::NotFound { key }
            | Self::Conflict { key }
            | Self::InvalidKey { key, .. }
            | Self::Io { key, .. }
            | Self::Backend { key, .. } => key,
        }
    }

    /// Says whether repeating the operation may succeed: transient I/O
    /// conditions and backend failures flagged retryable are; missing
    /// artefacts and bad keys are not.
    pub fn is_retryable(&self) -> bool {
        match self {
            // A conflict is settled by reading again, not by repeating the write.
            Self::NotFound { .. } | Self::Conflict { .. } | Self::InvalidKey { .. } => false,
            Self::Io { source, .. } => matches!(
                source.kind(),
                io::ErrorKind::Interrupted
                    | io::ErrorKind::TimedOut
                    | io::ErrorKind::WouldBlock
                    | io::ErrorKind::ResourceBusy
                    | io::ErrorKind::StorageFull
                    | io::ErrorKind::QuotaExceeded
            ),
            Self::Backend { retryable, .. } => *retryable,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_file_maps_to_not_found() {
        let err = ArtifactError::from_io("a/b", io::Error::from(io::ErrorKind::NotFound));
        assert!(matches!(err, ArtifactError::NotFound { ref key } if key == "a/b"));
        assert!(!err.is_retryable());
    }

    #[test]
    fn retryable_kinds() {
        let io_err = |kind| ArtifactError::from_io("k", io::Error::from(kind));
        assert!(io_err(io::ErrorKind::TimedOut).is_retryable());
        assert!(!io_err(io::ErrorKind::PermissionDenied).is_retryable());
        let backend = ArtifactError::Backend {
            key: "k".into(),
            message: "slow down".into(),
            retryable: true,
            source: None,
        };
        assert!(backend.is_retryable());
        assert_eq!(backend.key(), "k");
    }
}
