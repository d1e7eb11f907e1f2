//! Who may see the dashboard and act in it.
//!
//! With an API token configured, a browser logs in once with it: the
//! answer sets an HttpOnly, SameSite=Strict cookie holding a value derived
//! from the token (so every scheduler behind one address accepts it), and
//! scripts may send the bearer token instead. Without a token the daemon
//! listens on loopback only; then the dashboard needs no login but answers
//! only requests whose `Host` is a loopback name or address, so a web page
//! that rebinds its own name to 127.0.0.1 reads nothing. Every action
//! (POST) carries a CSRF token, and a browser's cross-site POST is refused
//! before the token is even read.

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// The cookie holding the dashboard session.
pub(crate) const COOKIE: &str = "oxwright_ui";

/// The dashboard's keys, fixed when the daemon starts.
pub(crate) struct UiAuth {
    /// The API token, when one is configured.
    token: Option<String>,
    /// The cookie value a logged-in browser holds.
    session: Option<String>,
    /// The token each action must carry.
    csrf: String,
}

fn mac(key: &[u8], what: &str) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes any key");
    mac.update(what.as_bytes());
    mac.finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

impl UiAuth {
    /// Keys derived from `token`; without one, a CSRF key drawn at random.
    pub(crate) fn new(token: Option<&str>) -> Self {
        let key = match token {
            Some(token) => token.as_bytes().to_vec(),
            None => {
                let mut key = uuid::Uuid::new_v4().as_bytes().to_vec();
                key.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
                key
            }
        };
        Self {
            token: token.map(str::to_owned),
            session: token.map(|t| mac(t.as_bytes(), "oxwright dashboard session")),
            csrf: mac(&key, "oxwright dashboard csrf"),
        }
    }

    /// Whether a login is needed at all.
    pub(crate) fn needs_login(&self) -> bool {
        self.token.is_some()
    }

    /// The CSRF token forms carry.
    pub(crate) fn csrf(&self) -> &str {
        &self.csrf
    }

    /// Whether `given` is the CSRF token.
    pub(crate) fn csrf_ok(&self, given: Option<&str>) -> bool {
        given.is_some_and(|g| super::super::constant_time_eq(g.as_bytes(), self.csrf.as_bytes()))
    }

    /// Whether `given` is the API token (the login form's field).
    pub(crate) fn token_ok(&self, given: &str) -> bool {
        self.token
            .as_deref()
            .is_some_and(|t| super::super::constant_time_eq(given.as_bytes(), t.as_bytes()))
    }

    /// The `Set-Cookie` value of a login.
    pub(crate) fn login_cookie(&self) -> Option<String> {
        let session = self.session.as_deref()?;
        Some(format!("{COOKIE}={session}; Path=/ui; HttpOnly; SameSite=Strict"))
    }

    /// Whether the request's headers authenticate it.
    pub(crate) fn allows(&self, headers: &axum::http::HeaderMap) -> Result<(), Refusal> {
        let Some(session) = &self.session else {
            return if host_is_loopback(headers) {
                Ok(())
            } else {
                Err(Refusal::Host)
            };
        };
        if self
            .token
            .as_deref()
            .is_some_and(|t| super::super::bearer_is(headers, t))
        {
            return Ok(());
        }
        let cookie = cookie(headers, COOKIE);
        if cookie.is_some_and(|c| super::super::constant_time_eq(c.as_bytes(), session.as_bytes())) {
            return Ok(());
        }
        Err(Refusal::Login)
    }
}

/// Why a request is not let in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// No or a wrong session: 401 with the login form.
    Login,
    /// No login configured and a `Host` that is not loopback: 403.
    Host,
}

/// The value of cookie `name`, if the request has it.
pub(crate) fn cookie<'a>(headers: &'a axum::http::HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(axum::http::header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

/// Whether `Host` names this machine: `localhost` or a loopback address.
fn host_is_loopback(headers: &axum::http::HeaderMap) -> bool {
    let Some(host) = headers
        .get(axum::http::header::HOST)
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    let name = match host.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => host.rsplit_once(':').map_or(host, |(name, _)| name),
    };
    name.eq_ignore_ascii_case("localhost")
        || name.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// Whether a POST came from another site (refused whatever it carries):
/// browsers say so in `Sec-Fetch-Site`, older ones in `Origin`.
pub(crate) fn cross_site(headers: &axum::http::HeaderMap) -> bool {
    let site = headers.get("sec-fetch-site").and_then(|v| v.to_str().ok());
    if let Some(site) = site {
        return !matches!(site, "same-origin" | "none");
    }
    let origin = headers
        .get(axum::http::header::ORIGIN)
        .and_then(|v| v.to_str().ok());
    let host = headers
        .get(axum::http::header::HOST)
        .and_then(|v| v.to_str().ok());
    match (origin, host) {
        (Some(origin), Some(host)) => origin
            .split_once("://")
            .is_none_or(|(_, rest)| rest.trim_end_matches('/') != host),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::{HeaderMap, HeaderValue};

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.append(*k, HeaderValue::from_str(v).unwrap());
        }
        map
    }

    #[test]
    fn a_token_needs_the_cookie_or_the_bearer() {
        let auth = UiAuth::new(Some("secret"));
        assert_eq!(auth.allows(&headers(&[])), Err(Refusal::Login));
        let cookie = auth.login_cookie().unwrap();
        let value = cookie.split(';').next().unwrap();
        assert!(!value.contains("secret"));
        assert_eq!(auth.allows(&headers(&[("cookie", value)])), Ok(()));
        assert_eq!(
            auth.allows(&headers(&[("cookie", "oxwright_ui=nope")])),
            Err(Refusal::Login)
        );
        assert_eq!(
            auth.allows(&headers(&[("authorization", "Bearer secret")])),
            Ok(())
        );
        assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"));
    }

    #[test]
    fn without_a_token_only_loopback_hosts() {
        let auth = UiAuth::new(None);
        assert!(!auth.needs_login());
        assert_eq!(auth.allows(&headers(&[("host", "127.0.0.1:8080")])), Ok(()));
        assert_eq!(auth.allows(&headers(&[("host", "localhost")])), Ok(()));
        assert_eq!(auth.allows(&headers(&[("host", "[::1]:80")])), Ok(()));
        assert_eq!(
            auth.allows(&headers(&[("host", "evil.example:8080")])),
            Err(Refusal::Host)
        );
        assert!(auth.csrf_ok(Some(auth.csrf())));
        assert!(!auth.csrf_ok(Some("x")) && !auth.csrf_ok(None));
    }

    #[test]
    fn cross_site_posts_are_seen() {
        assert!(cross_site(&headers(&[("sec-fetch-site", "cross-site")])));
        assert!(!cross_site(&headers(&[("sec-fetch-site", "same-origin")])));
        assert!(cross_site(&headers(&[
            ("origin", "http://evil.example"),
            ("host", "127.0.0.1:1")
        ])));
        assert!(!cross_site(&headers(&[
            ("origin", "http://127.0.0.1:1"),
            ("host", "127.0.0.1:1")
        ])));
    }
}
