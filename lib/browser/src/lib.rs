//! The browser engine: a warm pool of Chromium processes that oxwright owns,
//! pages in fresh browser contexts, navigation under the URL policy with
//! resource blocking, content extraction and screenshots. Every DevTools call
//! has a deadline.

mod admission;
mod config;
mod error;
mod frame_link;
mod frames;
mod handle;
mod intercept;
mod main_document;
pub use intercept::fetch_patterns;
mod navigate;
mod page;
mod pool;
pub mod process;
mod ready;
mod renderer_memory;
mod tab;

use std::sync::Arc;
use std::time::Duration;

pub use admission::Admission;
pub use config::{Isolation, PoolConfig};
pub use error::BrowserError;
pub use page::{ChromiumPage, SnapshotSource};
pub use pool::{BrowserPool, Lease, PoolStats};
pub use tab::Tab;

pub use oxwright_jobs::{BlockResource, WaitUntil};
pub use oxwright_owned::sandbox;
pub use oxwright_owned::sandbox::SandboxMode;
pub use oxwright_policy::UrlPolicy;

/// How to navigate: the engine's options of a `goto`, and what the
/// browser adds to them for the page they run on.
#[derive(Debug, Clone)]
pub struct NavigateOptions {
    /// The waits, blocking, deadline and main-document handling the
    /// engine seam asks for.
    pub goto: oxwright_engine::GotoOptions,
    /// The URL policy applied to every request.
    pub policy: Arc<UrlPolicy>,
    /// Headers added to the requests of one host (and basic credentials to
    /// one `host:port`), through the interception every request passes.
    pub headers: Option<Arc<HostHeaders>>,
    /// The upstream proxy the page's requests leave through (after the
    /// policy judged them); needs a context of its own.
    pub proxy: Option<oxwright_jobs::ProxyUrl>,
}

/// Request headers that go to one host only: the extra headers of a fetch
/// to the host it asked for, basic credentials to one `host:port`. The
/// interceptor adds them to those requests and takes them off any other
/// (a redirect to another host carries the headers of its first hop).
#[derive(Clone, Default)]
pub struct HostHeaders {
    /// The lowercase host the extra headers go to.
    pub host: String,
    /// The extra headers.
    pub headers: Vec<(String, String)>,
    /// `host:port` (lowercase, port explicit) and the `Authorization`
    /// header value sent there.
    pub auth: Option<(String, String)>,
}

impl std::fmt::Debug for HostHeaders {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostHeaders")
            .field("host", &self.host)
            .field(
                "headers",
                &self.headers.iter().map(|(n, _)| n).collect::<Vec<_>>(),
            )
            .field("auth", &self.auth.as_ref().map(|(a, _)| a))
            .finish()
    }
}

impl HostHeaders {
    /// Returns the header list a request to `url` with `original` headers
    /// should carry, or `None` when it should go as it is.
    pub fn for_request(&self, url: &str, original: &[(String, String)]) -> Option<Vec<(String, String)>> {
        let parsed = url::Url::parse(url).ok()?;
        let host = parsed.host_str()?.to_ascii_lowercase();
        let authority = format!("{host}:{}", parsed.port_or_known_default()?);
        let mut ours: Vec<(&str, &str)> = Vec::new();
        let mut foreign: Vec<(&str, &str)> = Vec::new();
        for (n, v) in &self.headers {
            if host == self.host {
                ours.push((n, v));
            } else {
                foreign.push((n, v));
            }
        }
        if let Some((auth_at, value)) = &self.auth {
            if *auth_at == authority {
                ours.push(("Authorization", value));
            } else {
                foreign.push(("Authorization", value));
            }
        }
        let carries = |(n, v): (&str, &str)| {
            original
                .iter()
                .any(|(on, ov)| on.eq_ignore_ascii_case(n) && ov == v)
        };
        if ours.is_empty() && !foreign.iter().any(|h| carries(*h)) {
            return None;
        }
        let mut out: Vec<(String, String)> = original
            .iter()
            .filter(|(on, ov)| {
                !ours.iter().any(|(n, _)| on.eq_ignore_ascii_case(n))
                    && !foreign.iter().any(|(n, v)| on.eq_ignore_ascii_case(n) && ov == v)
            })
            .cloned()
            .collect();
        out.extend(ours.iter().map(|(n, v)| (n.to_string(), v.to_string())));
        Some(out)
    }
}

impl NavigateOptions {
    /// Waits for `load`, no selector, nothing blocked.
    pub fn load(policy: Arc<UrlPolicy>, timeout: Duration) -> Self {
        Self {
            goto: oxwright_engine::GotoOptions::load(timeout),
            policy,
            headers: None,
            proxy: None,
        }
    }
}

/// What a navigation ended on (the engine seam's [`oxwright_engine::Navigated`]).
pub type Navigation = oxwright_engine::Navigated;

#[cfg(test)]
mod tests {
    use super::*;

    fn rules() -> HostHeaders {
        HostHeaders {
            host: "a.test".into(),
            headers: vec![("X-Team".into(), "blue".into())],
            auth: Some(("a.test:8080".into(), "Basic dTpw".into())),
        }
    }

    #[test]
    fn headers_go_to_their_host_only() {
        let r = rules();
        let orig = vec![("Accept".to_string(), "*/*".to_string())];
        let at = r.for_request("http://a.test:8080/x", &orig).unwrap();
        assert!(at.contains(&("X-Team".into(), "blue".into())));
        assert!(at.contains(&("Authorization".into(), "Basic dTpw".into())));
        // Same host, other port: the headers, not the credentials.
        let other_port = r.for_request("http://a.test:9090/x", &orig).unwrap();
        assert!(other_port.contains(&("X-Team".into(), "blue".into())));
        assert!(!other_port.iter().any(|(n, _)| n == "Authorization"));
        // Another host as it is, or stripped of what a redirect carried over.
        assert_eq!(r.for_request("http://b.test/x", &orig), None);
        let carried = vec![
            ("Accept".to_string(), "*/*".to_string()),
            ("x-team".to_string(), "blue".to_string()),
            ("Authorization".to_string(), "Basic dTpw".to_string()),
        ];
        assert_eq!(r.for_request("http://b.test/x", &carried), Some(orig));
    }
}
