//! One HTTP GET of one sitemap document over the shared policy-judged
//! client (`oxwright-http`): the URL policy checked on every redirect hop,
//! only judged addresses dialled (no second DNS lookup to rebind),
//! conditional headers, a time limit for the whole exchange and a byte cap
//! on the body; a redirect back to a document this load already read is a
//! cycle.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use oxwright_http::{DocumentRequest, HttpClient, HttpError};
use oxwright_jobs::RequestShape;
use oxwright_policy::{Resolver, SystemResolver, UrlPolicy};
use url::Url;

use crate::SitemapError;

pub(crate) use oxwright_http::doc_key;

/// Most redirect hops followed for one document.
pub(crate) const MAX_REDIRECTS: usize = 5;

/// What a sitemap request accepts.
const ACCEPT: &str =
    "application/xml, text/xml;q=0.9, text/plain;q=0.8, application/rss+xml, application/atom+xml, */*;q=0.5";

/// The validators of a cached copy, sent as `If-None-Match` / `If-Modified-Since`.
#[derive(Debug, Clone, Default)]
pub(crate) struct Validators {
    pub etag: Option<String>,
    pub last_modified: Option<String>,
}

/// What the server answered.
#[derive(Debug)]
pub(crate) enum Fetched {
    /// A 2xx with its body (gzip sent as `Content-Encoding` decoded; a
    /// `.gz` file as it is).
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
    client: HttpClient,
    policy: Arc<UrlPolicy>,
    shape: RequestShape,
    timeout: Duration,
    max_bytes: usize,
}

impl Fetcher {
    /// A fetcher resolving names with the system resolver.
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
        Self {
            client: HttpClient::with_resolver(resolver),
            policy,
            shape: RequestShape {
                user_agent: Some(user_agent.to_owned()),
                ..RequestShape::default()
            },
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
        let mut conditional = Vec::new();
        if let Some(v) = validators {
            if let Some(etag) = &v.etag {
                conditional.push(("If-None-Match".to_owned(), etag.clone()));
            }
            if let Some(lm) = &v.last_modified {
                conditional.push(("If-Modified-Since".to_owned(), lm.clone()));
            }
        }
        let mut req = DocumentRequest::new(url, &self.policy, &self.shape, self.timeout, self.max_bytes);
        req.conditional = &conditional;
        req.accept = Some(ACCEPT);
        req.max_redirects = MAX_REDIRECTS;
        req.read_before = Some(visited);
        let doc = self.client.get(&req).await.map_err(sitemap_error)?;
        if doc.status == 304 {
            return Ok(Fetched::NotModified { final_url: doc.url });
        }
        let text = |name: &str| doc.header(name).map(str::to_owned).filter(|s| !s.is_empty());
        let validators = Validators {
            etag: text("etag"),
            last_modified: text("last-modified"),
        };
        Ok(Fetched::Body {
            status: doc.status,
            validators,
            body: doc.body,
            final_url: doc.url,
        })
    }
}

fn sitemap_error(err: HttpError) -> SitemapError {
    match err {
        HttpError::Policy { url, source } => SitemapError::Policy { url, source },
        HttpError::Timeout { url, timeout_ms, .. } => SitemapError::Timeout { url, timeout_ms },
        HttpError::TooLarge { url, limit } => SitemapError::TooLarge { url, limit },
        HttpError::Redirect { url, reason } => SitemapError::Redirect { url, reason },
        HttpError::Cycle { url, target } => SitemapError::Cycle { url, target },
        HttpError::Status { url, status, .. } => SitemapError::Http { url, status },
        HttpError::Connection { url, message } => SitemapError::Connection { url, message },
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
