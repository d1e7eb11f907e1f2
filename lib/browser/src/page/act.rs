//! Acting on one element with real input events through the DevTools Input
//! domain: pointer actions through [`super::pointer`], focus and
//! `Input.insertText` for a fill, option selection without focus, key
//! presses; each under the action's deadline.

use std::time::{Duration, Instant};

use oxwright_engine::{Act, EngineError, EngineErrorKind, scripts};
use serde_json::{Value, json};

use super::pointer::{Gesture, Press, click, pointer_action};
use super::raw::{Remote, call, call_node, call_on, resolve};
use super::{act_error, interactable};
use crate::{BrowserError, Tab};

const FOCUS_FOR_FILL_JS: &str = r#"function() {
  if (!this.isConnected) return 'detached';
  const t = (this.type || '').toLowerCase();
  const input = this.tagName === 'INPUT' && !['checkbox','radio','button','submit','reset','file','image','hidden','range','color'].includes(t);
  if (this.tagName === 'INPUT' && ['date','time','month','week','datetime-local','color','range'].includes(t)) {
    if (this.disabled) return 'disabled';
    if (this.readOnly) return 'readonly';
    return 'set-value';
  }
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

const FOCUS_JS: &str = r#"function() {
  if (!this.isConnected) return 'detached';
  this.scrollIntoView({ block: 'center', inline: 'center' });
  this.focus();
  return 'ok';
}"#;

// Whether a filled field kept what was typed: the same text, or the same
// letters and digits (fields that format as you type: phone numbers,
// card numbers), or a completion that contains them (a suggestion
// accepted). The value is compared in the page and never returned.
const KEPT_JS: &str = r#"function(value) {
  if (!this.isConnected) return 'detached';
  const shown = (this.tagName === 'INPUT' || this.tagName === 'TEXTAREA') ? this.value : (this.innerText || '');
  if (shown === value) return 'ok';
  const alnum = (s) => (s || '').toLowerCase().replace(/[^\p{L}\p{N}]/gu, '');
  const a = alnum(shown), b = alnum(value);
  if (a === b || (b && a.includes(b))) return 'ok';
  if (this.type === 'number' && shown !== '' && Number(shown) === Number(value)) return 'ok';
  if (!shown) return 'empty';
  return 'differs:' + [...shown].length;
}"#;

// Fields Playwright fills by setting the value (date and time pickers,
// colour, range): typing into them does not work. Returns 'ok', or
// 'malformed' when the field refused the value.
const SET_VALUE_JS: &str = r#"function(value) {
  if (!this.isConnected) return 'detached';
  this.focus();
  this.value = value;
  if (value !== '' && this.value === '') return 'malformed';
  this.dispatchEvent(new Event('input', { bubbles: true }));
  this.dispatchEvent(new Event('change', { bubbles: true }));
  return 'ok';
}"#;

const CHANGE_JS: &str =
    r#"function() { this.dispatchEvent(new Event('change', { bubbles: true })); return true; }"#;

const CHECKED_JS: &str = r#"function() {
  if (!this.isConnected) return 'detached';
  const el = this.tagName === 'LABEL' && this.control ? this.control : this;
  if (el.type === 'checkbox' || el.type === 'radio') return el.checked ? 'on' : 'off';
  const a = el.getAttribute('aria-checked');
  if (a === 'true' || a === 'mixed') return 'on';
  if (a === 'false') return 'off';
  return 'not a checkbox';
}"#;

// Selects like Playwright's selectOption: no focus (widgets that open on
// focus stay closed), the selection replaced, one input and one change.
const SELECT_JS: &str = r#"function(values) {
  if (!this.isConnected) return { error: 'detached' };
  if (this.tagName !== 'SELECT') return { error: 'not a select element' };
  if (this.disabled) return { error: 'disabled' };
  const norm = (s) => (s || '').replace(/\s+/g, ' ').trim();
  const opts = [...this.options];
  const find = (v) => opts.find((o) => o.value === v) || opts.find((o) => norm(o.label) === norm(v))
    || opts.find((o) => norm(o.label).toLowerCase() === norm(v).toLowerCase());
  // `Red, Blue` on a multiple select is two options, unless one option is called that.
  if (this.multiple && values.length === 1 && values[0].includes(',') && !find(values[0]))
    values = values[0].split(',').map((v) => v.trim()).filter((v) => v);
  const picked = [];
  for (const v of values) {
    const o = find(v);
    if (!o) return { error: 'no option matches', options: opts.map((o) => norm(o.label)) };
    picked.push(o);
  }
  if (picked.length > 1 && !this.multiple) return { error: 'not a multiple select' };
  for (const o of opts) o.selected = picked.includes(o);
  this.dispatchEvent(new Event('input', { bubbles: true }));
  this.dispatchEvent(new Event('change', { bubbles: true }));
  // The page's handlers may undo the choice (a widget that refuses it).
  const now = [...this.options].filter((o) => o.selected);
  if (now.length !== picked.length || !picked.every((o) => o.selected))
    return { error: 'the page did not keep the selection (now ' + JSON.stringify(now.map((o) => norm(o.label)).join(', ')) + ')' };
  return { ok: true };
}"#;

/// Performs `act` on the DOM node `backend` within `timeout`. Returns
/// whether the field was a password field (fills are then masked).
pub(crate) async fn perform(
    tab: &Tab,
    backend: i64,
    act: &Act,
    timeout: Duration,
) -> Result<bool, EngineError> {
    let deadline = Instant::now() + timeout;
    let obj = resolve(tab, backend).await.map_err(act_error)?;
    match act {
        Act::Click => click(tab, backend, &obj, deadline, timeout, &Press::LEFT, 1)
            .await
            .map(|_| false),
        Act::DoubleClick => click(tab, backend, &obj, deadline, timeout, &Press::LEFT, 2)
            .await
            .map(|_| false),
        Act::ClickWith { button, modifiers } => {
            let press = Press::new(*button, modifiers);
            let held = press.hold(tab, true).await;
            let clicked = match held {
                Ok(()) => click(tab, backend, &obj, deadline, timeout, &press, 1).await,
                Err(e) => Err(e),
            };
            // The keys go up whatever the click did.
            let _ = press.hold(tab, false).await;
            clicked.map(|_| false)
        }
        Act::Hover => pointer_action(tab, backend, &obj, deadline, timeout, Gesture::Hover)
            .await
            .map(|_| false),
        Act::Fill { value, .. } => fill(tab, &obj, value).await,
        Act::Type { text } => {
            let state = call_on(tab, &obj, FOCUS_JS, vec![]).await.map_err(act_error)?;
            if state.as_str() != Some("ok") {
                return Err(interactable(format!(
                    "cannot type: element is {}",
                    state.as_str().unwrap_or("?")
                )));
            }
            for ch in text.chars() {
                let s = ch.to_string();
                for kind in ["keyDown", "keyUp"] {
                    let mut ev = json!({ "type": kind, "key": s });
                    if kind == "keyDown" {
                        ev["text"] = json!(s);
                    }
                    call(tab, "Input.dispatchKeyEvent", ev).await.map_err(act_error)?;
                }
            }
            Ok(false)
        }
        Act::Press { key } => {
            let state = call_on(tab, &obj, FOCUS_JS, vec![]).await.map_err(act_error)?;
            if state.as_str() != Some("ok") {
                return Err(interactable("cannot press a key: the element left the page"));
            }
            press(tab, key).await.map(|_| false)
        }
        Act::Select { values } => select(tab, &obj, values).await.map(|_| false),
        Act::Check | Act::Uncheck => {
            let want = matches!(act, Act::Check);
            let state = call_on(tab, &obj, CHECKED_JS, vec![]).await.map_err(act_error)?;
            match state.as_str() {
                Some("on") if want => return Ok(false),
                Some("off") if !want => return Ok(false),
                Some("on" | "off") => {}
                Some("detached") => {
                    return Err(act_error(BrowserError::Protocol {
                        call: String::new(),
                        message: "No node".into(),
                    }));
                }
                _ => return Err(interactable("not a checkbox or radio")),
            }
            click(tab, backend, &obj, deadline, timeout, &Press::LEFT, 1).await?;
            let after = call_on(tab, &obj, CHECKED_JS, vec![]).await.map_err(act_error)?;
            if (after.as_str() == Some("on")) != want {
                return Err(interactable(format!(
                    "clicking did not {} the box",
                    if want { "check" } else { "uncheck" }
                )));
            }
            Ok(false)
        }
        Act::ScrollIntoView => {
            call_node(tab, "DOM.scrollIntoViewIfNeeded", backend, json!({}))
                .await
                .map_err(act_error)?;
            Ok(false)
        }
        Act::Focus => {
            call_on(tab, &obj, FOCUS_JS, vec![]).await.map_err(act_error)?;
            Ok(false)
        }
    }
}

async fn fill(tab: &Tab, obj: &Remote, value: &str) -> Result<bool, EngineError> {
    let state = call_on(tab, obj, FOCUS_FOR_FILL_JS, vec![])
        .await
        .map_err(act_error)?;
    let state = state.as_str().unwrap_or("unknown").to_string();
    if state == "detached" {
        return Err(EngineError::new(
            EngineErrorKind::Stale,
            "the element left the page; take a new snapshot",
        ));
    }
    if state == "set-value" {
        let out = call_on(tab, obj, SET_VALUE_JS, vec![json!(value)])
            .await
            .map_err(act_error)?;
        return match out.as_str() {
            Some("ok") => Ok(false),
            Some("malformed") => Err(EngineError::new(
                EngineErrorKind::InvalidInput,
                "the field refused the value: a date is YYYY-MM-DD, a time HH:MM, a month YYYY-MM, a week YYYY-Www",
            )),
            _ => Err(EngineError::new(
                EngineErrorKind::Stale,
                "the element left the page; take a new snapshot",
            )),
        };
    }
    if !state.starts_with("ok") {
        return Err(interactable(format!("cannot fill: element is {state}")));
    }
    if value.is_empty() {
        for kind in ["keyDown", "keyUp"] {
            call(
                tab,
                "Input.dispatchKeyEvent",
                json!({ "type": kind, "key": "Delete", "code": "Delete", "windowsVirtualKeyCode": 46 }),
            )
            .await
            .map_err(act_error)?;
        }
    } else {
        call(tab, "Input.insertText", json!({ "text": value }))
            .await
            .map_err(act_error)?;
    }
    call_on(tab, obj, CHANGE_JS, vec![]).await.map_err(act_error)?;
    // The field may have refused the input (a length limit, a script that
    // clears it): the fill then failed, whatever the events said.
    let kept = call_on(tab, obj, KEPT_JS, vec![json!(value)])
        .await
        .map_err(act_error)?;
    match kept.as_str() {
        Some("ok") | Some("detached") => Ok(state == "ok-secret"),
        Some("empty") => Err(interactable(
            "the field did not keep the text: it is empty after the fill",
        )),
        Some(other) => Err(interactable(format!(
            "the field did not keep the text: it shows {} characters of something else (a length limit or a script changed it)",
            other.trim_start_matches("differs:")
        ))),
        None => Ok(state == "ok-secret"),
    }
}

/// Reads what the element `backend` shows (see [`oxwright_engine::scripts::INSPECT_FN`]).
pub(crate) async fn inspect(tab: &Tab, backend: i64) -> Result<oxwright_engine::ElementState, EngineError> {
    let obj = resolve(tab, backend).await.map_err(act_error)?;
    let function = scripts::on_this(scripts::INSPECT_FN);
    let out = call_on(tab, &obj, &function, vec![]).await.map_err(act_error)?;
    scripts::element_state(&out)
}

/// The rows of the table at `backend` (see [`oxwright_engine::scripts::TABLE_FN`]).
pub(crate) async fn table_rows(tab: &Tab, backend: i64) -> Result<Value, EngineError> {
    let obj = resolve(tab, backend).await.map_err(act_error)?;
    let function = scripts::on_this(scripts::TABLE_FN);
    let out = call_on(tab, &obj, &function, vec![]).await.map_err(act_error)?;
    scripts::table_rows(&out)
}

async fn select(tab: &Tab, obj: &Remote, values: &[String]) -> Result<(), EngineError> {
    let out = call_on(tab, obj, SELECT_JS, vec![json!(values)])
        .await
        .map_err(act_error)?;
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
    // The requested value is not repeated: it may be a secret.
    Err(interactable(if options.is_empty() {
        error.to_string()
    } else {
        format!("{error}; options are {options}")
    }))
}

/// Key names as Playwright spells them, with their DevTools codes.
fn key_info(key: &str) -> Option<(&'static str, &'static str, i64, Option<&'static str>)> {
    Some(match key {
        "Enter" => ("Enter", "Enter", 13, Some("\r")),
        "Tab" => ("Tab", "Tab", 9, None),
        "Escape" => ("Escape", "Escape", 27, None),
        "Backspace" => ("Backspace", "Backspace", 8, None),
        "Delete" => ("Delete", "Delete", 46, None),
        "ArrowUp" => ("ArrowUp", "ArrowUp", 38, None),
        "ArrowDown" => ("ArrowDown", "ArrowDown", 40, None),
        "ArrowLeft" => ("ArrowLeft", "ArrowLeft", 37, None),
        "ArrowRight" => ("ArrowRight", "ArrowRight", 39, None),
        "Home" => ("Home", "Home", 36, None),
        "End" => ("End", "End", 35, None),
        "PageUp" => ("PageUp", "PageUp", 33, None),
        "PageDown" => ("PageDown", "PageDown", 34, None),
        "Space" | " " => (" ", "Space", 32, Some(" ")),
        _ => return None,
    })
}

/// Presses `key` (`Enter`, `a`, `Control+a`, `Shift+Tab` …) on the focused element.
pub(crate) async fn press(tab: &Tab, key: &str) -> Result<(), EngineError> {
    let mut parts: Vec<&str> = key.split('+').collect();
    let main = parts.pop().filter(|k| !k.is_empty()).unwrap_or("+");
    let mut modifiers = 0;
    for m in &parts {
        modifiers |= match *m {
            "Alt" => 1,
            "Control" | "ControlOrMeta" => 2,
            "Meta" => 4,
            "Shift" => 8,
            other => {
                return Err(EngineError::new(
                    EngineErrorKind::InvalidInput,
                    format!("unknown modifier {other:?}"),
                ));
            }
        };
    }
    let (k, code, vk, text) = match key_info(main) {
        Some((k, code, vk, text)) => (k.to_string(), code.to_string(), vk, text.map(str::to_string)),
        None if main.chars().count() == 1 => {
            let c = main.chars().next().unwrap_or(' ');
            let code = if c.is_ascii_alphabetic() {
                format!("Key{}", c.to_ascii_uppercase())
            } else if c.is_ascii_digit() {
                format!("Digit{c}")
            } else {
                String::new()
            };
            let vk = c.to_ascii_uppercase() as i64;
            (
                main.to_string(),
                code,
                vk,
                (modifiers & 0b0110 == 0).then(|| main.to_string()),
            )
        }
        None => {
            return Err(EngineError::new(
                EngineErrorKind::InvalidInput,
                format!("unknown key {main:?}; use a character or a name like Enter, Tab, Escape, ArrowDown"),
            ));
        }
    };
    for kind in ["keyDown", "keyUp"] {
        let mut ev = json!({ "type": kind, "key": k, "code": code, "windowsVirtualKeyCode": vk, "modifiers": modifiers });
        if kind == "keyDown"
            && let Some(t) = &text
        {
            ev["text"] = json!(t);
        }
        call(tab, "Input.dispatchKeyEvent", ev).await.map_err(act_error)?;
    }
    Ok(())
}
