//! An upstream proxy a job's traffic leaves through: after the egress
//! proxy judged a target (one resolution, every address checked against
//! the policy), the connection to it is opened through an HTTP proxy
//! (`CONNECT host:port` for TLS and WebSockets; a plain-HTTP request is
//! handed to it whole, in absolute form, as browsers do, since proxies
//! such as Squid refuse `CONNECT` to port 80 by default) or a SOCKS5
//! proxy, instead of directly. `socks5://` connects the proxy to the address checked here;
//! `socks5h://` and `http://` let the proxy resolve the name (what a
//! proxy in another network or country is for).

use std::fmt;
use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use url::Url;

/// The kinds of upstream proxy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UpstreamKind {
    /// An HTTP proxy: `CONNECT`, or absolute-form requests for plain HTTP.
    Http,
    /// SOCKS5, connecting to the address the policy checked.
    Socks5,
    /// SOCKS5, the proxy resolving the name.
    Socks5h,
}

/// An upstream proxy: kind, `host:port`, optional credentials.
#[derive(Clone, PartialEq, Eq)]
pub struct Upstream {
    /// The kind.
    pub kind: UpstreamKind,
    /// The proxy's host.
    pub host: String,
    /// The proxy's port.
    pub port: u16,
    /// User name and password.
    pub credentials: Option<(String, String)>,
}

impl fmt::Debug for Upstream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Credentials are never printed.
        write!(f, "{self}")
    }
}

impl fmt::Display for Upstream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scheme = match self.kind {
            UpstreamKind::Http => "http",
            UpstreamKind::Socks5 => "socks5",
            UpstreamKind::Socks5h => "socks5h",
        };
        let user = if self.credentials.is_some() { "***@" } else { "" };
        write!(f, "{scheme}://{user}{}:{}", self.host, self.port)
    }
}

impl Upstream {
    /// Parses `http://[user:pass@]host:port`, `socks5://…` or `socks5h://…`
    /// (the port defaults to 8080 for HTTP, 1080 for SOCKS). The message
    /// of an error never repeats the credentials.
    pub fn parse(text: &str) -> Result<Self, String> {
        let url = Url::parse(text).map_err(|e| format!("proxy: not a URL ({e})"))?;
        let kind = match url.scheme() {
            "http" => UpstreamKind::Http,
            "socks5" => UpstreamKind::Socks5,
            "socks5h" => UpstreamKind::Socks5h,
            other => {
                return Err(format!(
                    "proxy: scheme {other:?} is not supported: use http://, socks5:// or socks5h://"
                ));
            }
        };
        let host = url
            .host_str()
            .filter(|h| !h.is_empty())
            .ok_or("proxy: the URL has no host")?
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned();
        if url.path() != "/" && !url.path().is_empty() || url.query().is_some() {
            return Err("proxy: give only scheme://[user:password@]host:port".into());
        }
        let port = url.port().unwrap_or(match kind {
            UpstreamKind::Http => 8080,
            _ => 1080,
        });
        let decode = |s: &str| {
            percent_encoding::percent_decode_str(s)
                .decode_utf8()
                .map(|d| d.into_owned())
                .map_err(|_| "proxy: the credentials are not valid percent-encoded UTF-8".to_owned())
        };
        let credentials = match (url.username(), url.password()) {
            ("", None) => None,
            (user, password) => Some((decode(user)?, decode(password.unwrap_or(""))?)),
        };
        Ok(Self {
            kind,
            host,
            port,
            credentials,
        })
    }

    /// Opens a connection to `host:port` (`checked` are the addresses the
    /// policy accepted for it) through this proxy.
    pub(crate) async fn connect(
        &self,
        host: &str,
        port: u16,
        checked: &[SocketAddr],
        limit: Duration,
    ) -> std::io::Result<TcpStream> {
        let started = tokio::time::Instant::now();
        let mut stream = self.open(limit).await?;
        let rest = limit.saturating_sub(started.elapsed());
        let handshake = async {
            match self.kind {
                UpstreamKind::Http => self.http_connect(&mut stream, host, port).await,
                UpstreamKind::Socks5 => {
                    let addr = checked.first().ok_or_else(|| proxy_error("no checked address"))?;
                    self.socks5(&mut stream, Target::Ip(*addr)).await
                }
                UpstreamKind::Socks5h => self.socks5(&mut stream, Target::Name(host, port)).await,
            }
        };
        tokio::time::timeout(rest, handshake)
            .await
            .map_err(|_| timed_out("the proxy's handshake"))??;
        Ok(stream)
    }

    /// Whether a plain-HTTP request goes to this proxy whole, in absolute
    /// form (an HTTP proxy), rather than through a tunnel.
    pub(crate) fn takes_plain_http(&self) -> bool {
        self.kind == UpstreamKind::Http
    }

    /// Opens a connection to the proxy itself.
    pub(crate) async fn open(&self, limit: Duration) -> std::io::Result<TcpStream> {
        let stream = tokio::time::timeout(limit, TcpStream::connect((self.host.as_str(), self.port)))
            .await
            .map_err(|_| timed_out("connecting to the proxy"))?
            .map_err(|e| std::io::Error::new(e.kind(), format!("proxy {self}: {e}")))?;
        let _ = stream.set_nodelay(true);
        Ok(stream)
    }

    /// The `Proxy-Authorization` header line (CRLF ended), when the proxy
    /// has credentials.
    pub(crate) fn authorization(&self) -> Option<String> {
        self.credentials.as_ref().map(|(user, password)| {
            use base64::Engine as _;
            let token = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
            format!("Proxy-Authorization: Basic {token}\r\n")
        })
    }

    /// The message of a `407` from this proxy.
    pub(crate) fn auth_refused(&self) -> String {
        format!("proxy {self}: 407 Proxy Authentication Required (check the proxy's user and password)")
    }

    async fn http_connect(&self, stream: &mut TcpStream, host: &str, port: u16) -> std::io::Result<()> {
        let authority = if host.contains(':') {
            format!("[{host}]:{port}")
        } else {
            format!("{host}:{port}")
        };
        let mut request = format!("CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n");
        if let Some(line) = self.authorization() {
            request.push_str(&line);
        }
        request.push_str("\r\n");
        stream.write_all(request.as_bytes()).await?;
        // The answer's head, byte by byte so nothing of the tunnel is read.
        let mut head = Vec::with_capacity(256);
        while !head.ends_with(b"\r\n\r\n") {
            if head.len() > 16 * 1024 {
                return Err(proxy_error("the proxy's answer to CONNECT is too long"));
            }
            let byte = stream
                .read_u8()
                .await
                .map_err(|_| proxy_error("the proxy closed the connection"))?;
            head.push(byte);
        }
        let line = String::from_utf8_lossy(&head);
        let code: u16 = line
            .split_whitespace()
            .nth(1)
            .and_then(|c| c.parse().ok())
            .ok_or_else(|| proxy_error("the proxy's answer is not HTTP"))?;
        match code {
            200..=299 => Ok(()),
            407 => Err(std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                self.auth_refused(),
            )),
            other => Err(proxy_error(&format!(
                "the proxy answered CONNECT {authority} with {other}"
            ))),
        }
    }

    async fn socks5(&self, stream: &mut TcpStream, target: Target<'_>) -> std::io::Result<()> {
        let method = if self.credentials.is_some() { 2 } else { 0 };
        stream.write_all(&[5, 1, method]).await?;
        let mut reply = [0u8; 2];
        stream.read_exact(&mut reply).await?;
        if reply[0] != 5 || reply[1] != method {
            return Err(std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                format!("proxy {self}: the SOCKS5 server refused the authentication method"),
            ));
        }
        if let Some((user, password)) = &self.credentials {
            if user.len() > 255 || password.len() > 255 {
                return Err(proxy_error("SOCKS5 credentials are at most 255 bytes each"));
            }
            let mut auth = vec![1, user.len() as u8];
            auth.extend_from_slice(user.as_bytes());
            auth.push(password.len() as u8);
            auth.extend_from_slice(password.as_bytes());
            stream.write_all(&auth).await?;
            stream.read_exact(&mut reply).await?;
            if reply[1] != 0 {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::PermissionDenied,
                    format!("proxy {self}: the SOCKS5 server refused the user and password"),
                ));
            }
        }
        let mut request = vec![5, 1, 0];
        match target {
            Target::Ip(SocketAddr::V4(a)) => {
                request.push(1);
                request.extend_from_slice(&a.ip().octets());
                request.extend_from_slice(&a.port().to_be_bytes());
            }
            Target::Ip(SocketAddr::V6(a)) => {
                request.push(4);
                request.extend_from_slice(&a.ip().octets());
                request.extend_from_slice(&a.port().to_be_bytes());
            }
            Target::Name(host, port) => {
                if host.len() > 255 {
                    return Err(proxy_error("host name too long for SOCKS5"));
                }
                request.push(3);
                request.push(host.len() as u8);
                request.extend_from_slice(host.as_bytes());
                request.extend_from_slice(&port.to_be_bytes());
            }
        }
        stream.write_all(&request).await?;
        let mut head = [0u8; 4];
        stream.read_exact(&mut head).await?;
        if head[1] != 0 {
            let why = match head[1] {
                2 => "not allowed by its rules",
                3 => "network unreachable",
                4 => "host unreachable",
                5 => "connection refused",
                6 => "TTL expired",
                _ => "general failure",
            };
            let kind = if head[1] == 5 {
                std::io::ErrorKind::ConnectionRefused
            } else {
                std::io::ErrorKind::Other
            };
            return Err(std::io::Error::new(
                kind,
                format!("proxy {self}: SOCKS5 connect failed: {why}"),
            ));
        }
        // The bound address, which we do not need.
        let skip = match head[3] {
            1 => 4 + 2,
            4 => 16 + 2,
            3 => stream.read_u8().await? as usize + 2,
            _ => return Err(proxy_error("bad SOCKS5 reply")),
        };
        let mut rest = vec![0u8; skip];
        stream.read_exact(&mut rest).await?;
        Ok(())
    }
}

enum Target<'a> {
    Ip(SocketAddr),
    Name(&'a str, u16),
}

fn proxy_error(message: &str) -> std::io::Error {
    std::io::Error::other(format!("upstream proxy: {message}"))
}

fn timed_out(what: &str) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::TimedOut,
        format!("upstream proxy: {what} timed out"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proxies_parse_and_never_show_their_credentials() {
        let p = Upstream::parse("http://user:p%40ss@proxy.example:3128").unwrap();
        assert_eq!(p.kind, UpstreamKind::Http);
        assert_eq!((p.host.as_str(), p.port), ("proxy.example", 3128));
        assert_eq!(p.credentials, Some(("user".into(), "p@ss".into())));
        assert_eq!(format!("{p:?}"), "http://***@proxy.example:3128");
        assert_eq!(Upstream::parse("socks5h://10.0.0.1").unwrap().port, 1080);
        assert_eq!(Upstream::parse("socks5://[::1]:9050").unwrap().host, "::1");
        for bad in ["https://p:1", "ftp://p:1", "http://p:1/path", "nonsense"] {
            let err = Upstream::parse(bad).unwrap_err();
            assert!(err.starts_with("proxy:"), "{bad}: {err}");
        }
        let err = Upstream::parse("gopher://u:secret@p:1").unwrap_err();
        assert!(!err.contains("secret"), "{err}");
    }
}
