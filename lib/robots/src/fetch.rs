//! The seam robots.txt is read through: one GET of `/robots.txt` that
//! follows redirects itself, and the answer or the typed reason there is
//! none. The scheduler gives the policy-judged client ([`crate::HttpRobotsFetcher`]);
//! tests give a fake.

use oxwright_jobs::ErrorKind;
use url::Url;

/// Most redirect hops followed to reach a robots.txt, as the RFC recommends;
/// a longer chain makes the file unavailable.
pub const MAX_ROBOTS_REDIRECTS: usize = 5;

/// What the server answered for robots.txt, after redirects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RobotsResponse {
    /// The final status.
    pub status: u16,
    /// The body of a 2xx answer (at most [`crate::MAX_ROBOTS_BYTES`] are
    /// read); empty for other statuses.
    pub body: Vec<u8>,
    /// The `Cache-Control` header of the answer, when it sent one.
    pub cache_control: Option<String>,
}

impl RobotsResponse {
    /// A 200 with `body` and no caching headers.
    pub fn ok(body: impl Into<Vec<u8>>) -> Self {
        Self {
            status: 200,
            body: body.into(),
            cache_control: None,
        }
    }

    /// An answer with `status` and no body.
    pub fn status(status: u16) -> Self {
        Self {
            status,
            body: Vec::new(),
            cache_control: None,
        }
    }

    /// The same answer with a `Cache-Control` header.
    pub fn with_cache_control(mut self, value: impl Into<String>) -> Self {
        self.cache_control = Some(value.into());
        self
    }
}

/// Why no answer came for a robots.txt.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FetchError {
    /// More redirects than [`MAX_ROBOTS_REDIRECTS`], or one without a
    /// usable `Location`.
    #[error("{url}: robots.txt redirected badly: {reason}")]
    Redirect {
        /// The robots.txt URL asked for.
        url: String,
        /// What was wrong.
        reason: String,
    },
    /// The URL policy refused the robots.txt URL or a redirect hop.
    #[error("{url}: robots.txt refused by the URL policy: {reason}")]
    Refused {
        /// The refused URL.
        url: String,
        /// The policy's reason.
        reason: String,
    },
    /// No answer: the name did not resolve, the connection failed or the
    /// deadline passed.
    #[error("{url}: robots.txt unreachable: {reason}")]
    Unreachable {
        /// The robots.txt URL asked for.
        url: String,
        /// What happened.
        reason: String,
    },
}

impl FetchError {
    /// The job error kind this failure reports as.
    pub fn kind(&self) -> ErrorKind {
        match self {
            FetchError::Redirect { .. } | FetchError::Unreachable { .. } => ErrorKind::Connection,
            FetchError::Refused { .. } => ErrorKind::PolicyDenied,
        }
    }

    /// Says whether asking again later may succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(self, FetchError::Unreachable { .. })
    }
}

/// Reads one robots.txt. Implementations follow up to
/// [`MAX_ROBOTS_REDIRECTS`] redirects, read at most
/// [`crate::MAX_ROBOTS_BYTES`] of the body (dropping the rest, not failing),
/// and return every status the server sent as a [`RobotsResponse`].
#[async_trait::async_trait]
pub trait RobotsFetcher: Send + Sync + std::fmt::Debug {
    /// GETs `robots_url` (`<origin>/robots.txt`).
    async fn fetch(&self, robots_url: &Url) -> Result<RobotsResponse, FetchError>;
}
