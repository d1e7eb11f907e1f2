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
    Act, ActOptions, BrowserEngine, ConsoleMessage, DialogAction, EngineError, EngineErrorKind, GotoOptions,
    OpenOptions, ScreenshotOptions, SnapshotOptions, Target, UrlPolicy, WaitCondition,
};
use oxwright_jobs::{FetchSpec, JobError, Locator};
use oxwright_llm::ChatModel;
use oxwright_workflow::{RunDeps, Sanitizer, SecretStore, Workflow, WorkflowOptions};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation, ListToolsResult,
    PaginatedRequestParams, ProtocolVersion, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio::sync::Mutex;

use crate::args::*;
use crate::diff::diff_lines;
use crate::errors::explain;
use crate::screenshots::ScreenshotStore;
use crate::session::{Session, Tab};
use crate::tools::catalogue;

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
        let clean = |s: &str| self.shared.sanitizer.clean(s);
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
                tracing::info!(tool = name, error = %clean(&message), "tool failed");
                CallToolResult::error(vec![ContentBlock::text(clean(&message))])
            }
        }
    }

    async fn dispatch(&self, name: &str, args: Value) -> Result<Reply, String> {
        match name {
            "browser_navigate" | "playwright_navigate" => {
                let a: NavigateArgs = parse(name, args)?;
                self.navigate(&a.url, a.snap.snapshot).await
            }
            "browser_navigate_back" => {
                let a: BackArgs = parse(name, args)?;
                let t = self.config().navigation_timeout;
                self.with_tab_as(a.snap.snapshot, true, move |tab| {
                    Box::pin(async move {
                        tab.page.back(t).await?;
                        Ok("Went back.".to_string())
                    })
                })
                .await
            }
            "browser_snapshot" => {
                let a: SnapshotArgs = parse(name, args)?;
                self.snapshot(a.diff, a.max_chars).await
            }
            "browser_click" => {
                let a: ClickArgs = parse(name, args)?;
                let act = if a.double_click {
                    Act::DoubleClick
                } else {
                    Act::Click
                };
                self.act(&a.el, act, a.snap.snapshot).await
            }
            "playwright_click" => {
                let a: SelectorArgs = parse(name, args)?;
                self.act(&selector(&a.selector), Act::Click, false).await
            }
            "browser_hover" => {
                let a: HoverArgs = parse(name, args)?;
                self.act(&a.el, Act::Hover, a.snap.snapshot).await
            }
            "playwright_hover" => {
                let a: SelectorArgs = parse(name, args)?;
                self.act(&selector(&a.selector), Act::Hover, false).await
            }
            "browser_type" => {
                let a: TypeArgs = parse(name, args)?;
                self.type_text(&a).await
            }
            "playwright_fill" => {
                let a: SelectorValueArgs = parse(name, args)?;
                let (value, secret) = self.resolve_secrets(&a.value).await?;
                self.act(&selector(&a.selector), Act::Fill { value, secret }, false)
                    .await
            }
            "browser_fill_form" => {
                let a: FillFormArgs = parse(name, args)?;
                self.fill_form(a).await
            }
            "browser_select_option" => {
                let a: SelectArgs = parse(name, args)?;
                self.act(&a.el, Act::Select { values: a.values }, a.snap.snapshot)
                    .await
            }
            "playwright_select" => {
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
            "browser_press_key" => {
                let a: PressKeyArgs = parse(name, args)?;
                self.press_key(a.key, a.snap.snapshot).await
            }
            "browser_wait_for" => {
                let a: WaitForArgs = parse(name, args)?;
                self.wait_for(a).await
            }
            "browser_evaluate" | "playwright_evaluate" => {
                let a: EvaluateArgs = parse(name, args)?;
                self.evaluate(a).await
            }
            "browser_take_screenshot" | "playwright_screenshot" => {
                let a: ScreenshotArgs = parse(name, args)?;
                self.screenshot(a).await
            }
            "browser_console_messages" | "playwright_get_console_logs" => {
                let a: ConsoleArgs = parse(name, args)?;
                self.console(a.only_errors).await
            }
            "browser_network_requests" => {
                let a: NetworkArgs = parse(name, args)?;
                self.network(a.include_static).await
            }
            "browser_handle_dialog" => {
                let a: DialogArgs = parse(name, args)?;
                self.handle_dialog(a).await
            }
            "browser_file_upload" => {
                let a: UploadArgs = parse(name, args)?;
                self.upload(a).await
            }
            "browser_tabs" => {
                let a: TabsArgs = parse(name, args)?;
                self.tabs(a).await
            }
            "browser_resize" => {
                let a: ResizeArgs = parse(name, args)?;
                self.with_tab(false, move |tab| {
                    Box::pin(async move {
                        tab.page.set_viewport(a.width, a.height).await?;
                        Ok(format!("Resized the viewport to {}x{}.", a.width, a.height))
                    })
                })
                .await
            }
            "browser_close" => {
                let _: NoArgs = parse(name, args)?;
                self.session.lock().await.close_all();
                Ok(Reply::text(
                    "Closed the browser tabs of this session; the next tool opens a new page.",
                ))
            }
            "playwright_get_content" => {
                let _: NoArgs = parse(name, args)?;
                self.with_tab_raw(|tab| Box::pin(async move { Ok(Reply::text(tab.page.html().await?)) }))
                    .await
            }
            "fetch_markdown" => {
                let a: FetchArgs = parse(name, args)?;
                self.fetch_markdown(a).await
            }
            "load_sitemap" => {
                let a: SitemapArgs = parse(name, args)?;
                self.load_sitemap(a).await
            }
            "run_workflow" => {
                let a: WorkflowArgs = parse(name, args)?;
                self.run_workflow(a).await
            }
            other => Err(format!(
                "no tool named {other:?}; call tools/list for the tools this server has"
            )),
        }
    }

    /// Runs `f` on the current tab (opening one when needed), then appends
    /// the page state (and the snapshot when asked). A crashed page is
    /// replaced and the agent told.
    async fn with_tab<F>(&self, snapshot: bool, f: F) -> Result<Reply, String>
    where
        F: for<'a> FnOnce(&'a mut Tab) -> BoxFuture<'a, Result<String, EngineError>> + Send,
    {
        self.with_tab_as(snapshot, false, f).await
    }

    /// [`with_tab`] for navigations: a navigation that timed out leaves the
    /// tab with a fresh page.
    async fn with_tab_as<F>(&self, snapshot: bool, navigating: bool, f: F) -> Result<Reply, String>
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
            Err(err) => Err(self.fail(&mut session, err, navigating).await),
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
            Err(err) => Err(self.fail(&mut session, err, false).await),
        }
    }

    /// Explains `err`; replaces the page when it crashed.
    async fn fail(&self, session: &mut Session, err: EngineError, navigating: bool) -> String {
        let mut message = explain(&err);
        if navigating && err.kind == EngineErrorKind::Timeout && session.existing().is_some() {
            // A navigation still in flight in a page poisons its next one (its late
            // response is taken for the new document): the tab gets a fresh page.
            let open = self.open_options();
            match session.replace_current(&self.shared.services.engine, &open).await {
                Ok(()) => message.push_str(
                    "\nThe page did not settle in time, so this tab was given a fresh blank page (its cookies and storage start empty): navigate again.",
                ),
                Err(e) => message.push_str(&format!("\nNo fresh page could be opened: {}", explain(&e))),
            }
        }
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
        let url = tab.page.url().await.unwrap_or_default();
        let title = tab.page.title().await.unwrap_or_default();
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

    async fn navigate(&self, raw: &str, snapshot: bool) -> Result<Reply, String> {
        let url = parse_url(raw)?;
        let t = self.config().navigation_timeout;
        self.with_tab_as(snapshot, true, move |tab| {
            Box::pin(async move {
                let nav = tab.page.goto(&url, &GotoOptions::load(t)).await?;
                tab.last_snapshot = None;
                let mut s = format!("Navigated to {}", nav.final_url);
                if nav.status != 0 {
                    s.push_str(&format!(" (HTTP {})", nav.status));
                }
                s.push('.');
                Ok(s)
            })
        })
        .await
    }

    async fn snapshot(&self, diff: bool, max_chars: Option<usize>) -> Result<Reply, String> {
        let cap = max_chars
            .unwrap_or(self.config().snapshot_max_chars)
            .clamp(500, 200_000);
        self.with_tab_raw(move |tab| {
            Box::pin(async move {
                let snap = tab.page.snapshot(&SnapshotOptions { max_chars: cap }).await?;
                let lines = rendered_lines(&snap);
                let mut text = format!("- Page URL: {}\n- Page Title: {}\n", snap.url, snap.title);
                match (diff, tab.last_snapshot.as_ref()) {
                    (true, Some(prev)) => {
                        let changes = diff_lines(prev, &lines);
                        if changes.is_empty() {
                            text.push_str("### Snapshot diff\nNo change since the last snapshot.\n");
                        } else {
                            let body: String = changes.iter().map(|l| format!("{l}\n")).collect();
                            let (body, _) = cap_text(&body, cap);
                            text.push_str(&format!("### Snapshot diff\n```diff\n{body}```\n"));
                        }
                    }
                    (true, None) => {
                        text.push_str(&format!(
                            "### Page snapshot (no earlier snapshot of this page to diff against)\n```yaml\n{}```\n",
                            snap.text
                        ));
                    }
                    _ => text.push_str(&format!("### Page snapshot\n```yaml\n{}```\n", snap.text)),
                }
                tab.last_snapshot = Some(lines);
                Ok(Reply::text(text))
            })
        })
        .await
    }

    async fn act(&self, el: &ElementArgs, act: Act, snapshot: bool) -> Result<Reply, String> {
        let target = target_of(el)?;
        let opts = ActOptions {
            timeout: self.config().action_timeout,
            // Filling and hovering seldom start work worth waiting for;
            // clicks, keys and selections do (navigations, fetches).
            settle: !matches!(act, Act::Fill { .. } | Act::Hover),
        };
        let label = describe(el, &target);
        self.with_tab(snapshot, move |tab| {
            Box::pin(async move {
                let done = tab.page.act(&target, &act, &opts).await?;
                let verb = match &act {
                    Act::Click => "Clicked",
                    Act::DoubleClick => "Double-clicked",
                    Act::Fill { .. } => "Filled",
                    Act::Type { .. } => "Typed into",
                    Act::Press { .. } => "Pressed a key on",
                    Act::Select { .. } => "Selected options of",
                    Act::Check => "Checked",
                    Act::Uncheck => "Unchecked",
                    Act::Hover => "Hovered over",
                    Act::ScrollIntoView => "Scrolled to",
                    Act::Focus => "Focused",
                };
                let nav = if done.navigated {
                    " The page navigated."
                } else {
                    ""
                };
                Ok(format!("{verb} {label}.{nav}"))
            })
        })
        .await
    }

    async fn resolve_secrets(&self, text: &str) -> Result<(String, bool), String> {
        let (value, had) = oxwright_workflow::resolve_placeholders(
            text,
            self.shared.services.secrets.as_ref(),
            &self.shared.sanitizer,
        )
        .await
        .map_err(|e| {
            format!("{e}; the server's secrets file names the secrets `{{{{NAME}}}}` can stand for")
        })?;
        Ok((value.expose().to_string(), had))
    }

    async fn type_text(&self, a: &TypeArgs) -> Result<Reply, String> {
        let (value, secret) = self.resolve_secrets(&a.text).await?;
        let target = target_of(&a.el)?;
        let label = describe(&a.el, &target);
        let opts = ActOptions {
            timeout: self.config().action_timeout,
            settle: true,
        };
        let (slowly, submit) = (a.slowly, a.submit);
        let quiet = ActOptions {
            settle: false,
            ..opts.clone()
        };
        self.with_tab(a.snap.snapshot, move |tab| {
            Box::pin(async move {
                let act = if slowly {
                    tab.page.act(&target, &Act::Focus, &quiet).await?;
                    Act::Type { text: value }
                } else {
                    Act::Fill { value, secret }
                };
                tab.page
                    .act(&target, &act, if slowly { &opts } else { &quiet })
                    .await?;
                let mut s = format!("Typed into {label}.");
                if submit {
                    let done = tab
                        .page
                        .act(&target, &Act::Press { key: "Enter".into() }, &opts)
                        .await?;
                    s.push_str(" Pressed Enter.");
                    if done.navigated {
                        s.push_str(" The page navigated.");
                    }
                }
                Ok(s)
            })
        })
        .await
    }

    async fn fill_form(&self, a: FillFormArgs) -> Result<Reply, String> {
        let mut steps = Vec::new();
        for f in a.fields {
            let target = target_of(&ElementArgs {
                element: f.name.clone(),
                target: Some(f.target.clone()),
                ref_: None,
            })?;
            let kind = f.kind.as_deref().unwrap_or("textbox").to_ascii_lowercase();
            let act = match kind.as_str() {
                "checkbox" | "radio" => match f.value.trim().to_ascii_lowercase().as_str() {
                    "true" | "on" | "yes" | "1" | "checked" => Act::Check,
                    "false" | "off" | "no" | "0" | "unchecked" => Act::Uncheck,
                    other => {
                        return Err(format!(
                            "field {}: a {kind} takes true or false, not {other:?}",
                            f.name.as_deref().unwrap_or(&f.target)
                        ));
                    }
                },
                "combobox" | "select" => Act::Select {
                    values: vec![f.value.clone()],
                },
                "textbox" | "slider" | "text" | "" => {
                    let (value, secret) = self.resolve_secrets(&f.value).await?;
                    Act::Fill { value, secret }
                }
                other => {
                    return Err(format!(
                        "field {}: unknown type {other:?}; use textbox, checkbox, radio, combobox or slider",
                        f.name.as_deref().unwrap_or(&f.target)
                    ));
                }
            };
            let label = f.name.clone().unwrap_or_else(|| f.target.clone());
            steps.push((target, act, label));
        }
        let opts = ActOptions {
            timeout: self.config().action_timeout,
            settle: true,
        };
        self.with_tab(a.snap.snapshot, move |tab| {
            Box::pin(async move {
                let mut done = Vec::new();
                for (target, act, label) in &steps {
                    tab.page.act(target, act, &opts).await.map_err(|mut e| {
                        e.message = format!("field {label}: {} (fields before it were filled)", e.message);
                        e
                    })?;
                    done.push(label.clone());
                }
                Ok(format!("Filled {} field(s): {}.", done.len(), done.join(", ")))
            })
        })
        .await
    }

    async fn press_key(&self, key: String, snapshot: bool) -> Result<Reply, String> {
        let opts = ActOptions {
            timeout: self.config().action_timeout,
            settle: true,
        };
        self.with_tab(snapshot, move |tab| {
            Box::pin(async move {
                // The focused element takes the key; with none, the body does.
                let focused = Target::locator(Locator::css(":focus"));
                let target = match tab.page.locate(&Locator::css(":focus")).await {
                    Ok(found) if found.len() == 1 => focused,
                    _ => Target::locator(Locator::css("body")),
                };
                let done = tab
                    .page
                    .act(&target, &Act::Press { key: key.clone() }, &opts)
                    .await?;
                let nav = if done.navigated {
                    " The page navigated."
                } else {
                    ""
                };
                Ok(format!("Pressed {key}.{nav}"))
            })
        })
        .await
    }

    async fn wait_for(&self, a: WaitForArgs) -> Result<Reply, String> {
        let t = self.config().navigation_timeout;
        let mut conditions = Vec::new();
        if let Some(secs) = a.time {
            if !(0.0..=60.0).contains(&secs) || secs.is_nan() {
                return Err(format!("time {secs} is outside 0..=60 seconds"));
            }
            conditions.push(WaitCondition::Time(Duration::from_secs_f64(secs)));
        }
        if let Some(text) = a.text {
            conditions.push(WaitCondition::Text(text));
        }
        if let Some(text) = a.text_gone {
            conditions.push(WaitCondition::TextGone(text));
        }
        if conditions.is_empty() {
            return Err("give time (seconds), text or textGone".into());
        }
        self.with_tab(a.snap.snapshot, move |tab| {
            Box::pin(async move {
                let mut said = Vec::new();
                for c in &conditions {
                    tab.page.wait_for(c, t).await?;
                    said.push(match c {
                        WaitCondition::Time(d) => format!("waited {} ms", d.as_millis()),
                        WaitCondition::Text(s) => format!("\"{s}\" appeared"),
                        WaitCondition::TextGone(s) => format!("\"{s}\" is gone"),
                        other => format!("{other:?}"),
                    });
                }
                Ok(format!("Done: {}.", said.join(", ")))
            })
        })
        .await
    }

    async fn evaluate(&self, a: EvaluateArgs) -> Result<Reply, String> {
        let f = a.function.trim().to_string();
        let is_function = f.starts_with("function") || f.starts_with("async") || f.contains("=>");
        let expression = match (a.el.target(), is_function) {
            (Some(t), true) => {
                let t = t.trim();
                if is_ref(t) {
                    return Err(
                        "browser_evaluate on an element takes a CSS selector as target, not a snapshot ref"
                            .into(),
                    );
                }
                let sel = serde_json::to_string(t).unwrap_or_default();
                format!(
                    "(() => {{ const __el = document.querySelectorAll({sel}); \
                     if (__el.length !== 1) throw new Error(`${{__el.length}} elements match {}`); \
                     return ({f})(__el[0]); }})()",
                    t.replace('`', "'")
                )
            }
            (None, true) => format!("({f})()"),
            (_, false) => f,
        };
        let t = self.config().action_timeout;
        self.with_tab_raw(move |tab| {
            Box::pin(async move {
                let value = tab.page.evaluate(&expression, t).await?;
                let text = match &value {
                    Value::String(s) => s.clone(),
                    other => serde_json::to_string_pretty(other).unwrap_or_default(),
                };
                let (text, _) = cap_text(&text, 100_000);
                Ok(Reply::text(format!("### Result\n{text}\n")))
            })
        })
        .await
    }

    async fn screenshot(&self, a: ScreenshotArgs) -> Result<Reply, String> {
        if let Some(kind) = a.kind.as_deref().filter(|k| !k.eq_ignore_ascii_case("png")) {
            return Err(format!("type {kind:?} is not taken; screenshots are PNG"));
        }
        let element = match a.el.target() {
            Some(_) => Some(target_of(&a.el)?),
            None => None,
        };
        let viewport = match (a.width, a.height) {
            (Some(w), Some(h)) => Some((w, h)),
            (None, None) => None,
            _ => return Err("give both width and height, or neither".into()),
        };
        let opts = ScreenshotOptions {
            full_page: a.full_page,
            element,
        };
        let shared = self.shared.clone();
        let filename = a.filename.clone();
        self.with_tab_raw(move |tab| {
            Box::pin(async move {
                if let Some((w, h)) = viewport {
                    tab.page.set_viewport(w, h).await?;
                }
                let png = tab.page.screenshot(&opts).await?;
                let path = shared
                    .screenshots
                    .save(filename.as_deref(), &png)
                    .map_err(|e| EngineError::new(EngineErrorKind::InvalidInput, e.to_string()))?;
                Ok(Reply {
                    text: format!(
                        "Took a screenshot ({} bytes), saved to {}.",
                        png.len(),
                        path.display()
                    ),
                    images: vec![png],
                    structured: None,
                })
            })
        })
        .await
    }

    async fn console(&self, only_errors: bool) -> Result<Reply, String> {
        self.with_tab_raw(move |tab| {
            Box::pin(async move {
                drain_console(tab).await;
                let lines: Vec<String> = tab
                    .console
                    .iter()
                    .filter(|m| !only_errors || m.level == "error" || m.level == "pageerror")
                    .map(|m| match &m.url {
                        Some(u) => format!("- [{}] {} ({u})", m.level, m.text),
                        None => format!("- [{}] {}", m.level, m.text),
                    })
                    .collect();
                if lines.is_empty() {
                    return Ok(Reply::text("No console messages."));
                }
                let (text, _) = cap_text(&lines.join("\n"), 50_000);
                Ok(Reply::text(text))
            })
        })
        .await
    }

    async fn network(&self, include_static: bool) -> Result<Reply, String> {
        const SCRIPT: &str = "(() => performance.getEntriesByType('navigation').concat(performance.getEntriesByType('resource')).map(e => ({ url: e.name, type: e.entryType === 'navigation' ? 'document' : e.initiatorType, status: e.responseStatus || 0, ms: Math.round(e.duration), bytes: e.transferSize || 0 })))()";
        let t = self.config().action_timeout;
        self.with_tab_raw(move |tab| {
            Box::pin(async move {
                let entries = tab.page.evaluate(SCRIPT, t).await?;
                let refused = tab.page.policy_refusals().await;
                tab.refused.extend(refused);
                let mut lines = Vec::new();
                for e in entries.as_array().into_iter().flatten() {
                    let kind = e["type"].as_str().unwrap_or("other");
                    let is_static = matches!(
                        kind,
                        "img" | "image" | "css" | "link" | "font" | "video" | "audio"
                    );
                    if is_static && !include_static {
                        continue;
                    }
                    let status = match e["status"].as_u64() {
                        Some(0) | None => String::new(),
                        Some(s) => format!(" => [{s}]"),
                    };
                    lines.push(format!(
                        "- [{kind}] {}{status} {} ms, {} bytes",
                        e["url"].as_str().unwrap_or(""),
                        e["ms"],
                        e["bytes"]
                    ));
                }
                for r in &tab.refused {
                    lines.push(format!("- [refused by the URL policy] {r}"));
                }
                if lines.is_empty() {
                    return Ok(Reply::text("No requests recorded for this page."));
                }
                let (text, _) = cap_text(&lines.join("\n"), 50_000);
                Ok(Reply::text(text))
            })
        })
        .await
    }

    async fn handle_dialog(&self, a: DialogArgs) -> Result<Reply, String> {
        let action = if a.accept {
            DialogAction::Accept
        } else {
            DialogAction::Dismiss
        };
        self.with_tab(false, move |tab| {
            Box::pin(async move {
                tab.page.answer_dialogs(action, a.prompt_text.clone()).await?;
                let how = if a.accept { "accepted" } else { "dismissed" };
                let prompt = a
                    .prompt_text
                    .map(|t| format!(" (prompts answer \"{t}\")"))
                    .unwrap_or_default();
                Ok(format!(
                    "Dialogs of this tab are {how} from now on{prompt}. Dialogs never block the page: each is answered as it opens and listed in the next result."
                ))
            })
        })
        .await
    }

    async fn upload(&self, a: UploadArgs) -> Result<Reply, String> {
        let Some(root) = self.config().upload_dir.clone() else {
            return Err("file uploads are off on this server; start it with --upload-dir DIR".into());
        };
        let root = root
            .canonicalize()
            .map_err(|e| format!("the upload directory {} is unusable: {e}", root.display()))?;
        let mut paths = Vec::new();
        for p in &a.paths {
            let real = std::path::Path::new(p)
                .canonicalize()
                .map_err(|e| format!("{p}: {e}"))?;
            if !real.starts_with(&root) || !real.is_file() {
                return Err(format!(
                    "{p} is not a file under the upload directory {}",
                    root.display()
                ));
            }
            paths.push(real);
        }
        let target = match a.el.target() {
            Some(_) => target_of(&a.el)?,
            None => Target::locator(Locator::css("input[type=file]")),
        };
        let n = paths.len();
        self.with_tab(false, move |tab| {
            Box::pin(async move {
                tab.page.set_input_files(&target, &paths).await?;
                Ok(format!("Set {n} file(s) on {target}."))
            })
        })
        .await
    }

    async fn tabs(&self, a: TabsArgs) -> Result<Reply, String> {
        let open = self.open_options();
        let engine = self.shared.services.engine.clone();
        let mut session = self.session.lock().await;
        let summary = match a.action.as_str() {
            "list" => String::new(),
            "new" => {
                let i = session.open_tab(&engine, &open).await.map_err(|e| explain(&e))?;
                if let Some(raw) = &a.url {
                    let url = parse_url(raw)?;
                    let t = self.config().navigation_timeout;
                    let tab = session.existing().ok_or("no tab")?;
                    if let Err(e) = tab.page.goto(&url, &GotoOptions::load(t)).await {
                        return Err(self.fail(&mut session, e, true).await);
                    }
                }
                format!("Opened tab {i}.\n")
            }
            "select" => {
                let i = a.index.ok_or("select takes index")?;
                if !session.select(i) {
                    return Err(format!("no tab {i}; browser_tabs list shows the tabs"));
                }
                format!("Selected tab {i}.\n")
            }
            "close" => {
                let i = a.index.unwrap_or(session.tabs().1);
                if !session.close(i) {
                    return Err(format!("no tab {i}; browser_tabs list shows the tabs"));
                }
                format!("Closed tab {i}.\n")
            }
            other => {
                return Err(format!(
                    "unknown action {other:?}; use list, new, select or close"
                ));
            }
        };
        let (tabs, current) = session.tabs();
        let mut out = summary;
        if tabs.is_empty() {
            out.push_str("No tabs open; the next tool opens one.\n");
        }
        for (i, tab) in tabs.iter().enumerate() {
            let url = tab.page.url().await.unwrap_or_default();
            let title = tab.page.title().await.unwrap_or_default();
            let mark = if i == current { " (current)" } else { "" };
            out.push_str(&format!("- {i}:{mark} [{title}] ({url})\n"));
            // Popups a page opened are listed under it (not driven).
            if let Ok(extra) = tab.page.tabs().await {
                for p in extra.iter().filter(|t| !t.current) {
                    out.push_str(&format!("  - popup: [{}] ({})\n", p.title, p.url));
                }
            }
        }
        Ok(Reply::text(out))
    }

    async fn fetch_markdown(&self, a: FetchArgs) -> Result<Reply, String> {
        let url = parse_url(&a.url)?;
        let mut spec = FetchSpec::new(url);
        spec.headless = self.config().headless;
        if let Some(c) = &a.content {
            spec.content = enum_arg("content", c)?;
        }
        if let Some(w) = &a.wait_until {
            spec.wait_for_load_state = enum_arg("waitUntil", w)?;
        }
        spec.wait_for = a.wait_for.clone();
        if let Some(t) = a.timeout_ms {
            spec.timeout_ms = t;
        }
        for b in &a.block_resources {
            spec.block_resources.push(enum_arg("blockResources", b)?);
        }
        let services = &self.shared.services;
        let out = oxwright_fetch::fetch_page(services.engine.as_ref(), &services.policy, &spec)
            .await
            .map_err(|e: JobError| explain_job(&e))?;
        let r = &out.result;
        let mut text = format!(
            "- URL: {}\n- Status: {}\n- Title: {}\n- Tokens: {} (HTML {})\n",
            r.final_url, r.status, r.title, r.tokens.markdown, r.tokens.html
        );
        for w in &r.warnings {
            text.push_str(&format!("- Warning: {w}\n"));
        }
        text.push_str(&format!("\n{}", r.markdown));
        Ok(Reply {
            text,
            images: Vec::new(),
            structured: serde_json::to_value(r).ok(),
        })
    }

    async fn load_sitemap(&self, a: SitemapArgs) -> Result<Reply, String> {
        let loader = oxwright_sitemap::SitemapLoader::new(
            self.shared.services.policy.clone(),
            oxwright_sitemap::SitemapOptions::default(),
        );
        let result = loader
            .load(&a.target)
            .await
            .map_err(|e| explain_job(&JobError::from(e)))?;
        let limit = a.limit.unwrap_or(1000).max(1);
        let mut text = format!("{} URLs", result.urls.len());
        if result.urls.len() > limit {
            text.push_str(&format!(" (the first {limit} shown; pass limit for more)"));
        }
        text.push('\n');
        for u in result.urls.iter().take(limit) {
            text.push_str(&u.loc);
            text.push('\n');
        }
        for w in &result.warnings {
            text.push_str(&format!("- Warning: {w}\n"));
        }
        Ok(Reply::text(text))
    }

    async fn run_workflow(&self, a: WorkflowArgs) -> Result<Reply, String> {
        let workflow =
            Workflow::parse(&a.workflow).map_err(|e| format!("the workflow does not parse: {e}"))?;
        let url = parse_url(&a.url)?;
        let services = &self.shared.services;
        let deps = RunDeps {
            llm: services.llm.clone(),
            secrets: services.secrets.clone(),
            store: services.store.clone(),
            sanitizer: self.shared.sanitizer.clone(),
        };
        let session_id = format!("mcp-{}", oxwright_jobs::JobId::new());
        let mut opts = WorkflowOptions::new(session_id.clone(), url);
        opts.name = a.name.clone();
        opts.action_timeout = self.config().action_timeout;
        let mut session = self.session.lock().await;
        let open = self.open_options();
        let tab = session
            .current(&services.engine, &open)
            .await
            .map_err(|e| explain(&e))?;
        tab.last_snapshot = None;
        let result = oxwright_workflow::run_workflow(tab.page.as_ref(), &workflow, deps, opts)
            .await
            .map_err(|e| format!("the workflow could not run: {e}"))?;
        let mut text = format!(
            "Workflow {} {:?}: {} step(s); final URL {}.\n",
            session_id,
            result.status,
            result.steps.len(),
            result.final_url.as_deref().unwrap_or("-")
        );
        if let Some(err) = &result.error {
            text.push_str(&format!("- Error: {err}\n"));
        }
        text.push_str(&format!("- Artefacts ({}):\n", services.store.describe()));
        for k in &result.artifacts {
            text.push_str(&format!("  - {k}\n"));
        }
        Ok(Reply {
            text,
            images: Vec::new(),
            structured: serde_json::to_value(&result).ok(),
        })
    }
}

type BoxFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;

/// What a tool returns.
#[derive(Debug, Default)]
struct Reply {
    text: String,
    images: Vec<Vec<u8>>,
    structured: Option<Value>,
}

impl Reply {
    fn text(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            ..Self::default()
        }
    }
}

fn parse<T: DeserializeOwned>(tool: &str, args: Value) -> Result<T, String> {
    let args = if args.is_null() { json!({}) } else { args };
    serde_json::from_value(args).map_err(|e| format!("{tool}: bad arguments: {e}; tools/list has the schema"))
}

fn enum_arg<T: DeserializeOwned>(name: &str, value: &str) -> Result<T, String> {
    serde_json::from_value(Value::String(value.to_string())).map_err(|e| format!("{name}: {e}"))
}

fn parse_url(raw: &str) -> Result<url::Url, String> {
    let url = url::Url::parse(raw.trim())
        .map_err(|e| format!("{raw:?} is not a URL ({e}); give http://… or https://…"))?;
    match url.scheme() {
        "http" | "https" => Ok(url),
        "file" => Err(format!(
            "{raw}: file:// URLs are refused: this server only opens http and https pages"
        )),
        other => Err(format!(
            "{raw}: the {other}: scheme is refused; give http://… or https://…"
        )),
    }
}

/// A snapshot ref (`e12`), with or without `ref=`.
fn is_ref(s: &str) -> bool {
    let s = s.strip_prefix("ref=").unwrap_or(s);
    s.len() > 1 && s.starts_with('e') && s[1..].chars().all(|c| c.is_ascii_digit())
}

fn target_of(el: &ElementArgs) -> Result<Target, String> {
    let Some(t) = el.target().map(str::trim).filter(|t| !t.is_empty()) else {
        return Err(
            "give target: a ref from browser_snapshot (e.g. e12) or a selector that matches one element"
                .into(),
        );
    };
    Ok(if is_ref(t) {
        Target::Ref(t.strip_prefix("ref=").unwrap_or(t).to_string())
    } else {
        Target::locator(Locator::parse_selector(t))
    })
}

fn selector(s: &str) -> ElementArgs {
    ElementArgs {
        element: None,
        target: Some(s.to_string()),
        ref_: None,
    }
}

fn describe(el: &ElementArgs, target: &Target) -> String {
    match &el.element {
        Some(e) if !e.trim().is_empty() => format!("\"{}\" ({target})", e.trim()),
        _ => target.to_string(),
    }
}

fn rendered_lines(snap: &oxwright_engine::Snapshot) -> Vec<String> {
    snap.lines
        .iter()
        .map(|l| format!("{}{}", "  ".repeat(l.depth), l.text))
        .collect()
}

async fn drain_console(tab: &mut Tab) -> Vec<ConsoleMessage> {
    let fresh = tab.page.console().await;
    tab.console.extend(fresh.iter().cloned());
    let over = tab.console.len().saturating_sub(1000);
    tab.console.drain(..over);
    fresh
}

fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max).collect();
    out.push('…');
    out
}

/// Cuts `text` to `max` characters on a line boundary, with a note.
fn cap_text(text: &str, max: usize) -> (String, bool) {
    if text.len() <= max {
        return (text.to_string(), false);
    }
    let mut cut = max;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    let head = &text[..cut];
    let head = head.rfind('\n').map(|i| &head[..=i]).unwrap_or(head);
    (format!("{head}… (cut at {max} characters)\n"), true)
}

fn explain_job(e: &JobError) -> String {
    let mut s = format!("{} ({})", e.message, e.kind);
    if let Some(url) = e.url.as_ref().filter(|u| !e.message.contains(u.as_str())) {
        s.push_str(&format!(" at {url}"));
    }
    s
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refs_and_selectors_are_told_apart() {
        assert!(is_ref("e12") && is_ref("ref=e3"));
        assert!(!is_ref("e") && !is_ref("email") && !is_ref("#e1"));
        let t = target_of(&ElementArgs {
            element: None,
            target: Some("button#go".into()),
            ref_: None,
        })
        .unwrap();
        let both = ElementArgs {
            element: None,
            target: Some("e2".into()),
            ref_: Some("e2".into()),
        };
        assert_eq!(target_of(&both).unwrap(), Target::Ref("e2".into()));
        assert!(matches!(t, Target::Locator { .. }));
        assert!(target_of(&ElementArgs::default()).is_err());
    }

    #[test]
    fn only_http_urls_open() {
        assert!(parse_url("http://127.0.0.1:1/").is_ok());
        let e = parse_url("file:///etc/passwd").unwrap_err();
        assert!(e.contains("file:// URLs are refused"), "{e}");
        assert!(parse_url("javascript:alert(1)").is_err());
        assert!(parse_url("not a url").unwrap_err().contains("not a URL"));
    }

    #[test]
    fn text_caps_on_line_boundaries() {
        let (t, cut) = cap_text("aaaa\nbbbb\ncccc\n", 12);
        assert!(cut);
        assert!(t.starts_with("aaaa\nbbbb\n…"), "{t}");
        assert_eq!(cap_text("short", 100), ("short".to_string(), false));
    }
}
