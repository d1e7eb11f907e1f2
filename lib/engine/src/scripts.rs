//! Page functions every engine runs on an element the same way (a CDP
//! `callFunctionOn` binds it as `this`: [`on_this`]; Playwright passes it
//! as the argument), and the readers of what they return.

use serde_json::Value;

use crate::{ElementState, EngineError, EngineErrorKind};

/// What an element shows: text, a control's value (never a password
/// field's: only whether it is empty), its checked state, its role, name
/// and landmarks. Answers `{ detached: true }` for an element that left
/// the page; read by [`element_state`].
pub const INSPECT_FN: &str = r#"(elem) => {
  if (!elem.isConnected) return { detached: true };
  const norm = (s) => (s || '').replace(/\s+/g, ' ').trim();
  const el = elem.tagName === 'LABEL' && elem.control ? elem.control : elem;
  const out = { text: norm(elem.innerText !== undefined ? elem.innerText : elem.textContent) };
  const t = (el.type || '').toLowerCase();
  if (el.tagName === 'SELECT') out.value = [...el.selectedOptions].map((o) => norm(o.label)).join(', ');
  else if (t === 'password') { out.secret = true; if (!el.value) out.value = ''; }
  else if (el.tagName === 'INPUT' || el.tagName === 'TEXTAREA') out.value = el.value;
  else if (el.isContentEditable) out.value = norm(el.innerText);
  const ex = el.getAttribute('aria-expanded');
  if (ex === 'true' || ex === 'false') out.expanded = ex === 'true';
  if (t === 'checkbox' || t === 'radio') out.checked = el.checked;
  else { const a = el.getAttribute('aria-checked'); if (a === 'true' || a === 'mixed') out.checked = true; else if (a === 'false') out.checked = false; }
  const byIds = (n) => norm((n.getAttribute('aria-labelledby') || '').split(/\s+/)
    .map((id) => { const l = n.ownerDocument.getElementById(id); return l ? l.textContent : ''; }).join(' '));
  const implicit = (n) => {
    const tag = n.tagName.toLowerCase(), ty = (n.getAttribute('type') || 'text').toLowerCase();
    if (tag === 'a' && n.hasAttribute('href')) return 'link';
    if (tag === 'button' || (tag === 'input' && ['button', 'submit', 'reset', 'image'].includes(ty))) return 'button';
    if (tag === 'input') return ({ checkbox: 'checkbox', radio: 'radio', range: 'slider', number: 'spinbutton', search: 'searchbox' })[ty] || 'textbox';
    if (tag === 'textarea') return 'textbox';
    if (tag === 'select') return n.multiple || n.size > 1 ? 'listbox' : 'combobox';
    if (/^h[1-6]$/.test(tag)) return 'heading';
    return ({ img: 'img', li: 'listitem', ul: 'list', ol: 'list', table: 'table', tr: 'row', td: 'cell', th: 'columnheader',
      option: 'option', nav: 'navigation', main: 'main', aside: 'complementary', header: 'banner', footer: 'contentinfo',
      form: 'form', dialog: 'dialog', section: 'region', search: 'search' })[tag] || null;
  };
  // A focusable or globally annotated element marked presentational keeps
  // its implicit role (as `oxwright_engine::aria` rules for the snapshot).
  const kept = (n) => {
    const tag = n.tagName, im = implicit(n);
    const off = ['BUTTON', 'INPUT', 'SELECT', 'TEXTAREA', 'OPTION', 'OPTGROUP'].includes(tag) && n.hasAttribute('disabled');
    const native = ['BUTTON', 'DETAILS', 'SELECT', 'TEXTAREA'].includes(tag) || ((tag === 'A' || tag === 'AREA') && n.hasAttribute('href'))
      || (tag === 'INPUT' && !n.hasAttribute('hidden') && (n.getAttribute('type') || '').trim().toLowerCase() !== 'hidden');
    const tabindex = n.hasAttribute('tabindex') && !Number.isNaN(Number(n.getAttribute('tabindex')));
    if (!off && (native || tabindex)) return true;
    const named = !['caption', 'code', 'deletion', 'emphasis', 'generic', 'insertion', 'paragraph', 'strong', 'subscript', 'superscript', null].includes(im);
    return ['atomic', 'busy', 'controls', 'current', 'describedby', 'details', 'dropeffect', 'flowto', 'grabbed', 'hidden', 'keyshortcuts', 'live', 'owns', 'relevant']
      .some((a) => n.hasAttribute('aria-' + a)) || (named && (n.hasAttribute('aria-label') || n.hasAttribute('aria-labelledby')))
      || (im !== null && n.hasAttribute('aria-roledescription'));
  };
  const role = (n) => {
    const r = (n.getAttribute('role') || '').trim().split(/\s+/)[0].toLowerCase();
    if ((r === 'presentation' || r === 'none') && kept(n)) return implicit(n);
    return r || implicit(n);
  };
  const label = (n) => norm(n.getAttribute('aria-label')) || byIds(n);
  let name = label(el);
  if (!name && el.labels && el.labels.length) name = norm([...el.labels].map((l) => l.innerText).join(' '));
  if (!name && ['button', 'link', 'heading', 'option', 'tab', 'menuitem', 'cell', 'listitem'].includes(role(el))) name = out.text;
  if (!name && el.tagName === 'INPUT' && ['button', 'submit', 'reset'].includes(t)) name = norm(el.value);
  if (!name) name = norm(el.getAttribute('alt') || el.getAttribute('title') || el.getAttribute('placeholder'));
  out.role = role(el);
  out.name = name.slice(0, 200);
  const marks = ['banner', 'navigation', 'main', 'complementary', 'contentinfo', 'form', 'region', 'search', 'dialog', 'alertdialog'];
  out.landmarks = [];
  let n = el;
  while (n) {
    n = n.parentElement || (n.getRootNode && n.getRootNode().host) || null;
    if (!n || n.nodeType !== 1) break;
    const r = role(n);
    if (!r || !marks.includes(r)) continue;
    const ln = label(n) || (r === 'dialog' || r === 'alertdialog' ? norm((n.querySelector('h1,h2,h3') || {}).textContent) : '');
    // A section or form without a name is no landmark (as in ARIA).
    if ((r === 'region' || r === 'form') && !ln && !n.getAttribute('role')) continue;
    out.landmarks.push(ln ? r + ' "' + ln.slice(0, 80) + '"' : r);
  }
  return out;
}"#;

/// A table's rows: header cells (the `thead`'s last row, else a first row
/// of `th` only, else `columnheader`s) name each body row's cells; a
/// header-less table gives lists of cell texts. A cell's text is its
/// rendered text (a control's value is not read). Read by [`table_rows`].
pub const TABLE_FN: &str = r#"(elem) => {
  if (!elem.isConnected) return { detached: true };
  const norm = (s) => (s || '').replace(/\s+/g, ' ').trim();
  const text = (c) => norm(c.innerText !== undefined ? c.innerText : c.textContent);
  const own = (rows) => rows.filter((r) => r.closest('table, [role=table], [role=grid], [role=treegrid]') === elem);
  const rows = elem.tagName === 'TABLE'
    ? own(Array.from(elem.rows))
    : own(Array.from(elem.querySelectorAll('[role=row]')));
  const cells = (r) => Array.from(r.tagName === 'TR' ? r.cells : r.querySelectorAll('[role=cell], [role=gridcell], [role=columnheader], [role=rowheader]'));
  let header = null;
  let body = rows;
  const thead = elem.tagName === 'TABLE' && elem.tHead && elem.tHead.rows.length
    ? elem.tHead.rows[elem.tHead.rows.length - 1] : null;
  const isHeader = (r) => cells(r).length > 0 && cells(r).every((c) => c.tagName === 'TH' || c.getAttribute('role') === 'columnheader');
  if (thead) { header = thead; body = rows.filter((r) => r.parentElement !== elem.tHead); }
  else if (rows.length && isHeader(rows[0])) { header = rows[0]; body = rows.slice(1); }
  const names = header ? cells(header).map((c, i) => text(c) || `column_${i + 1}`) : null;
  const out = body.map((r) => {
    const values = cells(r).map(text);
    if (!names) return values;
    const row = {};
    names.forEach((n, i) => { row[n] = values[i] === undefined ? '' : values[i]; });
    return row;
  });
  return { rows: out };
}"#;

/// `function` (one of this module's) as a function declaration that takes
/// its element as `this`.
pub fn on_this(function: &str) -> String {
    format!("function() {{ return ({function})(this); }}")
}

fn detached(out: &Value) -> Result<(), EngineError> {
    if out["detached"] == Value::Bool(true) {
        return Err(EngineError::new(
            EngineErrorKind::Stale,
            "the element left the page; take a new snapshot",
        ));
    }
    Ok(())
}

/// Reads what [`INSPECT_FN`] returned.
pub fn element_state(out: &Value) -> Result<ElementState, EngineError> {
    detached(out)?;
    Ok(ElementState {
        text: out["text"].as_str().unwrap_or_default().to_string(),
        value: out["value"].as_str().map(str::to_string),
        checked: out["checked"].as_bool(),
        secret: out["secret"] == Value::Bool(true),
        role: out["role"].as_str().map(str::to_string),
        expanded: out["expanded"].as_bool(),
        name: out["name"].as_str().unwrap_or_default().to_string(),
        landmarks: out["landmarks"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
            .unwrap_or_default(),
    })
}

/// Reads what [`TABLE_FN`] returned: the rows.
pub fn table_rows(out: &Value) -> Result<Value, EngineError> {
    detached(out)?;
    Ok(out["rows"].clone())
}
