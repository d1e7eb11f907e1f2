//! Whether a pointer action reaches its element, as Playwright checks it:
//! before the events, the element under the point (through shadow roots)
//! must be the target or inside it; while the events are dispatched, a
//! capture listener checks the first one's own point the same way, and
//! each press and release up to the first click, and swallows every event
//! of the action from the one that landed elsewhere (an element
//! that moved as the pointer arrived, a veil that came up), so the page
//! never sees a click meant for another element and the action is tried
//! again. What took the pointer is described as Playwright does
//! (`<div id="wall">We value…</div> intercepts pointer events`).

use serde_json::{Value, json};

use super::act_error;
use super::raw::{Remote, call_in, call_on};
use crate::Tab;
use oxwright_engine::EngineError;

/// Defines `hitTarget(el, x, y)`: `null` when a pointer at the frame's
/// client point (x, y) reaches `el` (its enclosing button or link, or one
/// of its labels), else a one-line description of what it reaches.
macro_rules! hit_target_js {
    () => {
        r#"
  const parentOf = (n) => n.parentElement || (n.parentNode && n.parentNode.host) || null;
  const preview = (n) => {
    const tag = n.tagName.toLowerCase();
    const attrs = [...n.attributes].filter((a) => a.name !== 'style')
      .map((a) => a.value === '' ? ' ' + a.name : ' ' + a.name + '="' + a.value + '"');
    attrs.sort((a, b) => a.length - b.length);
    let at = attrs.join('');
    if (at.length > 200) at = at.slice(0, 199) + '…';
    const kids = [...n.childNodes];
    const onlyText = kids.length <= 5 && kids.every((c) => c.nodeType === 3);
    let text = (onlyText ? n.textContent || '' : kids.length ? '…' : '').replace(/\s+/g, ' ').trim();
    if (text.length > 50) text = text.slice(0, 49) + '…';
    return ('<' + tag + at + '>' + text + '</' + tag + '>').replace(/[\u0000-\u001f\u007f-\u009f]/g, ' ');
  };
  const hitTarget = (node, x, y) => {
    const editable = node.matches('input, textarea, select') || node.isContentEditable;
    const el = editable ? node : node.closest('button, [role=button], a, [role=link]') || node;
    // Each root from the element's own up to the document: the point's
    // element in each must be the host of the next one down.
    const roots = [];
    for (let p = el; p;) {
      const root = p.getRootNode();
      roots.push(root);
      if (root.nodeType === 9 || !root.host) break;
      p = root.host;
    }
    let hit = null;
    for (let i = roots.length - 1; i >= 0; i--) {
      const root = roots[i];
      const all = root.elementsFromPoint(x, y);
      const single = root.elementFromPoint(x, y);
      if (single && all[0] && parentOf(single) === all[0]
          && el.ownerDocument.defaultView.getComputedStyle(single).display === 'contents') all.unshift(single);
      if (all[0] && all[0].shadowRoot === root && all[1] === single) all.shift();
      if (!all[0]) break;
      hit = all[0];
      if (i && hit !== roots[i - 1].host) break;
    }
    const chain = [];
    let at = hit;
    while (at && at !== el) { chain.push(at); at = parentOf(at); }
    if (at === el) return null;
    if (hit && node.labels && [...node.labels].some((l) => l.contains(hit))) return null;
    const first = chain[0] || el.ownerDocument.documentElement;
    // The topmost element of what was hit that is not around the target:
    // a dialog or a wall over it, say.
    for (let p = el; p; p = parentOf(p)) {
      const k = chain.indexOf(p);
      if (k > 1) return preview(first) + ' from ' + preview(chain[k - 1]) + ' subtree';
      if (k !== -1) break;
    }
    return preview(first);
  };
"#
    };
}

/// The check before the events, at the page's point (x, y). A subframe's
/// element is left to the listener, which reads its own frame's point.
const HIT_JS: &str = concat!(
    "function(x, y) {\n",
    hit_target_js!(),
    "  if (this.ownerDocument.defaultView !== window.top) return null;\n",
    "  return hitTarget(this, x, y);\n}"
);

/// Installs the listener in the element's window and returns the function
/// that removes it and tells what the action's first event reached. Only
/// trusted events are judged: the page's own synthetic ones pass.
const INTERCEPT_JS: &str = concat!(
    "function(hover) {\n",
    hit_target_js!(),
    r#"  const el = this, win = this.ownerDocument.defaultView;
  const kinds = hover ? ['mousemove'] : ['mousedown', 'mouseup', 'pointerdown', 'pointerup', 'click', 'auxclick', 'dblclick', 'contextmenu'];
  // The first event is judged, and each press and release until a click
  // has passed while the element is still shown: one that moved between
  // the press and the release (an accordion's step) would take the click
  // to an ancestor, while one the press removed or hid (a suggestion
  // picked on mousedown) has done its work.
  let result, clicked = false;
  const judged = (e) => result === undefined
    || (result === null && !clicked && /(down|up)$/.test(e.type)
        && el.isConnected && el.getClientRects().length > 0);
  const listener = (e) => {
    if (!e.isTrusted) return;
    if (judged(e)) result = hitTarget(el, e.clientX, e.clientY);
    if (result !== null) { e.preventDefault(); e.stopPropagation(); e.stopImmediatePropagation(); return; }
    if (e.type === 'click' || e.type === 'auxclick' || e.type === 'contextmenu') clicked = true;
  };
  for (const k of kinds) win.addEventListener(k, listener, { capture: true, passive: false });
  return () => {
    for (const k of kinds) win.removeEventListener(k, listener, { capture: true });
    return result === undefined ? null : result;
  };
}"#
);

/// What a pointer at the page's point (x, y) reaches instead of the
/// element, if anything.
pub(super) async fn intercepted_at(
    tab: &Tab,
    obj: &Remote,
    x: f64,
    y: f64,
) -> Result<Option<String>, EngineError> {
    let hit = call_on(tab, obj, HIT_JS, vec![json!(x), json!(y)])
        .await
        .map_err(act_error)?;
    Ok(hit.as_str().map(str::to_string))
}

/// The listener of one pointer action.
pub(super) struct Interceptor {
    stop: Remote,
}

impl Interceptor {
    /// Installs it on the element's window: over `mousemove` for a hover,
    /// over presses and clicks otherwise.
    pub(super) async fn install(tab: &Tab, obj: &Remote, hover: bool) -> Result<Self, EngineError> {
        let out = call_in(
            tab,
            obj.slot,
            "Runtime.callFunctionOn",
            json!({
                "objectId": obj.id,
                "functionDeclaration": INTERCEPT_JS,
                "arguments": [{ "value": hover }],
                "returnByValue": false,
            }),
        )
        .await
        .map_err(act_error)?;
        let id = out["result"]["objectId"].as_str().ok_or_else(|| {
            let why = out["exceptionDetails"]["exception"]["description"]
                .as_str()
                .unwrap_or("no listener came back");
            super::interactable(format!("cannot watch the pointer: {why}"))
        })?;
        Ok(Self {
            stop: Remote {
                slot: obj.slot,
                id: id.to_string(),
            },
        })
    }

    /// Removes the listener and returns what the action's first event
    /// reached instead of the element, if anything. A document that went
    /// away with the listener (the click navigated) saw the click land.
    pub(super) async fn stop(self, tab: &Tab) -> Option<String> {
        match call_on(tab, &self.stop, "function() { return this(); }", vec![]).await {
            Ok(Value::String(what)) => Some(what),
            _ => None,
        }
    }
}
