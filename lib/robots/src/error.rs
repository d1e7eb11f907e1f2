//! The typed errors of the robots crate and the job error kinds they report as.

use oxwright_jobs::ErrorKind;

/// Why the rules for a URL cannot be looked up.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RobotsError {
    /// The URL is not http(s) with a host, so it has no robots.txt.
    #[error("{url}: not an http(s) URL with a host, so it has no robots.txt")]
    InvalidUrl {
        /// The URL, control characters escaped.
        url: String,
    },
    /// The configured user-agent token is not a product token.
    #[error("user-agent token \"{token}\" must be letters, '_' and '-' only")]
    InvalidToken {
        /// The token given, control characters escaped.
        token: String,
    },
}

impl RobotsError {
    /// The job error kind this error reports as.
    pub fn kind(&self) -> ErrorKind {
        ErrorKind::InvalidInput
    }

    /// Says whether asking again may succeed (never: the input is wrong).
    pub fn is_retryable(&self) -> bool {
        false
    }
}
