//! The cookies of one document read: the spec's cookies (on the fetched
//! URL's host unless a domain is given), and those the server sets on the
//! way (a redirect that logs in or picks a region), sent back on later hops
//! as a browser would by domain, path and `Secure`.

use oxwright_jobs::CookieSpec;
use reqwest::header::{HeaderMap, SET_COOKIE};
use url::Url;

#[derive(Debug, Clone)]
struct Cookie {
    name: String,
    value: String,
    /// Lowercase, without a leading dot.
    domain: String,
    /// Only this exact host (no `Domain` attribute).
    host_only: bool,
    path: String,
    secure: bool,
}

/// The cookie jar of one read.
#[derive(Debug, Default)]
pub(crate) struct Jar(Vec<Cookie>);

impl Jar {
    /// A jar holding the spec's cookies for a read of `url`.
    pub(crate) fn new(url: &Url, specs: &[CookieSpec]) -> Self {
        let host = url.host_str().unwrap_or_default().to_ascii_lowercase();
        let mut jar = Jar::default();
        for c in specs {
            let (domain, host_only) = match &c.domain {
                Some(d) => (d.trim_start_matches('.').to_ascii_lowercase(), false),
                None => (host.clone(), true),
            };
            jar.put(Cookie {
                name: c.name.clone(),
                value: c.value.clone(),
                domain,
                host_only,
                path: c.path.clone().unwrap_or_else(|| "/".into()),
                secure: c.secure,
            });
        }
        jar
    }

    fn put(&mut self, cookie: Cookie) {
        self.0
            .retain(|c| !(c.name == cookie.name && c.domain == cookie.domain && c.path == cookie.path));
        self.0.push(cookie);
    }

    /// Takes the cookies a response to `url` sets (and drops the ones it expires).
    pub(crate) fn store(&mut self, url: &Url, headers: &HeaderMap) {
        let host = url.host_str().unwrap_or_default().to_ascii_lowercase();
        for raw in headers.get_all(SET_COOKIE).iter().filter_map(|v| v.to_str().ok()) {
            let mut parts = raw.split(';');
            let Some((name, value)) = parts.next().and_then(|nv| nv.split_once('=')) else {
                continue;
            };
            let mut cookie = Cookie {
                name: name.trim().to_owned(),
                value: value.trim().to_owned(),
                domain: host.clone(),
                host_only: true,
                path: default_path(url),
                secure: false,
            };
            let mut expired = false;
            for attr in parts {
                let (k, v) = attr.split_once('=').unwrap_or((attr, ""));
                let (k, v) = (k.trim().to_ascii_lowercase(), v.trim());
                match k.as_str() {
                    "domain" if !v.is_empty() => {
                        let d = v.trim_start_matches('.').to_ascii_lowercase();
                        // A server sets cookies for itself or a parent domain only.
                        if host != d && !host.ends_with(&format!(".{d}")) {
                            expired = true;
                        }
                        cookie.domain = d;
                        cookie.host_only = false;
                    }
                    "path" if v.starts_with('/') => cookie.path = v.to_owned(),
                    "secure" => cookie.secure = true,
                    "max-age" => expired |= v.parse::<i64>().is_ok_and(|n| n <= 0),
                    _ => {}
                }
            }
            if cookie.name.is_empty() {
                continue;
            }
            if expired {
                self.0.retain(|c| {
                    !(c.name == cookie.name && c.domain == cookie.domain && c.path == cookie.path)
                });
            } else {
                self.put(cookie);
            }
        }
    }

    /// The `Cookie` header for a request to `url`, if any cookie goes there.
    pub(crate) fn header_for(&self, url: &Url) -> Option<String> {
        let host = url.host_str().unwrap_or_default().to_ascii_lowercase();
        let path = url.path();
        // A browser sends a `Secure` cookie over HTTPS, and to a loopback
        // host, which it counts as a secure context.
        let loopback = match url.host() {
            Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
            Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
            Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
            None => false,
        };
        let https = url.scheme() == "https" || loopback;
        let pairs: Vec<String> = self
            .0
            .iter()
            .filter(|c| {
                let domain_ok = if c.host_only {
                    host == c.domain
                } else {
                    host == c.domain || host.ends_with(&format!(".{}", c.domain))
                };
                let path_ok = path == c.path
                    || (path.starts_with(&c.path)
                        && (c.path.ends_with('/') || path[c.path.len()..].starts_with('/')));
                domain_ok && path_ok && (https || !c.secure)
            })
            .map(|c| format!("{}={}", c.name, c.value))
            .collect();
        (!pairs.is_empty()).then(|| pairs.join("; "))
    }
}

/// The default path of a cookie set by a response to `url`: its directory.
fn default_path(url: &Url) -> String {
    let path = url.path();
    match path.rfind('/') {
        Some(0) | None => "/".into(),
        Some(i) => path[..i].to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use reqwest::header::HeaderValue;

    use super::*;

    #[test]
    fn spec_cookies_go_to_their_host_and_set_cookies_come_back() {
        let url = Url::parse("http://a.example/login").unwrap();
        let mut jar = Jar::new(
            &url,
            &[CookieSpec {
                name: "s".into(),
                value: "1".into(),
                domain: None,
                path: None,
                secure: false,
            }],
        );
        assert_eq!(jar.header_for(&url).as_deref(), Some("s=1"));
        assert_eq!(jar.header_for(&Url::parse("http://b.a.example/").unwrap()), None);
        let mut headers = HeaderMap::new();
        headers.append(
            SET_COOKIE,
            HeaderValue::from_static("region=eu; Domain=a.example; Path=/"),
        );
        headers.append(SET_COOKIE, HeaderValue::from_static("s=; Max-Age=0"));
        headers.append(
            SET_COOKIE,
            HeaderValue::from_static("evil=1; Domain=other.example"),
        );
        jar.store(&url, &headers);
        let sub = Url::parse("http://www.a.example/page").unwrap();
        assert_eq!(jar.header_for(&sub).as_deref(), Some("region=eu"));
        assert_eq!(jar.header_for(&url).as_deref(), Some("region=eu"));
    }

    #[test]
    fn a_secure_spec_cookie_goes_over_https_or_to_loopback_only() {
        let secure = CookieSpec {
            name: "sid".into(),
            value: "1".into(),
            domain: Some(".a.example".into()),
            path: None,
            secure: true,
        };
        let https = Url::parse("https://www.a.example/").unwrap();
        let jar = Jar::new(&https, std::slice::from_ref(&secure));
        assert_eq!(jar.header_for(&https).as_deref(), Some("sid=1"));
        assert_eq!(
            jar.header_for(&Url::parse("http://www.a.example/").unwrap()),
            None
        );
        // Loopback is a secure context to a browser, over plain HTTP too.
        let local = Url::parse("http://127.0.0.1:8080/").unwrap();
        let jar = Jar::new(
            &local,
            &[CookieSpec {
                domain: None,
                ..secure
            }],
        );
        assert_eq!(jar.header_for(&local).as_deref(), Some("sid=1"));
    }
}
