//! Targets and actions: a ref, an element id or a locator resolved to the
//! server's `target` string (checked against the document it came from),
//! and each [`Act`] sent as the server's typed tool.

use oxwright_engine::{Act, ActOptions, EngineError, EngineErrorKind, Locator, Target};
use serde_json::{Value, json};

use super::{McpPage, QUICK};
use crate::client::Retry;
use crate::selector::selector;

/// The body of the locate code (`sel` is bound): walks the frame tree,
/// collects a page-level selector for each visible match.
const FIND_JS: &str = "const found = []; \
  const walk = async (frame, prefix) => { \
    const l = frame.locator(sel); const n = await l.count(); \
    for (let i = 0; i < n; i++) { if (await l.nth(i).isVisible()) found.push(prefix + sel + ' >> nth=' + i); } \
    const kids = frame.childFrames(); if (!kids.length) return; \
    const els = await frame.locator('css=iframe, frame').elementHandles(); \
    for (let k = 0; k < els.length; k++) { \
      const cf = await els[k].contentFrame(); \
      if (cf && kids.includes(cf)) { \
        try { await walk(cf, prefix + 'css=iframe, frame >> nth=' + k + ' >> internal:control=enter-frame >> '); } catch (e) {} \
      } \
    } \
  }; \
  await walk(page.mainFrame(), ''); \
  const doc = await page.evaluate(() => String(performance.timeOrigin)); \
  return { doc, found };";

/// What a target resolves to: the server's `target` string and the document it was valid in.
pub(super) struct Resolved {
    pub(super) target: String,
    pub(super) doc: String,
}

impl McpPage {
    pub(super) async fn resolve(&self, target: &Target) -> Result<Resolved, EngineError> {
        match target {
            Target::Ref(r) => {
                let doc = self.doc().await?;
                let last = self.last.lock().expect("last lock");
                if last.doc != doc || !last.refs.contains(r) {
                    return Err(EngineError::stale(r));
                }
                Ok(Resolved {
                    target: r.clone(),
                    doc,
                })
            }
            Target::Element(id) => {
                let (want, sel) = id.0.split_once('|').ok_or_else(|| {
                    EngineError::new(
                        EngineErrorKind::InvalidInput,
                        format!("not an element id of this engine: {id}"),
                    )
                })?;
                let doc = self.doc().await?;
                if want != doc {
                    return Err(EngineError::new(
                        EngineErrorKind::Stale,
                        format!("element {id} belongs to a document that is gone; take a new snapshot"),
                    ));
                }
                Ok(Resolved {
                    target: sel.to_string(),
                    doc,
                })
            }
            Target::Locator { locator, nth } => {
                let (doc, found) = self.find(locator).await?;
                let pick = match nth {
                    Some(n) => found.get(*n).cloned(),
                    None if found.len() == 1 => found.first().cloned(),
                    None if found.is_empty() => None,
                    None => return Err(EngineError::not_unique(target, found.len())),
                };
                let target_sel = pick.ok_or_else(|| EngineError::not_found(target))?;
                Ok(Resolved {
                    target: target_sel,
                    doc,
                })
            }
        }
    }

    /// Returns the document and a selector for each visible match of
    /// `locator`, in the page and in every frame below it (a frame's
    /// matches are reached through `internal:control=enter-frame`, the
    /// selector Playwright's `frameLocator` builds).
    pub(super) async fn find(&self, locator: &Locator) -> Result<(String, Vec<String>), EngineError> {
        let sel = selector(locator);
        let lit = serde_json::to_string(&sel).expect("a string serialises");
        let code = format!("async (page) => {{ const sel = {lit}; {FIND_JS} }}");
        let v = self.run_code(&code, QUICK, Retry::Safe).await.map_err(|e| {
            if e.kind == EngineErrorKind::Protocol && e.message.to_lowercase().contains("selector") {
                EngineError::new(EngineErrorKind::InvalidInput, e.message)
            } else {
                e
            }
        })?;
        let doc = v["doc"].as_str().unwrap_or_default().to_string();
        let found = v["found"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
            .unwrap_or_default();
        Ok((doc, found))
    }

    pub(super) async fn perform(
        &self,
        target: &str,
        act: &Act,
        opts: &ActOptions,
    ) -> Result<(), EngineError> {
        // As for navigations: the server's action deadline is per child.
        let deadline = opts.timeout.max(self.client.config().action_timeout);
        match act {
            Act::Click | Act::DoubleClick => {
                let args = json!({ "target": target, "doubleClick": matches!(act, Act::DoubleClick) });
                self.call("browser_click", args, deadline, Retry::Never).await?;
            }
            Act::ClickWith { button, modifiers } => {
                let modifiers: Vec<&str> = modifiers.iter().map(|m| m.as_str()).collect();
                let args = json!({ "target": target, "button": button.as_str(), "modifiers": modifiers });
                self.call("browser_click", args, deadline, Retry::Never).await?;
            }
            Act::Fill { value, secret } => {
                let password = self
                    .eval("(el) => el.type === 'password'", Some(target), deadline)
                    .await
                    .map(|v| v == json!(true))
                    .unwrap_or(false);
                if (*secret || password) && !value.is_empty() {
                    self.secrets.lock().expect("secrets lock").push(value.clone());
                }
                self.call(
                    "browser_type",
                    json!({ "target": target, "text": value }),
                    deadline,
                    Retry::Never,
                )
                .await?;
            }
            Act::Type { text } => {
                let args = json!({ "target": target, "text": text, "slowly": true });
                self.call("browser_type", args, deadline, Retry::Never).await?;
            }
            Act::Press { key } => {
                self.eval("(el) => el.focus()", Some(target), deadline).await?;
                self.call("browser_press_key", json!({ "key": key }), deadline, Retry::Never)
                    .await?;
            }
            Act::Select { values } => {
                let args = json!({ "target": target, "values": values });
                self.call("browser_select_option", args, deadline, Retry::Never)
                    .await?;
            }
            Act::Check | Act::Uncheck => {
                let field = json!({
                    "target": target,
                    "name": "field",
                    "type": "checkbox",
                    "value": if matches!(act, Act::Check) { "true" } else { "false" },
                });
                self.call(
                    "browser_fill_form",
                    json!({ "fields": [field] }),
                    deadline,
                    Retry::Never,
                )
                .await?;
            }
            Act::Hover => {
                self.call(
                    "browser_hover",
                    json!({ "target": target }),
                    deadline,
                    Retry::Never,
                )
                .await?;
            }
            Act::ScrollIntoView => {
                self.eval(
                    "(el) => el.scrollIntoView({ block: 'center' })",
                    Some(target),
                    deadline,
                )
                .await?;
            }
            Act::Focus => {
                self.eval("(el) => el.focus()", Some(target), deadline).await?;
            }
        }
        Ok(())
    }
}
