//! The page-fetch job: its spec and its result (seed 002).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use url::Url;

/// The state a fetch waits for before reading the DOM.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WaitUntil {
    /// The content is ready: after `DOMContentLoaded`, the DOM's text has
    /// stopped changing for a quiet period (bounded by a soft deadline),
    /// whether or not `load` has fired. Catches content a script renders
    /// shortly after the page starts, and does not wait for sub-resources
    /// that never finish.
    #[default]
    Ready,
    /// The `load` event.
    Load,
    /// The `DOMContentLoaded` event.
    #[serde(alias = "DOMContentLoaded")]
    Domcontentloaded,
    /// No network connection for 500 ms.
    Networkidle,
}

/// Resource types a fetch can refuse to download.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BlockResource {
    /// Images (`<img>`, CSS backgrounds, favicons).
    Image,
    /// Web fonts.
    Font,
    /// Audio and video.
    Media,
    /// CSS.
    Stylesheet,
    /// JavaScript.
    Script,
    /// XMLHttpRequest.
    Xhr,
    /// `fetch()` calls.
    Fetch,
    /// WebSockets.
    Websocket,
    /// Server-sent events.
    Eventsource,
    /// Web app manifests.
    Manifest,
    /// Prefetches and pings.
    Other,
}

/// Which part of the page becomes Markdown.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ContentMode {
    /// The main content, readability-style.
    #[default]
    Main,
    /// The whole visible page.
    Full,
}

/// What to do with JavaScript dialogs (`alert`, `confirm`, `prompt`,
/// `beforeunload`) nobody handles: they would block the page. A fetch
/// answers them at once and lists them in its result's warnings.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DialogAction {
    /// Press OK (a prompt gets its default text).
    Accept,
    /// Press Cancel.
    #[default]
    Dismiss,
}

impl DialogAction {
    /// Says whether this is the default answer (`dismiss`).
    pub fn is_default(&self) -> bool {
        *self == DialogAction::default()
    }
}

/// A page-fetch request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FetchSpec {
    /// The page to fetch (http or https).
    pub url: Url,
    /// Runs the browser headless; `false` needs a display.
    #[serde(default = "default_headless")]
    pub headless: bool,
    /// Deadline of one attempt, in milliseconds.
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: u64,
    /// State to wait for. The default (`ready`) is not written out, so a
    /// worker that predates it reads the job with its own default.
    #[serde(default, skip_serializing_if = "WaitUntil::is_default")]
    pub wait_for_load_state: WaitUntil,
    /// A CSS selector that must appear before the DOM is read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_for: Option<String>,
    /// A fixed extra wait, in milliseconds, after the state (and `wait_for`)
    /// was reached and before the DOM is read; within the attempt's deadline.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub wait_ms: u64,
    /// Retries after the first attempt, for transient failures only.
    #[serde(default = "default_retry_count")]
    pub retry_count: u32,
    /// Base delay between attempts; attempt n waits `retry_delay_ms × 2^n`.
    #[serde(default = "default_retry_delay_ms")]
    pub retry_delay_ms: u64,
    /// Resource types never downloaded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub block_resources: Vec<BlockResource>,
    /// Main content or full page.
    #[serde(default)]
    pub content: ContentMode,
    /// Keeps the rendered HTML as an artefact.
    #[serde(default)]
    pub include_html: bool,
    /// Takes a PNG screenshot.
    #[serde(default)]
    pub screenshot: bool,
    /// How the page's JavaScript dialogs are answered (not written out at
    /// its default, `dismiss`).
    #[serde(default, skip_serializing_if = "DialogAction::is_default")]
    pub dialogs: DialogAction,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}
fn default_headless() -> bool {
    true
}
fn default_timeout_ms() -> u64 {
    30_000
}
fn default_retry_count() -> u32 {
    2
}
fn default_retry_delay_ms() -> u64 {
    1_000
}

impl WaitUntil {
    /// Says whether this is the default state (`ready`).
    pub fn is_default(&self) -> bool {
        *self == WaitUntil::default()
    }
}

impl FetchSpec {
    /// Creates a spec for `url` with every option at its default.
    pub fn new(url: Url) -> Self {
        Self {
            url,
            headless: default_headless(),
            timeout_ms: default_timeout_ms(),
            wait_for_load_state: WaitUntil::default(),
            wait_for: None,
            wait_ms: 0,
            retry_count: default_retry_count(),
            retry_delay_ms: default_retry_delay_ms(),
            block_resources: Vec::new(),
            content: ContentMode::default(),
            include_html: false,
            screenshot: false,
            dialogs: DialogAction::default(),
        }
    }
}

/// Metadata read from the rendered page.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageMetadata {
    /// `<meta name="description">`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// `<html lang>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lang: Option<String>,
    /// `<link rel="canonical">`, resolved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub canonical: Option<String>,
    /// Other `<meta>` name/property pairs (og:*, twitter:*, author, …).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub meta: BTreeMap<String, String>,
}

/// Token counts (cl100k) before and after conversion.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenCounts {
    /// Tokens in the rendered HTML.
    pub html: usize,
    /// Tokens in the Markdown.
    pub markdown: usize,
}

impl TokenCounts {
    /// Returns the reduction of Markdown versus HTML, 0.0–1.0.
    pub fn reduction(&self) -> f64 {
        if self.html == 0 {
            return 0.0;
        }
        1.0 - self.markdown as f64 / self.html as f64
    }
}

/// Where the time of a fetch went, in milliseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct FetchTimings {
    /// Waiting for a browser from the pool.
    pub acquire_ms: f64,
    /// Navigation until the requested state, then `wait_for` and `wait_ms`.
    pub navigate_ms: f64,
    /// Reading the DOM and metadata out of the page.
    pub extract_ms: f64,
    /// HTML → Markdown and token counting.
    pub convert_ms: f64,
    /// The whole job including retries and backoff.
    pub total_ms: f64,
}

/// A successful page fetch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FetchResult {
    /// The URL that was asked for.
    pub url: String,
    /// The URL after redirects.
    pub final_url: String,
    /// HTTP status of the final main document.
    pub status: u16,
    /// Content type of the final main document.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
    /// The document title.
    pub title: String,
    /// Page metadata.
    pub metadata: PageMetadata,
    /// The Markdown.
    pub markdown: String,
    /// Which content mode produced the Markdown.
    pub content_mode: ContentMode,
    /// Token counts before and after conversion.
    pub tokens: TokenCounts,
    /// Timings of the successful attempt (total covers all).
    pub timings: FetchTimings,
    /// Attempts made, 1 when the first one succeeded.
    pub attempts: u32,
    /// Things worth knowing that did not fail the fetch.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// Artefact keys written for this job (page.md, page.html, screenshot.png).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_defaults_fill_in() {
        let spec: FetchSpec = serde_json::from_str(r#"{"url":"https://a.example/"}"#).unwrap();
        assert!(spec.headless);
        assert_eq!(spec.timeout_ms, 30_000);
        assert_eq!(spec.wait_for_load_state, WaitUntil::Ready);
        assert_eq!(spec.wait_ms, 0);
        assert_eq!(spec.content, ContentMode::Main);
    }

    #[test]
    fn spec_refuses_unknown_fields() {
        let err = serde_json::from_str::<FetchSpec>(r#"{"url":"https://a.example/","colour":1}"#);
        assert!(err.is_err());
    }

    #[test]
    fn defaults_stay_off_the_wire() {
        // Workers that predate `ready` and `wait_ms` read such a spec with their own defaults.
        let spec = FetchSpec::new("https://a.example/".parse().unwrap());
        let json = serde_json::to_value(&spec).unwrap();
        assert!(json.get("wait_for_load_state").is_none(), "{json}");
        assert!(json.get("wait_ms").is_none(), "{json}");
        assert!(json.get("dialogs").is_none(), "{json}");
        let mut spec = spec;
        spec.wait_for_load_state = WaitUntil::Load;
        spec.wait_ms = 250;
        spec.dialogs = DialogAction::Accept;
        assert_eq!(serde_json::to_value(&spec).unwrap()["dialogs"], "accept");
        let back: FetchSpec = serde_json::from_value(serde_json::to_value(&spec).unwrap()).unwrap();
        assert_eq!(back, spec);
    }

    #[test]
    fn load_state_names() {
        for (name, want) in [
            ("\"ready\"", WaitUntil::Ready),
            ("\"load\"", WaitUntil::Load),
            ("\"domcontentloaded\"", WaitUntil::Domcontentloaded),
            ("\"networkidle\"", WaitUntil::Networkidle),
        ] {
            assert_eq!(serde_json::from_str::<WaitUntil>(name).unwrap(), want);
        }
    }
}
