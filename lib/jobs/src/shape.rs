//! Request shaping of a fetch: extra headers, cookies, user agent, locale,
//! timezone, viewport, mobile emulation and basic auth for one host. The
//! engine takes it whole ([`RequestShape`]); `FetchSpec` carries its fields
//! flat, as the job JSON spells them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::{ErrorKind, JobError};

/// A cookie set before the page is requested.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CookieSpec {
    /// The cookie's name.
    pub name: String,
    /// Its value.
    pub value: String,
    /// Its domain (`.example.com` covers subdomains); by default the host
    /// of the URL fetched, and only it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    /// Its path; by default `/`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Sent over HTTPS only, as a browser sends a `Secure` cookie.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub secure: bool,
}

/// A viewport size in CSS pixels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Viewport {
    /// Width, 1–10000.
    pub width: u32,
    /// Height, 1–10000.
    pub height: u32,
}

impl Viewport {
    /// The viewport a `mobile` fetch gets when none is given (a 6.1" phone).
    pub const MOBILE: Viewport = Viewport {
        width: 390,
        height: 844,
    };
}

/// HTTP basic credentials, sent to one host only.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BasicAuth {
    /// The user name.
    pub username: String,
    /// The password (never logged: `Debug` hides it).
    pub password: String,
    /// The `host[:port]` they go to; by default the host and port of the
    /// URL fetched. Requests to any other host never carry them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

impl BasicAuth {
    /// The `host:port` (lowercase, port explicit) the credentials go to on
    /// a fetch of `url`: the given host (with `url`'s port when it names
    /// none), or `url`'s own.
    pub fn authority(&self, url: &url::Url) -> String {
        let port = url.port_or_known_default().unwrap_or(443);
        match &self.host {
            Some(h) => {
                let h = h.to_ascii_lowercase();
                if h.rsplit_once(':').is_some_and(|(_, p)| p.parse::<u16>().is_ok()) && !h.ends_with(']') {
                    h
                } else {
                    format!("{h}:{port}")
                }
            }
            None => format!(
                "{}:{port}",
                url.host_str().unwrap_or_default().to_ascii_lowercase()
            ),
        }
    }

    /// The `Authorization` header value (`Basic …`).
    pub fn header_value(&self) -> String {
        use base64::Engine as _;
        let token =
            base64::engine::general_purpose::STANDARD.encode(format!("{}:{}", self.username, self.password));
        format!("Basic {token}")
    }
}

impl std::fmt::Debug for BasicAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BasicAuth")
            .field("username", &self.username)
            .field("password", &"<redacted>")
            .field("host", &self.host)
            .finish()
    }
}

/// An upstream proxy for a job's traffic: `http://[user:password@]host:port`,
/// `socks5://…` (the proxy connects to the address the URL policy checked)
/// or `socks5h://…` (the proxy resolves names). `Debug` hides credentials.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(transparent)]
pub struct ProxyUrl(pub String);

impl std::fmt::Debug for ProxyUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ProxyUrl({:?})", self.redacted())
    }
}

impl ProxyUrl {
    /// The URL with its credentials replaced by `***`.
    pub fn redacted(&self) -> String {
        match self.0.split_once("://") {
            Some((scheme, rest)) => match rest.rsplit_once('@') {
                Some((_, host)) => format!("{scheme}://***@{host}"),
                None => self.0.clone(),
            },
            None => "<not a URL>".to_owned(),
        }
    }

    /// Refuses what cannot be a proxy URL; the message never holds the
    /// credentials.
    pub fn validate(&self) -> Result<(), JobError> {
        let bad = |why: &str| {
            Err(JobError::new(
                ErrorKind::InvalidInput,
                format!("proxy {}: {why}", self.redacted()),
            ))
        };
        let Ok(url) = url::Url::parse(&self.0) else {
            return bad("not a URL: give scheme://[user:password@]host:port");
        };
        if !matches!(url.scheme(), "http" | "socks5" | "socks5h") {
            return bad("only http://, socks5:// and socks5h:// proxies are supported");
        }
        if url.host_str().is_none_or(str::is_empty) {
            return bad("the URL has no host");
        }
        if !(url.path().is_empty() || url.path() == "/") || url.query().is_some() || url.fragment().is_some()
        {
            return bad("give only scheme://[user:password@]host:port");
        }
        Ok(())
    }
}

/// How a page's requests and environment are shaped; the default changes nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestShape {
    /// Extra request headers, sent to the fetched URL's host only.
    pub headers: BTreeMap<String, String>,
    /// Cookies set before the first request.
    pub cookies: Vec<CookieSpec>,
    /// The `User-Agent` header and `navigator.userAgent`.
    pub user_agent: Option<String>,
    /// A locale (`de-DE`): `Accept-Language`, `navigator.language` and `Intl`.
    pub locale: Option<String>,
    /// An IANA time zone (`Asia/Tokyo`) the page's clock runs in.
    pub timezone: Option<String>,
    /// The viewport size.
    pub viewport: Option<Viewport>,
    /// Mobile emulation: a phone viewport (unless one is given), touch,
    /// a mobile user agent (unless one is given).
    pub mobile: bool,
    /// Basic credentials for one host.
    pub basic_auth: Option<BasicAuth>,
    /// The upstream proxy every request of the page leaves through.
    pub proxy: Option<ProxyUrl>,
}

impl RequestShape {
    /// Says whether nothing is shaped.
    pub fn is_empty(&self) -> bool {
        *self == RequestShape::default()
    }

    /// Refuses values no browser can send: malformed header names, line
    /// breaks in values, cookies without a name, out-of-range viewports.
    pub fn validate(&self) -> Result<(), JobError> {
        let bad = |msg: String| Err(JobError::new(ErrorKind::InvalidInput, msg));
        let token = |s: &str| {
            !s.is_empty()
                && s.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
        };
        let line = |s: &str| !s.contains(['\r', '\n', '\0']);
        for (name, value) in &self.headers {
            if !token(name) {
                return bad(format!("header name {name:?} is not a valid HTTP token"));
            }
            if !line(value) {
                return bad(format!("header {name}: a value cannot hold a line break"));
            }
            let lower = name.to_ascii_lowercase();
            if matches!(
                lower.as_str(),
                "host" | "content-length" | "connection" | "transfer-encoding" | "upgrade"
            ) {
                return bad(format!("header {name} is set by the browser and cannot be given"));
            }
        }
        for c in &self.cookies {
            if !token(&c.name) {
                return bad(format!("cookie name {:?} is not a valid token", c.name));
            }
            if !line(&c.value) || c.value.contains(';') {
                return bad(format!(
                    "cookie {}: the value cannot hold ';' or a line break",
                    c.name
                ));
            }
        }
        for (what, v) in [
            ("user_agent", &self.user_agent),
            ("locale", &self.locale),
            ("timezone", &self.timezone),
        ] {
            if let Some(v) = v
                && (v.trim().is_empty() || !line(v) || v.len() > 1000)
            {
                return bad(format!("{what} {v:?} is empty, too long or holds a line break"));
            }
        }
        if let Some(v) = &self.viewport
            && !((1..=10_000).contains(&v.width) && (1..=10_000).contains(&v.height))
        {
            return bad(format!(
                "viewport {}x{} is out of range: give 1 to 10000 for each side",
                v.width, v.height
            ));
        }
        if let Some(a) = &self.basic_auth
            && (a.username.contains(':') || !line(&a.username) || !line(&a.password))
        {
            return bad("basic_auth: the user name cannot hold ':' and neither part a line break".into());
        }
        if let Some(proxy) = &self.proxy {
            proxy.validate()?;
        }
        Ok(())
    }
}
