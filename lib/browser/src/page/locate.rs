//! Locating elements on Chromium. `getByRole` matches Chromium's own
//! accessibility tree — the very roles and names the snapshot shows — so
//! what is shown and what is matched cannot drift. The other locators run
//! as one script in the page that descends into same-origin iframes and
//! open shadow roots, and again in an isolated world of every frame of
//! another origin (closed to the page's script); only visible elements are
//! returned (the precheck is about what can be acted on).

use oxwright_engine::Locator;

/// Builds the page script returning the elements a non-role locator matches.
pub(crate) fn page_script(locator: &Locator) -> Option<String> {
    let (mode, needle, exact) = match locator {
        Locator::Text { text, exact } => ("text", text.as_str(), *exact),
        Locator::TestId { test_id } => ("testid", test_id.as_str(), true),
        Locator::Label { text, exact } => ("label", text.as_str(), *exact),
        Locator::Placeholder { text, exact } => ("placeholder", text.as_str(), *exact),
        Locator::Css { selector } => ("css", selector.as_str(), true),
        Locator::XPath { expression } => ("xpath", expression.as_str(), true),
        Locator::Role { .. } => return None,
    };
    let needle = serde_json::to_string(needle).unwrap_or_default();
    Some(format!(
        r#"(() => {{
  const mode = "{mode}", exact = {exact}, needle = {needle};
  const norm = (s) => (s || '').replace(/\s+/g, ' ').trim();
  const want = exact ? norm(needle) : norm(needle).toLowerCase();
  const matches = (t) => {{ t = norm(t); return exact ? t === want : (t !== '' && t.toLowerCase().includes(want)); }};
  // Documents (same-origin frames) and open shadow roots, in document order.
  const roots = [];
  const walk = (root) => {{
    roots.push(root);
    for (const el of root.querySelectorAll('*')) {{
      if (el.shadowRoot) walk(el.shadowRoot);
      if (el.tagName === 'IFRAME' || el.tagName === 'FRAME') {{ try {{ if (el.contentDocument) walk(el.contentDocument); }} catch (e) {{}} }}
    }}
  }};
  walk(document);
  const visible = (el) => {{
    const r = el.getBoundingClientRect();
    const st = el.ownerDocument.defaultView.getComputedStyle(el);
    return r.width > 0 && r.height > 0 && st.visibility !== 'hidden';
  }};
  const skip = new Set(['SCRIPT', 'STYLE', 'NOSCRIPT', 'TEMPLATE', 'HEAD', 'TITLE', 'HTML', 'BODY']);
  const textOf = (el) => {{
    if (el.tagName === 'INPUT' && ['button', 'submit', 'reset'].includes((el.type || '').toLowerCase())) return el.value;
    return el.textContent;
  }};
  const labelOf = (el) => {{
    const parts = [];
    const aria = el.getAttribute('aria-label');
    if (aria) parts.push(aria);
    const by = el.getAttribute('aria-labelledby');
    if (by) for (const id of by.split(/\s+/)) {{ const l = el.getRootNode().getElementById ? el.getRootNode().getElementById(id) : null; if (l) parts.push(l.textContent); }}
    if (el.labels) for (const l of el.labels) parts.push(l.textContent);
    return parts;
  }};
  const out = [];
  for (const root of roots) {{
    if (mode === 'xpath') {{
      if (root.nodeType !== 9) continue;
      try {{
        const it = root.evaluate(needle, root, null, XPathResult.ORDERED_NODE_SNAPSHOT_TYPE, null);
        for (let i = 0; i < it.snapshotLength; i++) {{ const n = it.snapshotItem(i); if (n.nodeType === 1 && visible(n)) out.push(n); }}
      }} catch (e) {{ throw new Error('invalid XPath ' + needle); }}
      continue;
    }}
    if (mode === 'css') {{
      let found;
      try {{ found = root.querySelectorAll(needle); }} catch (e) {{ throw new Error('invalid CSS selector ' + needle); }}
      for (const el of found) if (visible(el)) out.push(el);
      continue;
    }}
    if (mode === 'testid') {{
      for (const el of root.querySelectorAll('[data-testid]')) if (el.getAttribute('data-testid') === needle && visible(el)) out.push(el);
      continue;
    }}
    if (mode === 'placeholder') {{
      for (const el of root.querySelectorAll('[placeholder]')) if (matches(el.getAttribute('placeholder')) && visible(el)) out.push(el);
      continue;
    }}
    if (mode === 'label') {{
      for (const el of root.querySelectorAll('input, select, textarea, [contenteditable], [role=textbox], [role=combobox], [role=checkbox], [role=radio], [role=switch], [role=slider], [role=spinbutton], [role=listbox]')) {{
        if (el.type === 'hidden') continue;
        if (labelOf(el).some(matches) && visible(el)) out.push(el);
      }}
      continue;
    }}
    const hit = (el) => matches(textOf(el));
    for (const el of root.querySelectorAll('*')) {{
      if (skip.has(el.tagName) || !hit(el)) continue;
      // The innermost element holding the text matches, not its ancestors.
      if ([...el.children].some((c) => !skip.has(c.tagName) && hit(c))) continue;
      if (visible(el)) out.push(el);
    }}
  }}
  return out;
}})()"#
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripts_quote_their_needle() {
        assert!(page_script(&Locator::role("button", None)).is_none());
        assert!(
            page_script(&Locator::TestId {
                test_id: "a\"b".into()
            })
            .unwrap()
            .contains(r#""a\"b""#)
        );
        assert!(
            page_script(&Locator::css("a > b"))
                .unwrap()
                .contains(r#"mode = "css""#)
        );
    }
}
