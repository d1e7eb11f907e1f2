//! One client connection: read the request head, judge the target with one
//! resolution, connect to the judged address, then relay. Every connection
//! carries exactly one request (`Connection: close` both ways), so a
//! request for another host never rides on a connection judged for this one.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use url::Url;

use std::sync::Arc;

use crate::progress::{Counted, Ending, Exchange};
use crate::pump::{Activity, pump};
use crate::{Shared, Upstream};

/// The parts of a request head the proxy needs, owned.
struct RequestHead {
    method: String,
    target: String,
    headers: Vec<(String, Vec<u8>)>,
    len: usize,
}

impl RequestHead {
    fn header(&self, name: &str) -> Option<&[u8]> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_slice())
    }

    fn header_has_token(&self, name: &str, token: &str) -> bool {
        self.headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case(name))
            .any(|(_, v)| {
                String::from_utf8_lossy(v)
                    .split(',')
                    .any(|t| t.trim().eq_ignore_ascii_case(token))
            })
    }
}

/// What the relay of one request needs to know of it.
struct Request<'a> {
    body: Body,
    /// Request body bytes already sent up with the head.
    sent: u64,
    head_only: bool,
    exchange: &'a Exchange,
}

/// How the request body is delimited.
enum Body {
    None,
    Length(u64),
    /// Chunked bodies and upgraded connections: relayed until the client stops.
    Stream,
}

/// Serves one client connection to its end.
pub(crate) async fn serve(mut client: TcpStream, shared: &Shared) {
    let _ = client.set_nodelay(true);
    let limits = &shared.limits;
    let mut buf = Vec::with_capacity(4096);
    let head = match tokio::time::timeout(
        limits.head_timeout,
        read_request(&mut client, &mut buf, limits.max_head_bytes),
    )
    .await
    {
        Ok(Ok(head)) => head,
        Ok(Err(HeadError::Closed)) => return,
        Ok(Err(HeadError::TooLarge)) => {
            return respond(
                &mut client,
                431,
                "Request Header Fields Too Large",
                "request head too large",
            )
            .await;
        }
        Ok(Err(HeadError::Malformed)) => {
            return respond(&mut client, 400, "Bad Request", "malformed request").await;
        }
        Err(_) => return respond(&mut client, 408, "Request Timeout", "request head timed out").await,
    };
    let leftover = buf.split_off(head.len);
    if head.method.eq_ignore_ascii_case("CONNECT") {
        tunnel(client, shared, &head, leftover).await;
    } else {
        forward(client, shared, head, leftover).await;
    }
}

enum HeadError {
    Closed,
    TooLarge,
    Malformed,
}

/// Reads from `stream` into `buf` until a whole head is there; returns the
/// head's length in `buf`.
async fn read_until_head<S: AsyncRead + Unpin>(
    stream: &mut S,
    buf: &mut Vec<u8>,
    max: usize,
    complete: impl Fn(&[u8]) -> Result<Option<usize>, HeadError>,
) -> Result<usize, HeadError> {
    let mut chunk = [0u8; 8192];
    loop {
        if !buf.is_empty()
            && let Some(len) = complete(buf)?
        {
            return if len > max {
                Err(HeadError::TooLarge)
            } else {
                Ok(len)
            };
        }
        if buf.len() >= max {
            return Err(HeadError::TooLarge);
        }
        let n = stream.read(&mut chunk).await.map_err(|_| HeadError::Closed)?;
        if n == 0 {
            return Err(HeadError::Closed);
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// Whether a parse attempt found a whole head (its length), needs more
/// bytes, or cannot be one.
fn head_status(parsed: httparse::Result<usize>) -> Result<Option<usize>, HeadError> {
    match parsed {
        Ok(httparse::Status::Complete(n)) => Ok(Some(n)),
        Ok(httparse::Status::Partial) => Ok(None),
        Err(httparse::Error::TooManyHeaders) => Err(HeadError::TooLarge),
        Err(_) => Err(HeadError::Malformed),
    }
}

async fn read_request<S: AsyncRead + Unpin>(
    stream: &mut S,
    buf: &mut Vec<u8>,
    max: usize,
) -> Result<RequestHead, HeadError> {
    let len = read_until_head(stream, buf, max, |b| {
        let mut headers = [httparse::EMPTY_HEADER; 128];
        head_status(httparse::Request::new(&mut headers).parse(b))
    })
    .await?;
    let mut headers = [httparse::EMPTY_HEADER; 128];
    let mut req = httparse::Request::new(&mut headers);
    req.parse(&buf[..len]).map_err(|_| HeadError::Malformed)?;
    Ok(RequestHead {
        method: req.method.unwrap_or_default().to_string(),
        target: req.path.unwrap_or_default().to_string(),
        headers: req
            .headers
            .iter()
            .map(|h| (h.name.to_string(), h.value.to_vec()))
            .collect(),
        len,
    })
}

/// The header naming the network error behind a proxy's own error answer,
/// in Chromium's terms (`net::ERR_CONNECTION_REFUSED`), so the browser
/// crate can report the failure as the network error it is.
pub const NET_ERROR_HEADER: &str = "X-Oxwright-Egress-Error";

/// Writes a small plain-text answer and closes.
async fn respond(client: &mut TcpStream, code: u16, phrase: &str, body: &str) {
    respond_net(client, code, phrase, body, None).await;
}

/// Returns Chromium's name for a failed connect.
fn net_error(err: &std::io::Error) -> &'static str {
    match err.kind() {
        std::io::ErrorKind::ConnectionRefused => "net::ERR_CONNECTION_REFUSED",
        std::io::ErrorKind::TimedOut => "net::ERR_CONNECTION_TIMED_OUT",
        std::io::ErrorKind::ConnectionReset => "net::ERR_CONNECTION_RESET",
        std::io::ErrorKind::HostUnreachable | std::io::ErrorKind::NetworkUnreachable => {
            "net::ERR_ADDRESS_UNREACHABLE"
        }
        std::io::ErrorKind::PermissionDenied => "net::ERR_PROXY_AUTH_UNSUPPORTED",
        _ => "net::ERR_CONNECTION_FAILED",
    }
}

/// Writes a small plain-text answer, naming the network error if any, and closes.
async fn respond_net(client: &mut TcpStream, code: u16, phrase: &str, body: &str, net: Option<&str>) {
    let _ = client.write_all(&answer(code, phrase, body, net)).await;
    let _ = client.shutdown().await;
}

/// A small plain-text answer of the egress itself, naming the network
/// error if any.
fn answer(code: u16, phrase: &str, body: &str, net: Option<&str>) -> Vec<u8> {
    let body = format!("oxwright egress: {body}\n");
    let net = net
        .map(|n| format!("{NET_ERROR_HEADER}: {n}\r\n"))
        .unwrap_or_default();
    let head = format!(
        "HTTP/1.1 {code} {phrase}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\n\
         Connection: close\r\nProxy-Connection: close\r\nX-Oxwright-Egress: {}\r\n{net}\r\n",
        body.len(),
        if code == 403 { "refused" } else { "error" },
    );
    let mut out = head.into_bytes();
    out.extend_from_slice(body.as_bytes());
    out
}

/// How a judged connection reaches its target.
enum Route {
    /// Straight to it, or through a tunnel of the upstream proxy.
    Direct(TcpStream),
    /// To an HTTP upstream proxy that takes the request in absolute form.
    Proxy(TcpStream, Arc<Upstream>),
}

/// Resolves once, judges, and connects to the first judged address that
/// answers. Answers the client itself on refusal or failure.
/// `plain` is a plain-HTTP request, which an HTTP upstream proxy takes
/// whole rather than through a tunnel.
async fn judge_and_connect(
    client: &mut TcpStream,
    shared: &Shared,
    url: &Url,
    shown: &str,
    plain: bool,
) -> Option<Route> {
    let policy = shared.policy();
    let addrs = match policy.resolve_checked(url, shared.resolver.as_ref()).await {
        Ok(addrs) => addrs,
        Err(err) => {
            let refused = matches!(
                err,
                oxwright_policy::PolicyError::PrivateAddress { .. }
                    | oxwright_policy::PolicyError::Scheme { .. }
            );
            if refused {
                respond(client, 403, "Forbidden", &err.to_string()).await;
                shared.refuse(shown.to_string(), err);
            } else {
                let net = match err {
                    oxwright_policy::PolicyError::Resolve { .. } => "net::ERR_NAME_NOT_RESOLVED",
                    _ => "net::ERR_INVALID_URL",
                };
                respond_net(client, 502, "Bad Gateway", &err.to_string(), Some(net)).await;
            }
            return None;
        }
    };
    shared.reach(url);
    let connected = match shared.upstream() {
        Some(upstream) if plain && upstream.takes_plain_http() => upstream
            .open(shared.limits.connect_timeout)
            .await
            .map(|stream| Route::Proxy(stream, upstream)),
        Some(upstream) => {
            let host = url
                .host_str()
                .unwrap_or_default()
                .trim_start_matches('[')
                .trim_end_matches(']');
            let port = url.port_or_known_default().unwrap_or(80);
            upstream
                .connect(host, port, &addrs, shared.limits.connect_timeout)
                .await
                .map(Route::Direct)
        }
        None => connect_any(&addrs, shared.limits.connect_timeout)
            .await
            .map(Route::Direct),
    };
    match connected {
        Ok(route) => {
            shared
                .forwarded
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Some(route)
        }
        Err(err) => {
            tracing::debug!(target = %shown, error = %err, "egress connect failed");
            let body = format!("connect {shown}: {err}");
            respond_net(client, 502, "Bad Gateway", &body, Some(net_error(&err))).await;
            None
        }
    }
}

async fn connect_any(addrs: &[SocketAddr], limit: Duration) -> std::io::Result<TcpStream> {
    let mut last = std::io::Error::other("no addresses");
    for addr in addrs {
        match tokio::time::timeout(limit, TcpStream::connect(addr)).await {
            Ok(Ok(stream)) => {
                let _ = stream.set_nodelay(true);
                return Ok(stream);
            }
            Ok(Err(err)) => last = err,
            Err(_) => last = std::io::Error::new(std::io::ErrorKind::TimedOut, format!("{addr} timed out")),
        }
    }
    Err(last)
}

/// Splits `host:port` (IPv6 in brackets) into an https URL for the policy;
/// `None` without an explicit port.
fn authority_url(authority: &str) -> Option<Url> {
    let (host, port) = authority.rsplit_once(':')?;
    if host.is_empty() || (host.ends_with(':') && !host.starts_with('[')) {
        return None;
    }
    let port: u16 = port.parse().ok()?;
    let url = Url::parse(&format!("https://{host}:{port}/")).ok()?;
    (url.port_or_known_default() == Some(port)).then_some(url)
}

/// `CONNECT host:port`: a tunnel for TLS and `wss`.
async fn tunnel(mut client: TcpStream, shared: &Shared, head: &RequestHead, leftover: Vec<u8>) {
    let Some(url) = authority_url(&head.target) else {
        return respond(&mut client, 400, "Bad Request", "CONNECT needs host:port").await;
    };
    let Some(Route::Direct(mut upstream)) =
        judge_and_connect(&mut client, shared, &url, &head.target, false).await
    else {
        return;
    };
    if client
        .write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n")
        .await
        .is_err()
    {
        return;
    }
    if !leftover.is_empty() && upstream.write_all(&leftover).await.is_err() {
        return;
    }
    let key = crate::progress::key_of(&url).unwrap_or_else(|| head.target.to_ascii_lowercase());
    let exchange = shared.exchanges.begin(key, true);
    let _ending = Ending(exchange.clone());
    splice(client, upstream, shared.limits.idle_timeout, &exchange).await;
}

/// Relays both ways until both sides finished or the connection idles.
async fn splice(client: TcpStream, upstream: TcpStream, idle: Duration, exchange: &Exchange) {
    let activity = Activity::new();
    let (mut cr, mut cw) = client.into_split();
    let (mut ur, mut uw) = upstream.into_split();
    let mut ur = Counted {
        inner: &mut ur,
        exchange,
    };
    let up = async {
        let _ = pump(&mut cr, &mut uw, &activity, idle, None).await;
        let _ = uw.shutdown().await;
    };
    let down = async {
        let _ = pump(&mut ur, &mut cw, &activity, idle, None).await;
        let _ = cw.shutdown().await;
    };
    tokio::join!(up, down);
}

/// Hop-by-hop headers the proxy owns; never relayed.
fn hop_by_hop(name: &str) -> bool {
    [
        "connection",
        "keep-alive",
        "proxy-connection",
        "proxy-authorization",
        "proxy-authenticate",
        "te",
        "trailer",
    ]
    .iter()
    .any(|h| name.eq_ignore_ascii_case(h))
}

/// Returns the origin-form of an absolute-form request target, as written.
fn origin_form(target: &str) -> &str {
    let rest = target.split_once("://").map_or(target, |(_, r)| r);
    match rest.find(['/', '?']) {
        Some(i) if rest[i..].starts_with('/') => &rest[i..],
        _ => "/",
    }
}

/// An absolute-form request over plain HTTP (WebSocket upgrades included).
async fn forward(mut client: TcpStream, shared: &Shared, head: RequestHead, leftover: Vec<u8>) {
    let Ok(mut url) = Url::parse(&head.target) else {
        return respond(
            &mut client,
            400,
            "Bad Request",
            "a proxy request needs an absolute URL",
        )
        .await;
    };
    if url.scheme() == "ws" {
        let _ = url.set_scheme("http");
    }
    if url.scheme() != "http" {
        // https goes through CONNECT; nothing else is proxied.
        return respond(
            &mut client,
            400,
            "Bad Request",
            "only http:// is proxied; use CONNECT for TLS",
        )
        .await;
    }
    let upgrade = head.header("upgrade").is_some() && head.header_has_token("connection", "upgrade");
    let (mut upstream, proxy) =
        match judge_and_connect(&mut client, shared, &url, &head.target, !upgrade).await {
            Some(Route::Direct(stream)) => (stream, None),
            Some(Route::Proxy(stream, proxy)) => (stream, Some(proxy)),
            None => return,
        };
    let body = if upgrade || head.header_has_token("transfer-encoding", "chunked") {
        Body::Stream
    } else {
        match head
            .header("content-length")
            .and_then(|v| std::str::from_utf8(v).ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
        {
            Some(0) | None => Body::None,
            Some(n) => Body::Length(n),
        }
    };
    // An HTTP upstream proxy takes the request whole (absolute form, its
    // credentials added); a server, its path.
    let target = if proxy.is_some() {
        url.as_str()
    } else {
        origin_form(&head.target)
    };
    let mut out = format!("{} {target} HTTP/1.1\r\n", head.method).into_bytes();
    if let Some(line) = proxy.as_ref().and_then(|p| p.authorization()) {
        out.extend_from_slice(line.as_bytes());
    }
    let mut has_host = false;
    for (name, value) in &head.headers {
        if hop_by_hop(name) || (!upgrade && name.eq_ignore_ascii_case("upgrade")) {
            continue;
        }
        has_host |= name.eq_ignore_ascii_case("host");
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value);
        out.extend_from_slice(b"\r\n");
    }
    if !has_host {
        let host = match url.port() {
            Some(p) => format!("{}:{p}", url.host_str().unwrap_or_default()),
            None => url.host_str().unwrap_or_default().to_string(),
        };
        out.extend_from_slice(format!("Host: {host}\r\n").as_bytes());
    }
    out.extend_from_slice(if upgrade {
        b"Connection: Upgrade\r\n\r\n".as_slice()
    } else {
        b"Connection: close\r\n\r\n".as_slice()
    });
    let sent_body = match body {
        Body::None => 0,
        Body::Length(n) => leftover.len().min(n as usize),
        Body::Stream => leftover.len(),
    };
    out.extend_from_slice(&leftover[..sent_body]);
    if upstream.write_all(&out).await.is_err() {
        return respond(&mut client, 502, "Bad Gateway", "upstream closed").await;
    }
    let head_only = head.method.eq_ignore_ascii_case("HEAD");
    let key = crate::progress::key_of(&url).unwrap_or_else(|| url.to_string());
    let exchange = shared.exchanges.begin(key, false);
    let _ending = Ending(exchange.clone());
    let request = Request {
        body,
        sent: sent_body as u64,
        head_only,
        exchange: &exchange,
    };
    relay(client, upstream, shared, request, proxy.as_deref()).await;
}

/// Sends the rest of the request body up and the response down, rewriting
/// the response head so the client never reuses this connection.
async fn relay(
    client: TcpStream,
    upstream: TcpStream,
    shared: &Shared,
    request: Request<'_>,
    proxy: Option<&Upstream>,
) {
    let Request {
        body,
        sent,
        head_only,
        exchange,
    } = request;
    let limits = &shared.limits;
    let activity = Activity::new();
    let (mut cr, mut cw) = client.into_split();
    let (mut ur, mut uw) = upstream.into_split();
    let mut ur = Counted {
        inner: &mut ur,
        exchange,
    };
    let up = async {
        match &body {
            Body::None => {}
            Body::Length(n) => {
                let _ = pump(&mut cr, &mut uw, &activity, limits.idle_timeout, Some(*n - sent)).await;
            }
            Body::Stream => {
                let _ = pump(&mut cr, &mut uw, &activity, limits.idle_timeout, None).await;
                let _ = uw.shutdown().await;
            }
        }
        if matches!(body, Body::Stream) {
            // An upgraded connection ends with the upstream's side.
            std::future::pending::<()>().await;
        }
        // The client was told the connection closes after this exchange:
        // its end of stream (or anything more it sends) ends the exchange,
        // even when the upstream ignores `Connection: close`.
        let mut probe = [0u8; 1];
        let _ = cr.read(&mut probe).await;
    };
    let down = async {
        let mut buf = Vec::with_capacity(4096);
        let body_len: Option<u64>;
        loop {
            let head = tokio::time::timeout(
                limits.idle_timeout,
                read_response(&mut ur, &mut buf, limits.max_head_bytes),
            )
            .await;
            let (code, rewritten, len, length) = match head {
                Ok(Ok(head)) => head,
                failed => {
                    // The server did not answer in HTTP: the browser is told
                    // the network error and what the server did, never a
                    // status the server did not send.
                    let (net, why) = head_failure(failed.ok().and_then(Result::err), buf.is_empty(), limits);
                    let net = format!("{net} ({why})");
                    let _ = cw.write_all(&answer(502, "Bad Gateway", &why, Some(&net))).await;
                    let _ = cw.shutdown().await;
                    return;
                }
            };
            if code == 407
                && let Some(proxy) = proxy
            {
                // The job's proxy refused its credentials: the browser is
                // told the network error, never asked for credentials.
                let refused = answer(
                    502,
                    "Bad Gateway",
                    &proxy.auth_refused(),
                    Some("net::ERR_PROXY_AUTH_UNSUPPORTED"),
                );
                let _ = cw.write_all(&refused).await;
                let _ = cw.shutdown().await;
                return;
            }
            if cw.write_all(&rewritten).await.is_err() {
                return;
            }
            if !(100..200).contains(&code) || code == 101 {
                exchange.head_done(len);
            }
            buf.drain(..len);
            // Interim answers (100, 103) come before the real one.
            if (100..200).contains(&code) && code != 101 {
                continue;
            }
            // A delimited body ends the exchange even when the upstream
            // keeps its connection open.
            body_len = match code {
                204 | 304 => Some(0),
                _ if head_only => Some(0),
                _ => length,
            };
            break;
        }
        let buffered = match body_len {
            Some(n) => buf.len().min(n as usize),
            None => buf.len(),
        };
        if buffered > 0 && cw.write_all(&buf[..buffered]).await.is_err() {
            return;
        }
        let rest = body_len.map(|n| n - buffered as u64);
        if rest != Some(0) {
            let _ = pump(&mut ur, &mut cw, &activity, limits.idle_timeout, rest).await;
        }
        let _ = cw.shutdown().await;
    };
    tokio::select! {
        _ = up => {}
        _ = down => {}
    }
}

/// Chromium's name for a response head that could not be read (`None`:
/// none came in time), and what the server did wrong, in words.
fn head_failure(
    failed: Option<HeadError>,
    nothing_read: bool,
    limits: &crate::EgressLimits,
) -> (&'static str, String) {
    match failed {
        None => (
            "net::ERR_TIMED_OUT",
            format!(
                "the server sent no response within {} s",
                limits.idle_timeout.as_secs()
            ),
        ),
        Some(HeadError::Closed) if nothing_read => (
            "net::ERR_EMPTY_RESPONSE",
            "the server closed the connection without a response".into(),
        ),
        Some(HeadError::Closed) => (
            "net::ERR_CONNECTION_CLOSED",
            "the server closed the connection in the middle of its response head".into(),
        ),
        Some(HeadError::TooLarge) => (
            "net::ERR_RESPONSE_HEADERS_TOO_BIG",
            format!(
                "the server's response headers were too large (over {} KiB or 128 lines)",
                limits.max_head_bytes / 1024
            ),
        ),
        Some(HeadError::Malformed) => (
            "net::ERR_INVALID_HTTP_RESPONSE",
            "the server's response was not HTTP".into(),
        ),
    }
}

/// Reads one response head; returns its status, the head rewritten with
/// the proxy's connection headers, its length in `buf`, and the body's
/// length when a `Content-Length` (and no chunking) delimits it.
async fn read_response<S: AsyncRead + Unpin>(
    stream: &mut S,
    buf: &mut Vec<u8>,
    max: usize,
) -> Result<(u16, Vec<u8>, usize, Option<u64>), HeadError> {
    let len = read_until_head(stream, buf, max, |b| {
        let mut headers = [httparse::EMPTY_HEADER; 128];
        head_status(httparse::Response::new(&mut headers).parse(b))
    })
    .await?;
    let mut headers = [httparse::EMPTY_HEADER; 128];
    let mut resp = httparse::Response::new(&mut headers);
    resp.parse(&buf[..len]).map_err(|_| HeadError::Malformed)?;
    let code = resp.code.unwrap_or(502);
    let mut out = format!("HTTP/1.1 {code} {}\r\n", resp.reason.unwrap_or("")).into_bytes();
    let mut length = None;
    let mut chunked = false;
    for h in resp.headers.iter() {
        if h.name.eq_ignore_ascii_case("content-length") {
            length = std::str::from_utf8(h.value)
                .ok()
                .and_then(|v| v.trim().parse::<u64>().ok());
        }
        if h.name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = true;
        }
        if hop_by_hop(h.name) {
            continue;
        }
        out.extend_from_slice(h.name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(h.value);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(match code {
        101 => b"Connection: Upgrade\r\n\r\n".as_slice(),
        100..=199 => b"\r\n".as_slice(),
        _ => b"Connection: close\r\nProxy-Connection: close\r\n\r\n".as_slice(),
    });
    Ok((code, out, len, length.filter(|_| !chunked)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origin_form_keeps_the_target_as_written() {
        for (target, want) in [
            ("http://a.example/x/y?q=%20", "/x/y?q=%20"),
            ("http://a.example", "/"),
            ("http://a.example?q", "/"),
            ("http://a.example:8080/", "/"),
            ("http://[::1]:80/p", "/p"),
        ] {
            assert_eq!(origin_form(target), want, "{target}");
        }
    }

    #[test]
    fn connect_authorities_need_a_port() {
        assert!(authority_url("example.com:443").is_some());
        assert!(authority_url("[::1]:8443").is_some());
        assert_eq!(
            authority_url("127.0.0.1:80").unwrap().port_or_known_default(),
            Some(80)
        );
        assert!(authority_url("example.com").is_none());
        assert!(authority_url("[::1]").is_none());
        assert!(authority_url(":443").is_none());
        assert!(authority_url("a.example:99999").is_none());
    }
}
