//! The cache over a scripted fetcher, in virtual time: the RFC's outcome
//! per answer, freshness from `Cache-Control`, the stale copy for an
//! unreachable host, one fetch per origin.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;

/// Answers with scripted outcomes in order (the last one repeats) and
/// records each URL asked for.
#[derive(Debug, Default)]
struct Scripted {
    outcomes: Mutex<VecDeque<Result<RobotsResponse, FetchError>>>,
    asked: Mutex<Vec<String>>,
    calls: AtomicUsize,
    delay: Option<Duration>,
}

impl Scripted {
    fn new(outcomes: impl IntoIterator<Item = Result<RobotsResponse, FetchError>>) -> Arc<Self> {
        Arc::new(Self {
            outcomes: Mutex::new(outcomes.into_iter().collect()),
            ..Self::default()
        })
    }

    fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

#[async_trait::async_trait]
impl RobotsFetcher for Scripted {
    async fn fetch(&self, robots_url: &Url) -> Result<RobotsResponse, FetchError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.asked.lock().unwrap().push(robots_url.to_string());
        if let Some(d) = self.delay {
            tokio::time::sleep(d).await;
        }
        let mut q = self.outcomes.lock().unwrap();
        if q.len() > 1 {
            q.pop_front().unwrap()
        } else {
            q.front().cloned().expect("a scripted outcome")
        }
    }
}

fn unreachable() -> Result<RobotsResponse, FetchError> {
    Err(FetchError::Unreachable {
        url: "https://site.example/robots.txt".into(),
        reason: "connection refused".into(),
    })
}

fn cache(fetcher: Arc<Scripted>) -> RobotsCache {
    RobotsCache::new(fetcher, RobotsConfig::default()).unwrap()
}

fn url(s: &str) -> Url {
    Url::parse(s).unwrap()
}

const HOUR: Duration = Duration::from_secs(3600);

#[tokio::test(start_paused = true)]
async fn a_parsed_file_is_fetched_once_and_used_for_its_origin() {
    let f = Scripted::new([Ok(RobotsResponse::ok(
        "User-agent: *\nDisallow: /private\nCrawl-delay: 3\nSitemap: /s.xml\n",
    ))]);
    let c = cache(f.clone());
    assert!(!c.allowed(&url("https://site.example/private/x")).await.unwrap());
    assert!(c.allowed(&url("https://site.example/public")).await.unwrap());
    assert!(
        c.allowed(&url("https://SITE.example:443/public?q#f"))
            .await
            .unwrap()
    );
    let r = c.robots_for(&url("https://site.example/")).await.unwrap();
    assert_eq!(r.crawl_delay(), Some(Duration::from_secs(3)));
    assert_eq!(r.sitemaps(), [url("https://site.example/s.xml")]);
    assert_eq!(r.source(), &RobotsSource::Fetched { status: 200 });
    assert_eq!(f.calls(), 1);
    assert_eq!(*f.asked.lock().unwrap(), ["https://site.example/robots.txt"]);
}

#[tokio::test(start_paused = true)]
async fn each_scheme_host_and_port_is_its_own_origin() {
    let f = Scripted::new([Ok(RobotsResponse::ok("User-agent: *\nDisallow: /\n"))]);
    let c = cache(f.clone());
    for u in [
        "https://site.example/a",
        "http://site.example/a",
        "http://site.example:8080/a",
        "https://www.site.example/a",
        "http://site.example:80/b",
    ] {
        assert!(!c.allowed(&url(u)).await.unwrap(), "{u}");
    }
    assert_eq!(
        *f.asked.lock().unwrap(),
        [
            "https://site.example/robots.txt",
            "http://site.example/robots.txt",
            "http://site.example:8080/robots.txt",
            "https://www.site.example/robots.txt",
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_4xx_allows_everything_for_a_day() {
    for status in [400, 401, 403, 404, 410] {
        let f = Scripted::new([Ok(RobotsResponse::status(status))]);
        let c = cache(f.clone());
        assert!(
            c.allowed(&url("https://site.example/any")).await.unwrap(),
            "{status}"
        );
        let r = c.robots_for(&url("https://site.example/")).await.unwrap();
        assert!(matches!(r.source(), RobotsSource::Unavailable { .. }));
        tokio::time::advance(23 * HOUR).await;
        c.allowed(&url("https://site.example/any")).await.unwrap();
        assert_eq!(f.calls(), 1);
        tokio::time::advance(HOUR).await;
        c.allowed(&url("https://site.example/any")).await.unwrap();
        assert_eq!(f.calls(), 2);
    }
}

#[tokio::test(start_paused = true)]
async fn a_5xx_429_or_no_answer_disallows_everything_and_is_asked_again_soon() {
    let failures = [
        Ok(RobotsResponse::status(500)),
        Ok(RobotsResponse::status(503)),
        Ok(RobotsResponse::status(429)),
        unreachable(),
        Err(FetchError::Refused {
            url: "https://site.example/robots.txt".into(),
            reason: "private address".into(),
        }),
    ];
    for failure in failures {
        let f = Scripted::new([
            failure.clone(),
            Ok(RobotsResponse::ok("User-agent: *\nDisallow: /x\n")),
        ]);
        let c = cache(f.clone());
        assert!(
            !c.allowed(&url("https://site.example/a")).await.unwrap(),
            "{failure:?}"
        );
        assert!(c.allowed(&url("https://site.example/robots.txt")).await.unwrap());
        tokio::time::advance(Duration::from_secs(599)).await;
        assert!(!c.allowed(&url("https://site.example/a")).await.unwrap());
        assert_eq!(f.calls(), 1);
        tokio::time::advance(Duration::from_secs(1)).await;
        assert!(
            c.allowed(&url("https://site.example/a")).await.unwrap(),
            "{failure:?}"
        );
        assert_eq!(f.calls(), 2);
    }
}

#[tokio::test(start_paused = true)]
async fn too_many_redirects_make_the_file_unavailable() {
    let f = Scripted::new([Err(FetchError::Redirect {
        url: "https://site.example/robots.txt".into(),
        reason: "more than 5 redirects".into(),
    })]);
    let c = cache(f);
    assert!(c.allowed(&url("https://site.example/a")).await.unwrap());
}

#[tokio::test(start_paused = true)]
async fn max_age_sets_freshness_within_the_bounds() {
    let cases = [
        ("max-age=120", Duration::from_secs(120)),
        ("public, max-age=\"300\"", Duration::from_secs(300)),
        ("max-age=9999999", 24 * HOUR),
        ("no-cache", Duration::from_secs(60)),
        ("max-age=0", Duration::from_secs(60)),
        ("private", 24 * HOUR),
    ];
    for (header, fresh) in cases {
        let f = Scripted::new([Ok(
            RobotsResponse::ok("User-agent: *\nDisallow:\n").with_cache_control(header)
        )]);
        let c = cache(f.clone());
        c.allowed(&url("https://site.example/")).await.unwrap();
        tokio::time::advance(fresh - Duration::from_secs(1)).await;
        c.allowed(&url("https://site.example/")).await.unwrap();
        assert_eq!(f.calls(), 1, "{header}");
        tokio::time::advance(Duration::from_secs(1)).await;
        c.allowed(&url("https://site.example/")).await.unwrap();
        assert_eq!(f.calls(), 2, "{header}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_stale_copy_stands_while_the_host_is_unreachable() {
    let f = Scripted::new([
        Ok(RobotsResponse::ok("User-agent: *\nDisallow: /x\n")),
        Ok(RobotsResponse::status(503)),
    ]);
    let c = cache(f.clone());
    assert!(c.allowed(&url("https://site.example/a")).await.unwrap());
    tokio::time::advance(25 * HOUR).await;
    // The host fails: the last answer it gave still holds, not a blanket refusal.
    assert!(c.allowed(&url("https://site.example/a")).await.unwrap());
    assert!(!c.allowed(&url("https://site.example/x")).await.unwrap());
    assert_eq!(f.calls(), 2);
    // Asked again after the retry interval, still failing, still the copy.
    tokio::time::advance(Duration::from_secs(600)).await;
    assert!(c.allowed(&url("https://site.example/a")).await.unwrap());
    assert_eq!(f.calls(), 3);
    // Thirty days after its last answer the copy no longer stands.
    tokio::time::advance(30 * 24 * HOUR).await;
    assert!(!c.allowed(&url("https://site.example/a")).await.unwrap());
    let r = c.robots_for(&url("https://site.example/")).await.unwrap();
    assert!(matches!(r.source(), RobotsSource::Unreachable { .. }));
}

#[tokio::test(start_paused = true)]
async fn concurrent_asks_for_one_origin_share_one_fetch() {
    let f = Arc::new(Scripted {
        outcomes: Mutex::new([Ok(RobotsResponse::ok("User-agent: *\nDisallow: /x\n"))].into()),
        delay: Some(Duration::from_millis(500)),
        ..Scripted::default()
    });
    let c = cache(f.clone());
    let asks = (0..16).map(|i| {
        let c = c.clone();
        tokio::spawn(async move { c.allowed(&url(&format!("https://site.example/x/{i}"))).await })
    });
    for ask in asks {
        assert!(!ask.await.unwrap().unwrap());
    }
    assert_eq!(f.calls(), 1);
}

#[tokio::test(start_paused = true)]
async fn invalidate_forces_a_new_fetch() {
    let f = Scripted::new([Ok(RobotsResponse::ok("User-agent: *\nDisallow:\n"))]);
    let c = cache(f.clone());
    c.allowed(&url("https://site.example/")).await.unwrap();
    c.invalidate(&url("https://site.example/other")).await.unwrap();
    c.allowed(&url("https://site.example/")).await.unwrap();
    assert_eq!(f.calls(), 2);
}

#[tokio::test(start_paused = true)]
async fn the_token_is_configurable() {
    let body = "User-agent: *\nDisallow: /\n\nUser-agent: partner-bot\nAllow: /\n";
    let f = Scripted::new([Ok(RobotsResponse::ok(body))]);
    let config = RobotsConfig {
        user_agent: "Partner-Bot".into(),
        ..RobotsConfig::default()
    };
    let c = RobotsCache::new(f, config).unwrap();
    assert!(c.allowed(&url("https://site.example/a")).await.unwrap());
    let f = Scripted::new([Ok(RobotsResponse::ok(body))]);
    assert!(!cache(f).allowed(&url("https://site.example/a")).await.unwrap());
}

#[test]
fn a_token_that_is_not_a_product_token_is_refused() {
    for token in ["", "oxwright/1.0", "ox wright", "bot\n"] {
        let config = RobotsConfig {
            user_agent: token.into(),
            ..RobotsConfig::default()
        };
        let err = RobotsCache::new(Scripted::new([unreachable()]), config).unwrap_err();
        assert!(matches!(err, RobotsError::InvalidToken { .. }), "{token:?}");
        assert_eq!(err.kind(), oxwright_jobs::ErrorKind::InvalidInput);
        assert!(!err.to_string().contains('\n'));
    }
}

#[tokio::test]
async fn urls_without_a_robots_txt_are_refused() {
    let c = cache(Scripted::new([unreachable()]));
    for u in [
        "mailto:a@site.example",
        "data:text/plain,x",
        "file:///etc/passwd",
        "ftp://site.example/",
    ] {
        let err = c.allowed(&url(u)).await.unwrap_err();
        assert!(matches!(err, RobotsError::InvalidUrl { .. }), "{u}");
        assert!(!err.is_retryable());
    }
}

#[test]
fn origin_keys_and_robots_urls() {
    assert_eq!(
        origin_key(&url("HTTP://Example.COM:80/a?b")).unwrap(),
        "http://example.com"
    );
    assert_eq!(
        origin_key(&url("https://example.com:8443/")).unwrap(),
        "https://example.com:8443"
    );
    assert_eq!(
        robots_url(&url("https://user:pw@bücher.example/a/b?c#d"))
            .unwrap()
            .as_str(),
        "https://xn--bcher-kva.example/robots.txt"
    );
    assert_eq!(
        robots_url(&url("http://[::1]:8080/x")).unwrap().as_str(),
        "http://[::1]:8080/robots.txt"
    );
}

#[test]
fn cache_control_directives() {
    assert_eq!(max_age("max-age=60"), Some(Duration::from_secs(60)));
    assert_eq!(max_age("Max-Age = 60"), Some(Duration::from_secs(60)));
    assert_eq!(
        max_age("MAX-AGE=60, must-revalidate"),
        Some(Duration::from_secs(60))
    );
    assert_eq!(max_age("no-store, max-age=60"), Some(Duration::ZERO));
    assert_eq!(max_age("max-age=soon"), None);
    assert_eq!(max_age(""), None);
}
