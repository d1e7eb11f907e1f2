//! `oxwright crawl` against a local site with a link tree, cycles, several
//! spellings of one URL, a never-ending calendar, a robots.txt with
//! Disallow and Crawl-delay, a `<link rel="next">` series and a link to
//! another host: exactly the expected pages are fetched, each once, at the
//! pace robots.txt asks, over the HTTP path and in Chromium.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{Request, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};

/// One page load as the server saw it.
#[derive(Debug, Clone)]
struct Hit {
    target: String,
    start: Instant,
    end: Instant,
}

#[derive(Clone, Default)]
struct Log {
    hits: Arc<Mutex<Vec<Hit>>>,
    in_flight: Arc<Mutex<(usize, usize)>>,
}

impl Log {
    fn hits(&self) -> Vec<Hit> {
        self.hits.lock().unwrap().clone()
    }

    fn pages(&self) -> Vec<Hit> {
        self.hits()
            .into_iter()
            .filter(|h| h.target != "/robots.txt")
            .collect()
    }

    fn max_in_flight(&self) -> usize {
        self.in_flight.lock().unwrap().1
    }
}

fn page(title: &str, head: &str, links: &[&str]) -> String {
    let links: String = links
        .iter()
        .map(|l| format!("<li><a href=\"{l}\">{l}</a></li>"))
        .collect();
    format!(
        "<!doctype html><html><head><title>{title}</title>{head}</head><body><main><h1>{title}</h1>\
         <p>The page {title} of the crawl site, with enough words to be read as content.</p>\
         <ul>{links}</ul></main></body></html>"
    )
}

/// The crawl site; `other` is the address of another host it links to.
fn site_page(target: &str, other: &str) -> Option<String> {
    let elsewhere = format!("http://localhost:{}/elsewhere", other.rsplit(':').next().unwrap());
    let html = match target {
        "/" => page(
            "Home",
            "",
            &[
                "/a",
                "/b",
                "/a?utm_source=news",
                "/%61",
                "/a-print",
                "/private/secret",
                "/calendar?month=1",
                &elsewhere,
                "#top",
            ],
        ),
        "/a" => page("A", "", &["/a/1", "/a/2", "/"]),
        "/a-print" => page(
            "A, printable",
            "<link rel=\"canonical\" href=\"/a\">",
            &["/a/print-only"],
        ),
        "/a/1" | "/a/2" => page("A child", "", &["/a", "/"]),
        "/b" => page("B", "<link rel=\"next\" href=\"/b?page=2\">", &["/a", "/b/deep1"]),
        "/b?page=2" => page("B, page 2", "", &[]),
        "/b/deep1" => page("Deep 1", "", &["/b/deep2"]),
        "/b/deep2" => page("Deep 2", "", &["/b/deep3"]),
        "/b/deep3" => page("Deep 3", "", &[]),
        "/private/secret" => page("Secret", "", &[]),
        "/elsewhere" => page("Elsewhere", "", &[]),
        t if t.starts_with("/calendar?month=") => {
            let n: u32 = t["/calendar?month=".len()..].parse().ok()?;
            page(
                &format!("Month {n}"),
                "",
                &[&format!("/calendar?month={}", n + 1)],
            )
        }
        _ => return None,
    };
    Some(html)
}

#[derive(Clone)]
struct Site {
    log: Log,
    other: String,
    robots: &'static str,
    page_delay: Duration,
}

/// One request in progress: counted in flight until it ends, however it
/// ends (a client that hangs up drops the handler mid-way).
struct InFlight {
    log: Log,
    target: String,
    start: Instant,
}

impl InFlight {
    fn begin(log: &Log, target: &str) -> Self {
        let mut f = log.in_flight.lock().unwrap();
        f.0 += 1;
        f.1 = f.1.max(f.0);
        Self {
            log: log.clone(),
            target: target.to_owned(),
            start: Instant::now(),
        }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.log.in_flight.lock().unwrap().0 -= 1;
        self.log.hits.lock().unwrap().push(Hit {
            target: std::mem::take(&mut self.target),
            start: self.start,
            end: Instant::now(),
        });
    }
}

async fn serve(State(site): State<Site>, req: Request) -> Response {
    let target = req
        .uri()
        .path_and_query()
        .map(|p| p.as_str().to_owned())
        .unwrap_or_default();
    if target == "/favicon.ico" {
        return (axum::http::StatusCode::NOT_FOUND, "not here").into_response();
    }
    let _in_flight = InFlight::begin(&site.log, &target);
    if target == "/robots.txt" {
        return ([(header::CONTENT_TYPE, "text/plain")], site.robots).into_response();
    }
    if target == "/sitemap.xml" {
        let host = req
            .headers()
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .unwrap_or_default();
        let body = sitemap(&format!("http://{host}"));
        return ([(header::CONTENT_TYPE, "application/xml")], body).into_response();
    }
    tokio::time::sleep(site.page_delay).await;
    match site_page(&target, &site.other) {
        Some(html) => ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], html).into_response(),
        None => (axum::http::StatusCode::NOT_FOUND, "not here").into_response(),
    }
}

async fn start_site(robots: &'static str, page_delay: Duration, other: &str) -> (SocketAddr, Log) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let log = Log::default();
    let app = axum::Router::new().fallback(serve).with_state(Site {
        log: log.clone(),
        other: other.to_owned(),
        robots,
        page_delay,
    });
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (addr, log)
}

/// The site's sitemap at `origin`: a page linked from home, one only
/// the sitemap names, and one robots.txt disallows.
fn sitemap(origin: &str) -> String {
    let urls: String = [
        ("/a", ""),
        ("/sitemap-only", "<lastmod>2026-11-30</lastmod>"),
        ("/private/hidden", ""),
    ]
    .iter()
    .map(|(path, more)| format!("<url><loc>{origin}{path}</loc>{more}</url>"))
    .collect();
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
         <urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">{urls}</urlset>"
    )
}

const ROBOTS: &str = "User-agent: *\nDisallow: /private/\nCrawl-delay: 0.5\n";

/// Runs `oxwright crawl` on `start` with `args`; returns the summary and
/// the manifest and skipped lines.
async fn crawl(
    addr: SocketAddr,
    args: &[&str],
) -> (serde_json::Value, Vec<serde_json::Value>, Vec<serde_json::Value>) {
    let out = tempfile::tempdir().unwrap();
    let store = out.path().to_path_buf();
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let run = tokio::task::spawn_blocking({
        let store = store.clone();
        move || {
            Command::new(env!("CARGO_BIN_EXE_oxwright"))
                .args(["--allow-host", &addr.to_string(), "--out"])
                .arg(&store)
                .args(["crawl", "--json", &format!("http://{addr}/")])
                .args(&args)
                .output()
                .unwrap()
        }
    })
    .await
    .unwrap();
    assert!(
        run.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    let summary: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
    let read = |key: &str| -> Vec<serde_json::Value> {
        std::fs::read_to_string(store.join(summary[key].as_str().unwrap()))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    let (manifest, skipped) = (read("manifest"), read("skipped_list"));
    (summary, manifest, skipped)
}

fn paths(addr: SocketAddr, urls: impl IntoIterator<Item = String>) -> BTreeSet<String> {
    let origin = format!("http://{addr}");
    urls.into_iter()
        .map(|u| u.strip_prefix(&origin).map(str::to_owned).unwrap_or(u))
        .collect()
}

fn expected(list: &[&str]) -> BTreeSet<String> {
    list.iter().map(|s| s.to_string()).collect()
}

const TAKEN: &[&str] = &[
    "/",
    "/a",
    "/b",
    "/a-print",
    "/calendar?month=1",
    "/a/1",
    "/a/2",
    "/b/deep1",
    "/calendar?month=2",
    "/b?page=2",
    "/b/deep2",
];

/// The crawl takes exactly the pages its rules allow, each once, at
/// robots.txt's pace, and lists every URL it did not take with the reason.
async fn a_crawl_takes_exactly_what_its_rules_allow(render: &str) {
    let (other, other_log) = start_site(ROBOTS, Duration::ZERO, "127.0.0.1:1").await;
    let (addr, log) = start_site(ROBOTS, Duration::from_millis(50), &other.to_string()).await;
    let (summary, manifest, skipped) = crawl(
        addr,
        &[
            "--max-depth",
            "3",
            "--max-query-variants",
            "2",
            "--render",
            render,
        ],
    )
    .await;

    // Exactly the expected pages, each fetched once.
    let pages = log.pages();
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for hit in &pages {
        *counts.entry(hit.target.clone()).or_default() += 1;
    }
    assert_eq!(
        counts.keys().cloned().collect::<BTreeSet<_>>(),
        expected(TAKEN),
        "{counts:?}"
    );
    assert!(
        counts.values().all(|n| *n == 1),
        "a page was fetched twice: {counts:?}"
    );
    assert_eq!(log.hits().iter().filter(|h| h.target == "/robots.txt").count(), 1);
    assert!(other_log.hits().is_empty(), "the other host was visited");

    // The pace robots.txt asks for, at the server's clock.
    let mut starts: Vec<Instant> = pages.iter().map(|h| h.start).collect();
    starts.sort();
    for pair in starts.windows(2) {
        let gap = pair[1] - pair[0];
        assert!(
            gap >= Duration::from_millis(450),
            "two page loads started {gap:?} apart"
        );
    }
    assert_eq!(log.max_in_flight(), 1);

    // The manifest: each page with its depth and parent.
    assert_eq!(summary["total"], TAKEN.len());
    assert_eq!(summary["ok"], TAKEN.len(), "{summary}");
    let depths: BTreeMap<String, u64> = manifest
        .iter()
        .map(|l| {
            let path = paths(addr, [l["url"].as_str().unwrap().to_owned()])
                .pop_first()
                .unwrap();
            (path, l["depth"].as_u64().unwrap())
        })
        .collect();
    assert_eq!(depths.len(), TAKEN.len());
    assert_eq!(depths["/"], 0);
    assert_eq!(depths["/a"], 1);
    assert_eq!(depths["/a/1"], 2);
    assert_eq!(depths["/b/deep2"], 3);
    let deep2 = manifest
        .iter()
        .find(|l| l["url"].as_str().unwrap().ends_with("/b/deep2"))
        .unwrap();
    assert_eq!(deep2["parent"], format!("http://{addr}/b/deep1"));
    assert!(
        manifest
            .iter()
            .find(|l| l["depth"] == 0)
            .unwrap()
            .get("parent")
            .is_none()
    );

    // What was not taken, and why.
    let reasons: BTreeMap<String, String> = skipped
        .iter()
        .map(|l| {
            let url = l["url"].as_str().unwrap().to_owned();
            (
                paths(addr, [url]).pop_first().unwrap(),
                l["reason"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let elsewhere = format!("http://localhost:{}/elsewhere", other.port());
    let want: BTreeMap<String, String> = [
        ("/private/secret", "robots"),
        (elsewhere.as_str(), "off_host"),
        ("/b/deep3", "depth"),
        ("/calendar?month=3", "query_variants"),
        ("/a-print", "duplicate"),
        ("/a?utm_source=news", "duplicate"),
        ("/%61", "duplicate"),
    ]
    .into_iter()
    .map(|(a, b)| (a.to_owned(), b.to_owned()))
    .collect();
    assert_eq!(reasons, want, "{skipped:#?}");
    // The two other spellings of /a, each recorded once as a duplicate of it.
    let dup_a = skipped
        .iter()
        .filter(|l| l["reason"] == "duplicate" && l["same_as"] == format!("http://{addr}/a"))
        .count();
    assert_eq!(dup_a, 3, "{skipped:#?}");
    assert_eq!(summary["skipped"]["duplicate"], 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crawl_over_http_takes_exactly_what_its_rules_allow() {
    a_crawl_takes_exactly_what_its_rules_allow("never").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crawl_in_chromium_takes_exactly_what_its_rules_allow() {
    a_crawl_takes_exactly_what_its_rules_allow("always").await;
}

/// `--limit` stops taking pages at the limit and says which were left;
/// `--ignore-robots` takes the disallowed page and ignores Crawl-delay, and
/// the per-host concurrency still holds at the server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn limit_and_ignore_robots_do_what_they_say() {
    let (addr, log) = start_site(ROBOTS, Duration::from_millis(50), "127.0.0.1:1").await;
    let (summary, manifest, skipped) = crawl(addr, &["--limit", "3", "--render", "never"]).await;
    assert_eq!(log.pages().len(), 3, "{:?}", log.pages());
    assert_eq!((summary["total"].as_u64(), manifest.len()), (Some(3), 3));
    assert!(skipped.iter().any(|l| l["reason"] == "limit"), "{skipped:#?}");

    let (addr, log) = start_site(ROBOTS, Duration::from_millis(300), "127.0.0.1:1").await;
    let started = Instant::now();
    let (summary, _, skipped) = crawl(
        addr,
        &[
            "--ignore-robots",
            "--per-host-concurrency",
            "2",
            "--per-host-delay",
            "0s",
            "--max-depth",
            "2",
            "--max-query-variants",
            "1",
            "--render",
            "never",
        ],
    )
    .await;
    let targets: BTreeSet<String> = log.pages().into_iter().map(|h| h.target).collect();
    assert!(targets.contains("/private/secret"), "{targets:?}");
    assert!(!skipped.iter().any(|l| l["reason"] == "robots"));
    assert!(
        log.hits().iter().all(|h| h.target != "/robots.txt"),
        "robots.txt was read"
    );
    assert_eq!(log.max_in_flight(), 2, "the per-host limit");
    assert_eq!(summary["ok"], targets.len());
    // Not held to a Crawl-delay it was told to ignore: 0.5 s a page would take longer.
    assert!(
        log.pages().iter().map(|h| h.end).max().unwrap() - started
            < Duration::from_millis(500) * targets.len() as u32,
        "{targets:?}"
    );
}

/// A batch with `--per-host-concurrency 2` never has more than 2 page
/// loads in flight at a host, while another host in the same batch runs
/// beside it at its own limit, not after it; `--respect-robots` fails the
/// line robots.txt disallows and fetches the rest.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_keeps_each_hosts_limit_and_robots() {
    const OPEN: &str = "User-agent: *\nDisallow: /private/\n";
    let (a, a_log) = start_site(OPEN, Duration::from_millis(300), "127.0.0.1:1").await;
    let (b, b_log) = start_site(OPEN, Duration::from_millis(300), "127.0.0.1:1").await;
    let mut list = String::new();
    for n in 0..12 {
        list.push_str(&format!(
            "http://{a}/calendar?month={n}\nhttp://{b}/calendar?month={n}\n"
        ));
    }
    list.push_str(&format!("http://{a}/private/secret\n"));
    let out = tempfile::tempdir().unwrap();
    let file = out.path().join("urls.txt");
    std::fs::write(&file, list).unwrap();
    let store = out.path().join("out");
    let run = tokio::task::spawn_blocking({
        let (file, store) = (file.clone(), store.clone());
        move || {
            Command::new(env!("CARGO_BIN_EXE_oxwright"))
                .args(["--allow-host", &a.to_string(), "--allow-host", &b.to_string()])
                .args([
                    "--browsers",
                    "1",
                    "--pages-per-browser",
                    "8",
                    "--max-pages-per-browser",
                    "8",
                    "--out",
                ])
                .arg(&store)
                .args(["batch", "--json", "--render", "never", "--respect-robots"])
                .args(["--per-host-concurrency", "2"])
                .arg(&file)
                .output()
                .unwrap()
        }
    })
    .await
    .unwrap();
    let summary: serde_json::Value = serde_json::from_slice(&run.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&run.stderr)));
    assert_eq!(summary["total"], 25, "{summary}");
    assert_eq!(summary["ok"], 24, "{summary}");
    assert_eq!(summary["failed_by_kind"]["policy_denied"], 1, "{summary}");
    assert!(a_log.pages().iter().all(|h| !h.target.starts_with("/private/")));
    assert_eq!(a_log.pages().len(), 12);
    assert_eq!(b_log.pages().len(), 12);
    assert_eq!(a_log.max_in_flight(), 2, "the first host");
    assert_eq!(b_log.max_in_flight(), 2, "the second host");
    // The limit is per host: the second host's pages ran beside the
    // first's, not after them (4 in flight at once across the two).
    let first_end = |log: &Log| log.pages().iter().map(|h| h.end).min().unwrap();
    let last_start = |log: &Log| log.pages().iter().map(|h| h.start).max().unwrap();
    assert!(b_log.pages().iter().map(|h| h.start).min().unwrap() < first_end(&a_log));
    assert!(a_log.pages().iter().map(|h| h.start).min().unwrap() < first_end(&b_log));
    assert!(last_start(&a_log) - last_start(&b_log) < Duration::from_millis(900));
}

/// Runs `oxwright map --json` on the site with `args`; returns the map.
async fn map(addr: SocketAddr, args: &[&str]) -> serde_json::Value {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let run = tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_oxwright"))
            .args(["--allow-host", &addr.to_string()])
            .args(["map", "--json", &format!("http://{addr}/")])
            .args(&args)
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert!(
        run.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    serde_json::from_slice(&run.stdout).unwrap()
}

fn listed(addr: SocketAddr, map: &serde_json::Value) -> Vec<String> {
    let origin = format!("http://{addr}");
    map["urls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["url"].as_str().unwrap().trim_start_matches(&origin).to_owned())
        .collect()
}

/// `oxwright map` lists the sitemap's URLs and the start page's links,
/// each once, by the crawl's rules (robots.txt, hosts, spellings), and
/// reads only the start page; deeper maps read further, drop a page that
/// names another as canonical, and `--search` keeps what matches.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_map_lists_sitemap_urls_and_links_reading_only_what_it_must() {
    let (addr, log) = start_site(ROBOTS, Duration::ZERO, "127.0.0.1:1").await;
    let site = map(addr, &[]).await;
    let read: Vec<String> = log
        .pages()
        .into_iter()
        .map(|h| h.target)
        .filter(|t| t != "/sitemap.xml")
        .collect();
    assert_eq!(read, ["/"], "only the start page is read");
    assert_eq!(
        listed(addr, &site),
        ["/", "/a", "/sitemap-only", "/b", "/a-print", "/calendar?month=1"],
        "{site:#}"
    );
    let urls = site["urls"].as_array().unwrap();
    assert_eq!(urls[0]["title"], "Home");
    assert_eq!(urls[1]["source"], "sitemap");
    assert_eq!(urls[2]["lastmod"], "2026-11-30");
    assert_eq!(urls[3]["source"], "link");
    assert_eq!(urls[3]["title"], "/b", "a link's text names it");
    assert_eq!(site["skipped"]["robots"], 2, "{site:#}");
    assert_eq!(site["skipped"]["off_host"], 1, "{site:#}");
    assert_eq!(site["skipped"]["duplicate"], 2, "{site:#}");

    let (addr, log) = start_site(ROBOTS, Duration::ZERO, "127.0.0.1:1").await;
    let deeper = map(addr, &["--max-depth", "2", "--no-sitemap"]).await;
    let read: BTreeSet<String> = log.pages().into_iter().map(|h| h.target).collect();
    assert_eq!(
        read,
        expected(&["/", "/a", "/b", "/a-print", "/calendar?month=1"])
    );
    let all = listed(addr, &deeper);
    assert!(
        !all.contains(&"/a-print".to_owned()),
        "a canonical duplicate: {all:?}"
    );
    assert!(all.contains(&"/b?page=2".to_owned()), "rel=next: {all:?}");
    assert!(all.contains(&"/b/deep1".to_owned()), "{all:?}");
    assert!(!all.contains(&"/b/deep2".to_owned()), "too deep: {all:?}");
    assert!(!all.contains(&"/sitemap-only".to_owned()), "no sitemap: {all:?}");

    let searched = map(addr, &["--max-depth", "2", "--no-sitemap", "--search", "DEEP"]).await;
    assert_eq!(listed(addr, &searched), ["/b/deep1"]);
}
