//! TypeScript text: string literals, values with `{{NAME}}` placeholders
//! read from `process.env`, and Playwright locator expressions.

use crate::Locator;

/// A single-quoted TS string literal with everything that could end it,
/// start a template or confuse a reader escaped.
pub fn string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('\'');
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

/// A TS array of string literals.
pub fn array(items: &[String]) -> String {
    let items: Vec<String> = items.iter().map(|i| string(i)).collect();
    format!("[{}]", items.join(", "))
}

/// A TS expression for `text`: its `{{NAME}}` placeholders become
/// `env('NAME')` (the spec's reader of `process.env`), the rest literals.
pub fn value(text: &str, names: &mut Vec<String>) -> String {
    let mut parts = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
        let Some(len) = rest[start + 2..].find("}}") else {
            break;
        };
        let name = &rest[start + 2..start + 2 + len];
        let valid = !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            break;
        }
        if start > 0 {
            parts.push(string(&rest[..start]));
        }
        parts.push(format!("env({})", string(name)));
        if !names.iter().any(|n| n == name) {
            names.push(name.to_string());
        }
        rest = &rest[start + 4 + len..];
    }
    if !rest.is_empty() || parts.is_empty() {
        parts.push(string(rest));
    }
    parts.join(" + ")
}

/// The RegExp source matching `text` literally.
pub fn regex_literal(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if "\\^$.|?*+()[]{}/".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

fn exact_opt(exact: bool) -> &'static str {
    if exact { ", { exact: true }" } else { "" }
}

/// `page.getByRole(…)` and friends for `locator`, with `.nth(n)` (a
/// negative `n` counts from the last, as in Playwright).
pub fn locator(locator: &Locator, nth: Option<i64>, names: &mut Vec<String>) -> String {
    let mut out = match locator {
        Locator::Role { role, name, exact } => match name {
            Some(n) => format!(
                "page.getByRole({}, {{ name: {}{} }})",
                string(role),
                value(n, names),
                if *exact { ", exact: true" } else { "" }
            ),
            None => format!("page.getByRole({})", string(role)),
        },
        Locator::Text { text, exact } => {
            format!("page.getByText({}{})", value(text, names), exact_opt(*exact))
        }
        Locator::TestId { test_id } => format!("page.getByTestId({})", string(test_id)),
        Locator::Label { text, exact } => {
            format!("page.getByLabel({}{})", value(text, names), exact_opt(*exact))
        }
        Locator::Placeholder { text, exact } => {
            format!(
                "page.getByPlaceholder({}{})",
                value(text, names),
                exact_opt(*exact)
            )
        }
        Locator::Css { selector } => format!("page.locator({})", string(selector)),
        Locator::XPath { expression } => format!("page.locator({})", string(&format!("xpath={expression}"))),
    };
    if let Some(n) = nth {
        out.push_str(&format!(".nth({n})"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_cannot_escape_their_quotes() {
        assert_eq!(string("it's"), r"'it\'s'");
        assert_eq!(
            string("a\\'); process.exit(1); ('"),
            r"'a\\\'); process.exit(1); (\''"
        );
        assert_eq!(string("line\nnext ${x} `t`"), "'line\\nnext ${x} `t`'");
        assert_eq!(string("\u{2028}"), "'\\u2028'");
    }

    #[test]
    fn placeholders_become_env_reads() {
        let mut names = Vec::new();
        assert_eq!(value("{{PASSWORD}}", &mut names), "env('PASSWORD')");
        assert_eq!(
            value("Signed in as {{LOGIN_ID}}!", &mut names),
            "'Signed in as ' + env('LOGIN_ID') + '!'"
        );
        assert_eq!(value("", &mut names), "''");
        assert_eq!(value("{{not a name}}", &mut names), "'{{not a name}}'");
        assert_eq!(names, ["PASSWORD", "LOGIN_ID"]);
    }

    #[test]
    fn locators_read_like_playwright() {
        let mut n = Vec::new();
        let role = Locator::Role {
            role: "button".into(),
            name: Some("Sign in".into()),
            exact: true,
        };
        assert_eq!(
            locator(&role, Some(1), &mut n),
            "page.getByRole('button', { name: 'Sign in', exact: true }).nth(1)"
        );
        let xp = Locator::XPath {
            expression: "//a".into(),
        };
        assert_eq!(locator(&xp, None, &mut n), "page.locator('xpath=//a')");
        assert_eq!(regex_literal("/app/a.b?x"), r"\/app\/a\.b\?x");
    }
}
