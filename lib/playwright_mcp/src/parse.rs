//! Reading the server's Markdown answers: sections (`### Result`,
//! `### Page`, `### Error`, `### Modal state`), its YAML-ish aria snapshot
//! (the same Playwright AI-snapshot form our engine seam uses) and its
//! error texts, mapped onto [`EngineErrorKind`]s.

use oxwright_engine::{
    ConsoleMessage, ElementId, EngineError, EngineErrorKind, SnapshotElement, SnapshotLine, TabInfo,
};
use serde_json::Value;

/// Returns the body of `### {name}` up to the next section.
pub fn section<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    let head = format!("### {name}\n");
    let start = if text.starts_with(&head) {
        head.len()
    } else {
        text.find(&format!("\n{head}"))? + head.len() + 1
    };
    let body = &text[start..];
    let end = body.find("\n### ").unwrap_or(body.len());
    Some(body[..end].trim_end())
}

/// Returns a `- {key}: value` line of the `### Page` section.
pub fn page_field(text: &str, key: &str) -> Option<String> {
    let page = section(text, "Page")?;
    let prefix = format!("- {key}: ");
    page.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .map(|v| v.trim().to_string())
}

/// A dialog the server holds open (`### Modal state`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Modal {
    /// `alert`, `confirm`, `prompt` or `beforeunload`.
    pub kind: String,
    /// Its message.
    pub message: String,
}

/// Reads the first dialog of a `### Modal state` section.
pub fn modal(text: &str) -> Option<Modal> {
    let body = section(text, "Modal state")?;
    let line = body.lines().find(|l| l.contains(" dialog with message "))?;
    let kind = line.split('"').nth(1)?.to_string();
    let after = line.split_once(" dialog with message \"")?.1;
    let message = after.rsplit_once("\"]")?.0.replace("\\\"", "\"");
    Some(Modal { kind, message })
}

/// The error text of an `isError` answer, without the server's prefixes,
/// call log and terminal colours.
pub fn error_message(text: &str) -> String {
    let body = section(text, "Error").unwrap_or(text);
    let mut msg = String::new();
    let mut rest = body;
    while let Some(i) = rest.find('\u{1b}') {
        msg.push_str(&rest[..i]);
        let tail = &rest[i..];
        rest = tail.find('m').map(|j| &tail[j + 1..]).unwrap_or("");
    }
    msg.push_str(rest);
    // The call log repeats typed values: keep what precedes it.
    let msg = msg.split("Call log:").next().unwrap_or("");
    let msg = msg
        .replace("Error: browserBackend.callTool: ", "")
        .replace("browserBackend.callTool: ", "");
    let msg = msg.strip_prefix("Error: ").unwrap_or(&msg).to_string();
    msg.lines()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
        .trim()
        .to_string()
}

/// Maps a tool's error text onto an engine error.
pub fn tool_error(tool: &str, text: &str) -> EngineError {
    let msg = error_message(text);
    let lower = msg.to_lowercase();
    let kind = if lower.contains("not found in the current page snapshot") {
        EngineErrorKind::Stale
    } else if lower.contains("strict mode violation") {
        EngineErrorKind::NotUnique
    } else if lower.contains("net::err_name_not_resolved") {
        EngineErrorKind::Dns
    } else if lower.contains("net::err_") || lower.contains("ns_error") {
        EngineErrorKind::Navigation
    } else if lower.contains("is not an <input>")
        || lower.contains("not editable")
        || lower.contains("not a checkbox")
        || lower.contains("did not find some options")
        || lower.contains("not a <select>")
        || lower.contains("element is not")
        || lower.contains("not visible")
        || lower.contains("not enabled")
    {
        EngineErrorKind::NotInteractable
    } else if lower.contains("timeout") && lower.contains("exceeded") {
        EngineErrorKind::Timeout
    } else if lower.contains("has been closed") || lower.contains("browser has disconnected") {
        EngineErrorKind::Crashed
    } else {
        EngineErrorKind::Protocol
    };
    EngineError::new(kind, format!("{tool}: {msg}"))
}

/// A parsed snapshot: its lines and the elements that carry refs.
#[derive(Debug, Default)]
pub struct ParsedSnapshot {
    /// Lines in order, depth from the indentation.
    pub lines: Vec<SnapshotLine>,
    /// Elements with refs.
    pub elements: Vec<SnapshotElement>,
}

/// Roles an agent acts on: their lines survive the size cap.
const INTERACTIVE: &[&str] = &[
    "button",
    "link",
    "textbox",
    "searchbox",
    "checkbox",
    "radio",
    "combobox",
    "listbox",
    "option",
    "menuitem",
    "menuitemcheckbox",
    "menuitemradio",
    "tab",
    "switch",
    "slider",
    "spinbutton",
    "treeitem",
];

/// Roles whose snapshot line ends with the value typed into them.
const VALUE_ROLES: &[&str] = &["textbox", "searchbox", "combobox", "spinbutton"];

/// Parses the ```` ```yaml ```` block of a `browser_snapshot` answer;
/// values equal to one of `secrets` are masked. Element ids are
/// `{doc}|{ref}`.
pub fn snapshot(text: &str, doc: &str, secrets: &[String]) -> ParsedSnapshot {
    let body = section(text, "Snapshot").unwrap_or("");
    let yaml = body
        .split_once("```yaml\n")
        .map(|(_, y)| y.rsplit_once("```").map(|(y, _)| y).unwrap_or(y))
        .unwrap_or("");
    let mut out = ParsedSnapshot::default();
    // Depths of dropped `generic` wrappers above the current line: their
    // children move up one level each, as in the Chromium engine's tree.
    let mut dropped: Vec<usize> = Vec::new();
    for raw in yaml.lines() {
        let trimmed = raw.trim_start();
        if trimmed.is_empty() {
            continue;
        }
        let raw_depth = (raw.len() - trimmed.len()) / 2;
        while dropped.last().is_some_and(|d| *d >= raw_depth) {
            dropped.pop();
        }
        let depth = raw_depth - dropped.len();
        let mut line = trimmed.replace(" [cursor=pointer]", "").replace(" [active]", "");
        if line == "- generic" || line.starts_with("- generic [") {
            match line.split_once("]: ") {
                // A wrapper with only text is that text.
                Some((_, text)) => line = format!("- text: {text}"),
                None => {
                    dropped.push(raw_depth);
                    continue;
                }
            }
        }
        // A field that holds a secret shows `••••`; the same text elsewhere
        // on the page is the page's own (the sanitiser above the seam
        // replaces known secrets everywhere).
        if VALUE_ROLES.iter().any(|r| line.starts_with(&format!("- {r} ")))
            && let Some((head, value)) = line.rsplit_once("]: ")
            && secrets.iter().any(|s| !s.is_empty() && s == value)
        {
            line = format!("{head}]: ••••");
        }
        let element = element_of(&line);
        let keep = match &element {
            Some((role, name, _)) => {
                INTERACTIVE.contains(&role.as_str()) || (!name.is_empty() && name.len() <= 80)
            }
            None => false,
        };
        if let Some((role, name, ref_id)) = element {
            out.elements.push(SnapshotElement {
                id: ElementId(format!("{doc}|{ref_id}")),
                ref_id,
                role,
                name,
            });
        }
        out.lines.push(SnapshotLine {
            depth,
            text: line,
            keep,
        });
    }
    out
}

/// Reads `- role "name" … [ref=eN]` into (role, name, ref).
fn element_of(line: &str) -> Option<(String, String, String)> {
    let start = line.find("[ref=")? + 5;
    let end = start + line[start..].find(']')?;
    let ref_id = line[start..end].to_string();
    let body = line.strip_prefix("- ")?;
    let role_end = body.find([' ', ':']).unwrap_or(body.len());
    let role = body[..role_end].to_string();
    let rest = &body[role_end..];
    let name = match rest.strip_prefix(" \"") {
        Some(quoted) => {
            let mut name = String::new();
            let mut chars = quoted.chars();
            while let Some(c) = chars.next() {
                match c {
                    '\\' => {
                        if let Some(n) = chars.next() {
                            name.push(n);
                        }
                    }
                    '"' => break,
                    c => name.push(c),
                }
            }
            name
        }
        None => String::new(),
    };
    Some((role, name, ref_id))
}

/// Reads the JSON of a `### Result` section (`undefined` is null; text
/// that is not JSON comes back as a string).
pub fn result_value(text: &str) -> Value {
    let Some(body) = section(text, "Result") else {
        return Value::Null;
    };
    let body = body.trim();
    if body == "undefined" {
        return Value::Null;
    }
    serde_json::from_str(body).unwrap_or_else(|_| Value::String(body.to_string()))
}

/// Reads `- 0: (current) [title](url)` lines.
pub fn parse_tabs(body: &str) -> Vec<TabInfo> {
    body.lines()
        .filter_map(|l| {
            let l = l.strip_prefix("- ")?;
            let (id, rest) = l.split_once(": ")?;
            let (current, rest) = match rest.strip_prefix("(current) ") {
                Some(r) => (true, r),
                None => (false, rest),
            };
            let rest = rest.strip_prefix('[')?;
            let (title, rest) = rest.rsplit_once("](")?;
            let url = rest.strip_suffix(')')?;
            Some(TabInfo {
                id: id.to_string(),
                url: url.to_string(),
                title: title.to_string(),
                current,
            })
        })
        .collect()
}

/// Reads `[LEVEL] text @ url:line` lines; lines that start otherwise continue the previous message.
pub fn parse_console(text: &str) -> Vec<ConsoleMessage> {
    let body = section(text, "Result").unwrap_or("");
    let mut out: Vec<ConsoleMessage> = Vec::new();
    for line in body.lines() {
        if let Some(rest) = line.strip_prefix('[')
            && let Some((level, msg)) = rest.split_once("] ")
            && level.chars().all(|c| c.is_ascii_uppercase())
        {
            let (text, url) = match msg.rsplit_once(" @ ") {
                Some((t, u)) => (t.to_string(), Some(u.to_string())),
                None => (msg.to_string(), None),
            };
            let level = match level {
                "LOG" => "log",
                "INFO" => "info",
                "WARNING" => "warning",
                "ERROR" => "error",
                _ => "debug",
            };
            out.push(ConsoleMessage {
                level: level.to_string(),
                text,
                url,
                timestamp_ms: None,
            });
        } else if let Some(last) = out.last_mut()
            && !line.starts_with("Total messages:")
            && !line.starts_with("Returning ")
        {
            last.text.push('\n');
            last.text.push_str(line);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const SNAP: &str = "### Page\n- Page URL: http://a/suite/index\n- Page Title: Suite index\n### Snapshot\n```yaml\n- generic [active] [ref=e1]:\n  - heading \"Suite index\" [level=1] [ref=e2]\n  - paragraph [ref=e3]: Unique paragraph text\n  - link \"Form \\\"page\\\"\" [ref=e5] [cursor=pointer]:\n    - /url: /suite/form\n  - textbox \"Password\" [ref=e17]: hunter2\n```\n### Events\n- x";

    #[test]
    fn parses_sections_and_page_fields() {
        assert_eq!(
            page_field(SNAP, "Page URL").as_deref(),
            Some("http://a/suite/index")
        );
        assert_eq!(page_field(SNAP, "Page Title").as_deref(), Some("Suite index"));
        assert_eq!(section("### Result\n42\n### Ran\nx", "Result"), Some("42"));
        assert_eq!(section("### Result\n\"a\"", "Result"), Some("\"a\""));
    }

    #[test]
    fn parses_snapshot_lines_refs_and_masks_secrets() {
        let s = snapshot(SNAP, "d1", &["hunter2".to_string()]);
        // The generic wrapper is dropped and its children move up.
        assert_eq!(s.lines.len(), 5);
        assert_eq!(s.lines[0].text, "- heading \"Suite index\" [level=1] [ref=e2]");
        assert_eq!(s.lines[0].depth, 0);
        let link = s.elements.iter().find(|e| e.ref_id == "e5").expect("link");
        assert_eq!(
            (link.role.as_str(), link.name.as_str()),
            ("link", "Form \"page\"")
        );
        assert_eq!(link.id.0, "d1|e5");
        assert_eq!(s.lines[2].text, "- link \"Form \\\"page\\\"\" [ref=e5]:");
        assert!(
            s.lines[4].text.ends_with("[ref=e17]: ••••"),
            "{}",
            s.lines[4].text
        );
        assert!(s.lines[2].keep && !s.lines[3].keep);
        let nested = snapshot(
            "### Snapshot\n```yaml\n- generic [ref=e1]:\n  - generic [ref=e2]: Hello\n  - generic [ref=e3]:\n    - button \"Go\" [ref=e4]\n  - paragraph [ref=e5]: x\n```",
            "d",
            &[],
        );
        let texts: Vec<(usize, &str)> = nested.lines.iter().map(|l| (l.depth, l.text.as_str())).collect();
        assert_eq!(
            texts,
            [
                (0, "- text: Hello"),
                (0, "- button \"Go\" [ref=e4]"),
                (0, "- paragraph [ref=e5]: x")
            ]
        );
    }

    #[test]
    fn reads_modal_dialogs_and_errors() {
        let t = "### Page\n- Page URL: x\n### Modal state\n- [\"alert\" dialog with message \"Hi there\"]: can be handled by browser_handle_dialog";
        assert_eq!(
            modal(t),
            Some(Modal {
                kind: "alert".into(),
                message: "Hi there".into()
            })
        );
        let e = tool_error(
            "browser_click",
            "### Error\nError: Ref e99 not found in the current page snapshot. Try capturing new snapshot.",
        );
        assert_eq!(e.kind, EngineErrorKind::Stale);
        let e = tool_error(
            "browser_navigate",
            "### Error\nError: browserBackend.callTool: net::ERR_CONNECTION_REFUSED at http://x/\nCall log:\n\u{1b}[2m  - navigating\u{1b}[22m\n",
        );
        assert_eq!(e.kind, EngineErrorKind::Navigation);
        assert!(!e.message.contains('\u{1b}'));
        let e = tool_error(
            "browser_type",
            "### Error\nError: Element is not an <input>, <textarea>, <select> or [contenteditable]",
        );
        assert_eq!(e.kind, EngineErrorKind::NotInteractable);
    }

    #[test]
    fn parses_tabs_console_and_results() {
        let tabs = parse_tabs("- 0: (current) [S](http://a/s.html)\n- 1: [Suite [x]](http://a/i.html)");
        assert_eq!(tabs.len(), 2);
        assert!(tabs[0].current && tabs[0].url == "http://a/s.html");
        assert_eq!(tabs[1].title, "Suite [x]");
        let c = parse_console(
            "### Result\nTotal messages: 2 (Errors: 1, Warnings: 0)\n\n[LOG] hello from suite @ http://a/:12\n[ERROR] boom\n  at x",
        );
        assert_eq!(c.len(), 2);
        assert_eq!(
            (c[0].level.as_str(), c[0].text.as_str()),
            ("log", "hello from suite")
        );
        assert_eq!(c[1].text, "boom\n  at x");
        assert_eq!(
            result_value("### Result\n42\n### Ran Playwright code\nx"),
            json!(42)
        );
        assert_eq!(result_value("### Result\nundefined"), Value::Null);
    }
}
