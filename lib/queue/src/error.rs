//! The typed error every queue operation returns.

/// Why a queue operation failed.
#[derive(Debug, thiserror::Error)]
pub enum QueueError {
    /// The queue was closed for shutdown.
    #[error("queue is closed")]
    Closed,
    /// A job or report could not be serialised.
    #[error("cannot encode message: {0}")]
    Encode(#[source] serde_json::Error),
    /// A job is larger than consumers accept.
    #[error("message of {size} bytes exceeds the {max}-byte limit")]
    TooLarge {
        /// Serialised size.
        size: usize,
        /// The configured limit.
        max: usize,
    },
    /// An argument is out of range (e.g. prefetch 0).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// A report on the results queue could not be decoded.
    #[error("malformed report: {0}")]
    MalformedReport(String),
    /// The broker refused or failed the request (connection lost,
    /// publish not confirmed, channel closed, …).
    #[error("broker error: {message}")]
    Broker {
        /// What went wrong.
        message: String,
        /// Whether reconnecting and repeating may succeed.
        retryable: bool,
        /// The underlying error, when there is one.
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
}

impl QueueError {
    /// Says whether repeating the operation may succeed: broker hiccups
    /// flagged retryable are; shutdown, bad messages and bad arguments are
    /// not.
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Broker { retryable, .. } => *retryable,
            Self::Closed
            | Self::Encode(_)
            | Self::TooLarge { .. }
            | Self::InvalidArgument(_)
            | Self::MalformedReport(_) => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retryable() {
        let broker = |retryable| QueueError::Broker {
            message: "connection reset".into(),
            retryable,
            source: None,
        };
        assert!(broker(true).is_retryable());
        assert!(!broker(false).is_retryable());
        assert!(!QueueError::Closed.is_retryable());
        assert!(!QueueError::TooLarge { size: 2, max: 1 }.is_retryable());
    }
}
