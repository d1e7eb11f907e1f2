//! The page-fetch job: its spec (seed 002); its result is in `fetch_result`.

use serde::{Deserialize, Serialize};
use url::Url;

use std::collections::BTreeMap;

use crate::{BasicAuth, CookieSpec, RequestShape, Viewport};

/// The state a fetch waits for before reading the DOM.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum WaitUntil {
    /// The content is ready: after `DOMContentLoaded`, once the work the
    /// page scheduled is done and its text has stopped changing (for 150
    /// ms after `load`, 500 ms before it), at most 5 s after
    /// `DOMContentLoaded`, whether or not `load` has fired. Catches content
    /// a script renders shortly after the page starts, and does not wait
    /// for sub-resources that never finish.
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

/// Whether a fetch renders the page in a browser.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Render {
    /// Always render in Chromium (scripts run, layout decides visibility).
    #[default]
    Always,
    /// Read the document the server sent over plain HTTP; render it only
    /// when it does not hold the page (an application shell, a
    /// `<noscript>` wall, a script or meta redirect, a frameset), handing
    /// the browser the body already read.
    Auto,
    /// Never start a browser: read the served document over HTTP.
    Never,
}

impl Render {
    /// Says whether this is the default (`always`).
    pub fn is_default(&self) -> bool {
        *self == Render::default()
    }

    /// The mode's name as the job JSON and the CLI spell it.
    pub fn as_str(&self) -> &'static str {
        match self {
            Render::Always => "always",
            Render::Auto => "auto",
            Render::Never => "never",
        }
    }
}

/// Resource types a fetch can refuse to download.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
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

/// An output a fetch can add to its result. `markdown`, `links`, `images`
/// and `metadata` are always there; naming them is allowed and changes nothing.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Format {
    /// The Markdown (always in the result).
    Markdown,
    /// The cleaned HTML that became the Markdown (`html` in the result).
    Html,
    /// The HTML as rendered (`raw_html` in the result).
    RawHtml,
    /// The Markdown as plain text (`text` in the result).
    Text,
    /// Links (always in the result).
    Links,
    /// Images (always in the result).
    Images,
    /// Metadata (always in the result).
    Metadata,
    /// A PNG of the viewport (the `screenshot.png` artefact).
    Screenshot,
    /// A PNG of the whole scrollable page (the `screenshot.png` artefact).
    ScreenshotFullPage,
}

/// Which part of the page becomes Markdown.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum ContentMode {
    /// The main content, readability-style.
    #[default]
    Main,
    /// The whole visible page.
    Full,
}

/// What a fetch does with the page's frames (`<iframe>`, `<frame>`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Frames {
    /// Each frame element is taken out of the document as it is inserted,
    /// so no frame is built or loaded. The Markdown never holds a frame's
    /// content, and a frame costs a document, often a process of its own
    /// (a cross-site one) and its requests: ad slots, embeds, trackers.
    #[default]
    Skip,
    /// Frames are built and loaded as in a browser (for pages whose
    /// scripts need them; the Markdown still leaves their content out).
    Load,
    /// Frames are loaded, and each same-origin frame's visible content is
    /// read in place of its frame element (nested ones too, three deep);
    /// a cross-origin frame stays out (its document is not the page's to
    /// read).
    Inline,
}

impl Frames {
    /// Whether frames are taken out (the default).
    pub fn skipped(&self) -> bool {
        *self == Frames::Skip
    }
}

/// What to do with JavaScript dialogs (`alert`, `confirm`, `prompt`,
/// `beforeunload`) nobody handles: they would block the page. A fetch
/// answers them at once and lists them in its result's warnings.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
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

/// How the Markdown writes a link.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum LinkStyle {
    /// `[text](url)` where the link stands.
    #[default]
    Inline,
    /// The link's text alone: prose without URLs, for a model that reads
    /// rather than follows (the URLs stay in the result's `links`).
    Text,
}

impl LinkStyle {
    /// Says whether this is the default style (`inline`).
    pub fn is_default(&self) -> bool {
        *self == LinkStyle::default()
    }
}

/// A page-fetch request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FetchSpec {
    /// The page to fetch (http or https).
    #[schemars(with = "String")]
    pub url: Url,
    /// Runs the browser headless; `false` needs a display (`$DISPLAY`).
    #[serde(default = "default_headless")]
    pub headless: bool,
    /// Deadline of one attempt (navigation and waits), in milliseconds,
    /// 1–600000.
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: u64,
    /// Whether the page is rendered in Chromium, read from the HTML the
    /// server sent without running scripts, or read from it and rendered
    /// only when it does not hold the page. The result says `rendered`
    /// and why.
    ///
    /// See the fetch chapter's render modes.
    #[serde(default, skip_serializing_if = "Render::is_default")]
    pub render: Render,
    /// What to wait for before reading the page.
    ///
    /// `wait_for_load_state`, its name before, is read too; see the fetch
    /// chapter's "When the page is read". The default is not written out
    /// in the job JSON, so a worker that predates it reads the job with
    /// its own default.
    #[serde(
        default,
        skip_serializing_if = "WaitUntil::is_default",
        alias = "wait_for_load_state"
    )]
    pub wait_until: WaitUntil,
    /// A CSS selector that must appear before the page is read.
    ///
    /// A selector that never appeared is not retried.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(example = &"#results")]
    pub wait_for: Option<String>,
    /// A fixed extra wait, in milliseconds, after the `wait_until` state
    /// and `wait_for`, before the page is read (within the attempt's
    /// deadline), 0–60000.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub wait_ms: u64,
    /// Retries of transient failures (page-load timeouts, connection
    /// errors, 5xx, 408, 429, browser crashes), at most 10; others fail at
    /// once and say why.
    #[serde(default = "default_retry_count")]
    pub retry_count: u32,
    /// Base delay between retries, in milliseconds: retry n waits
    /// `retry_delay_ms × 2^n` (each wait at most a minute), 0–60000.
    #[serde(default = "default_retry_delay_ms")]
    pub retry_delay_ms: u64,
    /// Resource types never downloaded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub block_resources: Vec<BlockResource>,
    /// What happens to the page's frames (`<iframe>`, `<frame>`).
    ///
    /// `--render auto` renders a fetch that loads or inlines frames.
    #[serde(default, skip_serializing_if = "Frames::skipped")]
    pub frames: Frames,
    /// Which part of the page becomes Markdown.
    ///
    /// Main mode is readability-style extraction plus boilerplate rules
    /// (sharing, newsletter, related, comments, link lists, teasers).
    #[serde(default)]
    pub content: ContentMode,
    /// Keeps the rendered HTML as the `page.html` artefact.
    #[serde(default)]
    pub include_html: bool,
    /// Keeps a PNG of the page as the `screenshot.png` artefact.
    #[serde(default)]
    pub screenshot: bool,
    /// CSS selectors: only what they match becomes Markdown (outermost
    /// matches, in document order), in place of main-content detection.
    ///
    /// None matching gives empty Markdown and a warning; at most 50.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub include: Vec<String>,
    /// CSS selectors whose elements are removed before the page is read
    /// (before `include` and main-content detection).
    ///
    /// At most 50. A selector that is not valid CSS fails with
    /// `invalid_input`, not retried.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exclude: Vec<String>,
    /// Keeps cookie banners, consent walls and modal overlays, which main
    /// mode removes.
    #[serde(default, skip_serializing_if = "is_false")]
    pub keep_overlays: bool,
    /// Extra request headers, sent to the fetched URL's host only.
    ///
    /// Every request to that host carries them (the document, its
    /// scripts, images, XHR); a redirect to another host does not.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// Cookies set before the page is requested.
    ///
    /// Without `domain`, for the fetched URL's host only; path `/` unless
    /// given.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cookies: Vec<CookieSpec>,
    /// The `User-Agent` of every request and `navigator.userAgent`
    /// (Chromium's when unset).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(example = &"ExampleBot/1.0")]
    pub user_agent: Option<String>,
    /// A locale such as `de-DE`: `Accept-Language`, `navigator.language`
    /// and `Intl`.
    ///
    /// `de-DE` sends `Accept-Language: de-DE,de;q=0.9`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(example = &"de-DE")]
    pub locale: Option<String>,
    /// An IANA time zone such as `Asia/Tokyo` the page's clock runs in
    /// (the host's when unset).
    ///
    /// An unknown zone fails with `invalid_input`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(example = &"Asia/Tokyo")]
    pub timezone: Option<String>,
    /// The viewport in CSS pixels, each side 1–10000 (the browser
    /// window's, 1280×800, when unset).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(example = Viewport { width: 800, height: 600 })]
    pub viewport: Option<Viewport>,
    /// Emulates a phone: its viewport (unless `viewport`), touch, a mobile
    /// user agent (unless `user_agent`).
    ///
    /// The phone is 390×844 at 2×, with the user agent of Chromium on
    /// Android.
    #[serde(default, skip_serializing_if = "is_false")]
    pub mobile: bool,
    /// HTTP basic credentials, sent preemptively to one `host[:port]`
    /// only: the fetched URL's, or `host`.
    ///
    /// Never sent to another host or port, nor after a redirect elsewhere.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub basic_auth: Option<BasicAuth>,
    /// An upstream proxy every request of the page leaves through, after
    /// the URL policy judged its target: `http://[USER:PASSWORD@]HOST:PORT`,
    /// `socks5://…` (the proxy connects to the checked address) or
    /// `socks5h://…` (it resolves).
    ///
    /// Popups and workers go through it too. `http://` tunnels TLS and
    /// WebSockets with `CONNECT` and hands a plain-HTTP request to the
    /// proxy whole, as browsers do. Wrong credentials fail with
    /// `invalid_input`, not retried; the credentials never appear in a
    /// message, log or result. Needs the default isolation (a shared
    /// context has one way out for every job).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy: Option<crate::shape::ProxyUrl>,
    /// Outputs to add to the result; `markdown`, `links`, `images` and
    /// `metadata` are always there and may be named.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub formats: Vec<Format>,
    /// Response headers of the main document to report in
    /// `metadata.response_headers` (names, any case; absent ones left
    /// out).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub response_headers: Vec<String>,
    /// A token budget (cl100k) for the Markdown: a longer one is cut at a
    /// block boundary and the result says so (`truncated`).
    ///
    /// The cut is never inside a paragraph, list, table or code block;
    /// `tokens.markdown` counts what was kept and a warning gives both
    /// counts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(example = 8000)]
    pub max_tokens: Option<u64>,
    /// How the page's JavaScript dialogs (`alert`, `confirm`, `prompt`,
    /// `beforeunload`) are answered, at once so they never block the
    /// page; each is listed in the result's warnings.
    #[serde(default, skip_serializing_if = "DialogAction::is_default")]
    pub dialogs: DialogAction,
    /// Structured workflow steps run in order on the ready page before it
    /// is read (`click: button "Load more"`, `wait: text "Item 40"` …; the
    /// grammar of `oxwright run`'s structured steps), one step per item.
    ///
    /// At most 50. A step that does not parse fails with `invalid_input`
    /// before any navigation; one that fails (no element matches, two
    /// match, a wait runs out; three attempts, each action within 10 s or
    /// the attempt's deadline if shorter) ends the fetch with
    /// `step_failed` naming the step. A navigation an action causes is
    /// followed and read (under the URL policy); `{{NAME}}` placeholders
    /// are refused (a fetch has no secret store).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub actions: Vec<String>,
    /// Scrolls the page through before it is read: down a screen at a
    /// time to the bottom (at most 30 screens), waiting at each screen for
    /// what coming into view set off (a section, comments, images loaded
    /// when seen), after the actions. Needs a browser: `render: auto`
    /// renders, `never` refuses it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub scroll: bool,
    /// How old a cached result of the same request may be and still be
    /// the answer, in milliseconds; `0` always fetches (and neither reads
    /// nor writes the cache), at most 30 days.
    ///
    /// A fresh entry answers with no navigation (`cache: "hit"`); an older
    /// one with an `ETag` or `Last-Modified` is revalidated with a
    /// conditional request through the browser, and a 304 serves it again
    /// (`"revalidated"`); otherwise the page is fetched (`"miss"`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub max_age_ms: u64,
    /// How the Markdown writes a link.
    // Not written out at its default, so specs (and cache keys) without it stay as they were.
    #[serde(default, skip_serializing_if = "LinkStyle::is_default")]
    pub link_style: LinkStyle,
    /// Records to read out of the page by CSS selectors, no model asked:
    /// a schema in crawl4ai's `JsonCssExtractionStrategy` shape
    /// (`baseSelector`, `baseFields`, `fields` of type `text`,
    /// `attribute`, `html`, `regex`, `nested`, `list`, `nested_list`, with
    /// `default` and `transform`). On the command line, the path of the
    /// schema's JSON file.
    ///
    /// It reads the page the Markdown comes from (served or rendered),
    /// whole; the records are the result's `extract` and the job's
    /// `extract.json`. A selector that matches nothing gives no records
    /// and a warning. A schema with an unknown key or type, or a selector
    /// or pattern that does not compile, is refused with the key's path
    /// before any page is fetched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extract_css: Option<crate::CssSchema>,
    /// Data to read out of the page through the LLM: a JSON Schema whose
    /// root is an object or an array. On the command line, the path of
    /// the schema's JSON file.
    ///
    /// The page's Markdown (cut into parts of at most 6,000 tokens, the
    /// parts' answers merged) goes to the `[llm]` endpoint of whoever
    /// fetches it, with the schema. The answer is checked against the
    /// schema; a broken one is asked again with the errors, at most 3
    /// calls a part. The value is the result's `extract` and the job's
    /// `extract.json`; calls and tokens are in `extraction`. Answers that
    /// never fit end the fetch with `extraction_failed`. A schema that is
    /// not valid JSON Schema is refused with the key's path before any
    /// page is fetched. Not with `extract_css`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extract: Option<crate::JsonSchema>,
    /// What to tell the model beside `extract`'s schema (which records,
    /// which currency, what to leave out), at most 4,000 characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extract_prompt: Option<String>,
    /// With `extract`: learns from the model's reading of a page a CSS
    /// schema that reads the same value out of its HTML, keeps it in the
    /// artefact store under the page's URL pattern (shared by every
    /// worker), and reads later pages of the pattern by its selectors with
    /// no model call.
    ///
    /// A page a kept schema reads wrongly (the value does not fit the
    /// JSON Schema, or a required field is empty) is read by the model and
    /// a schema is learned for its template beside the others (at most 4
    /// a pattern). The result's `extraction.method` says which way each
    /// page was read (`learned` or `llm`).
    #[serde(default, skip_serializing_if = "is_false")]
    pub learn: bool,
}

fn is_false(v: &bool) -> bool {
    !*v
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
            render: Render::default(),
            wait_until: WaitUntil::default(),
            wait_for: None,
            wait_ms: 0,
            retry_count: default_retry_count(),
            retry_delay_ms: default_retry_delay_ms(),
            block_resources: Vec::new(),
            frames: Frames::default(),
            content: ContentMode::default(),
            include_html: false,
            screenshot: false,
            include: Vec::new(),
            exclude: Vec::new(),
            keep_overlays: false,
            headers: BTreeMap::new(),
            cookies: Vec::new(),
            user_agent: None,
            locale: None,
            timezone: None,
            viewport: None,
            mobile: false,
            basic_auth: None,
            proxy: None,
            max_tokens: None,
            response_headers: Vec::new(),
            formats: Vec::new(),
            dialogs: DialogAction::default(),
            actions: Vec::new(),
            scroll: false,
            max_age_ms: 0,
            link_style: LinkStyle::default(),
            extract_css: None,
            extract: None,
            extract_prompt: None,
            learn: false,
        }
    }

    /// The request shaping this spec asks for.
    pub fn shape(&self) -> RequestShape {
        RequestShape {
            headers: self.headers.clone(),
            cookies: self.cookies.clone(),
            user_agent: self.user_agent.clone(),
            locale: self.locale.clone(),
            timezone: self.timezone.clone(),
            viewport: self.viewport,
            mobile: self.mobile,
            basic_auth: self.basic_auth.clone(),
            proxy: self.proxy.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_defaults_fill_in() {
        let spec: FetchSpec = serde_json::from_str(r#"{"url":"https://a.example/"}"#).unwrap();
        assert!(spec.headless);
        assert_eq!(spec.timeout_ms, 30_000);
        assert_eq!(spec.wait_until, WaitUntil::Ready);
        assert_eq!(spec.wait_ms, 0);
        assert_eq!(spec.content, ContentMode::Main);
    }

    #[test]
    fn wait_until_reads_its_old_name_too() {
        for key in ["wait_until", "wait_for_load_state"] {
            let spec: FetchSpec = serde_json::from_str(&format!(
                r#"{{"url":"https://a.example/","{key}":"networkidle"}}"#
            ))
            .unwrap();
            assert_eq!(spec.wait_until, WaitUntil::Networkidle, "{key}");
        }
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
        assert!(json.get("wait_until").is_none(), "{json}");
        assert!(json.get("wait_ms").is_none(), "{json}");
        assert!(json.get("dialogs").is_none(), "{json}");
        let mut spec = spec;
        spec.wait_until = WaitUntil::Load;
        spec.wait_ms = 250;
        spec.dialogs = DialogAction::Accept;
        assert_eq!(serde_json::to_value(&spec).unwrap()["dialogs"], "accept");
        let back: FetchSpec = serde_json::from_value(serde_json::to_value(&spec).unwrap()).unwrap();
        assert_eq!(back, spec);
    }

    #[test]
    fn fetch_options_read_from_job_json() {
        let spec: FetchSpec = serde_json::from_str(
            r##"{"url":"https://a.example/","include":["article"],"exclude":[".ad"],"keep_overlays":true,
                "headers":{"X-Team":"blue"},"cookies":[{"name":"s","value":"1","domain":".a.example"}],
                "user_agent":"Bot/1","locale":"de-DE","timezone":"Asia/Tokyo",
                "viewport":{"width":800,"height":600},"mobile":true,
                "basic_auth":{"username":"u","password":"hunter2","host":"a.example:8443"}}"##,
        )
        .unwrap();
        spec.validate().unwrap();
        let shape = spec.shape();
        assert_eq!(shape.headers["X-Team"], "blue");
        assert_eq!(shape.cookies[0].domain.as_deref(), Some(".a.example"));
        assert_eq!(
            shape.viewport,
            Some(Viewport {
                width: 800,
                height: 600
            })
        );
        assert!(shape.mobile && !shape.is_empty());
        assert!(
            !format!("{spec:?}").contains("hunter2"),
            "Debug hides the password"
        );
        let back: FetchSpec = serde_json::from_value(serde_json::to_value(&spec).unwrap()).unwrap();
        assert_eq!(back, spec);
        // Nothing of it is written when unset.
        let plain = serde_json::to_value(FetchSpec::new("https://a.example/".parse().unwrap())).unwrap();
        for key in [
            "include",
            "exclude",
            "keep_overlays",
            "headers",
            "cookies",
            "mobile",
            "basic_auth",
        ] {
            assert!(plain.get(key).is_none(), "{key}: {plain}");
        }
    }

    #[test]
    fn bad_fetch_options_are_invalid_input() {
        let base = || FetchSpec::new("https://a.example/".parse().unwrap());
        let mut s = base();
        s.headers.insert("X-A".into(), "1\r\nInjected: 2".into());
        assert_eq!(s.validate().unwrap_err().kind, crate::ErrorKind::InvalidInput);
        let mut s = base();
        s.headers.insert("Bad Name".into(), "1".into());
        assert!(s.validate().is_err());
        let mut s = base();
        s.headers.insert("Host".into(), "b.example".into());
        assert!(s.validate().is_err());
        let mut s = base();
        s.viewport = Some(Viewport {
            width: 0,
            height: 600,
        });
        assert!(s.validate().is_err());
        let mut s = base();
        s.include = vec!["  ".into()];
        assert!(s.validate().is_err());
        let mut s = base();
        s.exclude = vec!["p".into(); 51];
        assert!(s.validate().is_err());
        let mut s = base();
        s.cookies.push(CookieSpec {
            name: "a".into(),
            value: "b; c=d".into(),
            domain: None,
            path: None,
            secure: false,
        });
        assert!(s.validate().is_err());
        let mut s = base();
        s.response_headers = vec!["etag".into(), "bad name".into()];
        assert!(s.validate().is_err());
    }

    #[test]
    fn actions_and_max_age_are_read_and_stay_off_the_wire_at_default() {
        let spec: FetchSpec = serde_json::from_str(
            r#"{"url":"https://a.example/","actions":["click: button \"Load more\""],"max_age_ms":60000}"#,
        )
        .unwrap();
        spec.validate().unwrap();
        assert_eq!(spec.actions, [r#"click: button "Load more""#]);
        assert_eq!(spec.max_age_ms, 60_000);
        let back: FetchSpec = serde_json::from_value(serde_json::to_value(&spec).unwrap()).unwrap();
        assert_eq!(back, spec);
        let plain = serde_json::to_value(FetchSpec::new("https://a.example/".parse().unwrap())).unwrap();
        assert!(
            plain.get("actions").is_none() && plain.get("max_age_ms").is_none(),
            "{plain}"
        );
        let mut s = spec.clone();
        s.actions = vec!["   ".into()];
        assert_eq!(s.validate().unwrap_err().kind, crate::ErrorKind::InvalidInput);
        let mut s = spec.clone();
        s.actions = vec!["scroll: bottom".into(); crate::limits::MAX_ACTIONS + 1];
        assert!(s.validate().is_err());
        let mut s = spec;
        s.max_age_ms = crate::limits::MAX_AGE_MS + 1;
        assert!(s.validate().unwrap_err().message.contains("max_age_ms"));
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
