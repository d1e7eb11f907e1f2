//! One HTTP GET of one document: the URL policy checked on every redirect
//! hop, redirects followed by hand, conditional headers, a time limit for
//! the whole exchange and a byte cap on the body.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use oxwright_policy::UrlPolicy;
use reqwest::StatusCode;
use reqwest::header::{
    ACCEPT, ACCEPT_ENCODING, ETAG, HeaderMap, IF_MODIFIED_SINCE, IF_NONE_MATCH, LAST_MODIFIED, LOCATION,
};
use url::Url;

use crate::SitemapError;

/// Most redirect hops followed for one document.
pub(crate) const MAX_REDIRECTS: usize = 5;

/// The validators of a cached copy, sent as `If-None-Match` / `If-Modified-Since`.
#[derive(Debug, Clone, Default)]
pub(crate) struct Validators {
    pub etag: Option<String>,
    pub last_modified: Option<String>,
}

/// What the server answered.
#[derive(Debug)]
pub(crate) enum Fetched {
    /// A 2xx with its (still encoded) body.
    Body {
        final_url: Url,
        status: u16,
        body: Vec<u8>,
        validators: Validators,
    },
    /// A 304 to a conditional GET.
    NotModified { final_url: Url },
}

/// Fetches documents under the URL policy.
#[derive(Debug, Clone)]
pub(crate) struct Fetcher {
    client: reqwest::Client,
    policy: Arc<UrlPolicy>,
    timeout: Duration,
    max_bytes: usize,
}

impl Fetcher {
    /// Builds the HTTP client: no automatic redirects (each hop is checked
    /// here), no proxy (the policy judges the address actually dialled).
    pub(crate) fn new(policy: Arc<UrlPolicy>, timeout: Duration, max_bytes: usize, user_agent: &str) -> Self {
        // The ring provider backs rustls; a provider installed earlier by the process wins.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .user_agent(user_agent)
            .connect_timeout(timeout)
            .build()
            .expect("the HTTP client builds: rustls with the ring provider is compiled in");
        Self {
            client,
            policy,
            timeout,
            max_bytes,
        }
    }

    /// Returns the policy every fetched URL is checked against.
    pub(crate) fn policy(&self) -> &UrlPolicy {
        &self.policy
    }

    /// GETs `url` within the time limit. A redirect to a URL in `visited`
    /// (other than `url` itself) is a cycle and is not followed.
    pub(crate) async fn fetch(
        &self,
        url: &Url,
        validators: Option<&Validators>,
        visited: &HashSet<String>,
    ) -> Result<Fetched, SitemapError> {
        match tokio::time::timeout(self.timeout, self.fetch_inner(url, validators, visited)).await {
            Ok(res) => res,
            Err(_) => Err(SitemapError::Timeout {
                url: url.to_string(),
                timeout_ms: self.timeout.as_millis() as u64,
            }),
        }
    }

    async fn fetch_inner(
        &self,
        url: &Url,
        validators: Option<&Validators>,
        visited: &HashSet<String>,
    ) -> Result<Fetched, SitemapError> {
        let mut current = url.clone();
        for hop in 0..=MAX_REDIRECTS {
            self.policy
                .check(&current)
                .await
                .map_err(|source| SitemapError::Policy {
                    url: current.to_string(),
                    source,
                })?;
            if hop > 0 && visited.contains(&doc_key(&current)) {
                return Err(SitemapError::Cycle {
                    url: url.to_string(),
                    target: current.to_string(),
                });
            }
            let mut req = self
                .client
                .get(current.clone())
                .header(
                    ACCEPT,
                    "application/xml, text/xml;q=0.9, text/plain;q=0.8, application/rss+xml, application/atom+xml, */*;q=0.5",
                )
                .header(ACCEPT_ENCODING, "gzip");
            if let Some(v) = validators {
                if let Some(etag) = &v.etag {
                    req = req.header(IF_NONE_MATCH, etag);
                }
                if let Some(lm) = &v.last_modified {
                    req = req.header(IF_MODIFIED_SINCE, lm);
                }
            }
            let mut resp = req
                .send()
                .await
                .map_err(|e| transport(&current, &e, self.timeout))?;
            let status = resp.status();
            if status == StatusCode::NOT_MODIFIED {
                return Ok(Fetched::NotModified { final_url: current });
            }
            if status.is_redirection() {
                if hop == MAX_REDIRECTS {
                    break;
                }
                current = next_hop(&current, resp.headers())?;
                continue;
            }
            if !status.is_success() {
                return Err(SitemapError::Http {
                    url: current.to_string(),
                    status: status.as_u16(),
                });
            }
            let too_large = || SitemapError::TooLarge {
                url: current.to_string(),
                limit: self.max_bytes,
            };
            if resp.content_length().is_some_and(|n| n > self.max_bytes as u64) {
                return Err(too_large());
            }
            let validators = Validators {
                etag: header_text(resp.headers(), ETAG),
                last_modified: header_text(resp.headers(), LAST_MODIFIED),
            };
            let mut body = Vec::new();
            while let Some(chunk) = resp
                .chunk()
                .await
                .map_err(|e| transport(&current, &e, self.timeout))?
            {
                if body.len() + chunk.len() > self.max_bytes {
                    return Err(too_large());
                }
                body.extend_from_slice(&chunk);
            }
            return Ok(Fetched::Body {
                final_url: current,
                status: status.as_u16(),
                body,
                validators,
            });
        }
        Err(SitemapError::Redirect {
            url: current.to_string(),
            reason: format!("more than {MAX_REDIRECTS} redirects"),
        })
    }
}

/// The identity of a document within one load: the URL without its fragment.
pub(crate) fn doc_key(url: &Url) -> String {
    let mut u = url.clone();
    u.set_fragment(None);
    u.into()
}

fn next_hop(current: &Url, headers: &HeaderMap) -> Result<Url, SitemapError> {
    let bad = |reason: &str| SitemapError::Redirect {
        url: current.to_string(),
        reason: reason.to_string(),
    };
    let location = headers
        .get(LOCATION)
        .and_then(|v| v.to_str().ok())
        .ok_or_else(|| bad("redirect without a Location header"))?;
    current
        .join(location.trim())
        .map_err(|_| bad("redirect to an unparsable Location"))
}

fn header_text(headers: &HeaderMap, name: reqwest::header::HeaderName) -> Option<String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
        .filter(|s| !s.is_empty())
}

fn transport(url: &Url, err: &reqwest::Error, timeout: Duration) -> SitemapError {
    if err.is_timeout() {
        return SitemapError::Timeout {
            url: url.to_string(),
            timeout_ms: timeout.as_millis() as u64,
        };
    }
    let mut message = err.to_string();
    let mut source = std::error::Error::source(err);
    while let Some(s) = source {
        message.push_str(": ");
        message.push_str(&s.to_string());
        source = s.source();
    }
    SitemapError::Connection {
        url: url.to_string(),
        message,
    }
}
