//! The MCP handler: one per client session (stdio: the process; HTTP: each
//! `Mcp-Session-Id`), each with its own tabs from the engine, so clients
//! never see each other's cookies or pages unless `shared_context` is set.

use std::borrow::Cow;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use oxwright_artifacts::ArtifactStore;
use oxwright_engine::{
    Act, BrowserEngine, DialogAction, EngineError, EngineErrorKind, MouseButton, OpenOptions,
    SnapshotOptions, UrlPolicy,
};
use oxwright_llm::ChatModel;
use oxwright_secrets::{Sanitizer, SecretStore};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation, ListToolsResult,
    PaginatedRequestParams, ProtocolVersion, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::Value;
use tokio::sync::Mutex;

use crate::args::*;
use crate::errors::explain;
use crate::screenshots::ScreenshotStore;
use crate::session::{Session, Tab};
use crate::tools::{ToolName, catalogue};
use util::*;

mod browser;
mod crawl;
mod jobs;
mod util;
mod views;

/// How the server behaves.
#[derive(Debug, Clone)]
pub struct McpConfig {
    /// Headless pages (the default) or headed.
    pub headless: bool,
    /// Where screenshots are written.
    pub screenshot_dir: PathBuf,
    /// Largest screenshot kept, in bytes.
    pub max_screenshot_bytes: usize,
    /// Screenshots kept; the oldest go first.
    pub max_screenshots: usize,
    /// Files may be uploaded only from under this directory (none: uploads refused).
    pub upload_dir: Option<PathBuf>,
    /// Deadline of one action (auto-wait, input, settle).
    pub action_timeout: Duration,
    /// Deadline of one navigation or wait.
    pub navigation_timeout: Duration,
    /// Cap on snapshot text, in characters.
    pub snapshot_max_chars: usize,
    /// All clients share one set of tabs (and cookies).
    pub shared_context: bool,
    /// A saved login (Playwright's `storageState`) each tab's first
    /// navigation starts from; its cookie values are redacted like secrets.
    pub storage_state: Option<Arc<oxwright_engine::StorageState>>,
}

impl Default for McpConfig {
    fn default() -> Self {
        Self {
            headless: true,
            screenshot_dir: PathBuf::from("oxwright-screenshots"),
            max_screenshot_bytes: 10 * 1024 * 1024,
            max_screenshots: 100,
            upload_dir: None,
            action_timeout: Duration::from_secs(10),
            navigation_timeout: Duration::from_secs(30),
            snapshot_max_chars: oxwright_engine::DEFAULT_MAX_CHARS,
            shared_context: false,
            storage_state: None,
        }
    }
}

/// What every session of one server shares.
pub struct McpServices {
    /// The browser engine pages come from.
    pub engine: Arc<dyn BrowserEngine>,
    /// The URL policy every request obeys.
    pub policy: Arc<UrlPolicy>,
    /// Secrets `{{NAME}}` stands for; their values are redacted everywhere.
    pub secrets: Arc<dyn SecretStore>,
    /// The names in `secrets`, registered with the sanitiser up front.
    pub secret_names: Vec<String>,
    /// Where workflow runs write their artefacts.
    pub store: Arc<dyn ArtifactStore>,
    /// The LLM plain-language workflows use.
    pub llm: Option<Arc<dyn ChatModel>>,
    /// The configuration.
    pub config: McpConfig,
    /// What runs the `crawl` tool's crawls; without one the tool says the
    /// server runs none.
    pub crawler: Option<Arc<dyn crate::SiteCrawler>>,
}

impl std::fmt::Debug for McpServices {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServices")
            .field("engine", &self.engine.describe())
            .field("config", &self.config)
            .finish()
    }
}

/// The state shared by every session of one server.
#[derive(Debug)]
pub struct Shared {
    services: McpServices,
    sanitizer: Sanitizer,
    screenshots: ScreenshotStore,
    shared_session: Option<Arc<Mutex<Session>>>,
}

impl Shared {
    /// Builds the shared state; registers every secret value for redaction.
    pub async fn new(services: McpServices) -> anyhow::Result<Arc<Self>> {
        let sanitizer = Sanitizer::new();
        for name in &services.secret_names {
            if let Some(value) = services.secrets.get(name).await? {
                sanitizer.register(name, value.expose());
            }
        }
        let c = &services.config;
        for (name, value) in c.storage_state.iter().flat_map(|s| s.secret_cookies()) {
            sanitizer.register(&name, value);
        }
        let screenshots = ScreenshotStore::new(
            c.screenshot_dir.clone(),
            c.max_screenshot_bytes,
            c.max_screenshots,
        );
        let shared_session = c.shared_context.then(|| Arc::new(Mutex::new(Session::default())));
        Ok(Arc::new(Self {
            services,
            sanitizer,
            screenshots,
            shared_session,
        }))
    }

    /// The sanitiser every result and log line passes.
    pub fn sanitizer(&self) -> &Sanitizer {
        &self.sanitizer
    }
}

/// One client's handler.
#[derive(Debug, Clone)]
pub struct OxwrightMcp {
    shared: Arc<Shared>,
    session: Arc<Mutex<Session>>,
    id: String,
}

impl OxwrightMcp {
    /// A handler with its own session (or the shared one).
    pub fn new(shared: Arc<Shared>) -> Self {
        let session = shared
            .shared_session
            .clone()
            .unwrap_or_else(|| Arc::new(Mutex::new(Session::default())));
        Self {
            shared,
            session,
            id: oxwright_jobs::JobId::new().to_string(),
        }
    }

    fn open_options(&self) -> OpenOptions {
        let mut o = OpenOptions::new(self.shared.services.policy.clone());
        o.headless = self.shared.services.config.headless;
        // browser_network_requests and browser_network_request read them.
        o.record_requests = true;
        o
    }

    fn config(&self) -> &McpConfig {
        &self.shared.services.config
    }

    /// Runs tool `name` with `args`; never panics, never fails the
    /// connection: every failure is a tool error the agent can read.
    pub async fn call(&self, name: &str, args: Value) -> CallToolResult {
        let cfg = self.config();
        // No tool outlives its deadlines: a hung page cannot wedge the session.
        let limit = cfg.navigation_timeout * 3 + cfg.action_timeout + Duration::from_secs(10);
        let outcome = match tokio::time::timeout(limit, self.dispatch(name, args)).await {
            Ok(r) => r,
            Err(_) => Err(format!(
                "{name} did not finish within {} s; the page may be hung: try browser_navigate again or browser_close",
                limit.as_secs()
            )),
        };
        // What the agent reads: secrets and credentials masked, the page's
        // own e-mail addresses kept (a link named by one stays targetable).
        let clean = |s: &str| self.shared.sanitizer.clean_page_text(s);
        match outcome {
            Ok(reply) => {
                let mut content = vec![ContentBlock::text(clean(&reply.text))];
                for png in reply.images {
                    content.push(ContentBlock::image(
                        base64::engine::general_purpose::STANDARD.encode(png),
                        "image/png",
                    ));
                }
                let mut result = CallToolResult::success(content);
                if let Some(v) = reply.structured {
                    let text = clean(&v.to_string());
                    result.structured_content = Some(serde_json::from_str(&text).unwrap_or(Value::Null));
                }
                result
            }
            Err(message) => {
                tracing::info!(tool = name, error = %self.shared.sanitizer.clean(&message), "tool failed");
                CallToolResult::error(vec![ContentBlock::text(clean(&message))])
            }
        }
    }

    async fn dispatch(&self, name: &str, args: Value) -> Result<Reply, String> {
        let Some(tool) = ToolName::from_name(name) else {
            return Err(format!(
                "no tool named {name:?}; call tools/list for the tools this server has"
            ));
        };
        if matches!(
            tool,
            ToolName::BrowserNavigate
                | ToolName::PlaywrightNavigate
                | ToolName::BrowserNavigateBack
                | ToolName::BrowserClick
                | ToolName::PlaywrightClick
                | ToolName::BrowserHover
                | ToolName::PlaywrightHover
                | ToolName::BrowserType
                | ToolName::PlaywrightFill
                | ToolName::BrowserFillForm
                | ToolName::BrowserSelectOption
                | ToolName::PlaywrightSelect
                | ToolName::BrowserPressKey
                | ToolName::BrowserDrag
                | ToolName::BrowserHandleDialog
                | ToolName::BrowserFileUpload
                | ToolName::BrowserResize
        ) {
            self.acting_tool(tool, name, args).await
        } else {
            self.reading_tool(tool, name, args).await
        }
    }

    /// The tools that navigate or act on the page.
    async fn acting_tool(&self, tool: ToolName, name: &str, args: Value) -> Result<Reply, String> {
        match tool {
            ToolName::BrowserNavigate | ToolName::PlaywrightNavigate => {
                let a: NavigateArgs = parse(name, args)?;
                self.navigate(&a.url, a.snap.snapshot).await
            }
            ToolName::BrowserNavigateBack => {
                let a: BackArgs = parse(name, args)?;
                let t = self.config().navigation_timeout;
                self.with_tab(a.snap.snapshot, move |tab| {
                    Box::pin(async move {
                        tab.page.back(t).await?;
                        Ok("Went back.".to_string())
                    })
                })
                .await
            }
            ToolName::BrowserClick => self.click(parse(name, args)?).await,
            ToolName::PlaywrightClick => {
                let a: SelectorArgs = parse(name, args)?;
                self.act(&selector(&a.selector), Act::Click, false).await
            }
            ToolName::BrowserHover => {
                let a: HoverArgs = parse(name, args)?;
                self.act(&a.el, Act::Hover, a.snap.snapshot).await
            }
            ToolName::PlaywrightHover => {
                let a: SelectorArgs = parse(name, args)?;
                self.act(&selector(&a.selector), Act::Hover, false).await
            }
            ToolName::BrowserType => {
                let a: TypeArgs = parse(name, args)?;
                self.type_text(&a).await
            }
            ToolName::PlaywrightFill => {
                let a: SelectorValueArgs = parse(name, args)?;
                let (value, secret) = self.resolve_secrets(&a.value).await?;
                self.act(&selector(&a.selector), Act::Fill { value, secret }, false)
                    .await
            }
            ToolName::BrowserFillForm => {
                let a: FillFormArgs = parse(name, args)?;
                self.fill_form(a).await
            }
            ToolName::BrowserSelectOption => {
                let a: SelectArgs = parse(name, args)?;
                self.act(&a.el, Act::Select { values: a.values }, a.snap.snapshot)
                    .await
            }
            ToolName::PlaywrightSelect => {
                let a: SelectorValueArgs = parse(name, args)?;
                self.act(
                    &selector(&a.selector),
                    Act::Select {
                        values: vec![a.value],
                    },
                    false,
                )
                .await
            }
            ToolName::BrowserPressKey => {
                let a: PressKeyArgs = parse(name, args)?;
                self.press_key(a.key, a.snap.snapshot).await
            }
            ToolName::BrowserDrag => {
                let a: DragArgs = parse(name, args)?;
                self.drag(&a).await
            }
            ToolName::BrowserHandleDialog => {
                let a: DialogArgs = parse(name, args)?;
                self.handle_dialog(a).await
            }
            ToolName::BrowserFileUpload => {
                let a: UploadArgs = parse(name, args)?;
                self.upload(a).await
            }
            ToolName::BrowserResize => self.resize(parse(name, args)?).await,
            other => Err(format!("{} does not act on the page", other.name())),
        }
    }

    /// `browser_click`: a left click, a double click, or another button
    /// or modifiers.
    async fn click(&self, a: ClickArgs) -> Result<Reply, String> {
        let button = a.button.map(MouseButton::from).unwrap_or_default();
        let act = match (button, a.modifiers.is_empty(), a.double_click) {
            (MouseButton::Left, true, true) => Act::DoubleClick,
            (MouseButton::Left, true, false) => Act::Click,
            (_, _, true) => return Err("doubleClick takes no other button and no modifiers".into()),
            (button, _, false) => Act::ClickWith {
                button,
                modifiers: a.modifiers.into_iter().map(Into::into).collect(),
            },
        };
        self.act(&a.el, act, a.snap.snapshot).await
    }

    /// `browser_resize`: the viewport's size.
    async fn resize(&self, a: ResizeArgs) -> Result<Reply, String> {
        self.with_tab(false, move |tab| {
            Box::pin(async move {
                tab.page.set_viewport(a.width, a.height).await?;
                Ok(format!("Resized the viewport to {}x{}.", a.width, a.height))
            })
        })
        .await
    }

    /// The tools that read the page, the browser or the web.
    async fn reading_tool(&self, tool: ToolName, name: &str, args: Value) -> Result<Reply, String> {
        match tool {
            ToolName::BrowserSnapshot => {
                let a: SnapshotArgs = parse(name, args)?;
                self.snapshot(a).await
            }
            ToolName::BrowserWaitFor => {
                let a: WaitForArgs = parse(name, args)?;
                self.wait_for(a).await
            }
            ToolName::BrowserEvaluate | ToolName::PlaywrightEvaluate => {
                let a: EvaluateArgs = parse(name, args)?;
                self.evaluate(a).await
            }
            ToolName::BrowserTakeScreenshot | ToolName::PlaywrightScreenshot => {
                let a: ScreenshotArgs = parse(name, args)?;
                self.screenshot(a).await
            }
            ToolName::BrowserConsoleMessages | ToolName::PlaywrightGetConsoleLogs => {
                let a: ConsoleArgs = parse(name, args)?;
                let least = match (a.level, a.only_errors) {
                    (Some(level), _) => level,
                    (None, true) => ConsoleLevel::Error,
                    (None, false) => ConsoleLevel::Debug,
                };
                self.console(least).await
            }
            ToolName::BrowserNetworkRequests => {
                let a: NetworkArgs = parse(name, args)?;
                let filter = match a.filter.as_deref().map(str::trim).filter(|f| !f.is_empty()) {
                    Some(f) => Some(pattern(f)?),
                    None => None,
                };
                self.network(a.include_static, filter).await
            }
            ToolName::BrowserNetworkRequest => {
                let a: RequestArgs = parse(name, args)?;
                self.network_request(a).await
            }
            ToolName::BrowserFind => {
                let a: FindArgs = parse(name, args)?;
                self.find(a).await
            }
            ToolName::BrowserTabs => {
                let a: TabsArgs = parse(name, args)?;
                self.tabs(a).await
            }
            ToolName::BrowserClose => {
                let _: NoArgs = parse(name, args)?;
                self.session.lock().await.close_all();
                Ok(Reply::text(
                    "Closed the browser tabs of this session; the next tool opens a new page.",
                ))
            }
            ToolName::PlaywrightGetContent => {
                let _: NoArgs = parse(name, args)?;
                self.with_tab_raw(|tab| Box::pin(async move { Ok(Reply::text(tab.page.html().await?)) }))
                    .await
            }
            ToolName::FetchMarkdown => {
                let a: FetchArgs = parse(name, args)?;
                self.fetch_markdown(a).await
            }
            ToolName::LoadSitemap => {
                let a: SitemapArgs = parse(name, args)?;
                self.load_sitemap(a).await
            }
            ToolName::Crawl => {
                let a: crate::CrawlArgs = parse(name, args)?;
                self.crawl(a).await
            }
            ToolName::RunWorkflow => {
                let a: WorkflowArgs = parse(name, args)?;
                self.run_workflow(a).await
            }
            other => Err(format!("{} acts on the page", other.name())),
        }
    }

    /// Runs `f` on the current tab (opening one when needed), then appends
    /// the page state (and the snapshot when asked). A crashed page is
    /// replaced and the agent told.
    async fn with_tab<F>(&self, snapshot: bool, f: F) -> Result<Reply, String>
    where
        F: for<'a> FnOnce(&'a mut Tab) -> BoxFuture<'a, Result<String, EngineError>> + Send,
    {
        let mut session = self.session.lock().await;
        let open = self.open_options();
        let engine = &self.shared.services.engine;
        let tab = session.current(engine, &open).await.map_err(|e| explain(&e))?;
        match f(tab).await {
            Ok(summary) => {
                let state = self.page_state(tab, snapshot).await;
                Ok(Reply::text(format!("{summary}\n{state}")))
            }
            Err(err) => Err(self.fail(&mut session, err).await),
        }
    }

    /// Like [`with_tab`] without the page state.
    async fn with_tab_raw<F>(&self, f: F) -> Result<Reply, String>
    where
        F: for<'a> FnOnce(&'a mut Tab) -> BoxFuture<'a, Result<Reply, EngineError>> + Send,
    {
        let mut session = self.session.lock().await;
        let open = self.open_options();
        let engine = &self.shared.services.engine;
        let tab = session.current(engine, &open).await.map_err(|e| explain(&e))?;
        match f(tab).await {
            Ok(reply) => Ok(reply),
            Err(err) => Err(self.fail(&mut session, err).await),
        }
    }

    /// Explains `err`; replaces the page when it crashed.
    async fn fail(&self, session: &mut Session, err: EngineError) -> String {
        let mut message = explain(&err);
        if err.kind == EngineErrorKind::Crashed {
            let open = self.open_options();
            match session.replace_current(&self.shared.services.engine, &open).await {
                Ok(()) => message.push_str(
                    "\nThe page crashed and was replaced by a new blank page in this tab: navigate again.",
                ),
                Err(e) => message.push_str(&format!(
                    "\nThe page crashed and no new page could be opened: {}",
                    explain(&e)
                )),
            }
        }
        message
    }

    /// URL, title, new console messages, dialogs and policy refusals, and
    /// the snapshot when asked.
    async fn page_state(&self, tab: &mut Tab, snapshot: bool) -> String {
        let mut out = String::new();
        let (url, title) = tab.page.location().await.unwrap_or_default();
        out.push_str(&format!("- Page URL: {url}\n- Page Title: {title}\n"));
        let console = drain_console(tab).await;
        if !console.is_empty() {
            out.push_str("### New console messages\n");
            for m in console.iter().take(10) {
                out.push_str(&format!("- [{}] {}\n", m.level, truncate(&m.text, 300)));
            }
            if console.len() > 10 {
                out.push_str(&format!(
                    "- … {} more (browser_console_messages)\n",
                    console.len() - 10
                ));
            }
        }
        let dialogs = tab.page.dialogs().await;
        for d in &dialogs {
            let how = match d.action {
                DialogAction::Accept => "accepted",
                DialogAction::Dismiss => "dismissed",
            };
            out.push_str(&format!(
                "### Dialog {how}\n- {} \"{}\" (browser_handle_dialog sets how the next ones are answered)\n",
                d.kind,
                truncate(&d.message, 300)
            ));
        }
        let refused = tab.page.policy_refusals().await;
        if !refused.is_empty() {
            out.push_str("### Refused by the URL policy\n");
            for r in refused.iter().take(10) {
                out.push_str(&format!("- {}\n", truncate(r, 300)));
            }
            tab.refused.extend(refused);
        }
        if snapshot {
            match tab
                .page
                .snapshot(&SnapshotOptions {
                    max_chars: self.config().snapshot_max_chars,
                })
                .await
            {
                Ok(snap) => {
                    out.push_str(&format!("### Page snapshot\n```yaml\n{}```\n", snap.text));
                    tab.last_snapshot = Some(rendered_lines(&snap));
                }
                Err(e) => out.push_str(&format!("### Page snapshot\n(unavailable: {})\n", explain(&e))),
            }
        }
        out
    }
}

impl ServerHandler for OxwrightMcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("oxwright", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "A browser behind a URL policy, driven like Playwright MCP: browser_navigate, then \
                 browser_snapshot for refs (e12), then browser_click/browser_type with target = a ref \
                 or a unique selector. Actions return no snapshot unless snapshot: true; \
                 browser_snapshot {diff: true} returns only what changed. fetch_markdown turns a page \
                 into Markdown, load_sitemap lists a site's URLs, run_workflow runs a workflow.",
            )
    }

    /// Browser state lives in a session, so only the handshake-era protocol
    /// versions (which have sessions) are offered.
    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Owned(vec![
            ProtocolVersion::V_2025_03_26,
            ProtocolVersion::V_2025_06_18,
            ProtocolVersion::V_2025_11_25,
        ])
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(catalogue()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.map(Value::Object).unwrap_or(Value::Null);
        tracing::debug!(session = %self.id, tool = %request.name, "tool call");
        Ok(self.call(&request.name, args).await.into())
    }
}
