//! The server child's life: a process holding a page is SIGKILLed and no
//! node or Chromium of it survives; a child that dies under a page is
//! replaced on the next call (the state machine reconnects); a browser
//! that dies under the first navigation is launched again; a clean close
//! leaves nothing behind. Needs `@playwright/mcp` in `infra/node` (run
//! `bash infra/install.sh`); the tests fail when it is missing.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use oxwright_engine::{GotoOptions, OpenOptions, Page, UrlPolicy};
use oxwright_playwright_mcp::{ConnState, PlaywrightMcpEngine, PwMcpConfig};

/// Set in the child process the SIGKILL test starts.
const HOLDER_ENV: &str = "OXWRIGHT_PWMCP_HOLDER";

fn config() -> PwMcpConfig {
    let cfg = PwMcpConfig {
        backoff: vec![
            Duration::from_millis(200),
            Duration::from_millis(400),
            Duration::from_millis(800),
        ],
        ..PwMcpConfig::default()
    };
    assert!(
        cfg.cli.exists(),
        "@playwright/mcp is not installed at {} (run bash infra/install.sh)",
        cfg.cli.display()
    );
    cfg
}

fn open_options() -> OpenOptions {
    OpenOptions::new(Arc::new(UrlPolicy::default()))
}

/// Returns the pids whose parent is `parent`.
fn children_of(parent: i32) -> Vec<i32> {
    std::fs::read_dir("/proc")
        .expect("/proc")
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|s| {
                    let rest = s[s.rfind(')')? + 2..].to_string();
                    rest.split_whitespace().nth(1)?.parse::<i32>().ok()
                })
                == Some(parent)
        })
        .collect()
}

/// Says whether `pid` runs (a zombie does not).
fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => s
            .rfind(')')
            .and_then(|i| s[i + 2..].chars().next())
            .is_some_and(|state| state != 'Z' && state != 'X'),
        Err(_) => false,
    }
}

fn comm(pid: i32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// Waits until none of `pids` runs; returns those still running.
fn wait_gone(pids: &[i32], limit: Duration) -> Vec<i32> {
    let end = Instant::now() + limit;
    loop {
        let left: Vec<i32> = pids.iter().copied().filter(|p| alive(*p)).collect();
        if left.is_empty() || Instant::now() >= end {
            return left;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The node pid and the Chromium pids under it, once Chromium runs.
fn tree(node: i32) -> Vec<i32> {
    let mut all = vec![node];
    let mut frontier = vec![node];
    while let Some(p) = frontier.pop() {
        for c in children_of(p) {
            all.push(c);
            frontier.push(c);
        }
    }
    all
}

/// The process the SIGKILL test starts and kills: it opens a page, prints
/// its node pid and waits to be killed. Run on its own it returns at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn holder_process_for_the_sigkill_test() {
    if std::env::var_os(HOLDER_ENV).is_none() {
        return;
    }
    let engine = PlaywrightMcpEngine::new(config());
    let page = engine.open_page(&open_options()).await.expect("page opens");
    page.goto(
        &"about:blank".parse().unwrap(),
        &GotoOptions::load(Duration::from_secs(20)),
    )
    .await
    .ok();
    // A call makes sure Chromium runs before the parent looks.
    page.title().await.expect("title");
    println!("node-pid {}", page.client().pid());
    tokio::time::sleep(Duration::from_secs(120)).await;
}

#[test]
fn no_node_or_chromium_survives_a_sigkill_of_the_client() {
    let exe = std::env::current_exe().expect("test binary");
    let mut holder = Command::new(exe)
        .args(["--exact", "holder_process_for_the_sigkill_test", "--nocapture"])
        .env(HOLDER_ENV, "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("holder starts");
    let out = BufReader::new(holder.stdout.take().expect("stdout"));
    let mut node = 0;
    for line in out.lines() {
        let line = line.expect("holder output");
        if let Some(pid) = line.strip_prefix("node-pid ") {
            node = pid.trim().parse().expect("pid");
            break;
        }
    }
    assert!(node > 0, "the holder printed no node pid");
    let pids = tree(node);
    let names: Vec<String> = pids.iter().map(|p| comm(*p)).collect();
    assert!(
        names.iter().any(|n| n.contains("chrom")),
        "chromium runs under node: {names:?}"
    );
    // SAFETY: kills the child this test started.
    unsafe {
        libc::kill(holder.id() as i32, libc::SIGKILL);
    }
    let _ = holder.wait();
    let left = wait_gone(&pids, Duration::from_secs(10));
    let left: Vec<(i32, String)> = left.into_iter().map(|p| (p, comm(p))).collect();
    assert!(left.is_empty(), "survivors after SIGKILL: {left:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_child_is_replaced_and_a_closed_page_leaves_nothing() {
    let engine = PlaywrightMcpEngine::new(config());
    let page = engine.open_page(&open_options()).await.expect("page opens");
    assert_eq!(page.client().state(), ConnState::Ready);
    page.title().await.expect("title");
    let first = page.client().pid();
    let first_tree = tree(first);
    // SAFETY: kills the node process group this page's client spawned.
    unsafe {
        libc::kill(-first, libc::SIGKILL);
    }
    assert!(wait_gone(&first_tree, Duration::from_secs(10)).is_empty());
    // The next safe call finds the child gone and reconnects.
    let title = page.title().await;
    // `title` is an evaluate (an action-class call): it reports the crash;
    // a snapshot, safe to repeat, reconnects and succeeds.
    if let Err(e) = &title {
        assert!(e.is_retryable() || e.is_fatal(), "{e}");
    }
    page.snapshot(&Default::default())
        .await
        .expect("a snapshot after the reconnect");
    assert_eq!(page.client().connects(), 2);
    let second = page.client().pid();
    assert!(second > 0 && second != first);
    let second_tree = tree(second);
    page.close().await;
    drop(page);
    let left = wait_gone(&second_tree, Duration::from_secs(10));
    assert!(left.is_empty(), "left after close: {left:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_dies_at_start_is_retried_with_backoff_then_unavailable() {
    let dir = tempfile::tempdir().expect("tmp");
    let cli = dir.path().join("dies.js");
    std::fs::write(&cli, "process.exit(3);\n").expect("script");
    let cfg = PwMcpConfig {
        cli,
        backoff: vec![
            Duration::from_millis(100),
            Duration::from_millis(200),
            Duration::from_millis(400),
        ],
        ..PwMcpConfig::default()
    };
    let client = oxwright_playwright_mcp::McpClient::new(cfg, Vec::new(), dir.path());
    let started = Instant::now();
    let err = client.connect().await.expect_err("the server never answers");
    assert_eq!(err.kind, oxwright_engine::EngineErrorKind::Unavailable, "{err}");
    assert_eq!(client.connects(), 4, "one try and three retries");
    assert!(
        started.elapsed() >= Duration::from_millis(700),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(client.state(), ConnState::Disconnected);
    // A missing server is a setup error, not retried.
    let missing = oxwright_playwright_mcp::McpClient::new(
        PwMcpConfig {
            cli: dir.path().join("no-such-cli.js"),
            ..PwMcpConfig::default()
        },
        Vec::new(),
        dir.path(),
    );
    let err = missing.connect().await.expect_err("not installed");
    assert_eq!(err.kind, oxwright_engine::EngineErrorKind::Misconfigured, "{err}");
    assert_eq!(missing.connects(), 0);
}

/// Serves a page whose first request is answered only after `hold`; says
/// on `arrived` when that request is in.
async fn held_page(hold: Duration, arrived: Arc<tokio::sync::Notify>) -> url::Url {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    tokio::spawn(async move {
        let mut first = true;
        while let Ok((mut sock, _)) = listener.accept().await {
            let wait = if std::mem::take(&mut first) {
                hold
            } else {
                Duration::ZERO
            };
            let arrived = arrived.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 4096];
                let _ = sock.read(&mut buf).await;
                arrived.notify_one();
                tokio::time::sleep(wait).await;
                let body = "<title>Relaunched</title><p>here</p>";
                let resp = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = sock.write_all(resp.as_bytes()).await;
            });
        }
    });
    format!("http://127.0.0.1:{port}/").parse().expect("url")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_browser_that_dies_under_the_first_navigation_is_launched_again() {
    let arrived = Arc::new(tokio::sync::Notify::new());
    let url = held_page(Duration::from_secs(3), arrived.clone()).await;
    let policy = Arc::new(UrlPolicy::allowing([url.authority().parse().unwrap()]));
    let engine = PlaywrightMcpEngine::new(config());
    let page = engine
        .open_page(&OpenOptions::new(policy))
        .await
        .expect("page opens");
    let node = page.client().pid();
    // Chromium dies while the first navigation waits for its document, as
    // a launch that fails under load does.
    let killer = tokio::spawn(async move {
        arrived.notified().await;
        let chromium: Vec<i32> = tree(node)
            .into_iter()
            .filter(|p| comm(*p).contains("chrom"))
            .collect();
        for pid in &chromium {
            // SAFETY: kills the Chromium this test's page launched.
            unsafe {
                libc::kill(*pid, libc::SIGKILL);
            }
        }
        chromium.len()
    });
    let nav = page
        .goto(&url, &GotoOptions::load(Duration::from_secs(20)))
        .await
        .expect("the navigation is asked again of a new browser");
    assert!(killer.await.expect("killer") > 0, "chromium ran under node");
    assert_eq!(nav.final_url, url.as_str());
    assert_eq!(page.title().await.expect("title"), "Relaunched");
}
