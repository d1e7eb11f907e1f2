//! [`McpPage`]: the engine's [`Page`] on one Playwright MCP child. Typed
//! tools where the server has them (navigate, snapshot, click, type,
//! select, hover, evaluate, screenshot, console, dialogs, tabs, back);
//! `browser_run_code_unsafe` with code built here only for what no typed
//! tool expresses (counting locator matches, forward, reload, waits with a
//! deadline). See `design.md`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use oxwright_egress::EgressProxy;
use oxwright_engine::{
    Act, ActOptions, Acted, ConsoleMessage, DialogAction, DialogRecord, Element, ElementState, EngineError,
    EngineErrorKind, GotoOptions, Locator, Navigated, Page, ScreenshotOptions, Snapshot, SnapshotOptions,
    TabInfo, Target, WaitCondition, WaitUntil, scripts,
};
use oxwright_policy::UrlPolicy;
use serde_json::{Value, json};
use tokio::sync::OwnedSemaphorePermit;
use tracing::warn;

use crate::client::{McpClient, Retry, ToolOutput};
use crate::parse::{self, parse_console, parse_tabs, result_value};

mod act;

/// Deadline of the small reads (document token, title, tabs …).
const QUICK: Duration = Duration::from_secs(10);

/// Stops a pending navigation (Chromium's `Page.stopLoading`).
const STOP_LOADING: &str = "async (page) => { const s = await page.context().newCDPSession(page); \
  await s.send('Page.stopLoading'); await s.detach(); }";

/// The refs of the page's last snapshot and the document they belong to.
#[derive(Debug, Default)]
struct LastSnapshot {
    doc: String,
    refs: std::collections::HashSet<String>,
}

/// A page driven through a Playwright MCP server.
pub struct McpPage {
    client: McpClient,
    policy: Arc<UrlPolicy>,
    egress: EgressProxy,
    on_dialog: DialogAction,
    last: Mutex<LastSnapshot>,
    secrets: Mutex<Vec<String>>,
    console_seen: Mutex<usize>,
    dialogs: Mutex<Vec<DialogRecord>>,
    /// A navigation has reached a document: the browser holds the page's
    /// state from then on.
    opened: AtomicBool,
    _workdir: tempfile::TempDir,
    _permit: Option<OwnedSemaphorePermit>,
}

impl std::fmt::Debug for McpPage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpPage").field("client", &self.client).finish()
    }
}

impl Drop for McpPage {
    fn drop(&mut self) {
        self.client.kill_now();
    }
}

impl McpPage {
    pub(crate) fn new(
        client: McpClient,
        policy: Arc<UrlPolicy>,
        egress: EgressProxy,
        on_dialog: DialogAction,
        workdir: tempfile::TempDir,
        permit: Option<OwnedSemaphorePermit>,
    ) -> Self {
        Self {
            client,
            policy,
            egress,
            on_dialog,
            last: Mutex::new(LastSnapshot::default()),
            secrets: Mutex::new(Vec::new()),
            console_seen: Mutex::new(0),
            dialogs: Mutex::new(Vec::new()),
            opened: AtomicBool::new(false),
            _workdir: workdir,
            _permit: permit,
        }
    }

    /// The MCP client (its state and child, for tests and diagnostics).
    pub fn client(&self) -> &McpClient {
        &self.client
    }

    /// Stops the child cleanly (the page is unusable afterwards).
    pub async fn close(&self) {
        self.client.shutdown().await;
    }

    fn scrub(&self, mut text: String) -> String {
        for s in self.secrets.lock().expect("secrets lock").iter() {
            if !s.is_empty() {
                text = text.replace(s.as_str(), "••••");
            }
        }
        text
    }

    /// Calls a tool, answers any dialog the call left open, and maps a
    /// tool error onto an engine error.
    async fn call(
        &self,
        tool: &str,
        args: Value,
        deadline: Duration,
        retry: Retry,
    ) -> Result<ToolOutput, EngineError> {
        let mut out = self.client.call(tool, args.clone(), deadline, retry).await?;
        if out.is_error && out.text.contains("does not handle the modal state") {
            self.answer_dialog(&out.text).await?;
            out = self.client.call(tool, args, deadline, retry).await?;
        }
        if parse::modal(&out.text).is_some() {
            self.answer_dialog(&out.text).await?;
        }
        if out.is_error {
            let mut err = parse::tool_error(tool, &out.text);
            err.message = self.scrub(err.message);
            return Err(err);
        }
        Ok(out)
    }

    async fn answer_dialog(&self, text: &str) -> Result<(), EngineError> {
        let Some(m) = parse::modal(text) else {
            return Ok(());
        };
        let accept = self.on_dialog == DialogAction::Accept;
        self.client
            .call(
                "browser_handle_dialog",
                json!({ "accept": accept }),
                QUICK,
                Retry::Never,
            )
            .await?;
        self.dialogs.lock().expect("dialogs lock").push(DialogRecord {
            kind: m.kind,
            message: m.message,
            action: self.on_dialog,
        });
        Ok(())
    }

    /// Reads a value with a side-effect-free page function: safe to repeat
    /// on a reconnected child.
    async fn read(&self, function: &str) -> Result<Value, EngineError> {
        let out = self
            .call(
                "browser_evaluate",
                json!({ "function": function }),
                QUICK,
                Retry::Safe,
            )
            .await?;
        Ok(result_value(&out.text))
    }

    /// Evaluates a page function (`() => …` or `(el) => …` with `target`)
    /// and returns its JSON result; never repeated.
    async fn eval(
        &self,
        function: &str,
        target: Option<&str>,
        deadline: Duration,
    ) -> Result<Value, EngineError> {
        let mut args = json!({ "function": function });
        if let Some(t) = target {
            args["target"] = json!(t);
        }
        let out = self
            .call("browser_evaluate", args, deadline, Retry::Never)
            .await?;
        Ok(result_value(&out.text))
    }

    /// Runs Playwright code (`async (page) => …`) in the server.
    async fn run_code(&self, code: &str, deadline: Duration, retry: Retry) -> Result<Value, EngineError> {
        let out = self
            .call(
                "browser_run_code_unsafe",
                json!({ "code": code }),
                deadline,
                retry,
            )
            .await?;
        Ok(result_value(&out.text))
    }

    /// The action started at `started` on document `before` is done. The
    /// server waits for what the action started; a new time origin says a
    /// new document replaced the old one, whose load is then waited for.
    async fn settled(&self, started: Instant, before: &str, opts: &ActOptions) -> Acted {
        let action = started.elapsed();
        let settled = Instant::now();
        let navigated = match self.doc().await {
            Ok(doc) => doc != before,
            Err(_) => true,
        };
        if navigated && opts.settle {
            let _ = self.wait_load(WaitUntil::Load, opts.timeout).await;
        }
        Acted {
            action,
            settle: settled.elapsed(),
            navigated,
        }
    }

    /// The current document's identity: its time origin, unique per document.
    async fn doc(&self) -> Result<String, EngineError> {
        let v = self.read("() => String(performance.timeOrigin)").await?;
        Ok(v.as_str().map(str::to_owned).unwrap_or_else(|| v.to_string()))
    }

    async fn wait_code(&self, body: &str, timeout: Duration) -> Result<(), EngineError> {
        let code = format!("async (page) => {{ {body} }}");
        match self.run_code(&code, timeout, Retry::Never).await {
            Err(e) if e.kind == EngineErrorKind::Timeout => Err(EngineError::new(
                EngineErrorKind::Timeout,
                format!("waited {timeout:?}: {}", e.message),
            )),
            other => other.map(|_| ()),
        }
    }

    async fn wait_load(&self, state: WaitUntil, timeout: Duration) -> Result<(), EngineError> {
        let ms = timeout.as_millis().max(1);
        let state = match state {
            // Ready: DOMContentLoaded, then the DOM quiet for 500 ms (5 s at most).
            WaitUntil::Ready => {
                let quiet = "await page.evaluate(() => new Promise(done => { \
                    const end = () => { o.disconnect(); done(); }; let t = setTimeout(end, 500); \
                    const o = new MutationObserver(() => { clearTimeout(t); t = setTimeout(end, 500); }); \
                    o.observe(document, { subtree: true, childList: true, characterData: true }); \
                    setTimeout(end, 5000); }));";
                return self
                    .wait_code(
                        &format!(
                            "await page.waitForLoadState('domcontentloaded', {{ timeout: {ms} }}); {quiet}"
                        ),
                        timeout,
                    )
                    .await;
            }
            WaitUntil::Domcontentloaded => "domcontentloaded",
            WaitUntil::Load => "load",
            WaitUntil::Networkidle => "networkidle",
        };
        self.wait_code(
            &format!("await page.waitForLoadState('{state}', {{ timeout: {ms} }});"),
            timeout,
        )
        .await
    }
}

#[async_trait]
impl Page for McpPage {
    async fn goto(&self, url: &url::Url, opts: &GotoOptions) -> Result<Navigated, EngineError> {
        self.policy
            .check(url)
            .await
            .map_err(|e| EngineError::policy(url.as_str(), &e))?;
        if !opts.block.is_empty() {
            return Err(EngineError::unsupported(
                "blocking resource types over Playwright MCP",
            ));
        }
        let started = Instant::now();
        self.egress.drain_refusals();
        // The server's own navigation deadline is fixed per child: wait at
        // least that long, so a slow page is its timeout, not a hung server.
        let deadline = opts.timeout.max(self.client.config().navigation_timeout);
        let navigate = || {
            self.call(
                "browser_navigate",
                json!({ "url": url.as_str() }),
                deadline,
                Retry::Safe,
            )
        };
        let mut out = navigate().await;
        if let Err(e) = &out
            && e.kind == EngineErrorKind::Crashed
            && !self.opened.load(Ordering::Acquire)
        {
            // The server's browser closed before the page held anything
            // (a launch that died under load): the server launches a new
            // one on the next call, and nothing is lost by asking again.
            warn!(error = %e, "the playwright mcp browser closed before the first page; launching again");
            out = navigate().await;
        }
        let out = match out {
            Ok(out) => out,
            Err(e) => {
                if e.kind == EngineErrorKind::Timeout {
                    // A navigation still pending blocks every later call
                    // (no execution context): stop it, as a user would.
                    let _ = self.run_code(STOP_LOADING, QUICK, Retry::Never).await;
                }
                return Err(e.with_url(url.as_str()));
            }
        };
        self.opened.store(true, Ordering::Release);
        let final_url = parse::page_field(&out.text, "Page URL").unwrap_or_else(|| url.to_string());
        let status = parse::page_field(&out.text, "HTTP status")
            .and_then(|s| s.split_whitespace().next()?.parse().ok())
            .unwrap_or(200);
        let refusals = self.egress.refusals();
        if refusals.iter().any(|r| same_target(&r.target, &final_url)) {
            return Err(EngineError::new(
                EngineErrorKind::PolicyDenied,
                format!("{final_url}: refused by the URL policy (a redirect left the allowed hosts)"),
            )
            .with_url(final_url));
        }
        let rest = opts.timeout.saturating_sub(started.elapsed());
        self.wait_load(opts.wait_until, rest).await?;
        if let Some(sel) = &opts.wait_for {
            let rest = opts.timeout.saturating_sub(started.elapsed());
            self.wait_for(&WaitCondition::Selector(sel.clone()), rest)
                .await
                .map_err(|e| {
                    if e.kind == EngineErrorKind::Timeout {
                        EngineError::new(
                            EngineErrorKind::WaitForTimeout,
                            format!("{sel} never appeared: {}", e.message),
                        )
                    } else {
                        e
                    }
                })?;
        }
        Ok(Navigated {
            final_url,
            status,
            content_type: None,
            redirects: Vec::new(),
            blocked: 0,
            refused: refusals
                .iter()
                .map(|r| format!("{}: {}", r.target, r.error))
                .collect(),
            headers: Vec::new(),
            // This backend cannot hand a PDF over: it is refused or shown.
            document: None,
            parse_stopped: false,
        })
    }

    async fn url(&self) -> Result<String, EngineError> {
        let v = self.read("() => location.href").await?;
        Ok(v.as_str().unwrap_or_default().to_string())
    }

    async fn title(&self) -> Result<String, EngineError> {
        let v = self.read("() => document.title").await?;
        Ok(v.as_str().unwrap_or_default().to_string())
    }

    async fn snapshot(&self, opts: &SnapshotOptions) -> Result<Snapshot, EngineError> {
        let started = Instant::now();
        let out = self
            .call("browser_snapshot", json!({}), QUICK, Retry::Safe)
            .await?;
        let doc = self.doc().await?;
        let secrets = self.secrets.lock().expect("secrets lock").clone();
        let parsed = parse::snapshot(&out.text, &doc, &secrets);
        *self.last.lock().expect("last lock") = LastSnapshot {
            doc,
            refs: parsed.elements.iter().map(|e| e.ref_id.clone()).collect(),
        };
        Ok(Snapshot::from_lines(
            parsed.lines,
            parsed.elements,
            parse::page_field(&out.text, "Page URL").unwrap_or_default(),
            parse::page_field(&out.text, "Page Title").unwrap_or_default(),
            opts.max_chars,
            started.elapsed(),
        ))
    }

    async fn locate(&self, locator: &Locator) -> Result<Vec<Element>, EngineError> {
        let (doc, found) = self.find(locator).await?;
        let role = match locator {
            Locator::Role { role, .. } => Some(role.clone()),
            _ => None,
        };
        Ok(found
            .into_iter()
            .map(|sel| Element {
                id: oxwright_engine::ElementId(format!("{doc}|{sel}")),
                role: role.clone(),
                name: None,
            })
            .collect())
    }

    async fn act(&self, target: &Target, act: &Act, opts: &ActOptions) -> Result<Acted, EngineError> {
        let resolved = self.resolve(target).await?;
        let started = Instant::now();
        self.perform(&resolved.target, act, opts).await?;
        Ok(self.settled(started, &resolved.doc, opts).await)
    }

    async fn drag(&self, from: &Target, to: &Target, opts: &ActOptions) -> Result<Acted, EngineError> {
        let source = self.resolve(from).await?;
        let dest = self.resolve(to).await?;
        let started = Instant::now();
        let deadline = opts.timeout.max(self.client.config().action_timeout);
        let args = json!({
            "startElement": from.to_string(),
            "startTarget": source.target,
            "endElement": to.to_string(),
            "endTarget": dest.target,
        });
        self.call("browser_drag", args, deadline, Retry::Never).await?;
        Ok(self.settled(started, &source.doc, opts).await)
    }

    async fn inspect(&self, target: &Target) -> Result<ElementState, EngineError> {
        let resolved = self.resolve(target).await?;
        let out = self
            .eval(scripts::INSPECT_FN, Some(&resolved.target), QUICK)
            .await?;
        scripts::element_state(&out)
    }

    async fn table_rows(&self, target: &Target) -> Result<Value, EngineError> {
        let resolved = self.resolve(target).await?;
        let out = self
            .eval(scripts::TABLE_FN, Some(&resolved.target), QUICK)
            .await?;
        scripts::table_rows(&out)
    }

    async fn evaluate(&self, expression: &str, timeout: Duration) -> Result<Value, EngineError> {
        let as_script = |e: EngineError| {
            if matches!(
                e.kind,
                EngineErrorKind::Protocol | EngineErrorKind::NotInteractable
            ) {
                EngineError::new(EngineErrorKind::Script, e.message)
            } else {
                e
            }
        };
        let function = format!("async () => {{ return ({expression}); }}");
        match self.eval(&function, None, timeout).await {
            // Statements (`a(); true`) are no expression: the page's own
            // eval runs them and returns the last value (pages whose CSP
            // forbids eval refuse this).
            Err(e) if e.message.contains("SyntaxError") => {
                let source = serde_json::to_string(expression).expect("a string serialises");
                let function = format!("async () => await (0, eval)({source})");
                self.eval(&function, None, timeout).await.map_err(as_script)
            }
            other => other.map_err(as_script),
        }
    }

    async fn html(&self) -> Result<String, EngineError> {
        let v = self.read("() => document.documentElement.outerHTML").await?;
        Ok(v.as_str().unwrap_or_default().to_string())
    }

    async fn screenshot(&self, opts: &ScreenshotOptions) -> Result<Vec<u8>, EngineError> {
        let secrets = self.secrets.lock().expect("secrets lock").clone();
        if opts.mask_secrets && !secrets.is_empty() {
            // browser_take_screenshot has no mask: the picture is taken only
            // when no secret shows on the page (the snapshot holds every
            // field's value and the page's text; password fields show dots).
            let out = self
                .call("browser_snapshot", json!({}), QUICK, Retry::Safe)
                .await?;
            if secrets
                .iter()
                .any(|v| !v.is_empty() && out.text.contains(v.as_str()))
            {
                return Err(EngineError::unsupported(
                    "masking secret fields in a Playwright MCP screenshot (a secret shows on the page)",
                ));
            }
        }
        let mut args = json!({ "type": "png", "scale": "css" });
        if let Some(t) = &opts.element {
            args["target"] = json!(self.resolve(t).await?.target);
        } else if opts.full_page {
            args["fullPage"] = json!(true);
        }
        let out = self
            .call(
                "browser_take_screenshot",
                args,
                Duration::from_secs(30),
                Retry::Safe,
            )
            .await?;
        out.images.into_iter().next().ok_or_else(|| {
            EngineError::new(
                EngineErrorKind::Protocol,
                "browser_take_screenshot returned no image",
            )
        })
    }

    async fn console(&self) -> Vec<ConsoleMessage> {
        let Ok(out) = self
            .call(
                "browser_console_messages",
                json!({ "level": "debug", "all": true }),
                QUICK,
                Retry::Safe,
            )
            .await
        else {
            return Vec::new();
        };
        let all = parse_console(&out.text);
        let mut seen = self.console_seen.lock().expect("console lock");
        if all.len() < *seen {
            // A reconnected child starts a new log.
            *seen = 0;
        }
        let fresh = all[*seen..].to_vec();
        *seen = all.len();
        fresh
    }

    async fn dialogs(&self) -> Vec<DialogRecord> {
        std::mem::take(&mut *self.dialogs.lock().expect("dialogs lock"))
    }

    async fn policy_refusals(&self) -> Vec<String> {
        self.egress
            .drain_refusals()
            .into_iter()
            .map(|r| format!("{}: {}", r.target, r.error))
            .collect()
    }

    async fn wait_for(&self, condition: &WaitCondition, timeout: Duration) -> Result<(), EngineError> {
        let ms = timeout.as_millis().max(1);
        let lit = |s: &str| serde_json::to_string(s).expect("a string serialises");
        let visible = |locator: String, state: &str| {
            format!("await page.{locator}.first().waitFor({{ state: '{state}', timeout: {ms} }});")
        };
        let code = match condition {
            WaitCondition::Selector(css) => {
                visible(format!("locator({})", lit(&format!("css={css}"))), "visible")
            }
            WaitCondition::Text(text) => visible(format!("getByText({})", lit(text)), "visible"),
            WaitCondition::TextGone(text) => visible(format!("getByText({})", lit(text)), "hidden"),
            WaitCondition::Url(part) => format!(
                "const want = {}; await page.waitForURL(u => u.href.includes(want), {{ timeout: {ms}, waitUntil: 'commit' }});",
                lit(part)
            ),
            WaitCondition::LoadState(state) => return self.wait_load(*state, timeout).await,
            WaitCondition::Time(d) => {
                tokio::time::sleep((*d).min(timeout)).await;
                return Ok(());
            }
        };
        self.wait_code(&code, timeout).await
    }

    async fn back(&self, timeout: Duration) -> Result<(), EngineError> {
        self.call("browser_navigate_back", json!({}), timeout, Retry::Never)
            .await?;
        self.wait_load(WaitUntil::Load, timeout).await
    }

    async fn forward(&self, timeout: Duration) -> Result<(), EngineError> {
        let ms = timeout.as_millis().max(1);
        self.run_code(
            &format!("async (page) => {{ await page.goForward({{ timeout: {ms} }}); }}"),
            timeout,
            Retry::Never,
        )
        .await?;
        Ok(())
    }

    async fn reload(&self, timeout: Duration) -> Result<(), EngineError> {
        let ms = timeout.as_millis().max(1);
        self.run_code(
            &format!("async (page) => {{ await page.reload({{ timeout: {ms} }}); }}"),
            timeout,
            Retry::Safe,
        )
        .await?;
        Ok(())
    }

    async fn tabs(&self) -> Result<Vec<TabInfo>, EngineError> {
        let out = self
            .call("browser_tabs", json!({ "action": "list" }), QUICK, Retry::Safe)
            .await?;
        let body = parse::section(&out.text, "Result").unwrap_or("");
        Ok(parse_tabs(body))
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// Says whether a refusal's target (`URL` or `host:port`) names `url`.
fn same_target(target: &str, url: &str) -> bool {
    if target == url {
        return true;
    }
    url::Url::parse(url)
        .ok()
        .and_then(|u| Some(format!("{}:{}", u.host_str()?, u.port_or_known_default()?)))
        .is_some_and(|hp| hp == target)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusal_targets_name_urls() {
        assert!(same_target("127.0.0.1:80", "http://127.0.0.1/x"));
        assert!(same_target("http://a/x", "http://a/x"));
        assert!(!same_target("127.0.0.1:81", "http://127.0.0.1/x"));
    }
}
