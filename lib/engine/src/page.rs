//! The two traits of the seam and the values that cross it.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use oxwright_jobs::{BlockResource, RequestShape, WaitUntil};
use oxwright_policy::UrlPolicy;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use crate::act::{
    Act, ActOptions, Acted, Element, ElementId, ElementState, Modifier, MouseButton, Target,
};
pub use crate::storage::{MAX_STORAGE_STATE_BYTES, NameValue, OriginStorage, StorageState};
use crate::{EngineError, Locator, Snapshot, SnapshotOptions};

/// How to navigate.
#[derive(Debug, Clone)]
pub struct GotoOptions {
    /// The state to wait for (`Ready`: the DOM's text went quiet after
    /// `DOMContentLoaded`; or a lifecycle event).
    pub wait_until: WaitUntil,
    /// A CSS selector that must appear before navigation counts as done.
    pub wait_for: Option<String>,
    /// Resource types refused.
    pub block: Vec<BlockResource>,
    /// Deadline for the whole navigation, waits included.
    pub timeout: Duration,
    /// A main document that is a PDF is not refused as non-HTML but
    /// handed back whole in [`Navigated::document`], up to this many bytes
    /// (a larger one is refused). `None`: refused like other non-HTML.
    pub capture_pdf: Option<usize>,
    /// Validators that make the main document's request conditional
    /// (`If-None-Match`, `If-Modified-Since` with their values): a `304`
    /// answer ends the navigation at once with status 304 and nothing
    /// rendered. Empty: an ordinary request. An engine that cannot add
    /// them navigates as usual (the server then answers in full).
    pub conditional: Vec<(String, String)>,
    /// Frames (`<iframe>`, `<frame>`) are taken out of the document as
    /// they are inserted, so none is built or loaded: what reads the main
    /// document only (a fetch's Markdown never holds a frame's content)
    /// saves each frame's document, process and requests. An engine that
    /// cannot do it loads them.
    pub skip_frames: bool,
    /// The main document already read over HTTP: the browser is handed
    /// it instead of requesting it again (a URL that differs from the one
    /// navigated to, or an engine that cannot do it, requests it as usual).
    pub served: Option<Arc<ServedDocument>>,
}

/// A main document read before the browser was asked to render it.
#[derive(Clone, PartialEq, Eq)]
pub struct ServedDocument {
    /// The URL it was read from (after redirects): the navigation's URL.
    pub url: String,
    /// Its status.
    pub status: u16,
    /// Its response headers, as sent (the body below is decoded: a
    /// `Content-Encoding` or `Content-Length` among them is not passed on).
    pub headers: Vec<(String, String)>,
    /// Its bytes, decompressed.
    pub body: Vec<u8>,
}

impl std::fmt::Debug for ServedDocument {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServedDocument")
            .field("url", &self.url)
            .field("status", &self.status)
            .field("bytes", &self.body.len())
            .finish()
    }
}

impl GotoOptions {
    /// Waits for `load` within `timeout`, nothing blocked.
    pub fn load(timeout: Duration) -> Self {
        Self {
            wait_until: WaitUntil::Load,
            wait_for: None,
            block: Vec::new(),
            timeout,
            capture_pdf: None,
            conditional: Vec::new(),
            skip_frames: false,
            served: None,
        }
    }
}

/// A page's memory at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PageMemory {
    /// JavaScript heap plus the DOM's (embedder) heap and array buffers in
    /// use, in bytes.
    pub heap_bytes: u64,
    /// Nodes in the page's documents.
    pub dom_nodes: u64,
}

/// The most memory one job's page may use before the job is ended with a
/// `resource_limit` error (the other jobs of the browser go on).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryLimit {
    /// Heap bytes, as [`PageMemory::heap_bytes`] counts them.
    pub heap_bytes: u64,
    /// DOM nodes.
    pub dom_nodes: u64,
    /// The renderer's memory as the system counts it (proportional set
    /// size: heap, DOM, canvases, images, layers), where the engine
    /// measures it; 0 when it does not.
    pub renderer_bytes: u64,
}

impl MemoryLimit {
    /// Says why `m` is over this limit, or `None`.
    pub fn exceeded_by(&self, m: &PageMemory) -> Option<String> {
        const MIB: u64 = 1024 * 1024;
        if m.heap_bytes > self.heap_bytes {
            return Some(format!(
                "the page used {} MiB of JavaScript and DOM heap, over the per-job limit of {} MiB \
                 ([browser] job_memory_mb)",
                m.heap_bytes / MIB,
                self.heap_bytes / MIB
            ));
        }
        if m.dom_nodes > self.dom_nodes {
            return Some(format!(
                "the page built {} DOM nodes, over the per-job limit of {} ([browser] job_dom_nodes)",
                m.dom_nodes, self.dom_nodes
            ));
        }
        None
    }
}

/// What a navigation ended on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Navigated {
    /// The main document's URL after redirects.
    pub final_url: String,
    /// Its HTTP status (0 when the engine cannot tell).
    pub status: u16,
    /// Its content type.
    pub content_type: Option<String>,
    /// Redirect targets followed, in order.
    pub redirects: Vec<String>,
    /// Requests refused by `block`.
    pub blocked: usize,
    /// Sub-requests refused by the URL policy.
    pub refused: Vec<String>,
    /// The main document's response headers (names as the server sent
    /// them; empty when the engine cannot tell).
    pub headers: Vec<(String, String)>,
    /// The main document's bytes when it was a PDF captured as
    /// [`GotoOptions::capture_pdf`] asked; the page shows nothing then.
    pub document: Option<Vec<u8>>,
    /// The page started a navigation of its own before its document had
    /// loaded, that navigation failed, and the document's parsing had
    /// stopped for it: the page holds only what was parsed by then (the
    /// document the server sent is the page to read).
    pub parse_stopped: bool,
}

/// What to wait for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WaitCondition {
    /// A CSS selector matches a visible element.
    Selector(String),
    /// The text appears on the page.
    Text(String),
    /// The text is no longer on the page.
    TextGone(String),
    /// The URL contains this text.
    Url(String),
    /// The page reached a lifecycle state.
    LoadState(WaitUntil),
    /// A fixed time.
    Time(Duration),
}

/// How to take a screenshot.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScreenshotOptions {
    /// The whole scrollable page instead of the viewport.
    pub full_page: bool,
    /// Only this element.
    pub element: Option<Target>,
    /// Black out every field that holds a secret (filled with `secret: true`,
    /// or a password field) before the capture. An engine that cannot draw
    /// over them refuses with `unsupported` when there is such a field,
    /// rather than return a picture that shows it.
    pub mask_secrets: bool,
}

/// A console message or uncaught page error.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConsoleMessage {
    /// `log`, `info`, `warning`, `error`, `debug` or `pageerror`.
    pub level: String,
    /// The text.
    pub text: String,
    /// Where it came from, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// When the page logged it, in milliseconds since the Unix epoch, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp_ms: Option<i64>,
}

/// A request the page made, as the engine saw it on the wire.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestRecord {
    /// The engine's id for it (what [`Page::response_body`] takes).
    pub id: String,
    /// `GET`, `POST` …
    pub method: String,
    /// The URL.
    pub url: String,
    /// `document`, `script`, `fetch`, `xhr`, `image`, `stylesheet` …
    pub kind: String,
    /// Request headers, as sent.
    pub request_headers: Vec<(String, String)>,
    /// The request body, when it had one (cut at 64 KiB).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_body: Option<String>,
    /// The response status; 0 while none came.
    pub status: u16,
    /// The status text (`OK`).
    pub status_text: String,
    /// Response headers.
    pub response_headers: Vec<(String, String)>,
    /// The response's MIME type.
    pub mime: String,
    /// Why it failed (`net::ERR_NAME_NOT_RESOLVED`, blocked …), when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
    /// From the request to its last byte (or failure), when it ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ms: Option<u64>,
    /// Bytes on the wire, when it finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
}

impl RequestRecord {
    /// An image, font, style sheet or media file (what request lists
    /// leave out unless asked).
    pub fn is_static(&self) -> bool {
        matches!(
            self.kind.as_str(),
            "image" | "font" | "stylesheet" | "media" | "texttrack" | "manifest"
        )
    }
}

/// What to do with JavaScript dialogs nobody handles (the job spec's type).
pub use oxwright_jobs::DialogAction;

/// A dialog the page opened and how it was answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DialogRecord {
    /// `alert`, `confirm`, `prompt` or `beforeunload`.
    pub kind: String,
    /// Its message.
    pub message: String,
    /// How it was answered.
    pub action: DialogAction,
}

/// A tab the page opened (popup, `target=_blank`), or the page itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TabInfo {
    /// The engine's id of the tab.
    pub id: String,
    /// Its URL.
    pub url: String,
    /// Its title.
    pub title: String,
    /// It is the page this [`Page`] drives.
    pub current: bool,
}

/// What a page is opened with.
#[derive(Clone)]
pub struct OpenOptions {
    /// The URL policy every request of the page obeys.
    pub policy: Arc<UrlPolicy>,
    /// Headless (the default) or headed.
    pub headless: bool,
    /// What unhandled dialogs get.
    pub dialogs: DialogAction,
    /// Headers, cookies, user agent, locale, timezone, viewport, mobile
    /// emulation and basic auth of the page's requests (the default shapes
    /// nothing). An engine that cannot shape them refuses a non-empty one.
    pub shape: Arc<RequestShape>,
    /// The page records its requests for [`Page::requests`] and keeps
    /// their response bodies for [`Page::response_body`] (what an agent
    /// over MCP may ask for). Off (the default), both are unsupported and
    /// the page costs neither the events' handling nor the bodies' memory.
    pub record_requests: bool,
}

impl std::fmt::Debug for OpenOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenOptions")
            .field("headless", &self.headless)
            .field("dialogs", &self.dialogs)
            .field("shaped", &!self.shape.is_empty())
            .field("record_requests", &self.record_requests)
            .finish()
    }
}

impl OpenOptions {
    /// A headless page under `policy`, dialogs dismissed.
    pub fn new(policy: Arc<UrlPolicy>) -> Self {
        Self {
            policy,
            headless: true,
            dialogs: DialogAction::Dismiss,
            shape: Arc::new(RequestShape::default()),
            record_requests: false,
        }
    }
}

/// Opens pages for jobs: an engine owns browsers, each page it hands out is
/// isolated as the engine's configuration says, and dropping the page gives
/// its capacity back.
#[async_trait]
pub trait BrowserEngine: Send + Sync + std::fmt::Debug {
    /// Opens a page (waiting for capacity).
    async fn open(&self, opts: &OpenOptions) -> Result<Box<dyn Page>, EngineError>;

    /// Pages this engine serves at once.
    fn capacity(&self) -> usize;

    /// A short description for logs.
    fn describe(&self) -> String;
}

/// One page of a browser, driven by actions. Every call has a deadline; no
/// call panics on a hostile page.
#[async_trait]
pub trait Page: Send + Sync + std::fmt::Debug {
    /// Navigates under the page's URL policy and waits as asked.
    async fn goto(&self, url: &url::Url, opts: &GotoOptions) -> Result<Navigated, EngineError>;

    /// Returns the main document's URL.
    async fn url(&self) -> Result<String, EngineError>;

    /// Returns the document's title.
    async fn title(&self) -> Result<String, EngineError>;

    /// Returns the main document's URL and its title, in one call where
    /// the engine can.
    async fn location(&self) -> Result<(String, String), EngineError> {
        Ok((self.url().await?, self.title().await?))
    }

    /// Takes an accessibility snapshot (refs renumbered per document).
    async fn snapshot(&self, opts: &SnapshotOptions) -> Result<Snapshot, EngineError>;

    /// Returns every visible element `locator` matches now, in document order.
    async fn locate(&self, locator: &Locator) -> Result<Vec<Element>, EngineError>;

    /// Performs `act` on `target` (which must resolve to exactly one element).
    async fn act(&self, target: &Target, act: &Act, opts: &ActOptions) -> Result<Acted, EngineError>;

    /// Evaluates a JavaScript expression and returns its JSON value
    /// (promises awaited).
    async fn evaluate(&self, expression: &str, timeout: Duration) -> Result<Value, EngineError>;

    /// Returns the rendered document's HTML.
    async fn html(&self) -> Result<String, EngineError>;

    /// Takes a PNG screenshot.
    async fn screenshot(&self, opts: &ScreenshotOptions) -> Result<Vec<u8>, EngineError>;

    /// Returns the console messages and page errors since the last call.
    async fn console(&self) -> Vec<ConsoleMessage>;

    /// Returns the dialogs opened (and answered) since the last call.
    async fn dialogs(&self) -> Vec<DialogRecord>;

    /// Returns what the URL policy refused since the last navigation or the
    /// last call: requests of the page, its popups and workers, and later
    /// navigations of the main frame.
    async fn policy_refusals(&self) -> Vec<String>;

    /// Returns warnings about the page's navigation since the last call: a
    /// `ready` wait cut short or read before `load`, a later navigation of
    /// the page that failed or was refused (the rendered document was kept,
    /// and the warning names the URL it tried). Engines that cannot tell
    /// return nothing.
    async fn navigation_warnings(&self) -> Vec<String> {
        Vec::new()
    }

    /// Waits for `condition` at most `timeout`.
    async fn wait_for(&self, condition: &WaitCondition, timeout: Duration) -> Result<(), EngineError>;

    /// Goes back in history and waits for the page.
    async fn back(&self, timeout: Duration) -> Result<(), EngineError>;

    /// Goes forward in history and waits for the page.
    async fn forward(&self, timeout: Duration) -> Result<(), EngineError>;

    /// Reloads and waits for `load`.
    async fn reload(&self, timeout: Duration) -> Result<(), EngineError>;

    /// Returns this page and the tabs it opened.
    async fn tabs(&self) -> Result<Vec<TabInfo>, EngineError>;

    /// A page for the tab `id` (from [`Page::tabs`]) that this page opened —
    /// a popup, a `target=_blank` link — in the same context, under the
    /// same policy, request shaping and dialog answers.
    async fn popup(&self, id: &str) -> Result<Box<dyn Page>, EngineError> {
        let _ = id;
        Err(EngineError::unsupported("driving a tab a page opened"))
    }

    /// Puts the shadow roots the page's components closed
    /// (`attachShadow({ mode: "closed" })`), which no page script outside
    /// them can reach, in an array at `globalThis[key]` of the main
    /// document, so a reader of the page sees what the browser paints;
    /// returns how many. An engine that cannot reach them puts none.
    async fn expose_closed_shadow_roots(&self, key: &str) -> Result<usize, EngineError> {
        let _ = key;
        Ok(0)
    }

    /// The page's memory now: JavaScript and DOM heap in use, DOM nodes.
    async fn memory(&self) -> Result<PageMemory, EngineError> {
        Err(EngineError::unsupported("reading a page's memory"))
    }

    /// Says whether the page's renderer died for want of memory (its
    /// script engine's heap cap), as far as the engine can tell.
    async fn crashed_out_of_memory(&self) -> bool {
        false
    }

    /// The size (MiB) the page's renderer had grown to when the engine
    /// killed it for holding more than [`MemoryLimit::renderer_bytes`],
    /// when that is why it died.
    async fn renderer_killed_for_memory(&self) -> Option<u64> {
        None
    }

    /// The ceiling this engine holds one job's page to, if it holds one
    /// (see [`MemoryLimit`]).
    fn memory_limit(&self) -> Option<MemoryLimit> {
        None
    }

    /// Reads what `target` shows now (text, value, checked state).
    async fn inspect(&self, target: &Target) -> Result<ElementState, EngineError> {
        let _ = target;
        Err(EngineError::unsupported("reading an element's state"))
    }

    /// Reads the table `target` (a `<table>`, or an element with the role
    /// `table` or `grid`) as rows: one JSON object per body row keyed by
    /// the header cells' text, or a list of cell texts when it has no
    /// header. Form controls in cells are read by their text, never their
    /// value.
    async fn table_rows(&self, target: &Target) -> Result<Value, EngineError> {
        let _ = target;
        Err(EngineError::unsupported("reading a table"))
    }

    /// Sets how the page's dialogs are answered from now on (a prompt
    /// accepted gets `prompt_text`, else its default text).
    async fn answer_dialogs(
        &self,
        action: DialogAction,
        prompt_text: Option<String>,
    ) -> Result<(), EngineError> {
        let _ = (action, prompt_text);
        Err(EngineError::unsupported("answering dialogs"))
    }

    /// Makes this page the one in front (the visible tab of its window):
    /// a background tab's timers and animation frames are throttled, and a
    /// headed browser captures no screenshot of it. A no-op where pages
    /// have no windows.
    async fn bring_to_front(&self) -> Result<(), EngineError> {
        Ok(())
    }

    /// Drags the element `from` resolves to onto the one `to` resolves to:
    /// the mouse pressed on the first, moved over, released on the second.
    /// A page's HTML drag and drop (`draggable`) gets its drag events, a
    /// pointer-driven one (a sortable list, a slider) its mouse events.
    async fn drag(&self, from: &Target, to: &Target, opts: &ActOptions) -> Result<Acted, EngineError> {
        let _ = (from, to, opts);
        Err(EngineError::unsupported("dragging"))
    }

    /// The requests the current document made, oldest first (the
    /// document's own request first), up to the engine's cap.
    async fn requests(&self) -> Result<Vec<RequestRecord>, EngineError> {
        Err(EngineError::unsupported("recording requests"))
    }

    /// The body of the response to request `id` (from [`Page::requests`]),
    /// as text, or `None` for a binary body; an error when the engine no
    /// longer holds it.
    async fn response_body(&self, id: &str) -> Result<Option<String>, EngineError> {
        let _ = id;
        Err(EngineError::unsupported("reading response bodies"))
    }

    /// Resizes the viewport to `width` × `height` CSS pixels.
    async fn set_viewport(&self, width: u32, height: u32) -> Result<(), EngineError> {
        let _ = (width, height);
        Err(EngineError::unsupported("resizing the viewport"))
    }

    /// Sets the files of the `<input type=file>` `target` resolves to (an
    /// empty list clears it). The paths are the caller's to check.
    async fn set_input_files(
        &self,
        target: &Target,
        paths: &[std::path::PathBuf],
    ) -> Result<(), EngineError> {
        let _ = (target, paths);
        Err(EngineError::unsupported("uploading files"))
    }

    /// The browser state another page needs to continue where this one
    /// is: every cookie of the page's context and the storage of the
    /// page's origin, as Playwright's `storageState` holds them (plus
    /// `sessionStorage`). Holds credentials: keep it sealed.
    async fn storage_state(&self) -> Result<StorageState, EngineError> {
        Err(EngineError::unsupported("exporting the browser state"))
    }

    /// Restores `state` (from [`Page::storage_state`]) in this page's
    /// context and opens `url` with it: cookies before the navigation,
    /// each origin's storage before that origin's first script runs.
    async fn restore_state(
        &self,
        state: &StorageState,
        url: &url::Url,
        opts: &GotoOptions,
    ) -> Result<Navigated, EngineError> {
        let _ = (state, url, opts);
        Err(EngineError::unsupported("restoring the browser state"))
    }

    /// Downcasting, for engine-specific extras (the Chromium page's raw DevTools access).
    fn as_any(&self) -> &dyn std::any::Any;
}
