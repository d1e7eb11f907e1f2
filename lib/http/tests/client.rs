//! The HTTP client against small servers on loopback: names resolve once
//! and are judged (a name that resolves to a private address is refused,
//! the client never asks again), bodies are capped, redirects bounded, and
//! a server that does not speak HTTP is a connection failure.

use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use oxwright_http::{DocumentRequest, HttpClient};
use oxwright_jobs::{ErrorKind, RequestShape};
use oxwright_policy::{ResolveFuture, Resolver, UrlPolicy};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use url::Url;

/// Answers every name with loopback, counting the questions.
#[derive(Debug, Default)]
struct Loopback(AtomicUsize);

impl Resolver for Loopback {
    fn resolve<'a>(&'a self, _host: &'a str, _port: u16) -> ResolveFuture<'a> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Box::pin(async { Ok(vec![IpAddr::from([127, 0, 0, 1])]) })
    }
}

/// Serves `reply(request)` to every connection; returns the port.
async fn serve(reply: impl Fn(&str) -> Vec<u8> + Send + Sync + 'static) -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let reply = Arc::new(reply);
    tokio::spawn(async move {
        while let Ok((mut conn, _)) = listener.accept().await {
            let reply = reply.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 8192];
                let n = conn.read(&mut buf).await.unwrap_or(0);
                let req = String::from_utf8_lossy(&buf[..n]).to_string();
                let _ = conn.write_all(&reply(&req)).await;
                let _ = conn.shutdown().await;
            });
        }
    });
    port
}

fn ok(body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

async fn get(
    client: &HttpClient,
    policy: &UrlPolicy,
    url: &str,
    max: usize,
) -> Result<oxwright_http::Document, oxwright_jobs::JobError> {
    let url = Url::parse(url).unwrap();
    let shape = RequestShape::default();
    client
        .get(&DocumentRequest::new(
            &url,
            policy,
            &shape,
            Duration::from_secs(5),
            max,
        ))
        .await
        .map_err(oxwright_jobs::JobError::from)
}

#[tokio::test]
async fn a_name_is_resolved_once_judged_and_dialled_at_that_address() {
    let port = serve(|_| ok("<p>hi</p>")).await;
    let resolver = Arc::new(Loopback::default());
    let client = HttpClient::with_resolver(resolver.clone());
    // A public-looking name that resolves to loopback is refused…
    let err = get(
        &client,
        &UrlPolicy::default(),
        &format!("http://rebind.test:{port}/"),
        1000,
    )
    .await
    .unwrap_err();
    assert_eq!(err.kind, ErrorKind::PolicyDenied, "{err}");
    // …and allowed where the policy exempts the host, at the judged address, asked once.
    let policy = UrlPolicy::allowing([format!("rebind.test:{port}").parse().unwrap()]);
    let before = resolver.0.load(Ordering::SeqCst);
    let doc = get(&client, &policy, &format!("http://rebind.test:{port}/"), 1000)
        .await
        .unwrap();
    assert_eq!(doc.text(), "<p>hi</p>");
    assert_eq!(resolver.0.load(Ordering::SeqCst), before + 1);
}

#[tokio::test]
async fn bodies_are_capped_and_redirects_bounded() {
    let big = serve(|_| ok(&"x".repeat(5000))).await;
    let client = HttpClient::new();
    let policy = UrlPolicy {
        allow_private: true,
        allow_hosts: Vec::new(),
    };
    let err = get(&client, &policy, &format!("http://127.0.0.1:{big}/"), 1000)
        .await
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::ResourceLimit, "{err}");
    let looping = serve(|_| {
        b"HTTP/1.1 302 Found\r\nlocation: /again\r\ncontent-length: 0\r\nconnection: close\r\n\r\n".to_vec()
    })
    .await;
    let err = get(&client, &policy, &format!("http://127.0.0.1:{looping}/"), 1000)
        .await
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::Connection, "{err}");
    assert!(err.message.contains("more than 20 redirects"), "{err}");
}

#[tokio::test]
async fn a_server_that_does_not_speak_http_is_a_connection_failure() {
    let garbage = serve(|_| b"SSH-2.0-OpenSSH_9.2\r\n\r\n".to_vec()).await;
    let silent = serve(|_| Vec::new()).await;
    let client = HttpClient::new();
    let policy = UrlPolicy {
        allow_private: true,
        allow_hosts: Vec::new(),
    };
    for port in [garbage, silent] {
        let err = get(&client, &policy, &format!("http://127.0.0.1:{port}/"), 1000)
            .await
            .unwrap_err();
        assert_eq!(err.kind, ErrorKind::Connection, "{err}");
        assert_eq!(err.status, None, "no status is made up: {err}");
    }
}
