//! The URL policy: which URLs oxwright may load. Enforced where a URL enters
//! (CLI, scheduler, MCP) and on every request the browser makes, redirects
//! included.

mod addr;

use std::net::IpAddr;

use serde::{Deserialize, Serialize};
use url::{Host, Url};

pub use addr::is_private;

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
    #[error("{host} resolves to non-public address {addr}; allow it with allow_private or allow_hosts")]
    PrivateAddress {
        /// The host as written in the URL.
        host: String,
        /// The offending address.
        addr: IpAddr,
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

    /// Parses `text` and checks it statically (scheme, host, literal addresses).
    pub fn parse_input(&self, text: &str) -> Result<Url, PolicyError> {
        let url = Url::parse(text.trim()).map_err(|e| PolicyError::Invalid(format!("{text}: {e}")))?;
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
        let port = url.port_or_known_default();
        let (host_text, literal) = match url.host() {
            None => return Err(PolicyError::NoHost(url.to_string())),
            Some(Host::Domain(d)) => (d.to_ascii_lowercase(), None),
            Some(Host::Ipv4(v4)) => (v4.to_string(), Some(IpAddr::V4(v4))),
            Some(Host::Ipv6(v6)) => (v6.to_string(), Some(IpAddr::V6(v6))),
        };
        if self.allow_private || self.allow_hosts.iter().any(|r| r.matches(&host_text, port)) {
            return Ok(None);
        }
        match literal {
            Some(addr) if is_private(addr) => Err(PolicyError::PrivateAddress {
                host: host_text,
                addr,
            }),
            Some(_) => Ok(None),
            None => Ok(Some(host_text)),
        }
    }

    /// Checks `url` fully, resolving its host name.
    pub async fn check(&self, url: &Url) -> Result<(), PolicyError> {
        let Some(host) = self.check_static(url)? else {
            return Ok(());
        };
        let port = url.port_or_known_default().unwrap_or(80);
        let addrs: Vec<std::net::SocketAddr> = tokio::net::lookup_host((host.as_str(), port))
            .await
            .map_err(|e| PolicyError::Resolve {
                host: host.clone(),
                reason: e.to_string(),
            })?
            .collect();
        let mut any = false;
        for addr in addrs {
            any = true;
            if is_private(addr.ip()) {
                return Err(PolicyError::PrivateAddress {
                    host,
                    addr: addr.ip(),
                });
            }
        }
        if !any {
            return Err(PolicyError::Resolve {
                host,
                reason: "no addresses".into(),
            });
        }
        Ok(())
    }
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

    #[tokio::test]
    async fn localhost_name_resolves_to_loopback_and_is_refused() {
        let url = Url::parse("http://localhost:1/").unwrap();
        assert!(matches!(
            p(&[]).check(&url).await,
            Err(PolicyError::PrivateAddress { .. })
        ));
    }
}
