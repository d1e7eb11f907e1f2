//! The one sanitiser every outgoing line passes through: JSONL, console,
//! LLM requests and responses, span and event fields, snapshots. It replaces
//! registered secret values with their `{{NAME}}` placeholder and masks
//! e-mail addresses, phone and card numbers, bearer and API tokens, JWTs,
//! cookies and `key=value` credentials.

use std::sync::{Arc, LazyLock, RwLock};

use regex::{Captures, Regex};
use serde_json::Value;

const MASK: &str = "****";

static EMAIL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)[a-z0-9._%+-]+@[a-z0-9-]+(?:\.[a-z0-9-]+)*\.[a-z]{2,}").expect("email regex")
});
static JWT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}").expect("jwt regex")
});
static AUTH: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}").expect("auth regex"));
static API_KEY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\b(?:sk|pk|rk)-[A-Za-z0-9_-]{16,}|\bAKIA[0-9A-Z]{16}\b|\bgh[pousr]_[A-Za-z0-9]{20,}")
        .expect("key regex")
});
static COOKIE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?i)\b(set-cookie|cookie)(["']?\s*:\s*)([^\n"]+)"#).expect("cookie regex")
});
static KEY_VALUE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"(?i)\b(api[_-]?key|access[_-]?token|refresh[_-]?token|auth[_-]?token|id[_-]?token|token|client[_-]?secret|secret|password|passwd|pwd|session[_-]?id|sessionid|jsessionid|phpsessid|sid)(["']?\s*[:=]\s*["']?)([^\s"'&;,<>{}]{3,})"#,
    )
    .expect("key=value regex")
});
static CARD: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\d(?:[ -]?\d){12,18}").expect("card regex"));
static PHONE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\+?\(?\d{1,4}\)?(?:[ .-]\(?\d{1,4}\)?){1,2}[ .-]\d{3,4}").expect("phone regex")
});

/// Replaces secrets and personal data in text. Cheap to clone; clones share
/// the registered secrets.
#[derive(Clone, Default)]
pub struct Sanitizer {
    secrets: Arc<RwLock<Vec<(String, String)>>>,
}

impl std::fmt::Debug for Sanitizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.secrets.read().map(|s| s.len()).unwrap_or(0);
        f.debug_struct("Sanitizer").field("secrets", &n).finish()
    }
}

impl Sanitizer {
    /// Creates a sanitiser with no secrets registered.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers the value of secret `name`; from now on it is replaced by
    /// `{{name}}`, also in its JSON-escaped and URL-encoded forms.
    pub fn register(&self, name: &str, value: &str) {
        if value.is_empty() {
            return;
        }
        let placeholder = format!("{{{{{name}}}}}");
        let json = serde_json::to_string(value).unwrap_or_default();
        let json_inner = json.trim_matches('"').to_string();
        let url: String = url::form_urlencoded::byte_serialize(value.as_bytes()).collect();
        let mut secrets = self.secrets.write().unwrap_or_else(|e| e.into_inner());
        for form in [value.to_string(), json_inner, url] {
            if !form.is_empty() && !secrets.iter().any(|(_, v)| *v == form) {
                secrets.push((placeholder.clone(), form));
            }
        }
        // Longest first, so a secret containing another is replaced whole.
        secrets.sort_by_key(|(_, v)| std::cmp::Reverse(v.len()));
    }

    /// Returns `text` with secrets replaced and personal data masked.
    pub fn clean(&self, text: &str) -> String {
        let out = self.clean_page_text(text);
        let out = EMAIL.replace_all(&out, MASK);
        mask_numbers(&out, &PHONE, |digits| (9..=15).contains(&digits.len()))
    }

    /// Returns page text (a snapshot line, a prompt, the LLM's answer) with
    /// secrets replaced and credentials masked, but the page's own e-mail
    /// addresses and phone numbers kept: a link named
    /// `support@shop.example` must stay targetable. Card numbers are still
    /// masked. Artefacts and logs go through [`Sanitizer::clean`].
    pub fn clean_page_text(&self, text: &str) -> String {
        let out = self.clean_secrets_only(text);
        let out = COOKIE.replace_all(&out, |c: &Captures| format!("{}{}{MASK}", &c[1], &c[2]));
        let out = KEY_VALUE.replace_all(&out, |c: &Captures| {
            if c[3].starts_with("{{") {
                c[0].to_string()
            } else {
                format!("{}{}{MASK}", &c[1], &c[2])
            }
        });
        let out = AUTH.replace_all(&out, |c: &Captures| format!("{} {MASK}", &c[1]));
        let out = JWT.replace_all(&out, MASK);
        let out = API_KEY.replace_all(&out, MASK);
        mask_numbers(&out, &CARD, |digits| digits.len() >= 13 && luhn(digits))
    }

    /// [`Sanitizer::clean_page_text`] on every string (and key) inside `value`.
    pub fn clean_page_json(&self, value: &Value) -> Value {
        match value {
            Value::String(s) => Value::String(self.clean_page_text(s)),
            Value::Array(items) => Value::Array(items.iter().map(|v| self.clean_page_json(v)).collect()),
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(k, v)| (self.clean_page_text(k), self.clean_page_json(v)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }

    /// Cleans every string (and key) inside `value`.
    pub fn clean_json(&self, value: &Value) -> Value {
        match value {
            Value::String(s) => Value::String(self.clean(s)),
            Value::Array(items) => Value::Array(items.iter().map(|v| self.clean_json(v)).collect()),
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(k, v)| (self.clean(k), self.clean_json(v)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }

    /// Serialises `value` to one cleaned JSON line (no newline).
    pub fn json_line(&self, value: &Value) -> String {
        let cleaned = self.clean_json(value);
        // A second pass over the text catches values split across escapes.
        self.clean_secrets_only(&cleaned.to_string())
    }

    fn clean_secrets_only(&self, text: &str) -> String {
        let mut out = text.to_string();
        let secrets = self.secrets.read().unwrap_or_else(|e| e.into_inner());
        for (placeholder, value) in secrets.iter() {
            out = out.replace(value.as_str(), placeholder);
        }
        out
    }
}

/// Masks matches of `re` whose digits pass `keep`, unless the match touches
/// a letter, digit or dash (ids, UUIDs and versions are not phone numbers).
fn mask_numbers(text: &str, re: &Regex, keep: impl Fn(&str) -> bool) -> String {
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for m in re.find_iter(text) {
        let before = text[..m.start()].chars().next_back();
        let after = text[m.end()..].chars().next();
        let touches = |c: Option<char>| {
            c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.' || c == '_')
        };
        let digits: String = m.as_str().chars().filter(char::is_ascii_digit).collect();
        if touches(before) || touches(after) || !keep(&digits) {
            continue;
        }
        out.push_str(&text[last..m.start()]);
        out.push_str(MASK);
        last = m.end();
    }
    out.push_str(&text[last..]);
    out
}

fn luhn(digits: &str) -> bool {
    let mut sum = 0;
    for (i, c) in digits.chars().rev().enumerate() {
        let mut d = c.to_digit(10).unwrap_or(0);
        if i % 2 == 1 {
            d *= 2;
            if d > 9 {
                d -= 9;
            }
        }
        sum += d;
    }
    sum % 10 == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_registered_secrets_in_every_form() {
        let s = Sanitizer::new();
        s.register("PASSWORD", "p\"a&ss w0rd!");
        assert_eq!(s.clean("typed p\"a&ss w0rd! here"), "typed {{PASSWORD}} here");
        let line = s.json_line(&serde_json::json!({"v": "p\"a&ss w0rd!"}));
        assert!(!line.contains("w0rd"), "{line}");
        assert!(!s.clean("q=p%22a%26ss+w0rd%21").contains("w0rd"));
    }

    #[test]
    fn page_text_keeps_the_pages_addresses_but_not_secrets_or_credentials() {
        let s = Sanitizer::new();
        s.register("PASSWORD", "hunter2-horse");
        let line = "- link \"support@shop.example\" [ref=e4] phone +81 90-1234-5678 typed hunter2-horse \
                    card 4111 1111 1111 1111 Authorization: Bearer abcdefghijklmnop";
        let page = s.clean_page_text(line);
        assert!(
            page.contains("support@shop.example") && page.contains("90-1234-5678"),
            "{page}"
        );
        for leaked in ["hunter2", "4111", "abcdefghijklmnop"] {
            assert!(!page.contains(leaked), "{leaked} in {page}");
        }
        assert!(page.contains("{{PASSWORD}}"), "{page}");
        // Artefacts and logs still mask the address.
        assert!(!s.clean(line).contains("support@"));
        let v = s.clean_page_json(&serde_json::json!({"name": "support@shop.example", "v": "hunter2-horse"}));
        assert_eq!(v["name"], "support@shop.example");
        assert_eq!(v["v"], "{{PASSWORD}}");
    }

    #[test]
    fn masks_personal_data_and_tokens() {
        let s = Sanitizer::new();
        let text = "mail alice@example.com card 4111 1111 1111 1111 phone +81 90-1234-5678 \
                    Authorization: Bearer abcdefghijklmnop cookie: sid=abc; x=y token=abcdef123 \
                    key sk-abcdefghijklmnopqrstuv jwt eyJhbGciOi.eyJzdWIiOi.c2lnbmF0dXJl";
        let out = s.clean(text);
        for leaked in [
            "alice@",
            "4111",
            "1234-5678",
            "abcdefghijklmnop",
            "sid=abc",
            "abcdef123",
            "sk-abc",
            "eyJ",
        ] {
            assert!(!out.contains(leaked), "{leaked} in {out}");
        }
    }

    #[test]
    fn leaves_ids_dates_and_placeholders_alone() {
        let s = Sanitizer::new();
        for text in [
            "session 0190f0f0-0000-7000-8000-000000000000",
            "at 2026-11-22T11:05:40.123Z took 1234.5 ms",
            "fill {{PASSWORD}} then password={{PASSWORD}}",
            "http://127.0.0.1:40123/app/item?id=1",
            "- textbox \"Username\" [ref=e3]",
        ] {
            assert_eq!(s.clean(text), text);
        }
    }
}
