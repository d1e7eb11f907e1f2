//! Typed job errors: what broke, whether a retry can help.

use std::fmt;

use serde::{Deserialize, Serialize};

/// How a job failed. The snake_case name appears in results, manifests,
/// summaries and dead-letter headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The input was not a usable URL or spec.
    InvalidInput,
    /// The URL policy refused a URL (input, redirect or sub-request).
    PolicyDenied,
    /// The host name does not resolve.
    Dns,
    /// The connection failed or was reset.
    Connection,
    /// The page did not reach the requested state in time.
    Timeout,
    /// The `wait_for` selector never appeared.
    WaitForTimeout,
    /// The main document answered with an HTTP error status.
    HttpStatus,
    /// The main document is not HTML.
    NonHtml,
    /// The renderer or the browser crashed, or its connection died.
    BrowserCrashed,
    /// No browser could be started or reached.
    BrowserUnavailable,
    /// The browser cannot start as configured here (no executable, no
    /// display for a headed job): the setup has to change, not the timing.
    BrowserMisconfigured,
    /// Reading the page's content failed.
    Extraction,
    /// The model's answers to an `extract` schema never fitted it (or
    /// never parsed) within their calls; the last answer and its errors
    /// are in the error.
    ExtractionFailed,
    /// The job was cancelled by shutdown.
    Cancelled,
    /// The job's deadline passed before it ran; it was not run.
    Expired,
    /// A workflow step did not complete within its attempts.
    StepFailed,
    /// A workflow resumed on another worker met a step that may already
    /// have acted (a submit with no visible outcome, or a step marked
    /// `once:`): it was not run again, so nothing happened twice.
    ResumeUncertain,
    /// Not a failure: a workflow reached its invocation's deadline (AWS
    /// Lambda) and the rest of its run was handed to a fresh invocation,
    /// which continues from the run's checkpoint. Never in a report.
    HandedOver,
    /// The LLM endpoint failed or kept answering unusably.
    Llm,
    /// The artefact store failed transiently (a refused connection, a
    /// timeout, throttling, a 5xx); another attempt may succeed. Permanent
    /// store failures (a refused key) are [`ErrorKind::Internal`].
    Storage,
    /// The job was submitted to another artefact store than the one the
    /// worker writes to: run here, its results would be lost to the
    /// submitter. The deployment's configuration has to change.
    StoreMismatch,
    /// The page used more memory than one job may (JavaScript and DOM
    /// heap, or DOM nodes): it was ended, the browser's other jobs go on.
    ResourceLimit,
    /// An unexpected failure inside oxwright.
    Internal,
}

impl ErrorKind {
    /// Returns the snake_case name of this kind.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::InvalidInput => "invalid_input",
            ErrorKind::PolicyDenied => "policy_denied",
            ErrorKind::Dns => "dns",
            ErrorKind::Connection => "connection",
            ErrorKind::Timeout => "timeout",
            ErrorKind::WaitForTimeout => "wait_for_timeout",
            ErrorKind::HttpStatus => "http_status",
            ErrorKind::NonHtml => "non_html",
            ErrorKind::BrowserCrashed => "browser_crashed",
            ErrorKind::BrowserUnavailable => "browser_unavailable",
            ErrorKind::BrowserMisconfigured => "browser_misconfigured",
            ErrorKind::Extraction => "extraction",
            ErrorKind::ExtractionFailed => "extraction_failed",
            ErrorKind::Cancelled => "cancelled",
            ErrorKind::Expired => "expired",
            ErrorKind::StoreMismatch => "store_mismatch",
            ErrorKind::ResourceLimit => "resource_limit",
            ErrorKind::StepFailed => "step_failed",
            ErrorKind::ResumeUncertain => "resume_uncertain",
            ErrorKind::HandedOver => "handed_over",
            ErrorKind::Llm => "llm",
            ErrorKind::Storage => "storage",
            ErrorKind::Internal => "internal",
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A typed job failure with enough detail to act on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub struct JobError {
    /// What kind of failure this is.
    pub kind: ErrorKind,
    /// A human-readable explanation naming the cause.
    pub message: String,
    /// How many attempts were made before giving up.
    #[serde(default)]
    pub attempts: u32,
    /// The HTTP status of the main document, for [`ErrorKind::HttpStatus`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// The main document's content type, for [`ErrorKind::NonHtml`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
    /// The URL that failed (may be a redirect target).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// How long the server asked to be left alone, in seconds: its
    /// `Retry-After` with a 429 or 503 (capped at [`MAX_RETRY_AFTER_S`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_s: Option<u64>,
}

/// The longest `Retry-After` taken from a server: one hour.
pub const MAX_RETRY_AFTER_S: u64 = 3_600;

/// Reads a `Retry-After` header value, delay-seconds or an HTTP date
/// (RFC 9110 section 10.2.3), as seconds from `now`, capped at
/// [`MAX_RETRY_AFTER_S`]; `None` when it is neither.
pub fn parse_retry_after(value: &str, now: chrono::DateTime<chrono::Utc>) -> Option<u64> {
    let value = value.trim();
    let secs = match value.parse::<u64>() {
        Ok(secs) => secs,
        Err(_) => {
            let at = chrono::DateTime::parse_from_rfc2822(value).ok()?;
            u64::try_from((at.with_timezone(&chrono::Utc) - now).num_seconds()).unwrap_or(0)
        }
    };
    Some(secs.min(MAX_RETRY_AFTER_S))
}

impl JobError {
    /// Creates an error of `kind` with `message`, attempt count 1.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            attempts: 1,
            status: None,
            content_type: None,
            url: None,
            retry_after_s: None,
        }
    }

    /// Sets the HTTP status.
    pub fn with_status(mut self, status: u16) -> Self {
        self.status = Some(status);
        self
    }

    /// Sets how long the server asked to be left alone, in seconds.
    pub fn with_retry_after(mut self, secs: u64) -> Self {
        self.retry_after_s = Some(secs);
        self
    }

    /// Sets the content type.
    pub fn with_content_type(mut self, content_type: impl Into<String>) -> Self {
        self.content_type = Some(content_type.into());
        self
    }

    /// Sets the URL.
    pub fn with_url(mut self, url: impl Into<String>) -> Self {
        self.url = Some(url.into());
        self
    }

    /// Says whether another attempt may succeed: page-load timeouts,
    /// connection errors, 5xx, 408, 429, browser crashes and transient
    /// artefact-store failures are transient. A `wait_for` selector that
    /// never appeared is not: the page loaded, and a second attempt would
    /// wait as long for the same page.
    pub fn is_retryable(&self) -> bool {
        self.not_retried_because().is_none()
    }

    /// Returns why this failure is not worth another attempt, in words for
    /// the person reading the error, or `None` when it is transient.
    pub fn not_retried_because(&self) -> Option<&'static str> {
        match self.kind {
            ErrorKind::Timeout
            | ErrorKind::Connection
            | ErrorKind::BrowserCrashed
            | ErrorKind::BrowserUnavailable
            | ErrorKind::Llm
            | ErrorKind::HandedOver
            | ErrorKind::Storage => None,
            ErrorKind::HttpStatus => match self.status {
                Some(408 | 429 | 500..=599) => None,
                _ => Some("the server gave a definite answer"),
            },
            ErrorKind::WaitForTimeout => {
                Some("the page loaded but the selector never appeared; another attempt would wait as long")
            }
            ErrorKind::InvalidInput => Some("the input cannot work as given"),
            ErrorKind::PolicyDenied => Some("the URL policy refuses it every time"),
            ErrorKind::Dns => Some("the host name does not resolve"),
            ErrorKind::NonHtml => Some("the document is not HTML"),
            ErrorKind::BrowserMisconfigured => Some("the browser setup has to change first"),
            ErrorKind::Extraction => Some("the page's content cannot be read"),
            ErrorKind::ExtractionFailed => Some("the model's answers did not fit the schema in their calls"),
            ErrorKind::Cancelled => Some("the job was cancelled"),
            ErrorKind::Expired => Some("the job's deadline has passed"),
            ErrorKind::StoreMismatch => {
                Some("this worker writes to another artefact store than the submitter")
            }
            ErrorKind::ResourceLimit => Some("the page needs more than one job may use"),
            ErrorKind::StepFailed => Some("the step already used its attempts"),
            ErrorKind::ResumeUncertain => {
                Some("the step may already have acted; running it again could do it twice")
            }
            ErrorKind::Internal => Some("an internal error does not go away on its own"),
        }
    }

    /// Appends why the failure was not retried to the message, once.
    pub fn explain_no_retry(mut self) -> Self {
        if let Some(why) = self.not_retried_because()
            && !self.message.contains("(not retried: ")
        {
            self.message = format!("{} (not retried: {why})", self.message);
        }
        self
    }
}

impl fmt::Display for JobError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind, self.message)?;
        if self.attempts > 1 {
            write!(f, " (after {} attempts)", self.attempts)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retryable_statuses() {
        let now = chrono::DateTime::parse_from_rfc3339("2026-12-02T10:00:00Z")
            .unwrap()
            .with_timezone(&chrono::Utc);
        assert_eq!(parse_retry_after(" 120 ", now), Some(120));
        assert_eq!(parse_retry_after("Wed, 02 Dec 2026 10:01:30 GMT", now), Some(90));
        assert_eq!(parse_retry_after("Wed, 02 Dec 2026 09:00:00 GMT", now), Some(0));
        assert_eq!(parse_retry_after("86400", now), Some(MAX_RETRY_AFTER_S));
        assert_eq!(parse_retry_after("soon", now), None);
        let status = |s| JobError::new(ErrorKind::HttpStatus, "x").with_status(s);
        assert!(status(503).is_retryable());
        assert!(status(429).is_retryable());
        assert!(status(408).is_retryable());
        assert!(!status(404).is_retryable());
        assert!(!JobError::new(ErrorKind::NonHtml, "pdf").is_retryable());
        assert!(JobError::new(ErrorKind::Timeout, "slow").is_retryable());
        assert!(JobError::new(ErrorKind::Storage, "s3 down").is_retryable());
        assert!(!JobError::new(ErrorKind::Internal, "bug").is_retryable());
    }

    #[test]
    fn storage_kind_name_round_trips() {
        assert_eq!(ErrorKind::Storage.as_str(), "storage");
        let kind: ErrorKind = serde_json::from_str("\"storage\"").unwrap();
        assert_eq!(kind, ErrorKind::Storage);
    }

    #[test]
    fn failures_that_cannot_change_are_not_retried() {
        for kind in [
            ErrorKind::WaitForTimeout,
            ErrorKind::BrowserMisconfigured,
            ErrorKind::InvalidInput,
        ] {
            assert!(!JobError::new(kind, "x").is_retryable(), "{kind}");
        }
        assert!(JobError::new(ErrorKind::BrowserUnavailable, "x").is_retryable());
    }

    #[test]
    fn the_message_says_why_it_was_not_retried() {
        let e = JobError::new(
            ErrorKind::WaitForTimeout,
            "selector \"#x\" did not appear within 3000 ms",
        )
        .explain_no_retry()
        .explain_no_retry();
        assert_eq!(e.message.matches("not retried").count(), 1, "{e}");
        assert!(e.message.contains("(not retried: the page loaded"), "{e}");
        let t = JobError::new(ErrorKind::Timeout, "slow").explain_no_retry();
        assert_eq!(t.message, "slow");
    }

    #[test]
    fn display_names_attempts() {
        let mut e = JobError::new(ErrorKind::HttpStatus, "HTTP 503").with_status(503);
        e.attempts = 3;
        assert_eq!(e.to_string(), "http_status: HTTP 503 (after 3 attempts)");
    }
}
