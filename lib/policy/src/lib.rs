//! The URL policy: which URLs oxwright may load. Enforced where a URL enters
//! (CLI, scheduler, MCP), on every request the browser makes (redirects
//! included), and by the egress proxy every byte of Chromium leaves through
//! (`oxwright-egress`), which resolves each host once through a
//! [`Resolver`] and connects to the very address it checked.

mod addr;
mod cache;

use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::pin::Pin;

use serde::{Deserialize, Serialize};
use url::{Host, Url};

pub use addr::{SpecialRange, classify, is_private};
pub use cache::{CachingResolver, NEGATIVE_TTL, POSITIVE_TTL};

/// A future returned by a [`Resolver`].
pub type ResolveFuture<'a> = Pin<Box<dyn Future<Output = std::io::Result<Vec<IpAddr>>> + Send + 'a>>;

/// Turns a host name into addresses. The policy judges what it returns and
/// the egress proxy connects to exactly those addresses, so a resolver is
/// asked once per request: there is no second lookup to rebind.
pub trait Resolver: Send + Sync + std::fmt::Debug {
    /// Resolves `host` (a DNS name, never an IP literal) for `port`.
    fn resolve<'a>(&'a self, host: &'a str, port: u16) -> ResolveFuture<'a>;
}

/// The operating system's resolver (`getaddrinfo` on a blocking thread)
/// behind one process-wide [`CachingResolver`]: the interceptor's check
/// and the egress proxy's of the same request, and a page's many requests
/// to one host, share a lookup.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemResolver;

/// `getaddrinfo`, uncached.
#[derive(Debug)]
struct Getaddrinfo;

impl Resolver for Getaddrinfo {
    fn resolve<'a>(&'a self, host: &'a str, port: u16) -> ResolveFuture<'a> {
        Box::pin(async move {
            Ok(tokio::net::lookup_host((host, port))
                .await?
                .map(|a| a.ip())
                .collect())
        })
    }
}

static SYSTEM: std::sync::LazyLock<CachingResolver<Getaddrinfo>> =
    std::sync::LazyLock::new(|| CachingResolver::new(Getaddrinfo));

impl Resolver for SystemResolver {
    fn resolve<'a>(&'a self, host: &'a str, port: u16) -> ResolveFuture<'a> {
        SYSTEM.resolve(host, port)
    }
}

/// Says whether `name` (lowercase, trailing dot removed) is reserved for
/// loopback (RFC 6761): `localhost` and every name under it.
fn is_localhost_name(name: &str) -> bool {
    name == "localhost" || name.ends_with(".localhost")
}

/// Why a URL was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    /// The text is not a URL.
    #[error("not a valid URL: {0}")]
    Invalid(String),
    /// The scheme is not http or https.
    #[error("scheme {scheme:?} is not allowed (only http and https)")]
    Scheme {
        /// The refused scheme.
        scheme: String,
    },
    /// The URL has no host.
    #[error("URL has no host: {0}")]
    NoHost(String),
    /// The host is, or resolves to, a private, loopback or link-local address.
    #[error("{}", private_address(.host, .addr, .port))]
    PrivateAddress {
        /// The host as written in the URL.
        host: String,
        /// The offending address.
        addr: IpAddr,
        /// The URL's port (explicit or the scheme's), for the allow rule the message suggests.
        port: Option<u16>,
    },
    /// The host name does not resolve.
    #[error("cannot resolve {host}: {reason}")]
    Resolve {
        /// The host name.
        host: String,
        /// The resolver's message.
        reason: String,
    },
}

/// Says what was refused and names the flags a person types to allow it
/// (then the config keys), with the exact `--allow-host` rule.
fn private_address(host: &str, addr: &IpAddr, port: &Option<u16>) -> String {
    let what = if host == addr.to_string() {
        format!("{addr} is a non-public address")
    } else {
        format!("{host} resolves to non-public address {addr}")
    };
    let rule = HostRule {
        host: host.to_owned(),
        port: *port,
    };
    format!(
        "{what}; allow it with --allow-private or --allow-host {rule} \
         (config: policy.allow_private / policy.allow_hosts)"
    )
}

/// A host, or host and port, exempt from the private-address rule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct HostRule {
    host: String,
    port: Option<u16>,
}

impl HostRule {
    /// Says whether this rule covers `host` (lowercase, IPv6 without brackets) and `port`.
    fn matches(&self, host: &str, port: Option<u16>) -> bool {
        self.host == host && (self.port.is_none() || self.port == port)
    }
}

impl TryFrom<String> for HostRule {
    type Error = PolicyError;

    fn try_from(value: String) -> Result<Self, Self::Error> {
        value.parse()
    }
}

impl From<HostRule> for String {
    fn from(rule: HostRule) -> String {
        rule.to_string()
    }
}

impl std::str::FromStr for HostRule {
    type Err = PolicyError;

    /// Parses `host`, `host:port`, `[v6]` or `[v6]:port`.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let probe = Url::parse(&format!("http://{}/", text.trim()))
            .map_err(|_| PolicyError::Invalid(text.to_string()))?;
        let host = match probe.host() {
            Some(Host::Ipv6(v6)) => v6.to_string(),
            Some(h) => h.to_string().to_ascii_lowercase(),
            None => return Err(PolicyError::NoHost(text.to_string())),
        };
        // Url drops the port when it is the scheme default; keep what was written.
        let port = probe.port().or_else(|| {
            text.trim()
                .rsplit_once(':')
                .and_then(|(_, p)| p.parse::<u16>().ok())
                .filter(|_| !text.trim().ends_with(']'))
        });
        Ok(Self { host, port })
    }
}

impl std::fmt::Display for HostRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        match self.port {
            Some(p) => write!(f, "{host}:{p}"),
            None => f.write_str(&host),
        }
    }
}

/// The URL policy.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UrlPolicy {
    /// Lets every private, loopback and link-local address through (demos only).
    #[serde(default)]
    pub allow_private: bool,
    /// Hosts (or host:port) exempt from the private-address rule.
    #[serde(default)]
    pub allow_hosts: Vec<HostRule>,
}

impl UrlPolicy {
    /// Creates a policy that allows exactly the given hosts on top of the public internet.
    pub fn allowing(hosts: impl IntoIterator<Item = HostRule>) -> Self {
        Self {
            allow_private: false,
            allow_hosts: hosts.into_iter().collect(),
        }
    }

    /// Parses `text` as a person types it and checks it statically
    /// (scheme, host, literal addresses). A bare host (`example.com`,
    /// `example.com/a`, `127.0.0.1:8765`) gets a scheme: see [`bare_host_url`].
    pub fn parse_input(&self, text: &str) -> Result<Url, PolicyError> {
        let text = text.trim();
        let url = match bare_host_url(text) {
            Some(url) => url,
            None => Url::parse(text).map_err(|e| PolicyError::Invalid(format!("{text}: {e}")))?,
        };
        self.check_static(&url)?;
        Ok(url)
    }

    /// Checks what can be checked without DNS. Returns `Some(host)` when the
    /// host is a name that still needs resolving.
    pub fn check_static(&self, url: &Url) -> Result<Option<String>, PolicyError> {
        match url.scheme() {
            "http" | "https" => {}
            other => {
                return Err(PolicyError::Scheme {
                    scheme: other.to_string(),
                });
            }
        }
        let judged = self.judge(url)?;
        if judged.exempt {
            return Ok(None);
        }
        match judged.literal {
            Some(addr) if is_private(addr) => Err(PolicyError::PrivateAddress {
                host: judged.host,
                addr,
                port: url.port_or_known_default(),
            }),
            Some(_) => Ok(None),
            None if is_localhost_name(&judged.host) => Err(PolicyError::PrivateAddress {
                host: judged.host,
                addr: IpAddr::V4(Ipv4Addr::LOCALHOST),
                port: url.port_or_known_default(),
            }),
            None => Ok(Some(judged.host)),
        }
    }

    /// Reads the host of `url` and whether an allow rule exempts it.
    fn judge(&self, url: &Url) -> Result<Judged, PolicyError> {
        let port = url.port_or_known_default();
        let (host, literal) = match url.host() {
            None => return Err(PolicyError::NoHost(url.to_string())),
            Some(Host::Domain(d)) => {
                // `localhost.` and `localhost` name the same host; so do
                // `example.com.` and `example.com` for the allow rules.
                let name = d.to_ascii_lowercase();
                let name = name.strip_suffix('.').unwrap_or(&name).to_string();
                if name.is_empty() {
                    return Err(PolicyError::NoHost(url.to_string()));
                }
                (name, None)
            }
            Some(Host::Ipv4(v4)) => (v4.to_string(), Some(IpAddr::V4(v4))),
            Some(Host::Ipv6(v6)) => (v6.to_string(), Some(IpAddr::V6(v6))),
        };
        let exempt = self.allow_private || self.allow_hosts.iter().any(|r| r.matches(&host, port));
        Ok(Judged {
            host,
            literal,
            exempt,
        })
    }

    /// Checks `url` fully and returns the addresses it may be reached at:
    /// the literal address, or every address `resolver` gave for its name
    /// (each one checked). Connect to these and nothing else — resolving
    /// again would reopen the rebinding window the check just closed.
    pub async fn resolve_checked(
        &self,
        url: &Url,
        resolver: &dyn Resolver,
    ) -> Result<Vec<SocketAddr>, PolicyError> {
        let port = url.port_or_known_default().unwrap_or(80);
        // Scheme, literal addresses and loopback names (unless exempt).
        self.check_static(url)?;
        let judged = self.judge(url)?;
        if let Some(addr) = judged.literal {
            return Ok(vec![SocketAddr::new(addr, port)]);
        }
        let host = judged.host;
        let addrs = resolver
            .resolve(&host, port)
            .await
            .map_err(|e| PolicyError::Resolve {
                host: host.clone(),
                reason: e.to_string(),
            })?;
        if addrs.is_empty() {
            return Err(PolicyError::Resolve {
                host,
                reason: "no addresses".into(),
            });
        }
        if !judged.exempt
            && let Some(addr) = addrs.iter().copied().find(|a| is_private(*a))
        {
            return Err(PolicyError::PrivateAddress {
                host,
                addr,
                port: Some(port),
            });
        }
        Ok(addrs.into_iter().map(|a| SocketAddr::new(a, port)).collect())
    }

    /// Checks `url` fully, resolving its host name with the system resolver.
    pub async fn check(&self, url: &Url) -> Result<(), PolicyError> {
        if self.check_static(url)?.is_none() {
            return Ok(());
        }
        self.resolve_checked(url, &SystemResolver).await.map(|_| ())
    }
}

/// Reads text without a scheme (`example.com`, `example.com/a?b`,
/// `localhost:3000`, `127.0.0.1:8765/x`) as the URL a person means:
/// `http://` for loopback and private addresses and localhost names (local
/// servers rarely speak TLS), `https://` for everything else. Returns
/// `None` for text with a scheme or that is no host at all.
pub fn bare_host_url(text: &str) -> Option<Url> {
    if text.is_empty() || text.contains("://") || text.contains('@') || text.contains(char::is_whitespace) {
        return None;
    }
    let url = Url::parse(&format!("https://{text}")).ok()?;
    let plain = match url.host()? {
        Host::Domain(d) => {
            let name = d.to_ascii_lowercase();
            is_localhost_name(name.strip_suffix('.').unwrap_or(&name))
        }
        Host::Ipv4(v4) => is_private(IpAddr::V4(v4)),
        Host::Ipv6(v6) => is_private(IpAddr::V6(v6)),
    };
    if !plain {
        return Some(url);
    }
    Url::parse(&format!("http://{text}")).ok()
}

/// The host of a URL as the policy sees it.
struct Judged {
    /// Lowercase name without a trailing dot, or the literal address's text.
    host: String,
    literal: Option<IpAddr>,
    /// Whether `allow_private` or an allow rule exempts it.
    exempt: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(rules: &[&str]) -> UrlPolicy {
        UrlPolicy::allowing(rules.iter().map(|r| r.parse().unwrap()))
    }

    #[test]
    fn refuses_other_schemes() {
        for u in [
            "file:///etc/passwd",
            "data:text/html,hi",
            "javascript:alert(1)",
            "ftp://a.example/",
        ] {
            assert!(
                matches!(p(&[]).parse_input(u), Err(PolicyError::Scheme { .. })),
                "{u}"
            );
        }
    }

    #[test]
    fn refuses_private_literals() {
        for u in [
            "http://127.0.0.1/",
            "http://169.254.169.254/latest/meta-data/",
            "http://10.1.2.3/",
            "http://192.168.0.1/",
            "http://172.16.0.1/",
            "http://[::1]/",
            "http://[fe80::1]/",
            "http://[::ffff:127.0.0.1]/",
            "http://0.0.0.0/",
            "http://100.64.0.1/",
        ] {
            assert!(
                matches!(p(&[]).parse_input(u), Err(PolicyError::PrivateAddress { .. })),
                "{u}"
            );
        }
        assert!(p(&[]).parse_input("http://93.184.215.14/").is_ok());
    }

    #[test]
    fn allow_rules_are_port_specific() {
        let pol = p(&["127.0.0.1:8080"]);
        assert!(pol.parse_input("http://127.0.0.1:8080/x").is_ok());
        assert!(pol.parse_input("http://127.0.0.1:8081/x").is_err());
        let any_port = p(&["127.0.0.1"]);
        assert!(any_port.parse_input("http://127.0.0.1:9/").is_ok());
        assert!(any_port.parse_input("http://169.254.169.254/").is_err());
    }

    #[test]
    fn allow_private_lets_everything_through() {
        let pol = UrlPolicy {
            allow_private: true,
            allow_hosts: vec![],
        };
        assert!(pol.parse_input("http://169.254.169.254/").is_ok());
        assert!(pol.parse_input("file:///etc/passwd").is_err());
    }

    #[test]
    fn host_rules_parse_and_print() {
        for (text, host, port) in [
            ("Example.COM", "example.com", None),
            ("127.0.0.1:80", "127.0.0.1", Some(80)),
            ("[::1]:3000", "::1", Some(3000)),
            ("[::1]", "::1", None),
        ] {
            let r: HostRule = text.parse().unwrap();
            assert_eq!((r.host.as_str(), r.port), (host, port), "{text}");
        }
        assert_eq!(
            "[::1]:3000".parse::<HostRule>().unwrap().to_string(),
            "[::1]:3000"
        );
    }

    #[test]
    fn localhost_names_are_loopback_without_a_resolver() {
        for u in [
            "http://localhost/",
            "http://localhost./",
            "http://LOCALHOST:8080/",
            "http://api.localhost/",
            "http://a.b.localhost./",
        ] {
            assert!(
                matches!(p(&[]).parse_input(u), Err(PolicyError::PrivateAddress { .. })),
                "{u}"
            );
        }
        assert!(
            p(&["localhost:3000"])
                .parse_input("http://localhost.:3000/")
                .is_ok()
        );
        assert!(p(&[]).parse_input("http://localhost.example/").is_ok());
    }

    #[test]
    fn embedded_and_special_literals_are_refused() {
        for u in [
            "http://[::127.0.0.1]/",
            "http://[::7f00:1]/",
            "http://[2002:7f00:1::1]/",
            "http://[2002:a9fe:a9fe::1]/",
            "http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/",
            "http://[::ffff:0:7f00:1]/",
            "http://[100::1]/",
            "http://192.88.99.1/",
            "http://[64:ff9b::a9fe:a9fe]/",
        ] {
            assert!(
                matches!(p(&[]).parse_input(u), Err(PolicyError::PrivateAddress { .. })),
                "{u}"
            );
        }
    }

    /// Answers from a fixed list, counting how often it was asked.
    #[derive(Debug, Default)]
    struct Scripted {
        answers: std::sync::Mutex<Vec<Vec<IpAddr>>>,
        asked: std::sync::atomic::AtomicUsize,
    }

    impl Resolver for Scripted {
        fn resolve<'a>(&'a self, _host: &'a str, _port: u16) -> ResolveFuture<'a> {
            self.asked.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let next = self.answers.lock().unwrap().remove(0);
            Box::pin(async move { Ok(next) })
        }
    }

    #[tokio::test]
    async fn resolve_checked_asks_once_and_returns_what_it_judged() {
        let resolver = Scripted {
            answers: std::sync::Mutex::new(vec![
                vec!["93.184.215.14".parse().unwrap()],
                vec!["127.0.0.1".parse().unwrap()],
            ]),
            ..Scripted::default()
        };
        let url = Url::parse("http://rebind.example:8080/").unwrap();
        let first = p(&[]).resolve_checked(&url, &resolver).await.unwrap();
        assert_eq!(first, vec!["93.184.215.14:8080".parse().unwrap()]);
        let second = p(&[]).resolve_checked(&url, &resolver).await;
        assert!(
            matches!(second, Err(PolicyError::PrivateAddress { .. })),
            "{second:?}"
        );
        assert_eq!(resolver.asked.load(std::sync::atomic::Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn any_private_answer_refuses_the_name() {
        let resolver = Scripted {
            answers: std::sync::Mutex::new(vec![vec![
                "93.184.215.14".parse().unwrap(),
                "::ffff:10.0.0.1".parse().unwrap(),
            ]]),
            ..Scripted::default()
        };
        let url = Url::parse("https://mixed.example/").unwrap();
        let err = p(&[]).resolve_checked(&url, &resolver).await.unwrap_err();
        assert!(matches!(err, PolicyError::PrivateAddress { .. }), "{err:?}");
    }

    #[tokio::test]
    async fn localhost_name_resolves_to_loopback_and_is_refused() {
        let url = Url::parse("http://localhost:1/").unwrap();
        assert!(matches!(
            p(&[]).check(&url).await,
            Err(PolicyError::PrivateAddress { .. })
        ));
    }

    #[test]
    fn the_refusal_names_the_flags_to_type() {
        let err = p(&[]).parse_input("http://127.0.0.1:8765/a").unwrap_err();
        assert_eq!(
            err.to_string(),
            "127.0.0.1 is a non-public address; allow it with --allow-private or --allow-host \
             127.0.0.1:8765 (config: policy.allow_private / policy.allow_hosts)"
        );
        let err = p(&[]).parse_input("http://localhost/").unwrap_err();
        let text = err.to_string();
        assert!(
            text.starts_with("localhost resolves to non-public address 127.0.0.1;"),
            "{text}"
        );
        assert!(text.contains("--allow-host localhost:80 "), "{text}");
        let err = p(&[]).parse_input("http://[::1]:3000/").unwrap_err();
        assert!(err.to_string().contains("--allow-host [::1]:3000 "), "{err}");
        // The suggested rule lets the URL through.
        assert!(p(&["[::1]:3000"]).parse_input("http://[::1]:3000/").is_ok());
    }

    #[test]
    fn bare_hosts_get_the_scheme_a_person_means() {
        let any = UrlPolicy {
            allow_private: true,
            allow_hosts: vec![],
        };
        for (typed, meant) in [
            ("example.com", "https://example.com/"),
            ("Example.com/a?b=1", "https://example.com/a?b=1"),
            ("example.com:8443", "https://example.com:8443/"),
            ("127.0.0.1:8765", "http://127.0.0.1:8765/"),
            ("localhost:3000/x", "http://localhost:3000/x"),
            ("192.168.1.10", "http://192.168.1.10/"),
            ("[::1]:8080", "http://[::1]:8080/"),
            ("  https://example.com/  ", "https://example.com/"),
        ] {
            assert_eq!(any.parse_input(typed).unwrap().as_str(), meant, "{typed}");
        }
        for text in [
            "mailto:a@example.com",
            "about:blank",
            "javascript:alert(1)",
            "a b",
            "",
        ] {
            assert!(bare_host_url(text).is_none(), "{text}");
        }
        // Without an allow rule a bare loopback address is still refused.
        assert!(matches!(
            p(&[]).parse_input("127.0.0.1:8765"),
            Err(PolicyError::PrivateAddress { .. })
        ));
    }
}
