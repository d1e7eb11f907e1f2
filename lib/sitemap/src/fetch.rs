//! One HTTP GET of one document: the URL policy checked on every redirect
//! hop, redirects followed by hand, conditional headers, a time limit for
//! the whole exchange and a byte cap on the body. The client dials only
//! the addresses the policy judged for the hop (no second DNS lookup to
//! rebind).

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use oxwright_policy::{Resolver, SystemResolver, UrlPolicy};
use reqwest::StatusCode;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
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
    resolver: Arc<dyn Resolver>,
    pinned: Arc<Pinned>,
    timeout: Duration,
    max_bytes: usize,
}

/// The addresses the policy judged, per host name: the client's only DNS.
/// A name no hop judged does not resolve.
#[derive(Debug, Default)]
struct Pinned(Mutex<HashMap<String, Vec<SocketAddr>>>);

impl Resolve for Pinned {
    fn resolve(&self, name: Name) -> Resolving {
        let addrs = self
            .0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(name.as_str())
            .cloned();
        let host = name.as_str().to_owned();
        Box::pin(async move {
            match addrs {
                Some(addrs) => Ok(Box::new(addrs.into_iter()) as Addrs),
                None => Err(format!("{host} was not checked by the URL policy").into()),
            }
        })
    }
}

impl Fetcher {
    /// Builds the HTTP client: no automatic redirects (each hop is checked
    /// here), no proxy, and for DNS the addresses the policy judged.
    pub(crate) fn new(policy: Arc<UrlPolicy>, timeout: Duration, max_bytes: usize, user_agent: &str) -> Self {
        Self::with_resolver(policy, Arc::new(SystemResolver), timeout, max_bytes, user_agent)
    }

    /// Like [`Self::new`], with host names resolved by `resolver`.
    pub(crate) fn with_resolver(
        policy: Arc<UrlPolicy>,
        resolver: Arc<dyn Resolver>,
        timeout: Duration,
        max_bytes: usize,
        user_agent: &str,
    ) -> Self {
        // The ring provider backs rustls; a provider installed earlier by the process wins.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let pinned = Arc::new(Pinned::default());
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .dns_resolver(pinned.clone())
            .user_agent(user_agent)
            .connect_timeout(timeout)
            .build()
            .expect("the HTTP client builds: rustls with the ring provider is compiled in");
        Self {
            client,
            policy,
            resolver,
            pinned,
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
            let addrs = self
                .policy
                .resolve_checked(&current, self.resolver.as_ref())
                .await
                .map_err(|source| SitemapError::Policy {
                    url: current.to_string(),
                    source,
                })?;
            if let Some(url::Host::Domain(host)) = current.host() {
                self.pinned
                    .0
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(host.to_owned(), addrs);
            }
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

#[cfg(test)]
mod tests {
    use std::net::IpAddr;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use oxwright_policy::ResolveFuture;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    /// Answers each name once with loopback, then fails: a second lookup
    /// by anyone is a rebinding window (and breaks the fetch here).
    #[derive(Debug, Default)]
    struct Once {
        asked: AtomicUsize,
    }

    impl Resolver for Once {
        fn resolve<'a>(&'a self, host: &'a str, _port: u16) -> ResolveFuture<'a> {
            let first = self.asked.fetch_add(1, Ordering::SeqCst) == 0;
            Box::pin(async move {
                if first {
                    Ok(vec![IpAddr::from([127, 0, 0, 1])])
                } else {
                    Err(std::io::Error::other(format!("{host} asked again")))
                }
            })
        }
    }

    /// Serves one fixed sitemap to every connection.
    async fn serve() -> u16 {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            while let Ok((mut conn, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let mut buf = [0u8; 4096];
                    let _ = conn.read(&mut buf).await;
                    let body = "<urlset><url><loc>http://a.example/</loc></url></urlset>";
                    let reply = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/xml\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = conn.write_all(reply.as_bytes()).await;
                });
            }
        });
        port
    }

    #[tokio::test]
    async fn the_client_dials_the_address_the_policy_judged() {
        let port = serve().await;
        // A name only the policy's resolver knows: the system's DNS would
        // not find it, so a fetch that succeeds dialled the judged address.
        let policy = UrlPolicy::allowing([format!("sitemap.invalid:{port}").parse().unwrap()]);
        let resolver = Arc::new(Once::default());
        let fetcher = Fetcher::with_resolver(
            Arc::new(policy),
            resolver.clone(),
            Duration::from_secs(5),
            1 << 20,
            "oxwright-test",
        );
        let url = Url::parse(&format!("http://sitemap.invalid:{port}/sitemap.xml")).unwrap();
        let got = fetcher.fetch(&url, None, &HashSet::new()).await.unwrap();
        let Fetched::Body { status, body, .. } = got else {
            panic!("expected a body, got {got:?}");
        };
        assert_eq!(status, 200);
        assert!(String::from_utf8_lossy(&body).contains("a.example"));
        assert_eq!(resolver.asked.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn a_refused_address_is_never_dialled() {
        let port = serve().await;
        // Not allowed: loopback is refused before any connection.
        let fetcher = Fetcher::with_resolver(
            Arc::new(UrlPolicy::default()),
            Arc::new(Once::default()),
            Duration::from_secs(5),
            1 << 20,
            "oxwright-test",
        );
        let url = Url::parse(&format!("http://sitemap.invalid:{port}/sitemap.xml")).unwrap();
        let err = fetcher.fetch(&url, None, &HashSet::new()).await.unwrap_err();
        assert!(matches!(err, SitemapError::Policy { .. }), "{err:?}");
    }
}
