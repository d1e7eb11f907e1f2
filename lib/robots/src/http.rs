//! The real [`RobotsFetcher`]: one GET over the project's policy-judged
//! client (`oxwright-http`), so every redirect hop of a robots.txt is held
//! to the URL policy and only judged addresses are dialled, with the RFC's
//! redirect limit and size cap.

use std::sync::Arc;
use std::time::Duration;

use oxwright_http::{DocumentRequest, HttpClient, HttpError};
use oxwright_jobs::RequestShape;
use oxwright_policy::{PolicyError, UrlPolicy};
use url::Url;

use crate::fetch::{FetchError, MAX_ROBOTS_REDIRECTS, RobotsFetcher, RobotsResponse};
use crate::rules::MAX_ROBOTS_BYTES;

/// Deadline of one robots.txt exchange, body included: 10 seconds.
pub const DEFAULT_ROBOTS_TIMEOUT: Duration = Duration::from_secs(10);

/// The `User-Agent` header robots.txt is asked for with, unless set.
pub const DEFAULT_ROBOTS_HTTP_USER_AGENT: &str = concat!("oxwright/", env!("CARGO_PKG_VERSION"));

/// What a robots.txt request accepts.
const ACCEPT: &str = "text/plain, */*;q=0.5";

/// Reads robots.txt over the policy-judged HTTP client. Cheap to clone.
#[derive(Debug, Clone)]
pub struct HttpRobotsFetcher {
    client: HttpClient,
    policy: Arc<UrlPolicy>,
    shape: RequestShape,
    timeout: Duration,
}

impl HttpRobotsFetcher {
    /// A fetcher over `client` (shared with the rest of the caller's
    /// reads), judging every hop by `policy`, sending
    /// [`DEFAULT_ROBOTS_HTTP_USER_AGENT`] within [`DEFAULT_ROBOTS_TIMEOUT`].
    pub fn new(client: HttpClient, policy: Arc<UrlPolicy>) -> Self {
        Self {
            client,
            policy,
            shape: RequestShape {
                user_agent: Some(DEFAULT_ROBOTS_HTTP_USER_AGENT.to_owned()),
                ..RequestShape::default()
            },
            timeout: DEFAULT_ROBOTS_TIMEOUT,
        }
    }

    /// Sends `user_agent` as the `User-Agent` header (the full string;
    /// the token matched in the file is the cache's).
    pub fn with_user_agent(mut self, user_agent: impl Into<String>) -> Self {
        self.shape.user_agent = Some(user_agent.into());
        self
    }

    /// Gives each exchange `timeout` in all.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }
}

#[async_trait::async_trait]
impl RobotsFetcher for HttpRobotsFetcher {
    async fn fetch(&self, robots_url: &Url) -> Result<RobotsResponse, FetchError> {
        let mut req = DocumentRequest::new(
            robots_url,
            &self.policy,
            &self.shape,
            self.timeout,
            MAX_ROBOTS_BYTES,
        );
        req.accept = Some(ACCEPT);
        req.max_redirects = MAX_ROBOTS_REDIRECTS;
        req.truncate = true;
        match self.client.get(&req).await {
            Ok(doc) => Ok(RobotsResponse {
                status: doc.status,
                cache_control: doc.header("cache-control").map(str::to_owned),
                body: doc.body,
            }),
            // The client reports error statuses as errors; here they are answers.
            Err(HttpError::Status { status, .. }) => Ok(RobotsResponse::status(status)),
            Err(err) => Err(fetch_error(robots_url, err)),
        }
    }
}

fn fetch_error(robots_url: &Url, err: HttpError) -> FetchError {
    let url = robots_url.to_string();
    match err {
        HttpError::Redirect { reason, .. } => FetchError::Redirect { url, reason },
        HttpError::Cycle { target, .. } => FetchError::Redirect {
            url,
            reason: format!("a redirect loop through {target}"),
        },
        HttpError::Policy {
            source: PolicyError::Resolve { host, reason },
            ..
        } => FetchError::Unreachable {
            url,
            reason: format!("cannot resolve {host}: {reason}"),
        },
        HttpError::Policy { url: hop, source } => FetchError::Refused {
            url,
            reason: format!("{hop}: {source}"),
        },
        e @ (HttpError::Timeout { .. }
        | HttpError::Connection { .. }
        | HttpError::TooLarge { .. }
        | HttpError::Status { .. }) => FetchError::Unreachable {
            url,
            reason: e.to_string(),
        },
    }
}

#[cfg(test)]
#[path = "http_tests.rs"]
mod tests;
