//! Navigations on the Playwright MCP backend. The URL policy: navigations
//! are checked before they are sent, and every request the page makes goes
//! through the page's egress proxy (Chromium's `--proxy-server`, loopback
//! not bypassed), so a sub-resource on a host the policy does not allow is
//! refused and reported. A page slower than the server's navigation
//! deadline is a `timeout` that leaves the child usable. Needs
//! `@playwright/mcp` in `infra/node`.

use std::sync::Arc;
use std::time::Duration;

use oxwright_engine::{EngineErrorKind, GotoOptions, OpenOptions, Page, UrlPolicy};
use oxwright_playwright_mcp::{PlaywrightMcpEngine, PwMcpConfig};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Serves `body(port)` to every request after `delay`; returns the port.
async fn serve(body: fn(u16) -> String, delay: Duration) -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = vec![0u8; 4096];
                let _ = sock.read(&mut buf).await;
                tokio::time::sleep(delay).await;
                let body = body(port);
                let resp = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = sock.write_all(resp.as_bytes()).await;
            });
        }
    });
    port
}

/// Serves one page that loads an image from `localhost` on the same port.
async fn site() -> (url::Url, u16) {
    let port = serve(
        |port| {
            format!(
                "<!doctype html><title>Policy</title><h1>Policy</h1><img alt=x src=\"http://localhost:{port}/pixel.png\">"
            )
        },
        Duration::ZERO,
    )
    .await;
    (format!("http://127.0.0.1:{port}/").parse().unwrap(), port)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_request_of_the_page_obeys_the_policy() {
    let cfg = PwMcpConfig::default();
    assert!(cfg.cli.exists(), "run bash infra/install.sh");
    let (base, port) = site().await;
    // Only 127.0.0.1:port: the image on localhost:port is another host.
    let policy = Arc::new(UrlPolicy::allowing([format!("127.0.0.1:{port}")
        .parse()
        .unwrap()]));
    let engine = PlaywrightMcpEngine::new(cfg);
    let page = engine
        .open_page(&OpenOptions::new(policy))
        .await
        .expect("page opens");
    page.goto(&base, &GotoOptions::load(Duration::from_secs(20)))
        .await
        .expect("the allowed page loads");
    let refused = page.policy_refusals().await;
    assert!(
        refused.iter().any(|r| r.contains(&format!("localhost:{port}"))),
        "the image request went through the proxy and was refused: {refused:?}"
    );
    let err = page
        .goto(
            &format!("http://localhost:{port}/").parse().unwrap(),
            &GotoOptions::load(Duration::from_secs(20)),
        )
        .await
        .expect_err("a navigation the policy refuses is never sent");
    assert_eq!(err.kind, EngineErrorKind::PolicyDenied, "{err}");
    page.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_page_is_a_timeout_and_keeps_the_child() {
    let cfg = PwMcpConfig {
        navigation_timeout: Duration::from_secs(1),
        ..PwMcpConfig::default()
    };
    assert!(cfg.cli.exists(), "run bash infra/install.sh");
    let port = serve(
        |_| "<!doctype html><title>Slow</title>".to_string(),
        Duration::from_secs(20),
    )
    .await;
    let url: url::Url = format!("http://127.0.0.1:{port}/").parse().unwrap();
    let policy = Arc::new(UrlPolicy::allowing([url.authority().parse().unwrap()]));
    let engine = PlaywrightMcpEngine::new(cfg);
    let page = engine
        .open_page(&OpenOptions::new(policy))
        .await
        .expect("page opens");
    let err = page
        .goto(&url, &GotoOptions::load(Duration::from_millis(500)))
        .await
        .expect_err("the page never answers in time");
    assert_eq!(err.kind, EngineErrorKind::Timeout, "{err}");
    // The server answered with its own timeout: the child was not killed.
    assert_eq!(page.client().connects(), 1);
    page.title().await.expect("the page still answers");
    page.close().await;
}
