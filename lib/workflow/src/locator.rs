//! Locators with Playwright semantics. `getByRole` matches Chromium's own
//! accessibility tree (the same roles and names the snapshot shows);
//! `getByText` and `getByTestId` run as script in the page, descending into
//! same-origin iframes. Names and texts match case-insensitively as
//! whitespace-normalised substrings unless `exact`.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Which elements an action targets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "method")]
pub enum Locator {
    /// `getByRole(role, { name, exact })`.
    #[serde(rename = "getByRole")]
    Role {
        /// ARIA role.
        role: String,
        /// Accessible name; any name when absent.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        /// Whole-string, case-sensitive name match.
        #[serde(default)]
        exact: bool,
    },
    /// `getByText(text, { exact })`.
    #[serde(rename = "getByText")]
    Text {
        /// The text.
        text: String,
        /// Whole-string, case-sensitive match.
        #[serde(default)]
        exact: bool,
    },
    /// `getByTestId(id)`.
    #[serde(rename = "getByTestId")]
    TestId {
        /// The `data-testid` value.
        #[serde(rename = "testId")]
        test_id: String,
    },
}

impl fmt::Display for Locator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let q = |s: &str| serde_json::to_string(s).unwrap_or_default();
        match self {
            Locator::Role { role, name, exact } => {
                write!(f, "getByRole({}", q(role))?;
                if let Some(name) = name {
                    write!(
                        f,
                        ", {{ name: {}{} }}",
                        q(name),
                        if *exact { ", exact: true" } else { "" }
                    )?;
                }
                f.write_str(")")
            }
            Locator::Text { text, exact } => {
                write!(
                    f,
                    "getByText({}{})",
                    q(text),
                    if *exact { ", { exact: true }" } else { "" }
                )
            }
            Locator::TestId { test_id } => write!(f, "getByTestId({})", q(test_id)),
        }
    }
}

/// Normalises whitespace the way Playwright does before comparing names.
pub(crate) fn normalize(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Says whether an accessible name matches the wanted one.
pub(crate) fn name_matches(actual: &str, wanted: &str, exact: bool) -> bool {
    let (a, w) = (normalize(actual), normalize(wanted));
    if exact {
        a == w
    } else {
        a.to_lowercase().contains(&w.to_lowercase())
    }
}

/// Builds the page script returning the elements `getByText` / `getByTestId` match.
pub(crate) fn page_script(locator: &Locator) -> Option<String> {
    let (mode, needle, exact) = match locator {
        Locator::Text { text, exact } => ("text", text.as_str(), *exact),
        Locator::TestId { test_id } => ("testid", test_id.as_str(), true),
        Locator::Role { .. } => return None,
    };
    let needle = serde_json::to_string(needle).unwrap_or_default();
    Some(format!(
        r#"(() => {{
  const mode = "{mode}", exact = {exact}, needle = {needle};
  const norm = (s) => (s || '').replace(/\s+/g, ' ').trim();
  const want = exact ? norm(needle) : norm(needle).toLowerCase();
  const docs = [];
  const walk = (d) => {{ docs.push(d); for (const f of d.querySelectorAll('iframe, frame')) {{ try {{ if (f.contentDocument) walk(f.contentDocument); }} catch (e) {{}} }} }};
  walk(document);
  const visible = (el) => {{
    const r = el.getBoundingClientRect();
    const st = el.ownerDocument.defaultView.getComputedStyle(el);
    return r.width > 0 && r.height > 0 && st.visibility !== 'hidden';
  }};
  const skip = new Set(['SCRIPT', 'STYLE', 'NOSCRIPT', 'TEMPLATE', 'HEAD', 'TITLE', 'HTML', 'BODY']);
  const textOf = (el) => {{
    if (el.tagName === 'INPUT' && ['button', 'submit', 'reset'].includes((el.type || '').toLowerCase())) return norm(el.value);
    return norm(el.textContent);
  }};
  const hit = (el) => {{ const t = textOf(el); return exact ? t === want : t.toLowerCase().includes(want); }};
  const out = [];
  for (const d of docs) {{
    if (mode === 'testid') {{
      for (const el of d.querySelectorAll('[data-testid]')) if (el.getAttribute('data-testid') === needle && visible(el)) out.push(el);
      continue;
    }}
    for (const el of d.querySelectorAll('*')) {{
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
    fn names_match_like_playwright() {
        assert!(name_matches("Sign  in", "sign in", false));
        assert!(name_matches("Sign in now", "SIGN IN", false));
        assert!(!name_matches("Sign in now", "Sign in", true));
        assert!(name_matches(" Sign\nin ", "Sign in", true));
    }

    #[test]
    fn displays_like_playwright_calls() {
        let l = Locator::Role {
            role: "button".into(),
            name: Some("Sign in".into()),
            exact: false,
        };
        assert_eq!(l.to_string(), r#"getByRole("button", { name: "Sign in" })"#);
        assert!(page_script(&l).is_none());
        assert!(
            page_script(&Locator::TestId {
                test_id: "a\"b".into()
            })
            .unwrap()
            .contains(r#""a\"b""#)
        );
    }
}
