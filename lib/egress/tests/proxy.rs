//! The egress proxy against real sockets: an allowed origin, a canary that
//! counts every TCP connection it receives, tunnels, WebSocket-style
//! upgrades and a resolver that rebinds.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use oxwright_egress::{EgressLimits, EgressProxy};
use oxwright_policy::{ResolveFuture, Resolver, SystemResolver, UrlPolicy};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A listener that counts connections and answers nothing.
struct Canary {
    addr: SocketAddr,
    hits: Arc<AtomicUsize>,
}

impl Canary {
    async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let hits = Arc::new(AtomicUsize::new(0));
        let counter = hits.clone();
        tokio::spawn(async move {
            while let Ok((_s, _)) = listener.accept().await {
                counter.fetch_add(1, Ordering::SeqCst);
            }
        });
        Self { addr, hits }
    }

    fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }
}

/// An origin that answers every request on a connection with `ok` and
/// echoes upgraded bytes back after a 101.
async fn origin() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                    let n = s.read(&mut chunk).await.unwrap_or(0);
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                }
                let head = String::from_utf8_lossy(&buf).to_string();
                if head.to_ascii_lowercase().contains("upgrade: websocket") {
                    s.write_all(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
                        .await
                        .unwrap();
                    let (mut r, mut w) = s.split();
                    let _ = tokio::io::copy(&mut r, &mut w).await;
                    return;
                }
                let first = head.lines().next().unwrap_or_default().to_string();
                let body = format!("ok {first}");
                let resp = format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: keep-alive\r\nKeep-Alive: timeout=5\r\n\r\n{body}",
                    body.len()
                );
                s.write_all(resp.as_bytes()).await.unwrap();
                // Keep the connection open, as a keep-alive server would.
                let _ = s.read(&mut chunk).await;
            });
        }
    });
    addr
}

async fn exchange(proxy: SocketAddr, request: &str) -> String {
    let mut s = TcpStream::connect(proxy).await.unwrap();
    s.write_all(request.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut out))
        .await
        .expect("proxy closes the connection after one exchange")
        .unwrap();
    String::from_utf8_lossy(&out).to_string()
}

fn allowing(addr: SocketAddr) -> Arc<UrlPolicy> {
    Arc::new(UrlPolicy::allowing([addr.to_string().parse().unwrap()]))
}

#[tokio::test]
async fn plain_http_to_an_allowed_origin_is_forwarded_once_per_connection() {
    let origin = origin().await;
    let proxy = EgressProxy::start(allowing(origin)).await.unwrap();
    let resp = exchange(
        proxy.addr(),
        &format!(
            "GET http://{origin}/a/b?c=%20 HTTP/1.1\r\nHost: {origin}\r\nProxy-Connection: keep-alive\r\n\r\n"
        ),
    )
    .await;
    assert!(resp.starts_with("HTTP/1.1 200 OK\r\n"), "{resp}");
    assert!(resp.contains("\r\nConnection: close\r\n"), "{resp}");
    assert!(!resp.to_ascii_lowercase().contains("keep-alive"), "{resp}");
    assert!(resp.ends_with("ok GET /a/b?c=%20 HTTP/1.1"), "{resp}");
    assert_eq!(proxy.stats().forwarded, 1);
    assert!(proxy.drain_refusals().is_empty());
}

#[tokio::test]
async fn requests_and_tunnels_to_the_canary_are_refused_without_a_connection() {
    let origin = origin().await;
    let canary = Canary::start().await;
    let proxy = EgressProxy::start(allowing(origin)).await.unwrap();
    let b = canary.addr;
    let port = b.port();
    let requests = [
        format!("GET http://{b}/x HTTP/1.1\r\nHost: {b}\r\n\r\n"),
        format!("GET ws://{b}/ws HTTP/1.1\r\nHost: {b}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"),
        format!("CONNECT {b} HTTP/1.1\r\nHost: {b}\r\n\r\n"),
        format!("GET http://localhost:{port}/ HTTP/1.1\r\n\r\n"),
        format!("GET http://localhost.:{port}/ HTTP/1.1\r\n\r\n"),
        format!("CONNECT [::ffff:127.0.0.1]:{port} HTTP/1.1\r\n\r\n"),
        format!("CONNECT [::7f00:1]:{port} HTTP/1.1\r\n\r\n"),
        format!("CONNECT [2002:7f00:1::1]:{port} HTTP/1.1\r\n\r\n"),
        format!("GET http://[2001:0:4136:e378:8000:63bf:80ff:fffe]:{port}/ HTTP/1.1\r\n\r\n"),
        format!("POST http://{b}/form HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc"),
    ];
    for req in &requests {
        let resp = exchange(proxy.addr(), req).await;
        assert!(resp.starts_with("HTTP/1.1 403 "), "{req}\n{resp}");
    }
    let refusals = proxy.drain_refusals();
    assert_eq!(refusals.len(), requests.len(), "{refusals:?}");
    assert!(refusals[0].target.contains(&b.to_string()), "{refusals:?}");
    assert!(proxy.drain_refusals().is_empty(), "drained");
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(canary.hits(), 0, "the canary received a connection");
}

#[tokio::test]
async fn connect_tunnels_and_websocket_upgrades_relay_both_ways() {
    let origin = origin().await;
    let proxy = EgressProxy::start(allowing(origin)).await.unwrap();

    let mut s = TcpStream::connect(proxy.addr()).await.unwrap();
    s.write_all(format!("CONNECT {origin} HTTP/1.1\r\nHost: {origin}\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut buf = [0u8; 39];
    s.read_exact(&mut buf).await.unwrap();
    assert_eq!(&buf, b"HTTP/1.1 200 Connection Established\r\n\r\n");
    s.write_all(b"GET /t HTTP/1.1\r\nHost: x\r\n\r\n").await.unwrap();
    let mut resp = vec![0u8; 512];
    let n = s.read(&mut resp).await.unwrap();
    assert!(
        String::from_utf8_lossy(&resp[..n]).contains("ok GET /t"),
        "tunnel relays"
    );

    let mut ws = TcpStream::connect(proxy.addr()).await.unwrap();
    ws.write_all(
        format!("GET ws://{origin}/chat HTTP/1.1\r\nHost: {origin}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
            .as_bytes(),
    )
    .await
    .unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        ws.read_exact(&mut byte).await.unwrap();
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head);
    assert!(head.starts_with("HTTP/1.1 101 "), "{head}");
    assert!(head.contains("Connection: Upgrade"), "{head}");
    ws.write_all(b"frame").await.unwrap();
    let mut echo = [0u8; 5];
    ws.read_exact(&mut echo).await.unwrap();
    assert_eq!(&echo, b"frame");
}

#[tokio::test]
async fn oversized_heads_are_refused() {
    let origin = origin().await;
    let limits = EgressLimits {
        max_head_bytes: 1024,
        ..EgressLimits::default()
    };
    let proxy = EgressProxy::with_resolver(allowing(origin), Arc::new(SystemResolver), limits)
        .await
        .unwrap();
    let big = "a".repeat(4096);
    let resp = exchange(
        proxy.addr(),
        &format!("GET http://{origin}/ HTTP/1.1\r\nX-Big: {big}\r\n\r\n"),
    )
    .await;
    assert!(resp.starts_with("HTTP/1.1 431 "), "{resp}");
}

/// Answers a fixed sequence of addresses, one per question.
#[derive(Debug)]
struct Rebinding {
    answers: std::sync::Mutex<Vec<IpAddr>>,
    asked: AtomicUsize,
}

impl Resolver for Rebinding {
    fn resolve<'a>(&'a self, _host: &'a str, _port: u16) -> ResolveFuture<'a> {
        self.asked.fetch_add(1, Ordering::SeqCst);
        let mut answers = self.answers.lock().unwrap();
        let next = if answers.len() > 1 {
            answers.remove(0)
        } else {
            answers[0]
        };
        Box::pin(async move { Ok(vec![next]) })
    }
}

#[tokio::test]
async fn a_rebinding_name_never_reaches_loopback() {
    let canary = Canary::start().await;
    // First a public-looking address (nothing answers there offline), then loopback.
    let resolver = Arc::new(Rebinding {
        answers: std::sync::Mutex::new(vec![
            "93.184.215.14".parse().unwrap(),
            "127.0.0.1".parse().unwrap(),
        ]),
        asked: AtomicUsize::new(0),
    });
    let policy = Arc::new(UrlPolicy::default());
    let limits = EgressLimits {
        connect_timeout: Duration::from_millis(300),
        ..EgressLimits::default()
    };
    let proxy = EgressProxy::with_resolver(policy.clone(), resolver.clone(), limits)
        .await
        .unwrap();
    let url = format!("http://rebind.test:{}/", canary.addr.port());
    // Where the URL enters, the name looks public...
    policy
        .resolve_checked(&url.parse().unwrap(), resolver.as_ref())
        .await
        .expect("first answer is public");
    // ...and where the bytes leave, the same name now says loopback: the
    // proxy judges the answer it connects to, so it refuses.
    for req in [
        format!("GET {url} HTTP/1.1\r\nHost: rebind.test\r\n\r\n"),
        format!("CONNECT rebind.test:{} HTTP/1.1\r\n\r\n", canary.addr.port()),
    ] {
        let resp = exchange(proxy.addr(), &req).await;
        assert!(resp.starts_with("HTTP/1.1 403 "), "{req}\n{resp}");
        assert!(resp.contains("127.0.0.1"), "{resp}");
    }
    assert_eq!(
        resolver.asked.load(Ordering::SeqCst),
        3,
        "one resolution per request"
    );
    assert_eq!(proxy.drain_refusals().len(), 2);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(canary.hits(), 0, "loopback was reached");
}

#[tokio::test]
async fn a_public_answer_is_the_address_connected_to() {
    // The resolver says "the origin"; the proxy must connect there and
    // nowhere else, even though the name itself means nothing to the system.
    let origin = origin().await;
    let resolver = Arc::new(Rebinding {
        answers: std::sync::Mutex::new(vec![origin.ip()]),
        asked: AtomicUsize::new(0),
    });
    let policy = Arc::new(UrlPolicy::allowing(["named.test".parse().unwrap()]));
    let proxy = EgressProxy::with_resolver(policy, resolver.clone(), EgressLimits::default())
        .await
        .unwrap();
    let resp = exchange(
        proxy.addr(),
        &format!(
            "GET http://named.test:{}/n HTTP/1.1\r\nHost: named.test\r\n\r\n",
            origin.port()
        ),
    )
    .await;
    assert!(resp.contains("ok GET /n"), "{resp}");
    assert_eq!(resolver.asked.load(Ordering::SeqCst), 1);
}

/// The proxy keeps how far each answer has come: the bytes of a head sent
/// one at a time while it is not whole, then the head's length and the
/// body's bytes, and the end once the exchange is over.
#[tokio::test]
async fn how_far_an_answer_has_come_is_kept() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let origin = listener.local_addr().unwrap();
    let (go_on, mut resume) = tokio::sync::mpsc::channel::<()>(1);
    tokio::spawn(async move {
        let (mut s, _) = listener.accept().await.unwrap();
        let mut chunk = [0u8; 4096];
        let _ = s.read(&mut chunk).await;
        for b in b"HTTP/1.1 2" {
            s.write_all(&[*b]).await.unwrap();
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        resume.recv().await;
        s.write_all(b"00 OK\r\nContent-Length: 10\r\n\r\n12345")
            .await
            .unwrap();
        resume.recv().await;
        s.write_all(b"67890").await.unwrap();
    });
    let proxy = EgressProxy::start(allowing(origin)).await.unwrap();
    let since = std::time::Instant::now();
    let url: url::Url = format!("http://{origin}/slow#part").parse().unwrap();
    let mut client = TcpStream::connect(proxy.addr()).await.unwrap();
    client
        .write_all(format!("GET http://{origin}/slow HTTP/1.1\r\nHost: {origin}\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let until = |want: u64| {
        let proxy = &proxy;
        let url = &url;
        async move {
            for _ in 0..200 {
                if let Some(seen) = proxy.progress(url, since)
                    && seen.received >= want
                {
                    return seen;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            panic!("never reached {want} bytes: {:?}", proxy.progress(url, since));
        }
    };
    let seen = until(10).await;
    assert_eq!(
        (seen.received, seen.head_bytes, seen.tunnel, seen.ended),
        (10, None, false, false)
    );
    go_on.send(()).await.unwrap();
    let head = "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n".len() as u64;
    let seen = until(head + 5).await;
    assert_eq!((seen.received, seen.head_bytes), (head + 5, Some(head)));
    assert!(!seen.ended);
    go_on.send(()).await.unwrap();
    let mut out = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), client.read_to_end(&mut out))
        .await
        .unwrap()
        .unwrap();
    assert!(out.ends_with(b"1234567890"));
    let seen = until(head + 10).await;
    for _ in 0..100 {
        if proxy.progress(&url, since).is_some_and(|p| p.ended) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(proxy.progress(&url, since).expect("kept").ended, "{seen:?}");
    assert_eq!(
        proxy.progress(&url, std::time::Instant::now()),
        None,
        "not begun since"
    );
}
