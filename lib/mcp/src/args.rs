//! The tools' arguments. Names and fields follow Microsoft's Playwright MCP
//! (`browser_*`: `element` is the human description, `target` — or its old
//! name `ref` — a snapshot ref or a selector) and the seed's
//! `playwright_*` server (`selector`, `value`, `script`), so prompts written
//! for either work here. Every struct derives the JSON schema `tools/list`
//! publishes.

use schemars::JsonSchema;
use serde::Deserialize;

/// What an element tool aims at.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct ElementArgs {
    /// Human-readable description of the element, for the log and error
    /// messages (e.g. "Sign in button").
    #[serde(default)]
    pub element: Option<String>,
    /// A ref from the last `browser_snapshot` (`e12`) or a selector that
    /// matches exactly one element: CSS, `role=button[name="Go"]`,
    /// `text=Go`, `label=Email`, `placeholder=…`, `testid=…`, `xpath=…`.
    #[serde(default)]
    pub target: Option<String>,
    /// The older name of `target` (a snapshot ref); `target` wins when both are given.
    #[serde(default, rename = "ref")]
    pub ref_: Option<String>,
}

impl ElementArgs {
    /// `target`, else `ref`.
    pub fn target(&self) -> Option<&str> {
        self.target.as_deref().or(self.ref_.as_deref())
    }
}

/// `snapshot: true` on an action returns the page's snapshot after it.
#[derive(Debug, Clone, Copy, Default, Deserialize, JsonSchema)]
pub struct SnapshotFlag {
    /// Return the accessibility snapshot after the action (default: no, to
    /// keep the context small; call `browser_snapshot` when needed).
    #[serde(default)]
    pub snapshot: bool,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct NavigateArgs {
    /// The URL to open (http or https).
    pub url: String,
    #[serde(flatten)]
    pub snap: SnapshotFlag,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct NoArgs {}

#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct BackArgs {
    #[serde(flatten)]
    pub snap: SnapshotFlag,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct SnapshotArgs {
    /// Return only the lines that changed since this tab's last snapshot
    /// (`+` added, `-` removed).
    #[serde(default)]
    pub diff: bool,
    /// Cap on the snapshot text in characters (default: the server's cap;
    /// text lines are pruned before interactive elements).
    #[serde(default, rename = "maxChars", alias = "max_chars")]
    pub max_chars: Option<usize>,
    /// Only the region under this ref (e.g. a form or list the page-wide cap
    /// cut short), under the same cap.
    #[serde(default)]
    pub scope: Option<String>,
    /// Only the lines whose role, name or text contains this (case
    /// ignored), each with the lines it sits under: finds what the cap cut.
    #[serde(default)]
    pub find: Option<String>,
    /// A ref or a selector of one element: only the region under it
    /// (Playwright MCP's name; `scope` takes a ref only).
    #[serde(default)]
    pub target: Option<String>,
    /// Only the lines fewer than this many levels down (1: the top level).
    #[serde(default)]
    pub depth: Option<u32>,
}

/// A mouse button.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Button {
    Left,
    Right,
    Middle,
}

impl From<Button> for oxwright_engine::MouseButton {
    fn from(b: Button) -> Self {
        match b {
            Button::Left => Self::Left,
            Button::Right => Self::Right,
            Button::Middle => Self::Middle,
        }
    }
}

/// A modifier key (Playwright's names).
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
pub enum Key {
    Alt,
    Control,
    ControlOrMeta,
    Meta,
    Shift,
}

impl From<Key> for oxwright_engine::Modifier {
    fn from(k: Key) -> Self {
        match k {
            Key::Alt => Self::Alt,
            Key::Control => Self::Control,
            Key::ControlOrMeta => Self::ControlOrMeta,
            Key::Meta => Self::Meta,
            Key::Shift => Self::Shift,
        }
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ClickArgs {
    #[serde(flatten)]
    pub el: ElementArgs,
    /// Double-click instead of a single click.
    #[serde(default, rename = "doubleClick", alias = "double_click")]
    pub double_click: bool,
    /// The mouse button: `left` (default), `right` (a context menu) or
    /// `middle`.
    #[serde(default)]
    pub button: Option<Button>,
    /// Keys held during the click: `Alt`, `Control`, `ControlOrMeta`,
    /// `Meta`, `Shift`.
    #[serde(default)]
    pub modifiers: Vec<Key>,
    #[serde(flatten)]
    pub snap: SnapshotFlag,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct DragArgs {
    /// Human-readable description of the element dragged.
    #[serde(default, rename = "startElement", alias = "start_element")]
    pub start_element: Option<String>,
    /// The element dragged: a snapshot ref or a selector matching one element.
    #[serde(default, rename = "startTarget", alias = "startRef", alias = "start_target")]
    pub start_target: Option<String>,
    /// Human-readable description of the element dropped onto.
    #[serde(default, rename = "endElement", alias = "end_element")]
    pub end_element: Option<String>,
    /// The element dropped onto: a snapshot ref or a selector matching one element.
    #[serde(default, rename = "endTarget", alias = "endRef", alias = "end_target")]
    pub end_target: Option<String>,
    #[serde(flatten)]
    pub snap: SnapshotFlag,
}

impl DragArgs {
    /// The two ends as element arguments.
    pub fn ends(&self) -> (ElementArgs, ElementArgs) {
        let end = |element: &Option<String>, target: &Option<String>| ElementArgs {
            element: element.clone(),
            target: target.clone(),
            ref_: None,
        };
        (
            end(&self.start_element, &self.start_target),
            end(&self.end_element, &self.end_target),
        )
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct TypeArgs {
    #[serde(flatten)]
    pub el: ElementArgs,
    /// The text. `{{NAME}}` stands for the secret NAME of the server's
    /// secrets file; its value never comes back in any result.
    pub text: String,
    /// Press Enter afterwards.
    #[serde(default)]
    pub submit: bool,
    /// Type key by key (fires key events) instead of filling at once.
    #[serde(default)]
    pub slowly: bool,
    #[serde(flatten)]
    pub snap: SnapshotFlag,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct FormField {
    /// Human-readable field name.
    #[serde(default)]
    pub name: Option<String>,
    /// `textbox`, `checkbox`, `radio`, `combobox` or `slider`.
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
    /// Snapshot ref or selector of the field.
    #[serde(alias = "ref")]
    pub target: String,
    /// The value: text, `true`/`false` for a checkbox or radio, an option
    /// for a combobox. `{{NAME}}` stands for a secret.
    pub value: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct FillFormArgs {
    /// The fields, filled in order.
    pub fields: Vec<FormField>,
    #[serde(flatten)]
    pub snap: SnapshotFlag,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct SelectArgs {
    #[serde(flatten)]
    pub el: ElementArgs,
    /// Option values or labels; the selection is replaced by these.
    pub values: Vec<String>,
    #[serde(flatten)]
    pub snap: SnapshotFlag,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct HoverArgs {
    #[serde(flatten)]
    pub el: ElementArgs,
    #[serde(flatten)]
    pub snap: SnapshotFlag,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct PressKeyArgs {
    /// A key name (`Enter`, `ArrowLeft`, `a`, `Control+a`).
    pub key: String,
    #[serde(flatten)]
    pub snap: SnapshotFlag,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct WaitForArgs {
    /// Seconds to wait.
    #[serde(default)]
    pub time: Option<f64>,
    /// Text to wait for.
    #[serde(default)]
    pub text: Option<String>,
    /// Text to wait to disappear.
    #[serde(default, rename = "textGone", alias = "text_gone")]
    pub text_gone: Option<String>,
    #[serde(flatten)]
    pub snap: SnapshotFlag,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct EvaluateArgs {
    /// A function, `() => { … }`, or `(element) => { … }` with a target; a
    /// plain expression works too. Its JSON-serialisable result comes back.
    #[serde(alias = "script")]
    pub function: String,
    #[serde(flatten)]
    pub el: ElementArgs,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct ScreenshotArgs {
    /// `png` (the only format taken; kept for compatibility).
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
    /// File name under the server's screenshot directory (default:
    /// `page-<time>.png`); directories in it are dropped.
    #[serde(default, alias = "name")]
    pub filename: Option<String>,
    /// The whole scrollable page instead of the viewport.
    #[serde(default, rename = "fullPage", alias = "full_page")]
    pub full_page: bool,
    #[serde(flatten)]
    pub el: ElementArgs,
    /// Viewport width for this and later calls (seed `playwright_screenshot`).
    #[serde(default)]
    pub width: Option<u32>,
    /// Viewport height for this and later calls.
    #[serde(default)]
    pub height: Option<u32>,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct ConsoleArgs {
    /// Only errors and uncaught page errors.
    #[serde(default, rename = "onlyErrors", alias = "only_errors")]
    pub only_errors: bool,
    /// The least severe level to return: `error`, `warning`, `info` or
    /// `debug` (each takes the more severe ones too; default: every message).
    #[serde(default)]
    pub level: Option<ConsoleLevel>,
}

/// A console level, most severe first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ConsoleLevel {
    Error,
    Warning,
    Info,
    Debug,
}

impl ConsoleLevel {
    /// The level of a console message's type (`log`, `warning`, `pageerror`…).
    pub fn of(kind: &str) -> Self {
        match kind {
            "error" | "pageerror" | "assert" => Self::Error,
            "warning" | "warn" => Self::Warning,
            "debug" | "verbose" | "trace" => Self::Debug,
            _ => Self::Info,
        }
    }
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct NetworkArgs {
    /// Also list images, fonts, style sheets and media (default: documents,
    /// scripts, fetch/XHR and the rest).
    #[serde(default, rename = "includeStatic", alias = "include_static", alias = "static")]
    pub include_static: bool,
    /// Only requests whose URL matches this regular expression
    /// (e.g. `/api/.*user`).
    #[serde(default)]
    pub filter: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct RequestArgs {
    /// The request's number in browser_network_requests' list (from 1).
    pub index: usize,
    /// Only this part: `request-headers`, `request-body`,
    /// `response-headers` or `response-body` (default: all of them).
    #[serde(default)]
    pub part: Option<RequestPart>,
}

/// A part of a request and its response.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum RequestPart {
    RequestHeaders,
    RequestBody,
    ResponseHeaders,
    ResponseBody,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct FindArgs {
    /// Text to look for in the page's snapshot (case ignored).
    #[serde(default)]
    pub text: Option<String>,
    /// A regular expression to look for instead (`/error/i` for flags).
    #[serde(default)]
    pub regex: Option<String>,
    /// Cap on the answer in characters (default: the server's cap).
    #[serde(default, rename = "maxChars", alias = "max_chars")]
    pub max_chars: Option<usize>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct DialogArgs {
    /// Accept (OK) or dismiss (Cancel) the page's dialogs from now on.
    pub accept: bool,
    /// The text a prompt dialog answers with when accepted.
    #[serde(default, rename = "promptText", alias = "prompt_text")]
    pub prompt_text: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct UploadArgs {
    /// Absolute paths of the files, under the server's upload directory;
    /// empty or missing clears the input.
    #[serde(default)]
    pub paths: Vec<String>,
    /// The file input (default: the page's only `<input type=file>`).
    #[serde(flatten)]
    pub el: ElementArgs,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct TabsArgs {
    /// `list`, `new`, `select` or `close`.
    pub action: String,
    /// The tab's index for `select` and `close` (default for close: the current one).
    #[serde(default)]
    pub index: Option<usize>,
    /// For `new`: a URL to open in the new tab.
    #[serde(default)]
    pub url: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ResizeArgs {
    /// Width in CSS pixels.
    pub width: u32,
    /// Height in CSS pixels.
    pub height: u32,
}

/// The seed's element tools: a CSS (or Playwright-style) selector.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SelectorArgs {
    /// A selector that matches exactly one element.
    pub selector: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct SelectorValueArgs {
    /// A selector that matches exactly one element.
    pub selector: String,
    /// The value (`{{NAME}}` stands for a secret).
    pub value: String,
}

/// The fetch options `fetch_markdown` does not take, and why.
pub const FETCH_NOT_IN_MCP: &[(&str, &str)] = &[
    ("headless", "the server's browser: `oxwright mcp --headed`"),
    (
        "retry_count",
        "a tool call fails at once; the agent decides to call again",
    ),
    (
        "retry_delay_ms",
        "a tool call fails at once; the agent decides to call again",
    ),
    (
        "include_html",
        "the answer is the Markdown; `browser_snapshot` reads the page",
    ),
    ("screenshot", "`browser_take_screenshot` takes one"),
    (
        "formats",
        "the answer is the Markdown, with the result JSON as structured content",
    ),
    ("response_headers", "the structured result holds the fetch result"),
    ("headers", "credentials stay out of the model's context"),
    ("cookies", "credentials stay out of the model's context"),
    ("basic_auth", "credentials stay out of the model's context"),
    (
        "proxy",
        "credentials stay out of the model's context; the server's egress decides",
    ),
];

/// `fetch_markdown`'s arguments: the page, and every fetch option but
/// those of [`FETCH_NOT_IN_MCP`], by the camelCase of the job JSON's names
/// (Playwright MCP's style; the job JSON's own names are read too). Their
/// schema and their checks are `FetchSpec`'s, so an option added there is
/// an argument here with nothing else to change.
#[derive(Debug)]
pub struct FetchArgs {
    /// The page (http or https).
    pub url: String,
    /// The options given.
    pub options: oxwright_jobs::FetchPatch,
}

/// `max_age_ms` → `maxAgeMs`.
pub fn camel(option: &str) -> String {
    let mut out = String::new();
    let mut upper = false;
    for c in option.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// `maxAgeMs` → `max_age_ms`; a name without capitals is kept.
pub(crate) fn snake(argument: &str) -> String {
    let mut out = String::new();
    for c in argument.chars() {
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

impl<'de> Deserialize<'de> for FetchArgs {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error as _;
        let mut object = serde_json::Map::<String, serde_json::Value>::deserialize(d)?;
        let url = match object.remove("url") {
            Some(serde_json::Value::String(url)) => url,
            Some(other) => return Err(D::Error::custom(format!("`url` is a string, not {other}"))),
            None => return Err(D::Error::missing_field("url")),
        };
        let options = fetch_options(object).map_err(D::Error::custom)?;
        Ok(Self { url, options })
    }
}

/// The fetch options among `object`'s arguments (camelCase or the job
/// JSON's names; a null is an argument left out), checked as `FetchSpec`
/// checks them; an error names the argument as the client spelt it.
pub(crate) fn fetch_options(
    object: serde_json::Map<String, serde_json::Value>,
) -> Result<oxwright_jobs::FetchPatch, String> {
    let mut sent = std::collections::BTreeMap::new();
    let mut options = serde_json::Map::new();
    for (key, value) in object.into_iter().filter(|(_, v)| !v.is_null()) {
        let name = snake(&key);
        sent.insert(name.clone(), key);
        options.insert(name, value);
    }
    oxwright_jobs::FetchPatch::from_object(options, FETCH_NOT_IN_MCP).map_err(|e| {
        let key = sent.get(e.key()).cloned().unwrap_or_else(|| e.key().to_string());
        match e {
            oxwright_jobs::PatchError::Unknown { .. } => format!("`{key}` is no argument"),
            oxwright_jobs::PatchError::NotHere { why, .. } => format!("`{key}` is not taken here: {why}"),
            oxwright_jobs::PatchError::Invalid { message, .. } => format!("`{key}`: {message}"),
        }
    })
}

impl JsonSchema for FetchArgs {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "FetchArgs".into()
    }

    /// `url`, then `FetchSpec`'s options but those not taken, in camelCase.
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let mut properties = serde_json::Map::new();
        properties.insert(
            "url".into(),
            serde_json::json!({ "type": "string", "description": "The page (http or https)." }),
        );
        for (name, schema) in oxwright_jobs::schema::fetch_option_properties(FETCH_NOT_IN_MCP) {
            properties.insert(camel(&name), schema);
        }
        let mut object = serde_json::Map::new();
        object.insert("type".into(), "object".into());
        object.insert("properties".into(), serde_json::Value::Object(properties));
        object.insert("required".into(), serde_json::json!(["url"]));
        object.into()
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct SitemapArgs {
    /// A domain (`example.com`), a site URL, or a sitemap URL.
    pub target: String,
    /// At most this many URLs in the answer (default 1000).
    #[serde(default)]
    pub limit: Option<usize>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct WorkflowArgs {
    /// The workflow: plain-language instructions (needs the server's LLM),
    /// or structured steps in TOML or JSON (as `oxwright run` takes).
    pub workflow: String,
    /// The page the run starts on.
    pub url: String,
    /// A name for the run's log.
    #[serde(default)]
    pub name: Option<String>,
    /// Records each verified step's action under this id in the action
    /// cache (`workflows/<id>/`; plain-language runs), for replays.
    #[serde(default)]
    pub workflow_id: Option<String>,
    /// Replays the cached actions of `workflow_id` (the recorded checklist;
    /// `workflow` may be empty): trusted steps make no LLM call, the others
    /// are confirmed or healed by the server's LLM.
    #[serde(default)]
    pub replay: bool,
    /// Verified successes before a cached action replays with no LLM call (default 2).
    #[serde(default)]
    pub trust_after: Option<u32>,
    /// Site profiles for the decision prompt: the profile whose `url` the
    /// page is under is added to each step (as `oxwright run --sites`).
    #[serde(default)]
    pub sites: Vec<oxwright_jobs::SiteProfile>,
    /// Adds the site's sitemap URLs (robots.txt, then `/sitemap.xml`,
    /// under the server's URL policy) to the decision prompt.
    #[serde(default)]
    pub sitemap_hints: bool,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn fetch_arguments_are_the_jobs_options_by_either_name() {
        let a: FetchArgs = serde_json::from_value(json!({
            "url": "https://a.test/", "waitUntil": "load", "wait_ms": 5, "maxTokens": null
        }))
        .unwrap();
        assert_eq!(a.url, "https://a.test/");
        assert_eq!(a.options.keys().collect::<Vec<_>>(), ["wait_ms", "wait_until"]);
        for (args, says) in [
            (
                json!({ "url": "https://a.test/", "colour": 1 }),
                "`colour` is no argument",
            ),
            (
                json!({ "url": "https://a.test/", "cookies": [{ "name": "s", "value": "secret" }] }),
                "`cookies` is not taken here: credentials",
            ),
            (
                json!({ "url": "https://a.test/", "waitUntil": "later" }),
                "`waitUntil`: ",
            ),
            (json!({ "waitUntil": "load" }), "url"),
        ] {
            let err = serde_json::from_value::<FetchArgs>(args).unwrap_err().to_string();
            assert!(err.contains(says), "{err}");
            assert!(!err.contains("secret"), "{err}");
        }
    }
}
