//! Acting on the page: locating (exactly one match), then click, fill,
//! select or wait with real input events through the DevTools Input domain,
//! each under a deadline, then waiting for the page to settle.

use std::sync::Arc;
use std::time::{Duration, Instant};

use oxwright_browser::{BrowserError, NavigateOptions, Tab, UrlPolicy};
use serde_json::{Value, json};

use crate::cdp::{call, call_on, resolve};
use crate::decision::{Action, ActionValue};
use crate::locator::{name_matches, page_script};
use crate::secrets::resolve as resolve_secret;
use crate::settle::{Settle, Settled};
use crate::snapshot::{Snapshot, Snapshotter};
use crate::{AttemptError, Locator, Sanitizer, SecretStore, WorkflowError};

/// Poll interval of auto-waits.
const POLL: Duration = Duration::from_millis(50);

/// One element found by a locator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Target {
    /// DOM backend node id.
    pub backend: i64,
}

/// Drives one tab for a workflow run.
#[derive(Debug)]
pub struct Executor<'a> {
    tab: &'a Tab,
    snapshots: Snapshotter,
    sanitizer: Sanitizer,
    secrets: Arc<dyn SecretStore>,
    policy: Arc<UrlPolicy>,
    timeout: Duration,
}

/// What an action did.
#[derive(Debug, Clone, Copy, Default)]
pub struct Acted {
    /// Time in the action itself.
    pub action: Duration,
    /// Time waiting for the page to settle.
    pub settle: Duration,
    /// The action started a navigation.
    pub navigated: bool,
}

const ACTIONABLE_JS: &str = r#"function() {
  if (!this.isConnected) return 'detached';
  const st = this.ownerDocument.defaultView.getComputedStyle(this);
  const r = this.getBoundingClientRect();
  if (r.width === 0 || r.height === 0 || st.visibility === 'hidden') return 'hidden';
  if (this.disabled || this.getAttribute('aria-disabled') === 'true') return 'disabled';
  return 'ok';
}"#;

const HIT_JS: &str = r#"function(x, y) {
  if (this.ownerDocument.defaultView !== window.top) return true;
  const e = document.elementFromPoint(x, y);
  if (!e) return false;
  if (e === this || this.contains(e)) return true;
  return !!(this.labels && [...this.labels].some((l) => l.contains(e)));
}"#;

const FOCUS_FOR_FILL_JS: &str = r#"function() {
  if (!this.isConnected) return 'detached';
  const t = (this.type || '').toLowerCase();
  const input = this.tagName === 'INPUT' && !['checkbox','radio','button','submit','reset','file','image','hidden','range','color'].includes(t);
  if (!(input || this.tagName === 'TEXTAREA' || this.isContentEditable)) return 'not editable';
  const r = this.getBoundingClientRect();
  if (r.width === 0 || r.height === 0) return 'hidden';
  if (this.disabled) return 'disabled';
  if (this.readOnly) return 'readonly';
  this.scrollIntoView({ block: 'center', inline: 'center' });
  this.focus();
  if (input || this.tagName === 'TEXTAREA') { this.select(); }
  else { const g = this.ownerDocument.createRange(); g.selectNodeContents(this); const s = this.ownerDocument.getSelection(); s.removeAllRanges(); s.addRange(g); }
  return t === 'password' ? 'ok-secret' : 'ok';
}"#;

const CHANGE_JS: &str =
    r#"function() { this.dispatchEvent(new Event('change', { bubbles: true })); return true; }"#;

const SELECT_JS: &str = r#"function(v) {
  if (!this.isConnected) return { error: 'detached' };
  if (this.tagName !== 'SELECT') return { error: 'not a select element' };
  if (this.disabled) return { error: 'disabled' };
  const norm = (s) => (s || '').replace(/\s+/g, ' ').trim();
  const opts = [...this.options];
  const o = opts.find((o) => o.value === v) || opts.find((o) => norm(o.label) === norm(v))
    || opts.find((o) => norm(o.label).toLowerCase() === norm(v).toLowerCase());
  if (!o) return { error: 'no option', options: opts.map((o) => norm(o.label)) };
  this.focus();
  o.selected = true;
  this.dispatchEvent(new Event('input', { bubbles: true }));
  this.dispatchEvent(new Event('change', { bubbles: true }));
  return { ok: true };
}"#;

impl<'a> Executor<'a> {
    /// Creates an executor on `tab`; `timeout` bounds each action and settle.
    pub fn new(
        tab: &'a Tab,
        sanitizer: Sanitizer,
        secrets: Arc<dyn SecretStore>,
        policy: Arc<UrlPolicy>,
        timeout: Duration,
        max_chars: usize,
    ) -> Self {
        Self {
            tab,
            snapshots: Snapshotter::new(max_chars),
            sanitizer,
            secrets,
            policy,
            timeout,
        }
    }

    /// Returns the tab.
    pub fn tab(&self) -> &Tab {
        self.tab
    }

    /// Returns the action deadline.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Takes an accessibility snapshot.
    pub async fn snapshot(&mut self) -> Result<Snapshot, BrowserError> {
        self.snapshots.capture(self.tab, &self.sanitizer).await
    }

    /// Navigates to `url` under the URL policy and waits for `load`.
    pub async fn goto(&mut self, url: &url::Url) -> Result<(), BrowserError> {
        let opts = NavigateOptions::load(self.policy.clone(), self.timeout.max(Duration::from_secs(15)));
        self.tab.navigate(url, &opts).await.map(|_| ())
    }

    /// Returns every element `locator` matches now (the precheck).
    pub async fn locate(&mut self, locator: &Locator) -> Result<Vec<Target>, BrowserError> {
        match locator {
            Locator::Role { role, name, exact } => {
                let snap = self.snapshot().await?;
                let role = role.to_ascii_lowercase();
                Ok(snap
                    .elements
                    .iter()
                    .filter(|e| e.role == role)
                    .filter(|e| name.as_deref().is_none_or(|n| name_matches(&e.name, n, *exact)))
                    .map(|e| Target { backend: e.backend })
                    .collect())
            }
            other => {
                let script = page_script(other).unwrap_or_default();
                let found = self.script_targets(&script).await;
                let _ = call(
                    self.tab,
                    "Runtime.releaseObjectGroup",
                    json!({ "objectGroup": "oxwright" }),
                )
                .await;
                found
            }
        }
    }

    async fn script_targets(&self, script: &str) -> Result<Vec<Target>, BrowserError> {
        let out = call(
            self.tab,
            "Runtime.evaluate",
            json!({ "expression": script, "objectGroup": "oxwright", "returnByValue": false }),
        )
        .await?;
        if out.get("exceptionDetails").is_some() {
            return Err(BrowserError::Extraction("locator script failed".into()));
        }
        let Some(array) = out["result"]["objectId"].as_str() else {
            return Ok(Vec::new());
        };
        let props = call(
            self.tab,
            "Runtime.getProperties",
            json!({ "objectId": array, "ownProperties": true }),
        )
        .await?;
        let mut targets = Vec::new();
        for p in props["result"].as_array().into_iter().flatten() {
            let is_index = p["name"].as_str().is_some_and(|n| n.parse::<usize>().is_ok());
            let Some(obj) = p["value"]["objectId"].as_str().filter(|_| is_index) else {
                continue;
            };
            let node = call(self.tab, "DOM.describeNode", json!({ "objectId": obj })).await?;
            if let Some(backend) = node["node"]["backendNodeId"].as_i64() {
                targets.push(Target { backend });
            }
        }
        Ok(targets)
    }

    /// Polls `locator` until it matches exactly one element or `limit` passes.
    pub async fn wait_for_one(&mut self, locator: &Locator, limit: Duration) -> Result<Target, AttemptError> {
        let deadline = Instant::now() + limit;
        loop {
            let found = self
                .locate(locator)
                .await
                .map_err(|e| AttemptError::Action(e.to_string()))?;
            if found.len() == 1 {
                return Ok(found[0]);
            }
            if Instant::now() >= deadline {
                return Err(AttemptError::NotUnique {
                    locator: self.sanitizer.clean(&locator.to_string()),
                    count: found.len(),
                });
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Performs `action` on `target`, then waits for the page to settle.
    /// Placeholders in `value` are resolved here, at the moment of typing.
    pub async fn perform(
        &mut self,
        target: Target,
        action: Action,
        value: Option<&ActionValue>,
    ) -> Result<Acted, ActError> {
        let settle = Settle::arm(self.tab).await.map_err(ActError::Browser)?;
        let started = Instant::now();
        let deadline = started + self.timeout;
        match action {
            Action::Click => self.click(target, deadline).await?,
            Action::Fill => {
                let text = value.map(ActionValue::text).unwrap_or_default();
                self.fill(target, text).await?;
            }
            Action::Select => {
                let text = value.map(ActionValue::text).unwrap_or_default();
                self.select(target, text).await?;
            }
            Action::Wait => {}
        }
        let action_took = started.elapsed();
        let settle_started = Instant::now();
        let Settled { navigated, .. } = settle.wait(self.timeout).await;
        Ok(Acted {
            action: action_took,
            settle: settle_started.elapsed(),
            navigated,
        })
    }

    async fn click(&mut self, t: Target, deadline: Instant) -> Result<(), ActError> {
        let obj = resolve(self.tab, t.backend).await.map_err(ActError::Browser)?;
        let mut last = String::from("not actionable");
        loop {
            let state = call_on(self.tab, &obj, ACTIONABLE_JS, vec![])
                .await
                .map_err(ActError::Browser)?;
            match state.as_str() {
                Some("detached") => return Err(ActError::Page("the element left the page".into())),
                Some("ok") => {
                    let _ = call(
                        self.tab,
                        "DOM.scrollIntoViewIfNeeded",
                        json!({ "backendNodeId": t.backend }),
                    )
                    .await;
                    let a = self.center(t).await;
                    self.next_frame().await;
                    let b = self.center(t).await;
                    match (a, b) {
                        (Some(a), Some(b)) if (a.0 - b.0).abs() < 0.5 && (a.1 - b.1).abs() < 0.5 => {
                            let hit = call_on(self.tab, &obj, HIT_JS, vec![json!(b.0), json!(b.1)])
                                .await
                                .map_err(ActError::Browser)?;
                            if hit == Value::Bool(true) {
                                return self.mouse_click(b.0, b.1).await;
                            }
                            last = "covered by another element".into();
                        }
                        (Some(_), Some(_)) => last = "not stable (moving)".into(),
                        _ => last = "without a box on screen".into(),
                    }
                }
                Some(other) => last = other.to_string(),
                None => {}
            }
            if Instant::now() >= deadline {
                return Err(ActError::Page(format!(
                    "element {last} after {} ms",
                    self.timeout.as_millis()
                )));
            }
            tokio::time::sleep(POLL).await;
        }
    }

    async fn center(&self, t: Target) -> Option<(f64, f64)> {
        let q = call(
            self.tab,
            "DOM.getContentQuads",
            json!({ "backendNodeId": t.backend }),
        )
        .await
        .ok()?;
        let quad: Vec<f64> = q["quads"].as_array()?.iter().find_map(|quad| {
            let pts: Vec<f64> = quad.as_array()?.iter().filter_map(Value::as_f64).collect();
            (pts.len() == 8).then_some(pts)
        })?;
        let x = (quad[0] + quad[2] + quad[4] + quad[6]) / 4.0;
        let y = (quad[1] + quad[3] + quad[5] + quad[7]) / 4.0;
        Some((x, y))
    }

    async fn next_frame(&self) {
        let _ = self
            .tab
            .evaluate(
                "new Promise((r) => requestAnimationFrame(() => r(true)))",
                Duration::from_millis(500),
            )
            .await;
    }

    async fn mouse_click(&self, x: f64, y: f64) -> Result<(), ActError> {
        for (kind, buttons) in [("mouseMoved", 0), ("mousePressed", 1), ("mouseReleased", 0)] {
            let mut ev = json!({ "type": kind, "x": x, "y": y });
            if kind != "mouseMoved" {
                ev["button"] = json!("left");
                ev["buttons"] = json!(buttons);
                ev["clickCount"] = json!(1);
            }
            call(self.tab, "Input.dispatchMouseEvent", ev)
                .await
                .map_err(ActError::Browser)?;
        }
        Ok(())
    }

    async fn fill(&mut self, t: Target, text: &str) -> Result<(), ActError> {
        let obj = resolve(self.tab, t.backend).await.map_err(ActError::Browser)?;
        let state = call_on(self.tab, &obj, FOCUS_FOR_FILL_JS, vec![])
            .await
            .map_err(ActError::Browser)?;
        let state = state.as_str().unwrap_or("unknown").to_string();
        if !state.starts_with("ok") {
            return Err(ActError::Page(format!("cannot fill: element is {state}")));
        }
        let (value, secret) = resolve_secret(text, self.secrets.as_ref(), &self.sanitizer)
            .await
            .map_err(ActError::Workflow)?;
        if secret || state == "ok-secret" {
            self.snapshots.mask(t.backend);
        }
        if value.expose().is_empty() {
            for kind in ["keyDown", "keyUp"] {
                call(
                    self.tab,
                    "Input.dispatchKeyEvent",
                    json!({ "type": kind, "key": "Delete", "code": "Delete", "windowsVirtualKeyCode": 46 }),
                )
                .await
                .map_err(ActError::Browser)?;
            }
        } else {
            call(self.tab, "Input.insertText", json!({ "text": value.expose() }))
                .await
                .map_err(ActError::Browser)?;
        }
        drop(value);
        call_on(self.tab, &obj, CHANGE_JS, vec![])
            .await
            .map_err(ActError::Browser)?;
        Ok(())
    }

    async fn select(&mut self, t: Target, text: &str) -> Result<(), ActError> {
        let obj = resolve(self.tab, t.backend).await.map_err(ActError::Browser)?;
        let (value, _) = resolve_secret(text, self.secrets.as_ref(), &self.sanitizer)
            .await
            .map_err(ActError::Workflow)?;
        let out = call_on(self.tab, &obj, SELECT_JS, vec![json!(value.expose())])
            .await
            .map_err(ActError::Browser)?;
        if out["ok"] == Value::Bool(true) {
            return Ok(());
        }
        let error = out["error"].as_str().unwrap_or("select failed");
        let options = out["options"]
            .as_array()
            .map(|o| {
                o.iter()
                    .filter_map(Value::as_str)
                    .map(|s| format!("{s:?}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default();
        Err(ActError::Page(if options.is_empty() {
            error.to_string()
        } else {
            format!("{error} matches {text:?}; options are {options}")
        }))
    }
}

/// Why an action failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ActError {
    /// The page refused (hidden, disabled, not a select …); the next attempt may do better.
    #[error("{0}")]
    Page(String),
    /// The browser failed.
    #[error(transparent)]
    Browser(BrowserError),
    /// A fatal workflow error (a missing secret).
    #[error(transparent)]
    Workflow(WorkflowError),
}
