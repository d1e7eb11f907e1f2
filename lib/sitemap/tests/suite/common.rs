//! The fixture server: a table of routes, conditional GET support, and a log
//! of every request it answered.

use std::collections::HashMap;
use std::io::Write;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{HeaderMap, Request, Response, StatusCode};
use flate2::Compression;
use flate2::write::GzEncoder;
use oxwright_policy::UrlPolicy;
use oxwright_sitemap::{SitemapError, SitemapLoader, SitemapOptions, SitemapResult};

/// One canned response.
#[derive(Debug, Clone, Default)]
pub struct Route {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub delay: Option<Duration>,
    pub etag: Option<String>,
    pub last_modified: Option<String>,
}

impl Route {
    /// A 200 with `body` and no Content-Type.
    pub fn ok(body: impl Into<Vec<u8>>) -> Self {
        Self {
            status: 200,
            body: body.into(),
            ..Self::default()
        }
    }

    /// A 200 XML document.
    pub fn xml(body: impl Into<Vec<u8>>) -> Self {
        Self::ok(body).header("content-type", "application/xml")
    }

    /// An empty answer with `status`.
    pub fn status(status: u16) -> Self {
        Self {
            status,
            ..Self::default()
        }
    }

    /// A 301 to `location`.
    pub fn redirect(location: &str) -> Self {
        Self::status(301).header("location", location)
    }

    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    pub fn etag(mut self, etag: &str) -> Self {
        self.etag = Some(etag.into());
        self
    }

    pub fn last_modified(mut self, lm: &str) -> Self {
        self.last_modified = Some(lm.into());
        self
    }

    pub fn delay(mut self, d: Duration) -> Self {
        self.delay = Some(d);
        self
    }
}

/// One request as the server saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Logged {
    pub path: String,
    pub status: u16,
    pub if_none_match: Option<String>,
    pub if_modified_since: Option<String>,
}

type Routes = Arc<Mutex<HashMap<String, Route>>>;

/// A running fixture server with its own cache directory.
pub struct Fixture {
    pub addr: SocketAddr,
    routes: Routes,
    log: Arc<Mutex<Vec<Logged>>>,
    pub cache_dir: tempfile::TempDir,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Fixture {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Fixture {
    /// Starts a server on 127.0.0.1:0 answering `routes` (path with query → route).
    pub async fn start(routes: Vec<(&str, Route)>) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let routes: Routes = Arc::new(Mutex::new(
            routes.into_iter().map(|(p, r)| (p.to_string(), r)).collect(),
        ));
        let log = Arc::new(Mutex::new(Vec::new()));
        let (r, l) = (routes.clone(), log.clone());
        let app = Router::new().fallback(move |req: Request<Body>| {
            let (r, l) = (r.clone(), l.clone());
            async move { answer(req, r, l).await }
        });
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Self {
            addr,
            routes,
            log,
            cache_dir: tempfile::tempdir().unwrap(),
            task,
        }
    }

    /// Returns `http://127.0.0.1:PORT{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Returns the site root URL.
    pub fn site(&self) -> String {
        self.url("/")
    }

    /// Replaces or adds a route.
    pub fn set(&self, path: &str, route: Route) {
        self.routes.lock().unwrap().insert(path.to_string(), route);
    }

    /// Returns the requests answered so far and clears the log.
    pub fn take_log(&self) -> Vec<Logged> {
        std::mem::take(&mut *self.log.lock().unwrap())
    }

    /// Default options with this fixture's cache directory.
    pub fn options(&self) -> SitemapOptions {
        SitemapOptions {
            cache_dir: Some(self.cache_dir.path().to_path_buf()),
            ..SitemapOptions::default()
        }
    }

    /// A loader allowing exactly this server's address.
    pub fn loader_with(&self, opts: SitemapOptions) -> SitemapLoader {
        let policy = UrlPolicy::allowing([self.addr.to_string().parse().unwrap()]);
        SitemapLoader::new(Arc::new(policy), opts)
    }

    pub fn loader(&self) -> SitemapLoader {
        self.loader_with(self.options())
    }

    /// Loads `target` (a path on this server) with default options.
    pub async fn load(&self, path: &str) -> Result<SitemapResult, SitemapError> {
        self.loader().load(&self.url(path)).await
    }
}

async fn answer(req: Request<Body>, routes: Routes, log: Arc<Mutex<Vec<Logged>>>) -> Response<Body> {
    let path = req
        .uri()
        .path_and_query()
        .map(|p| p.as_str().to_string())
        .unwrap_or_default();
    let h = req.headers();
    let inm = header(h, "if-none-match");
    let ims = header(h, "if-modified-since");
    let route = routes.lock().unwrap().get(&path).cloned();
    let mut builder = Response::builder();
    let (status, body) = match route {
        None => (404, Vec::new()),
        Some(route) => {
            if let Some(d) = route.delay {
                tokio::time::sleep(d).await;
            }
            let fresh_etag = route.etag.is_some() && route.etag == inm;
            let fresh_lm =
                route.etag.is_none() && route.last_modified.is_some() && route.last_modified == ims;
            if let Some(e) = &route.etag {
                builder = builder.header("etag", e);
            }
            if let Some(lm) = &route.last_modified {
                builder = builder.header("last-modified", lm);
            }
            if fresh_etag || fresh_lm {
                (304, Vec::new())
            } else {
                for (k, v) in &route.headers {
                    builder = builder.header(k, v);
                }
                (route.status, route.body)
            }
        }
    };
    log.lock().unwrap().push(Logged {
        path,
        status,
        if_none_match: inm,
        if_modified_since: ims,
    });
    builder
        .status(StatusCode::from_u16(status).unwrap())
        .body(Body::from(body))
        .unwrap()
}

fn header(h: &HeaderMap, name: &str) -> Option<String> {
    h.get(name).and_then(|v| v.to_str().ok()).map(str::to_string)
}

/// A `<urlset>` with the sitemap namespace listing `locs`.
pub fn urlset(locs: &[&str]) -> String {
    let body: String = locs
        .iter()
        .map(|l| format!("  <url><loc>{l}</loc></url>\n"))
        .collect();
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n{body}</urlset>\n"
    )
}

/// A `<sitemapindex>` with the sitemap namespace listing `locs`.
pub fn index(locs: &[String]) -> String {
    let body: String = locs
        .iter()
        .map(|l| format!("  <sitemap><loc>{l}</loc></sitemap>\n"))
        .collect();
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<sitemapindex xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n{body}</sitemapindex>\n"
    )
}

pub fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = GzEncoder::new(Vec::new(), Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

/// The `loc` values of a result.
pub fn locs(r: &SitemapResult) -> Vec<String> {
    r.urls.iter().map(|u| u.loc.clone()).collect()
}

/// `https://site.example/{name}` for each name: the page URLs fixtures list.
pub fn pages(names: &[&str]) -> Vec<String> {
    names
        .iter()
        .map(|n| format!("https://site.example/{n}"))
        .collect()
}

/// The paths requested, in order.
pub fn paths(log: &[Logged]) -> Vec<String> {
    log.iter().map(|l| l.path.clone()).collect()
}
