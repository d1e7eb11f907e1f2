//! The accessibility snapshot: Chromium's full accessibility tree (raw JSON
//! from `Accessibility.getFullAXTree`, per same-origin frame) rendered in the
//! compact YAML-like form Playwright's AI snapshots use:
//!
//! ```text
//! - heading "Sign in" [level=1] [ref=e2]
//! - textbox "Username" [ref=e3]: alice
//! - checkbox "Remember me" [checked] [ref=e5]
//! - link "Help" [ref=e7]:
//!   - /url: /app/help
//! ```
//!
//! Ignored nodes and unnamed generic containers are hoisted (their children
//! take their place); refs are stable within a document and start again at
//! `e1` after a navigation; a size cap prunes text lines first, then cuts.

mod roles;

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use oxwright_browser::{BrowserError, Tab};
use serde_json::{Value, json};

use crate::Sanitizer;
use crate::cdp::call;
use crate::locator::normalize;
use roles::{Shape, interactive, shape, shows_value};

/// Default cap on the snapshot text, in characters (about 2,000 tokens).
pub const DEFAULT_MAX_CHARS: usize = 8_000;

/// One element the snapshot shows, for locators and masking.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Element {
    /// `eN`.
    pub ref_id: String,
    /// ARIA role.
    pub role: String,
    /// Accessible name as Chromium computed it.
    pub name: String,
    /// DOM backend node id.
    pub backend: i64,
}

#[derive(Debug, Clone)]
struct Line {
    depth: usize,
    text: String,
    keep: bool,
}

/// A rendered snapshot.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// The text sent to the LLM.
    pub text: String,
    /// Every element with a ref, before pruning.
    pub elements: Vec<Element>,
    /// The main document's URL.
    pub url: String,
    /// Lines pruned to fit the cap.
    pub pruned: usize,
    /// Time to read and render the tree.
    pub took: Duration,
    lines: Vec<Line>,
}

impl Snapshot {
    /// Renders the same tree again under a smaller cap.
    pub fn within(&self, max_chars: usize) -> (String, usize) {
        render_capped(&self.lines, max_chars)
    }
}

/// Keeps refs stable across snapshots of one document.
#[derive(Debug)]
pub struct Snapshotter {
    refs: HashMap<i64, u32>,
    next: u32,
    loader: Option<String>,
    masked: HashSet<i64>,
    max_chars: usize,
}

impl Default for Snapshotter {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_CHARS)
    }
}

#[derive(Debug, Clone)]
struct Node {
    ignored: bool,
    role: String,
    name: String,
    value: Option<String>,
    props: Vec<(String, Value)>,
    children: Vec<String>,
    backend: Option<i64>,
}

struct Frame {
    nodes: HashMap<String, Node>,
    root: Option<String>,
}

struct Ctx<'a> {
    frames: &'a HashMap<String, Frame>,
    /// Backend node id of an `<iframe>` → the frame it hosts.
    owners: &'a HashMap<i64, String>,
    sanitizer: &'a Sanitizer,
}

impl Snapshotter {
    /// Creates a snapshotter whose text is capped at `max_chars`.
    pub fn new(max_chars: usize) -> Self {
        Self {
            refs: HashMap::new(),
            next: 1,
            loader: None,
            masked: HashSet::new(),
            max_chars,
        }
    }

    /// Marks an element whose value must never be shown (a typed secret).
    pub fn mask(&mut self, backend: i64) {
        self.masked.insert(backend);
    }

    /// Reads the page's accessibility tree and renders it.
    pub async fn capture(&mut self, tab: &Tab, sanitizer: &Sanitizer) -> Result<Snapshot, BrowserError> {
        let started = Instant::now();
        let tree = call(tab, "Page.getFrameTree", json!({})).await?;
        let main = &tree["frameTree"]["frame"];
        let main_id = main["id"].as_str().unwrap_or_default().to_string();
        let origin = main["securityOrigin"].as_str().unwrap_or_default().to_string();
        let loader = main["loaderId"].as_str().map(str::to_owned);
        if loader != self.loader {
            // A new document: refs start again.
            self.refs.clear();
            self.next = 1;
            self.masked.clear();
            self.loader = loader;
        }
        let mut frames = HashMap::new();
        let mut owners = HashMap::new();
        frames.insert(main_id.clone(), read_frame(tab, None).await?);
        let mut children = Vec::new();
        collect_children(&tree["frameTree"], &mut children);
        for (frame_id, frame_origin) in children {
            if frame_origin != origin {
                continue; // Cross-origin frames need their own sessions (phase 2).
            }
            let Ok(frame) = read_frame(tab, Some(&frame_id)).await else {
                continue;
            };
            if let Ok(owner) = call(tab, "DOM.getFrameOwner", json!({ "frameId": frame_id })).await
                && let Some(backend) = owner["backendNodeId"].as_i64()
            {
                owners.insert(backend, frame_id.clone());
            }
            frames.insert(frame_id, frame);
        }
        let ctx = Ctx {
            frames: &frames,
            owners: &owners,
            sanitizer,
        };
        let mut lines = Vec::new();
        let mut elements = Vec::new();
        if let Some(root) = frames[&main_id].root.clone() {
            self.render(&ctx, &main_id, &root, 0, &mut lines, &mut elements);
        }
        let (text, pruned) = render_capped(&lines, self.max_chars);
        Ok(Snapshot {
            text,
            elements,
            url: main["url"].as_str().unwrap_or_default().to_string(),
            pruned,
            took: started.elapsed(),
            lines,
        })
    }

    fn ref_for(&mut self, backend: i64) -> String {
        let n = *self.refs.entry(backend).or_insert_with(|| {
            let n = self.next;
            self.next += 1;
            n
        });
        format!("e{n}")
    }

    fn render(
        &mut self,
        ctx: &Ctx<'_>,
        frame: &str,
        id: &str,
        depth: usize,
        out: &mut Vec<Line>,
        elements: &mut Vec<Element>,
    ) {
        let Some(node) = ctx.frames[frame].nodes.get(id) else {
            return;
        };
        let children = node.children.clone();
        let walk_children =
            |me: &mut Self, depth: usize, out: &mut Vec<Line>, elements: &mut Vec<Element>| {
                for child in &children {
                    me.render(ctx, frame, child, depth, out, elements);
                }
            };
        if node.ignored {
            walk_children(self, depth, out, elements);
            return;
        }
        let name = normalize(&node.name);
        match shape(&node.role, !name.is_empty()) {
            Shape::Drop => {}
            Shape::Hoist => walk_children(self, depth, out, elements),
            Shape::Text => {
                if !name.is_empty() {
                    out.push(Line {
                        depth,
                        text: format!("- text: {}", ctx.sanitizer.clean(&name)),
                        keep: false,
                    });
                }
            }
            Shape::Role(role) => {
                let mut head = format!("- {role}");
                if !name.is_empty() {
                    head.push(' ');
                    head.push_str(&quote(&ctx.sanitizer.clean(&name)));
                }
                for flag in flags(&node.props) {
                    head.push_str(&format!(" [{flag}]"));
                }
                if let Some(backend) = node.backend {
                    let r = self.ref_for(backend);
                    head.push_str(&format!(" [ref={r}]"));
                    elements.push(Element {
                        ref_id: r,
                        role: role.to_string(),
                        name: name.clone(),
                        backend,
                    });
                }
                let value = node
                    .value
                    .as_deref()
                    .map(normalize)
                    .filter(|v| !v.is_empty() && shows_value(role));
                let value = value.map(|v| {
                    if node.backend.is_some_and(|b| self.masked.contains(&b)) {
                        "••••".to_string()
                    } else {
                        ctx.sanitizer.clean(&v)
                    }
                });
                let mut inner = Vec::new();
                if role == "link"
                    && let Some(url) = prop(&node.props, "url").and_then(|v| v.as_str().map(str::to_owned))
                {
                    inner.push(Line {
                        depth: depth + 1,
                        text: format!("- /url: {}", ctx.sanitizer.clean(&short_url(&url))),
                        keep: false,
                    });
                }
                let first_child = inner.len();
                walk_children(self, depth + 1, &mut inner, elements);
                if role == "iframe"
                    && let Some(sub) = node.backend.and_then(|b| ctx.owners.get(&b))
                    && let Some(root) = ctx.frames.get(sub).and_then(|f| f.root.clone())
                {
                    self.render(ctx, sub, &root, depth + 1, &mut inner, elements);
                }
                let only_text =
                    |kids: &[Line]| !kids.is_empty() && kids.iter().all(|l| l.text.starts_with("- text: "));
                let joined = |kids: &[Line]| {
                    kids.iter()
                        .map(|l| l.text.trim_start_matches("- text: "))
                        .collect::<Vec<_>>()
                        .join(" ")
                };
                if only_text(&inner[first_child..])
                    && normalize(&joined(&inner[first_child..])) == normalize(&ctx.sanitizer.clean(&name))
                {
                    inner.truncate(first_child); // The name already says it.
                }
                let text_only = only_text(&inner[first_child..]);
                let folded = normalize(&joined(&inner[first_child..]));
                let keep = interactive(role)
                    || node
                        .backend
                        .is_some_and(|_| name.len() < 80 && role != "paragraph");
                if let Some(v) = value {
                    head.push_str(&format!(": {v}"));
                    out.push(Line {
                        depth,
                        text: head,
                        keep,
                    });
                    out.extend(inner);
                } else if text_only && first_child == 0 {
                    head.push_str(&format!(": {folded}"));
                    out.push(Line {
                        depth,
                        text: head,
                        keep,
                    });
                } else if inner.is_empty() {
                    out.push(Line {
                        depth,
                        text: head,
                        keep,
                    });
                } else {
                    head.push(':');
                    out.push(Line {
                        depth,
                        text: head,
                        keep,
                    });
                    out.extend(inner);
                }
            }
        }
    }
}

fn collect_children(node: &Value, out: &mut Vec<(String, String)>) {
    for child in node["childFrames"].as_array().into_iter().flatten() {
        let frame = &child["frame"];
        if let Some(id) = frame["id"].as_str() {
            out.push((
                id.to_string(),
                frame["securityOrigin"].as_str().unwrap_or_default().to_string(),
            ));
        }
        collect_children(child, out);
    }
}

async fn read_frame(tab: &Tab, frame_id: Option<&str>) -> Result<Frame, BrowserError> {
    let params = match frame_id {
        Some(id) => json!({ "frameId": id }),
        None => json!({}),
    };
    let raw = call(tab, "Accessibility.getFullAXTree", params).await?;
    let mut nodes = HashMap::new();
    let mut root = None;
    for n in raw["nodes"].as_array().into_iter().flatten() {
        let Some(id) = n["nodeId"].as_str() else { continue };
        if n.get("parentId").is_none() && root.is_none() {
            root = Some(id.to_string());
        }
        let value = match &n["value"]["value"] {
            Value::String(s) => Some(s.clone()),
            Value::Number(x) => Some(x.to_string()),
            _ => None,
        };
        let props = n["properties"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| Some((p["name"].as_str()?.to_string(), p["value"]["value"].clone())))
            .collect();
        nodes.insert(
            id.to_string(),
            Node {
                ignored: n["ignored"].as_bool().unwrap_or(false),
                role: n["role"]["value"].as_str().unwrap_or_default().to_string(),
                name: n["name"]["value"].as_str().unwrap_or_default().to_string(),
                value,
                props,
                children: n["childIds"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|c| c.as_str().map(str::to_owned))
                    .collect(),
                backend: n["backendDOMNodeId"].as_i64(),
            },
        );
    }
    Ok(Frame { nodes, root })
}

fn prop<'a>(props: &'a [(String, Value)], name: &str) -> Option<&'a Value> {
    props.iter().find(|(n, _)| n == name).map(|(_, v)| v)
}

fn truthy(v: &Value) -> bool {
    matches!(v, Value::Bool(true)) || v.as_str() == Some("true")
}

/// State flags in Playwright's order and spelling.
fn flags(props: &[(String, Value)]) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(v) = prop(props, "checked") {
        if v.as_str() == Some("mixed") {
            out.push("checked=mixed".to_string());
        } else if truthy(v) {
            out.push("checked".to_string());
        }
    }
    if prop(props, "disabled").is_some_and(truthy) {
        out.push("disabled".to_string());
    }
    if prop(props, "expanded").is_some_and(truthy) {
        out.push("expanded".to_string());
    }
    if let Some(level) = prop(props, "level").and_then(Value::as_i64) {
        out.push(format!("level={level}"));
    }
    if prop(props, "pressed").is_some_and(truthy) {
        out.push("pressed".to_string());
    }
    if prop(props, "selected").is_some_and(truthy) {
        out.push("selected".to_string());
    }
    out
}

fn quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

/// Shows same-origin URLs by path, the way a reader of the page would.
fn short_url(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(u) if matches!(u.scheme(), "http" | "https") => {
            let mut s = u.path().to_string();
            if let Some(q) = u.query() {
                s.push('?');
                s.push_str(q);
            }
            s
        }
        _ => url.to_string(),
    }
}

/// Joins lines under `max_chars`: text lines go first (from the end), then
/// the rest is cut with a note. Returns the text and the lines dropped.
fn render_capped(lines: &[Line], max_chars: usize) -> (String, usize) {
    let size = |ls: &[&Line]| ls.iter().map(|l| l.depth * 2 + l.text.len() + 1).sum::<usize>();
    let mut kept: Vec<&Line> = lines.iter().collect();
    let mut pruned = 0;
    // Room for the note that says lines were pruned.
    let budget = max_chars.saturating_sub(40);
    if size(&kept) > max_chars {
        let mut total = size(&kept);
        let mut drop = vec![false; kept.len()];
        for i in (0..kept.len()).rev() {
            if total <= budget {
                break;
            }
            if !kept[i].keep {
                drop[i] = true;
                total -= kept[i].depth * 2 + kept[i].text.len() + 1;
            }
        }
        let before = kept.len();
        kept = kept
            .into_iter()
            .zip(drop)
            .filter(|(_, d)| !d)
            .map(|(l, _)| l)
            .collect();
        pruned = before - kept.len();
    }
    let mut out = String::new();
    for (i, l) in kept.iter().enumerate() {
        let piece = format!("{}{}\n", "  ".repeat(l.depth), l.text);
        if out.len() + piece.len() > budget && (pruned > 0 || size(&kept) > max_chars) {
            pruned += kept.len() - i;
            break;
        }
        out.push_str(&piece);
    }
    if pruned > 0 {
        out.push_str(&format!("- note: {pruned} lines pruned to fit\n"));
    }
    (out, pruned)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(depth: usize, text: &str, keep: bool) -> Line {
        Line {
            depth,
            text: text.to_string(),
            keep,
        }
    }

    #[test]
    fn cap_prunes_text_before_elements() {
        let mut lines = vec![line(0, "- button \"Go\" [ref=e1]", true)];
        for i in 0..200 {
            lines.push(line(1, &format!("- text: filler paragraph number {i}"), false));
        }
        lines.push(line(0, "- link \"Last\" [ref=e2]", true));
        let (text, pruned) = render_capped(&lines, 400);
        assert!(text.len() <= 400, "{}", text.len());
        assert!(
            text.contains("button \"Go\"") && text.contains("link \"Last\""),
            "{text}"
        );
        assert!(pruned > 150);
        assert!(text.ends_with("lines pruned to fit\n"));
        let (small, _) = render_capped(&lines[..3], 10_000);
        assert!(!small.contains("pruned"));
    }
}
