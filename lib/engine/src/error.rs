//! Typed engine errors: a kind a user (or an agent) can act on, whether a
//! retry can help, and the job error kind each maps onto.

use oxwright_jobs::{ErrorKind, JobError};

/// What went wrong, in terms a caller can act on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EngineErrorKind {
    /// No element matches the target.
    NotFound,
    /// More than one element matches where exactly one is needed.
    NotUnique,
    /// The element is there but cannot take the action (hidden, disabled,
    /// covered, not editable, no such option …).
    NotInteractable,
    /// The element or ref belongs to a document that is gone: take a new snapshot.
    Stale,
    /// An action, wait or call ran past its deadline.
    Timeout,
    /// A `wait_for` selector never appeared during a navigation.
    WaitForTimeout,
    /// The navigation failed at the network level.
    Navigation,
    /// The host name does not resolve.
    Dns,
    /// The main document answered with an HTTP error status.
    HttpStatus,
    /// The main document is not HTML.
    NonHtml,
    /// The URL policy refused the URL.
    PolicyDenied,
    /// The renderer or the browser crashed, or the connection died.
    Crashed,
    /// No browser could be started or reached.
    Unavailable,
    /// The browser cannot start as configured (no executable, no display
    /// for a headed page): retrying does not help, changing the setup does.
    Misconfigured,
    /// The engine's protocol failed for another reason.
    Protocol,
    /// A page script threw, or the page's content could not be read.
    Script,
    /// The input is not usable (a malformed locator, an unknown key …).
    InvalidInput,
    /// This engine cannot do that.
    Unsupported,
}

impl EngineErrorKind {
    /// Returns the snake_case name of this kind.
    pub fn as_str(self) -> &'static str {
        match self {
            EngineErrorKind::NotFound => "not_found",
            EngineErrorKind::NotUnique => "not_unique",
            EngineErrorKind::NotInteractable => "not_interactable",
            EngineErrorKind::Stale => "stale",
            EngineErrorKind::Timeout => "timeout",
            EngineErrorKind::WaitForTimeout => "wait_for_timeout",
            EngineErrorKind::Navigation => "navigation",
            EngineErrorKind::Dns => "dns",
            EngineErrorKind::HttpStatus => "http_status",
            EngineErrorKind::NonHtml => "non_html",
            EngineErrorKind::PolicyDenied => "policy_denied",
            EngineErrorKind::Crashed => "crashed",
            EngineErrorKind::Unavailable => "unavailable",
            EngineErrorKind::Misconfigured => "misconfigured",
            EngineErrorKind::Protocol => "protocol",
            EngineErrorKind::Script => "script",
            EngineErrorKind::InvalidInput => "invalid_input",
            EngineErrorKind::Unsupported => "unsupported",
        }
    }

    /// Returns the job error kind this engine error kind ends a job with.
    pub fn job_kind(self) -> ErrorKind {
        match self {
            EngineErrorKind::NotFound
            | EngineErrorKind::NotUnique
            | EngineErrorKind::NotInteractable
            | EngineErrorKind::Stale
            | EngineErrorKind::InvalidInput
            | EngineErrorKind::Unsupported => ErrorKind::InvalidInput,
            EngineErrorKind::Timeout => ErrorKind::Timeout,
            EngineErrorKind::WaitForTimeout => ErrorKind::WaitForTimeout,
            EngineErrorKind::Navigation => ErrorKind::Connection,
            EngineErrorKind::Dns => ErrorKind::Dns,
            EngineErrorKind::HttpStatus => ErrorKind::HttpStatus,
            EngineErrorKind::NonHtml => ErrorKind::NonHtml,
            EngineErrorKind::PolicyDenied => ErrorKind::PolicyDenied,
            // A protocol failure mid-job most often means the target went away.
            EngineErrorKind::Crashed | EngineErrorKind::Protocol => ErrorKind::BrowserCrashed,
            EngineErrorKind::Unavailable => ErrorKind::BrowserUnavailable,
            EngineErrorKind::Misconfigured => ErrorKind::BrowserMisconfigured,
            EngineErrorKind::Script => ErrorKind::Extraction,
        }
    }
}

impl std::fmt::Display for EngineErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A failure of an engine call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct EngineError {
    /// What went wrong.
    pub kind: EngineErrorKind,
    /// A message that says what happened and, where it can, what to do.
    pub message: String,
    /// The URL concerned (navigation errors).
    pub url: Option<String>,
    /// The HTTP status (`HttpStatus`).
    pub status: Option<u16>,
    /// The content type (`NonHtml`).
    pub content_type: Option<String>,
    /// How many elements matched (`NotUnique`, `NotFound`).
    pub count: Option<usize>,
    /// How long the server asked to be left alone, in seconds (its
    /// `Retry-After` with an error status).
    pub retry_after_s: Option<u64>,
}

impl EngineError {
    /// An error of `kind` with `message`.
    pub fn new(kind: EngineErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            url: None,
            status: None,
            content_type: None,
            count: None,
            retry_after_s: None,
        }
    }

    /// Sets the URL concerned.
    pub fn with_url(mut self, url: impl Into<String>) -> Self {
        self.url = Some(url.into());
        self
    }

    /// Sets the HTTP status.
    pub fn with_status(mut self, status: u16) -> Self {
        self.status = Some(status);
        self
    }

    /// Sets the content type.
    pub fn with_content_type(mut self, content_type: impl Into<String>) -> Self {
        self.content_type = Some(content_type.into());
        self
    }

    /// Sets the match count.
    pub fn with_count(mut self, count: usize) -> Self {
        self.count = Some(count);
        self
    }

    /// No element matched `what`.
    pub fn not_found(what: impl std::fmt::Display) -> Self {
        Self::new(
            EngineErrorKind::NotFound,
            format!("no element matches {what}; take a new snapshot and pick a target from it"),
        )
        .with_count(0)
    }

    /// `count` elements matched `what` where one is needed.
    pub fn not_unique(what: impl std::fmt::Display, count: usize) -> Self {
        Self::new(
            EngineErrorKind::NotUnique,
            format!("{what} matches {count} elements; use a snapshot ref or a more specific locator"),
        )
        .with_count(count)
    }

    /// The ref `r` is not in the current document's last snapshot.
    pub fn stale(r: &str) -> Self {
        Self::new(
            EngineErrorKind::Stale,
            format!(
                "ref {r} is not in the current page's last snapshot (the page changed); take a new snapshot"
            ),
        )
    }

    /// This engine cannot do `what`.
    pub fn unsupported(what: impl std::fmt::Display) -> Self {
        Self::new(
            EngineErrorKind::Unsupported,
            format!("{what} is not supported by this engine"),
        )
    }

    /// The URL policy refused `url` (a name that does not resolve is `Dns`).
    pub fn policy(url: &str, source: &oxwright_policy::PolicyError) -> Self {
        let kind = match source {
            oxwright_policy::PolicyError::Resolve { .. } => EngineErrorKind::Dns,
            _ => EngineErrorKind::PolicyDenied,
        };
        Self::new(kind, format!("{url}: {source}")).with_url(url)
    }

    /// Says whether trying the same call again later can succeed.
    pub fn is_retryable(&self) -> bool {
        match self.kind {
            EngineErrorKind::Timeout
            | EngineErrorKind::Navigation
            | EngineErrorKind::Crashed
            | EngineErrorKind::Unavailable
            | EngineErrorKind::Protocol => true,
            EngineErrorKind::HttpStatus => {
                matches!(self.status, Some(s) if s >= 500 || s == 408 || s == 429)
            }
            _ => false,
        }
    }

    /// Says whether the page (or its browser) is unusable after this error.
    pub fn is_fatal(&self) -> bool {
        matches!(
            self.kind,
            EngineErrorKind::Crashed | EngineErrorKind::Unavailable | EngineErrorKind::Misconfigured
        )
    }
}

impl From<EngineError> for JobError {
    fn from(err: EngineError) -> JobError {
        let mut out = JobError::new(err.kind.job_kind(), err.message);
        if let Some(status) = err.status {
            out = out.with_status(status);
        }
        if let Some(ct) = err.content_type {
            out = out.with_content_type(ct);
        }
        if let Some(url) = err.url {
            out = out.with_url(url);
        }
        if let Some(secs) = err.retry_after_s {
            out = out.with_retry_after(secs);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retryable_kinds() {
        assert!(EngineError::new(EngineErrorKind::Timeout, "t").is_retryable());
        assert!(!EngineError::not_found("x").is_retryable());
        let e = EngineError::new(EngineErrorKind::HttpStatus, "h");
        assert!(e.clone().with_status(503).is_retryable());
        assert!(e.clone().with_status(429).is_retryable());
        assert!(!e.with_status(404).is_retryable());
        assert!(!EngineError::new(EngineErrorKind::WaitForTimeout, "w").is_retryable());
        assert!(!EngineError::new(EngineErrorKind::Misconfigured, "m").is_retryable());
        assert_eq!(
            EngineErrorKind::Misconfigured.job_kind(),
            ErrorKind::BrowserMisconfigured
        );
    }

    #[test]
    fn maps_onto_job_errors() {
        let job = JobError::from(
            EngineError::new(EngineErrorKind::NonHtml, "pdf")
                .with_content_type("application/pdf")
                .with_url("http://a/"),
        );
        assert_eq!(job.kind, ErrorKind::NonHtml);
        assert_eq!(job.content_type.as_deref(), Some("application/pdf"));
        assert_eq!(job.url.as_deref(), Some("http://a/"));
        assert_eq!(EngineErrorKind::Crashed.job_kind(), ErrorKind::BrowserCrashed);
    }
}
