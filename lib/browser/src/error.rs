//! Typed browser errors, mapped onto job error kinds.

use oxwright_jobs::{ErrorKind, JobError};
use oxwright_policy::PolicyError;

/// A failure of the browser layer.
#[derive(Debug, Clone, thiserror::Error)]
pub enum BrowserError {
    /// Chromium could not be started or reached.
    #[error("browser unavailable: {0}")]
    Unavailable(String),
    /// The renderer crashed or the DevTools connection died.
    #[error("browser crashed: {0}")]
    Crashed(String),
    /// A DevTools call or a wait ran past its deadline.
    #[error("timed out after {ms} ms waiting for {what}")]
    Timeout {
        /// What was awaited.
        what: String,
        /// The deadline.
        ms: u64,
    },
    /// The `wait_for` selector did not appear in time.
    #[error("selector {selector:?} did not appear within {ms} ms")]
    WaitFor {
        /// The selector.
        selector: String,
        /// The deadline.
        ms: u64,
    },
    /// The URL policy refused a URL the page tried to load.
    #[error("{url}: {source}")]
    Policy {
        /// The refused URL.
        url: String,
        /// Why.
        source: PolicyError,
    },
    /// The main document answered with an HTTP error.
    #[error("HTTP {status} from {url}")]
    HttpStatus {
        /// The status.
        status: u16,
        /// The URL that answered it.
        url: String,
    },
    /// The main document is not HTML.
    #[error("{url} is {content_type}, not HTML")]
    NonHtml {
        /// The document's content type.
        content_type: String,
        /// Its URL.
        url: String,
    },
    /// Navigation failed at the network level (net::ERR_…).
    #[error("navigation to {url} failed: {net_error}")]
    Net {
        /// Chromium's error text.
        net_error: String,
        /// The URL.
        url: String,
    },
    /// A DevTools call failed for another reason.
    #[error("devtools call {call} failed: {message}")]
    Protocol {
        /// The method.
        call: String,
        /// The message.
        message: String,
    },
    /// Reading the page failed.
    #[error("extraction failed: {0}")]
    Extraction(String),
}

impl BrowserError {
    /// Returns the job error kind of this failure.
    pub fn kind(&self) -> ErrorKind {
        match self {
            BrowserError::Unavailable(_) => ErrorKind::BrowserUnavailable,
            BrowserError::Crashed(_) => ErrorKind::BrowserCrashed,
            BrowserError::Timeout { .. } => ErrorKind::Timeout,
            BrowserError::WaitFor { .. } => ErrorKind::WaitForTimeout,
            BrowserError::Policy { source, .. } => match source {
                PolicyError::Resolve { .. } => ErrorKind::Dns,
                _ => ErrorKind::PolicyDenied,
            },
            BrowserError::HttpStatus { .. } => ErrorKind::HttpStatus,
            BrowserError::NonHtml { .. } => ErrorKind::NonHtml,
            BrowserError::Net { net_error, .. } => {
                if net_error.contains("NAME_NOT_RESOLVED") || net_error.contains("NAME_RESOLUTION") {
                    ErrorKind::Dns
                } else if net_error.contains("TIMED_OUT") {
                    ErrorKind::Timeout
                } else if net_error.contains("INVALID_URL") || net_error.contains("UNKNOWN_URL_SCHEME") {
                    ErrorKind::InvalidInput
                } else {
                    ErrorKind::Connection
                }
            }
            // A protocol failure mid-job most often means the target went away.
            BrowserError::Protocol { .. } => ErrorKind::BrowserCrashed,
            BrowserError::Extraction(_) => ErrorKind::Extraction,
        }
    }

    /// Says whether this failure leaves the browser itself unusable.
    pub fn is_fatal_for_browser(&self) -> bool {
        matches!(self, BrowserError::Crashed(_) | BrowserError::Unavailable(_))
    }
}

impl From<BrowserError> for JobError {
    fn from(err: BrowserError) -> JobError {
        let mut out = JobError::new(err.kind(), err.to_string());
        match &err {
            BrowserError::HttpStatus { status, url } => {
                out = out.with_status(*status).with_url(url.clone());
            }
            BrowserError::NonHtml { content_type, url } => {
                out = out.with_content_type(content_type.clone()).with_url(url.clone());
            }
            BrowserError::Policy { url, .. } | BrowserError::Net { url, .. } => {
                out = out.with_url(url.clone());
            }
            _ => {}
        }
        out
    }
}

/// Runs `fut` with a deadline; a timeout becomes [`BrowserError::Timeout`].
pub(crate) async fn deadline<T>(
    what: &str,
    limit: std::time::Duration,
    fut: impl std::future::Future<Output = Result<T, BrowserError>>,
) -> Result<T, BrowserError> {
    match tokio::time::timeout(limit, fut).await {
        Ok(r) => r,
        Err(_) => Err(BrowserError::Timeout {
            what: what.to_string(),
            ms: limit.as_millis() as u64,
        }),
    }
}

/// Maps a chromiumoxide error from `call` onto a browser error.
pub(crate) fn cdp(call: &str, err: chromiumoxide::error::CdpError) -> BrowserError {
    use chromiumoxide::error::CdpError;
    match err {
        CdpError::Ws(_) | CdpError::ChannelSendError(_) | CdpError::NoResponse => {
            BrowserError::Crashed(format!("{call}: connection lost ({err})"))
        }
        CdpError::Timeout => BrowserError::Timeout {
            what: call.to_string(),
            ms: 0,
        },
        other => BrowserError::Protocol {
            call: call.to_string(),
            message: other.to_string(),
        },
    }
}
