//! Typed browser errors, mapped onto job error kinds.

use oxwright_jobs::{ErrorKind, JobError};
use oxwright_policy::PolicyError;

/// A failure of the browser layer.
#[derive(Debug, Clone, thiserror::Error)]
pub enum BrowserError {
    /// Chromium could not be started or reached.
    #[error("browser unavailable: {0}")]
    Unavailable(String),
    /// Chromium cannot start as configured here (no executable, no display
    /// for headed mode): the setup has to change before a retry can help.
    #[error("browser cannot start: {0}")]
    Misconfigured(String),
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
    #[error("HTTP {status} from {url}{}", status_hint(*.status))]
    HttpStatus {
        /// The status.
        status: u16,
        /// The URL that answered it.
        url: String,
        /// Its `Retry-After`, in seconds, when it gave one.
        retry_after_s: Option<u64>,
    },
    /// The main document is not HTML.
    #[error("{url} is {content_type}, not HTML")]
    NonHtml {
        /// The document's content type.
        content_type: String,
        /// Its URL.
        url: String,
    },
    /// The main document is sent as a download (`Content-Disposition:
    /// attachment`), which Chromium saves instead of rendering.
    #[error("{url} is sent as a download ({disposition}; {content_type}), not a page to read")]
    Download {
        /// The `Content-Disposition` header.
        disposition: String,
        /// The document's content type.
        content_type: String,
        /// Its URL.
        url: String,
    },
    /// Navigation failed at the network level (net::ERR_…).
    #[error("navigation to {url} failed: {net_error}{}", net_hint(.net_error))]
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
            BrowserError::Misconfigured(_) => ErrorKind::BrowserMisconfigured,
            BrowserError::Crashed(_) => ErrorKind::BrowserCrashed,
            BrowserError::Timeout { .. } => ErrorKind::Timeout,
            BrowserError::WaitFor { .. } => ErrorKind::WaitForTimeout,
            BrowserError::Policy { source, .. } => match source {
                PolicyError::Resolve { .. } => ErrorKind::Dns,
                _ => ErrorKind::PolicyDenied,
            },
            BrowserError::HttpStatus { .. } => ErrorKind::HttpStatus,
            BrowserError::NonHtml { .. } | BrowserError::Download { .. } => ErrorKind::NonHtml,
            BrowserError::Net { net_error, .. } => {
                if net_error.contains("NAME_NOT_RESOLVED") || net_error.contains("NAME_RESOLUTION") {
                    ErrorKind::Dns
                } else if net_error.contains("TIMED_OUT") {
                    ErrorKind::Timeout
                } else if is_permanent_net_error(net_error) {
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
            BrowserError::HttpStatus {
                status,
                url,
                retry_after_s,
            } => {
                out = out.with_status(*status).with_url(url.clone());
                if let Some(secs) = retry_after_s {
                    out = out.with_retry_after(*secs);
                }
            }
            BrowserError::NonHtml { content_type, url }
            | BrowserError::Download {
                content_type, url, ..
            } => {
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

/// Chromium's net errors about the URL itself, which no second attempt
/// changes (an unsafe port is refused before any connection is made).
const PERMANENT_NET_ERRORS: &[&str] = &[
    "ERR_INVALID_URL",
    "ERR_UNKNOWN_URL_SCHEME",
    "ERR_DISALLOWED_URL_SCHEME",
    "ERR_UNSAFE_PORT",
    // The job's upstream proxy refused its credentials.
    "ERR_PROXY_AUTH_UNSUPPORTED",
];

fn is_permanent_net_error(net_error: &str) -> bool {
    PERMANENT_NET_ERRORS.iter().any(|e| net_error.contains(e))
}

/// Says what an HTTP status means for a page, where it is not plain.
fn status_hint(status: u16) -> &'static str {
    match status {
        204 | 205 => " (no content: the server sent no document to read)",
        _ => "",
    }
}

/// Says what a person can do about a net error, where there is something to say.
fn net_hint(net_error: &str) -> &'static str {
    if net_error.contains("ERR_UNSAFE_PORT") {
        " (Chromium never connects to this port, which belongs to another protocol; serve the page on another port)"
    } else if net_error.contains("ERR_PROXY_AUTH_UNSUPPORTED") {
        " (the job's proxy refused its user and password: check the `proxy` URL's credentials)"
    } else {
        ""
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

#[cfg(test)]
mod tests {
    use super::*;

    fn net(e: &str) -> JobError {
        BrowserError::Net {
            net_error: e.into(),
            url: "http://127.0.0.1:6000/".into(),
        }
        .into()
    }

    #[test]
    fn an_unsafe_port_is_not_retried_and_says_why() {
        let err = net("net::ERR_UNSAFE_PORT").explain_no_retry();
        assert_eq!(err.kind, ErrorKind::InvalidInput);
        assert!(!err.is_retryable());
        assert!(err.message.contains("another port"), "{err}");
        assert!(err.message.contains("not retried"), "{err}");
        assert!(net("net::ERR_CONNECTION_REFUSED").is_retryable());
    }

    #[test]
    fn a_missing_display_is_not_retried() {
        let err = JobError::from(BrowserError::Misconfigured("no display".into()));
        assert_eq!(err.kind, ErrorKind::BrowserMisconfigured);
        assert!(!err.is_retryable());
        assert!(!BrowserError::Misconfigured("x".into()).is_fatal_for_browser());
    }
}
