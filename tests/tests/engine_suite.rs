//! The shared engine suite (`oxwright_engine::test_suite`) on Chromium: the
//! suite's pages served on loopback by a small HTTP server, a second origin
//! (`localhost` on the same port) for cross-origin frames, and fresh pages
//! from a warm pool for every case.

use std::collections::HashMap;
use std::sync::Arc;

use oxwright_browser::{BrowserPool, UrlPolicy};
use oxwright_engine::test_suite::{self, Capabilities};
use oxwright_engine::{BrowserEngine, OpenOptions, Page};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

mod common;

/// Serves `pages` on `listener` until the test ends; unknown paths get 404.
fn serve(listener: tokio::net::TcpListener, pages: HashMap<String, String>) {
    let pages = Arc::new(pages);
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            let pages = pages.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 8192];
                let mut read = 0;
                while !buf[..read].windows(4).any(|w| w == b"\r\n\r\n") && read < buf.len() {
                    match sock.read(&mut buf[read..]).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => read += n,
                    }
                }
                let head = String::from_utf8_lossy(&buf[..read]);
                let path = head.split_whitespace().nth(1).unwrap_or("/");
                let path = path.split('?').next().unwrap_or("/");
                let (status, body) = match pages.get(path) {
                    Some(html) => ("200 OK", html.clone()),
                    None => ("404 Not Found", "<h1>Not found</h1>".to_string()),
                };
                let resp = format!(
                    "HTTP/1.1 {status}\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = sock.write_all(resp.as_bytes()).await;
                let _ = sock.shutdown().await;
            });
        }
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chromium_page_passes_the_engine_suite() {
    // Bind first: the frames page names the second origin with this port.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let other = format!("http://localhost:{}", addr.port());
    serve(listener, test_suite::pages(&other).into_iter().collect());
    let base: url::Url = format!("http://127.0.0.1:{}/", addr.port()).parse().unwrap();
    let policy = Arc::new(UrlPolicy::allowing([
        format!("127.0.0.1:{}", addr.port()).parse().unwrap(),
        format!("localhost:{}", addr.port()).parse().unwrap(),
    ]));
    let pool = BrowserPool::start(common::pool_config())
        .await
        .expect("chromium starts (apt-get install chromium)");
    let engine = pool.clone();
    let open = move || {
        let (engine, policy) = (engine.clone(), policy.clone());
        Box::pin(async move {
            engine
                .open(&OpenOptions::new(policy))
                .await
                .expect("a page opens")
        }) as std::pin::Pin<Box<dyn std::future::Future<Output = Box<dyn Page>> + Send>>
    };
    let caps = Capabilities {
        scripts: true,
        evaluate: true,
        iframes: true,
        // Out-of-process frames need their own DevTools sessions: not yet.
        cross_origin_iframes: false,
    };
    test_suite::run(&open, &base, caps).await;
    pool.shutdown().await;
}
