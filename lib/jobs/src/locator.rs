//! Locators with Playwright semantics: by role and accessible name, text,
//! test id, label, placeholder, CSS or XPath. Names and texts match
//! case-insensitively as whitespace-normalised substrings unless `exact`.
//! Only visible elements count: a locator is about what can be acted on.
//! Serde only: engines resolve locators (`oxwright-engine`).

use std::fmt;

use serde::{Deserialize, Serialize};

/// Which elements an action targets.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
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
    /// `getByLabel(text, { exact })`: form controls by their label's text
    /// (`<label>`, `aria-label`, `aria-labelledby`).
    #[serde(rename = "getByLabel")]
    Label {
        /// The label text.
        text: String,
        /// Whole-string, case-sensitive match.
        #[serde(default)]
        exact: bool,
    },
    /// `getByPlaceholder(text, { exact })`.
    #[serde(rename = "getByPlaceholder")]
    Placeholder {
        /// The placeholder text.
        text: String,
        /// Whole-string, case-sensitive match.
        #[serde(default)]
        exact: bool,
    },
    /// `locator(css)`: a CSS selector.
    #[serde(rename = "css")]
    Css {
        /// The selector.
        selector: String,
    },
    /// `locator('xpath=…')`.
    #[serde(rename = "xpath")]
    XPath {
        /// The expression.
        expression: String,
    },
}

impl Locator {
    /// `getByRole(role, { name })`.
    pub fn role(role: &str, name: Option<&str>) -> Self {
        Locator::Role {
            role: role.to_string(),
            name: name.map(str::to_string),
            exact: false,
        }
    }

    /// `getByText(text)`.
    pub fn text(text: &str) -> Self {
        Locator::Text {
            text: text.to_string(),
            exact: false,
        }
    }

    /// `locator(css)`.
    pub fn css(selector: &str) -> Self {
        Locator::Css {
            selector: selector.to_string(),
        }
    }

    /// Parses the forms agents type: `role=button[name="Go"]`, `text=Go`,
    /// `testid=x`, `label=…`, `placeholder=…`, `xpath=…` or `//…`, and any
    /// other string as CSS.
    pub fn parse_selector(s: &str) -> Self {
        let s = s.trim();
        if let Some(rest) = s.strip_prefix("xpath=") {
            return Locator::XPath {
                expression: rest.to_string(),
            };
        }
        if s.starts_with("//") || s.starts_with("(//") {
            return Locator::XPath {
                expression: s.to_string(),
            };
        }
        let unquote = |v: &str| {
            let v = v.trim();
            let quoted = v.len() >= 2
                && ((v.starts_with('"') && v.ends_with('"')) || (v.starts_with('\'') && v.ends_with('\'')));
            if quoted {
                (v[1..v.len() - 1].to_string(), true)
            } else {
                (v.to_string(), false)
            }
        };
        if let Some(rest) = s.strip_prefix("text=") {
            let (text, exact) = unquote(rest);
            return Locator::Text { text, exact };
        }
        if let Some(rest) = s
            .strip_prefix("testid=")
            .or_else(|| s.strip_prefix("data-testid="))
        {
            return Locator::TestId {
                test_id: unquote(rest).0,
            };
        }
        if let Some(rest) = s.strip_prefix("label=") {
            let (text, exact) = unquote(rest);
            return Locator::Label { text, exact };
        }
        if let Some(rest) = s.strip_prefix("placeholder=") {
            let (text, exact) = unquote(rest);
            return Locator::Placeholder { text, exact };
        }
        if let Some(rest) = s.strip_prefix("role=") {
            let (role, attrs) = match rest.find('[') {
                Some(i) => (&rest[..i], &rest[i..]),
                None => (rest, ""),
            };
            let mut name = None;
            let mut exact = false;
            if let Some(inner) = attrs
                .strip_prefix('[')
                .and_then(|a| a.strip_suffix(']'))
                .and_then(|a| a.strip_prefix("name="))
            {
                let inner = inner.trim_end_matches('i').trim_end_matches('s').trim();
                let (n, quoted) = unquote(inner);
                exact = quoted && attrs.trim_end_matches(']').ends_with('s');
                name = Some(n);
            }
            return Locator::Role {
                role: role.trim().to_string(),
                name,
                exact,
            };
        }
        Locator::Css {
            selector: s.to_string(),
        }
    }
}

impl fmt::Display for Locator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let q = |s: &str| serde_json::to_string(s).unwrap_or_default();
        let exact = |e: bool| if e { ", { exact: true }" } else { "" };
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
            Locator::Text { text, exact: e } => write!(f, "getByText({}{})", q(text), exact(*e)),
            Locator::TestId { test_id } => write!(f, "getByTestId({})", q(test_id)),
            Locator::Label { text, exact: e } => write!(f, "getByLabel({}{})", q(text), exact(*e)),
            Locator::Placeholder { text, exact: e } => {
                write!(f, "getByPlaceholder({}{})", q(text), exact(*e))
            }
            Locator::Css { selector } => write!(f, "locator({})", q(selector)),
            Locator::XPath { expression } => write!(f, "locator({})", q(&format!("xpath={expression}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn displays_like_playwright_calls() {
        let l = Locator::role("button", Some("Sign in"));
        assert_eq!(l.to_string(), r#"getByRole("button", { name: "Sign in" })"#);
        assert_eq!(Locator::css("#a").to_string(), r##"locator("#a")"##);
        assert_eq!(
            Locator::Label {
                text: "Email".into(),
                exact: true
            }
            .to_string(),
            r#"getByLabel("Email", { exact: true })"#
        );
    }

    #[test]
    fn serde_keeps_the_method_tag() {
        let l: Locator = serde_json::from_str(r#"{"method":"getByTestId","testId":"x"}"#).unwrap();
        assert_eq!(l, Locator::TestId { test_id: "x".into() });
        let v = serde_json::to_value(Locator::css("a.b")).unwrap();
        assert_eq!(v["method"], "css");
    }

    #[test]
    fn parses_agent_selectors() {
        assert_eq!(Locator::parse_selector("#login"), Locator::css("#login"));
        assert_eq!(
            Locator::parse_selector("text=\"Sign in\""),
            Locator::Text {
                text: "Sign in".into(),
                exact: true
            }
        );
        assert_eq!(
            Locator::parse_selector("role=button[name=\"Go\"]"),
            Locator::Role {
                role: "button".into(),
                name: Some("Go".into()),
                exact: false
            }
        );
        assert!(matches!(
            Locator::parse_selector("//div[1]"),
            Locator::XPath { .. }
        ));
    }
}
