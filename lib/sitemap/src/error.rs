//! Typed sitemap-load errors, whether a retry can help, and their mapping
//! to the job error kinds.

use oxwright_jobs::{ErrorKind, JobError};
use oxwright_policy::PolicyError;

use crate::parse::ParseError;

/// Why a sitemap load, or one document of it, failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SitemapError {
    /// The target is not a domain or an http(s) URL.
    #[error("invalid target {0:?}")]
    InvalidInput(String),
    /// The URL policy refused a URL (the target, a redirect hop or a child sitemap).
    #[error("{url}: refused by the URL policy: {source}")]
    Policy {
        /// The refused URL.
        url: String,
        /// The policy's reason.
        source: PolicyError,
    },
    /// Discovery found no sitemap: robots.txt lists none that loads and
    /// `/sitemap.xml` is missing or not a sitemap.
    #[error("no sitemap found for {domain} (tried {})", tried.join(", "))]
    NotFound {
        /// The domain searched.
        domain: String,
        /// The sitemap URLs tried.
        tried: Vec<String>,
    },
    /// The document is larger than the cap (decompressed bytes count).
    #[error("{url}: document exceeds {limit} bytes")]
    TooLarge {
        /// The document URL.
        url: String,
        /// The cap in bytes.
        limit: usize,
    },
    /// No complete response arrived in time.
    #[error("{url}: no complete response within {timeout_ms} ms")]
    Timeout {
        /// The document URL.
        url: String,
        /// The time allowed.
        timeout_ms: u64,
    },
    /// The server answered with an error status.
    #[error("{url}: HTTP {status}")]
    Http {
        /// The document URL (the last redirect hop).
        url: String,
        /// The status code.
        status: u16,
    },
    /// Too many redirects, or a redirect without a usable `Location`.
    #[error("{url}: {reason}")]
    Redirect {
        /// The URL that redirected last.
        url: String,
        /// What was wrong.
        reason: String,
    },
    /// A redirect led back to a document already read in this load.
    #[error("{url}: redirects to {target}, which this load already read")]
    Cycle {
        /// The URL requested.
        url: String,
        /// The document it leads back to.
        target: String,
    },
    /// The connection failed.
    #[error("{url}: connection failed: {message}")]
    Connection {
        /// The document URL.
        url: String,
        /// The transport's message.
        message: String,
    },
    /// The document declares entities in a DTD; they are refused, not expanded.
    #[error("{url}: DTD entity declarations are refused")]
    Dtd {
        /// The document URL.
        url: String,
    },
    /// The document is not a sitemap, index, feed or URL list, or is broken
    /// before anything was read.
    #[error("{url}: {message}")]
    Parse {
        /// The document URL.
        url: String,
        /// What the parser saw.
        message: String,
    },
}

impl SitemapError {
    /// Says whether another attempt may succeed: timeouts, connection
    /// failures and 408, 429 and 5xx answers are transient.
    pub fn is_retryable(&self) -> bool {
        match self {
            SitemapError::Timeout { .. } | SitemapError::Connection { .. } => true,
            SitemapError::Http { status, .. } => matches!(status, 408 | 429 | 500..=599),
            SitemapError::InvalidInput(_)
            | SitemapError::Policy { .. }
            | SitemapError::NotFound { .. }
            | SitemapError::TooLarge { .. }
            | SitemapError::Redirect { .. }
            | SitemapError::Cycle { .. }
            | SitemapError::Dtd { .. }
            | SitemapError::Parse { .. } => false,
        }
    }

    /// Returns the job error kind this error is reported as.
    pub fn kind(&self) -> ErrorKind {
        match self {
            SitemapError::InvalidInput(_) => ErrorKind::InvalidInput,
            SitemapError::Policy {
                source: PolicyError::Resolve { .. },
                ..
            } => ErrorKind::Dns,
            SitemapError::Policy { .. } => ErrorKind::PolicyDenied,
            SitemapError::NotFound { .. } | SitemapError::Http { .. } => ErrorKind::HttpStatus,
            SitemapError::Timeout { .. } => ErrorKind::Timeout,
            SitemapError::Connection { .. } => ErrorKind::Connection,
            SitemapError::TooLarge { .. }
            | SitemapError::Redirect { .. }
            | SitemapError::Cycle { .. }
            | SitemapError::Dtd { .. }
            | SitemapError::Parse { .. } => ErrorKind::Extraction,
        }
    }

    /// Returns the URL the error is about, if any.
    pub fn url(&self) -> Option<&str> {
        match self {
            SitemapError::InvalidInput(_) | SitemapError::NotFound { .. } => None,
            SitemapError::Policy { url, .. }
            | SitemapError::TooLarge { url, .. }
            | SitemapError::Timeout { url, .. }
            | SitemapError::Http { url, .. }
            | SitemapError::Redirect { url, .. }
            | SitemapError::Cycle { url, .. }
            | SitemapError::Connection { url, .. }
            | SitemapError::Dtd { url }
            | SitemapError::Parse { url, .. } => Some(url),
        }
    }

    /// Builds the error for a document whose parse failed.
    pub(crate) fn from_parse(url: &str, err: &ParseError) -> Self {
        let url = url.to_string();
        match err {
            ParseError::TooLarge { limit } => SitemapError::TooLarge { url, limit: *limit },
            ParseError::Dtd => SitemapError::Dtd { url },
            other => SitemapError::Parse {
                url,
                message: other.to_string(),
            },
        }
    }
}

impl From<SitemapError> for JobError {
    fn from(err: SitemapError) -> Self {
        let mut job = JobError::new(err.kind(), err.to_string());
        match &err {
            SitemapError::Http { status, .. } => job = job.with_status(*status),
            // The discovery ended on missing documents: report it as a 404.
            SitemapError::NotFound { .. } => job = job.with_status(404),
            _ => {}
        }
        if let Some(url) = err.url() {
            job = job.with_url(url);
        }
        job
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retryable_and_kinds_match_the_job_rules() {
        let http = |status| SitemapError::Http {
            url: "https://a.example/s.xml".into(),
            status,
        };
        for err in [
            http(503),
            http(429),
            SitemapError::Timeout {
                url: "u".into(),
                timeout_ms: 3000,
            },
        ] {
            assert!(err.is_retryable());
            let job = JobError::from(err.clone());
            assert_eq!(job.is_retryable(), err.is_retryable(), "{err}");
        }
        assert!(!http(404).is_retryable());
        let job = JobError::from(SitemapError::NotFound {
            domain: "a.example".into(),
            tried: vec!["https://a.example/sitemap.xml".into()],
        });
        assert_eq!((job.kind, job.status), (ErrorKind::HttpStatus, Some(404)));
        assert!(!job.is_retryable());
        let job = JobError::from(SitemapError::Dtd { url: "u".into() });
        assert_eq!((job.kind, job.url.as_deref()), (ErrorKind::Extraction, Some("u")));
    }
}
