//! What the tools share: replies, argument parsing, targets, text caps.

use oxwright_engine::{ConsoleMessage, Target};
use oxwright_jobs::{JobError, Locator};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::args::ElementArgs;
use crate::session::Tab;

pub(super) type BoxFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;

/// What a tool returns.
#[derive(Debug, Default)]
pub(super) struct Reply {
    pub(super) text: String,
    pub(super) images: Vec<Vec<u8>>,
    pub(super) structured: Option<Value>,
}

impl Reply {
    pub(super) fn text(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            ..Self::default()
        }
    }
}

pub(super) fn parse<T: DeserializeOwned>(tool: &str, args: Value) -> Result<T, String> {
    let args = if args.is_null() { json!({}) } else { args };
    serde_json::from_value(args).map_err(|e| format!("{tool}: bad arguments: {e}; tools/list has the schema"))
}

pub(super) fn parse_url(raw: &str) -> Result<url::Url, String> {
    let url = url::Url::parse(raw.trim())
        .map_err(|e| format!("{raw:?} is not a URL ({e}); give http://… or https://…"))?;
    match url.scheme() {
        "http" | "https" => Ok(url),
        // The URL goes last: "/etc/passwd: …" reads as a credential to the
        // result sanitiser, which would mask the words after it.
        "file" => Err(format!(
            "file:// URLs are refused (this server only opens http and https pages): {raw}"
        )),
        other => Err(format!(
            "{raw}: the {other}: scheme is refused; give http://… or https://…"
        )),
    }
}

/// A regular expression as agents write one: bare, or `/…/flags`
/// (`i`, `m`, `s`, `x`), bounded in size.
pub(super) fn pattern(raw: &str) -> Result<regex::Regex, String> {
    let (body, flags) = match raw.strip_prefix('/').and_then(|r| r.rsplit_once('/')) {
        Some((body, flags)) if flags.chars().all(|c| "imsxgu".contains(c)) => (body, flags),
        _ => (raw, ""),
    };
    let mut b = regex::RegexBuilder::new(body);
    b.size_limit(1 << 20);
    for f in flags.chars() {
        match f {
            'i' => b.case_insensitive(true),
            'm' => b.multi_line(true),
            's' => b.dot_matches_new_line(true),
            'x' => b.ignore_whitespace(true),
            _ => &mut b,
        };
    }
    b.build()
        .map_err(|e| format!("bad regular expression {raw:?}: {e}"))
}

/// A snapshot ref (`e12`), with or without `ref=`.
pub(super) fn is_ref(s: &str) -> bool {
    let s = s.strip_prefix("ref=").unwrap_or(s);
    s.len() > 1 && s.starts_with('e') && s[1..].chars().all(|c| c.is_ascii_digit())
}

pub(super) fn target_of(el: &ElementArgs) -> Result<Target, String> {
    let Some(t) = el.target().map(str::trim).filter(|t| !t.is_empty()) else {
        return Err(
            "give target: a ref from browser_snapshot (e.g. e12) or a selector that matches one element"
                .into(),
        );
    };
    Ok(if is_ref(t) {
        Target::Ref(t.strip_prefix("ref=").unwrap_or(t).to_string())
    } else {
        Target::locator(Locator::parse_selector(t))
    })
}

pub(super) fn selector(s: &str) -> ElementArgs {
    ElementArgs {
        element: None,
        target: Some(s.to_string()),
        ref_: None,
    }
}

pub(super) fn describe(el: &ElementArgs, target: &Target) -> String {
    match &el.element {
        Some(e) if !e.trim().is_empty() => format!("\"{}\" ({target})", e.trim()),
        _ => target.to_string(),
    }
}

pub(super) fn rendered_lines(snap: &oxwright_engine::Snapshot) -> Vec<String> {
    snap.lines
        .iter()
        .map(|l| format!("{}{}", "  ".repeat(l.depth), l.text))
        .collect()
}

pub(super) async fn drain_console(tab: &mut Tab) -> Vec<ConsoleMessage> {
    let fresh = tab.page.console().await;
    tab.console.extend(fresh.iter().cloned());
    let over = tab.console.len().saturating_sub(1000);
    tab.console.drain(..over);
    fresh
}

pub(super) fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max).collect();
    out.push('…');
    out
}

/// Cuts `text` to `max` characters on a line boundary, with a note.
pub(super) fn cap_text(text: &str, max: usize) -> (String, bool) {
    if text.len() <= max {
        return (text.to_string(), false);
    }
    let mut cut = max;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    let head = &text[..cut];
    let head = head.rfind('\n').map(|i| &head[..=i]).unwrap_or(head);
    (format!("{head}… (cut at {max} characters)\n"), true)
}

pub(super) fn explain_job(e: &JobError) -> String {
    let mut s = format!("{} ({})", e.message, e.kind);
    if let Some(url) = e.url.as_ref().filter(|u| !e.message.contains(u.as_str())) {
        s.push_str(&format!(" at {url}"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refs_and_selectors_are_told_apart() {
        assert!(pattern("/ERROR/i").unwrap().is_match("an error"));
        assert!(pattern("/api/.*user").unwrap().is_match("https://x/api/v1/user"));
        assert!(!pattern("^/api").unwrap().is_match("https://x/api"));
        assert!(pattern("a(").unwrap_err().contains("bad regular expression"));
        assert!(is_ref("e12") && is_ref("ref=e3"));
        assert!(!is_ref("e") && !is_ref("email") && !is_ref("#e1"));
        let t = target_of(&ElementArgs {
            element: None,
            target: Some("button#go".into()),
            ref_: None,
        })
        .unwrap();
        let both = ElementArgs {
            element: None,
            target: Some("e2".into()),
            ref_: Some("e2".into()),
        };
        assert_eq!(target_of(&both).unwrap(), Target::Ref("e2".into()));
        assert!(matches!(t, Target::Locator { .. }));
        assert!(target_of(&ElementArgs::default()).is_err());
    }

    #[test]
    fn only_http_urls_open() {
        assert!(parse_url("http://127.0.0.1:1/").is_ok());
        let e = parse_url("file:///etc/passwd").unwrap_err();
        assert!(e.contains("file:// URLs are refused"), "{e}");
        assert!(parse_url("javascript:alert(1)").is_err());
        assert!(parse_url("not a url").unwrap_err().contains("not a URL"));
    }

    #[test]
    fn text_caps_on_line_boundaries() {
        let (t, cut) = cap_text("aaaa\nbbbb\ncccc\n", 12);
        assert!(cut);
        assert!(t.starts_with("aaaa\nbbbb\n…"), "{t}");
        assert_eq!(cap_text("short", 100), ("short".to_string(), false));
    }
}
