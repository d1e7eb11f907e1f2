//! Our locators as Playwright selector strings, the form the server's
//! `target` argument accepts besides snapshot refs ("a unique element
//! selector"). The quoting follows Playwright's own `getBy*` selectors:
//! `"…"i` is a case-insensitive substring, `"…"s` a whole, case-sensitive
//! match.

use oxwright_engine::Locator;

fn quoted(value: &str, exact: bool) -> String {
    let escaped = value.replace('\\', "\\\\").replace('"', "\\\"");
    format!("\"{escaped}\"{}", if exact { 's' } else { 'i' })
}

/// Returns the Playwright selector `locator` stands for.
pub fn selector(locator: &Locator) -> String {
    match locator {
        Locator::Role { role, name, exact } => match name {
            Some(n) => format!("internal:role={role}[name={}]", quoted(n, *exact)),
            None => format!("internal:role={role}"),
        },
        Locator::Text { text, exact } => format!("internal:text={}", quoted(text, *exact)),
        Locator::TestId { test_id } => format!("internal:testid=[data-testid={}]", quoted(test_id, true)),
        Locator::Label { text, exact } => format!("internal:label={}", quoted(text, *exact)),
        Locator::Placeholder { text, exact } => {
            format!("internal:attr=[placeholder={}]", quoted(text, *exact))
        }
        Locator::Css { selector } => format!("css={selector}"),
        Locator::XPath { expression } => format!("xpath={expression}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_playwright_selectors() {
        assert_eq!(
            selector(&Locator::role("button", Some("Say \"hi\""))),
            r#"internal:role=button[name="Say \"hi\""i]"#
        );
        assert_eq!(
            selector(&Locator::Label {
                text: "Email".into(),
                exact: true
            }),
            r#"internal:label="Email"s"#
        );
        assert_eq!(selector(&Locator::css("nav a")), "css=nav a");
        assert_eq!(
            selector(&Locator::TestId {
                test_id: "primary".into()
            }),
            r#"internal:testid=[data-testid="primary"s]"#
        );
    }
}
