//! The accessibility snapshot on Chromium: the page's flattened DOM with
//! roles and names worked out from it ([`dom`], every in-process frame,
//! cross-origin ones included), or where that cannot be read Chromium's
//! accessibility tree (raw JSON from `Accessibility.getFullAXTree`),
//! rendered into the engine's snapshot lines (Playwright's AI-snapshot
//! form). Ignored nodes and unnamed generic containers are hoisted (their
//! children take their place); refs are stable within a document and start
//! again at `e1` after a navigation. Names and values are the page's own:
//! callers that log or prompt with a snapshot sanitise it first.

mod dom;
mod roles;

use std::collections::{HashMap, HashSet};
use std::time::Instant;

use oxwright_engine::{ElementId, Snapshot, SnapshotElement, SnapshotLine, normalize};
use serde_json::{Value, json};

use super::raw::{call, call_in, node_id};
use crate::frame_link::Slot;
use crate::{BrowserError, Tab};
use roles::{Shape, interactive, opaque, shape, shows_value};

type Line = SnapshotLine;

/// What a snapshot is read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SnapshotSource {
    /// The flattened DOM, roles and names worked out here (the default:
    /// a fraction of the accessibility tree's cost on a real page).
    #[default]
    Dom,
    /// Chromium's own accessibility tree.
    AccessibilityTree,
}

/// Keeps refs stable across snapshots of one document.
#[derive(Debug, Default)]
pub(crate) struct Snapshotter {
    refs: HashMap<i64, u32>,
    next: u32,
    /// The main frame's loader id of the document the refs belong to.
    pub(crate) loader: Option<String>,
    masked: HashSet<i64>,
    /// Ref → backend node id of the last snapshot.
    pub(crate) last: HashMap<String, i64>,
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
    title: String,
}

struct Ctx<'a> {
    /// The main document's URL (links to its origin are shown by path).
    page_url: Option<url::Url>,
    frames: &'a HashMap<String, Frame>,
    /// Backend node id of an `<iframe>` → the frame it hosts.
    owners: &'a HashMap<i64, String>,
}

impl Snapshotter {
    /// Marks an element whose value must never be shown (a typed secret).
    pub(crate) fn mask(&mut self, backend: i64) {
        self.masked.insert(backend);
    }

    /// Returns the elements marked with [`Snapshotter::mask`] in this document.
    pub(crate) fn masked(&self) -> Vec<i64> {
        self.masked.iter().copied().collect()
    }

    /// Reads the page from `source` and renders it under `max_chars`.
    pub(crate) async fn capture(
        &mut self,
        tab: &Tab,
        max_chars: usize,
        source: SnapshotSource,
    ) -> Result<Snapshot, BrowserError> {
        let started = Instant::now();
        // The frame tree and the flattened DOM are asked for at once.
        let capture = async {
            match source {
                SnapshotSource::Dom => {
                    let params = json!({ "computedStyles": dom::STYLES, "includeDOMRects": false });
                    call(tab, "DOMSnapshot.captureSnapshot", params).await.ok()
                }
                SnapshotSource::AccessibilityTree => None,
            }
        };
        let (tree, dom) = tokio::join!(call(tab, "Page.getFrameTree", json!({})), capture);
        let tree = tree?;
        let main = &tree["frameTree"]["frame"];
        let main_id = main["id"].as_str().unwrap_or_default().to_string();
        let loader = main["loaderId"].as_str().map(str::to_owned);
        if loader != self.loader {
            // A new document: refs start again.
            self.refs.clear();
            self.last.clear();
            self.next = 1;
            self.masked.clear();
            self.loader = loader;
        }
        let mut children = Vec::new();
        collect_children(&tree["frameTree"], &mut children);
        let captured = dom
            .as_ref()
            .and_then(dom::frames)
            .filter(|c| c.frames.contains_key(&main_id));
        let (mut frames, mut owners) = match captured {
            Some(c) => (c.frames, c.owners),
            None => {
                // Not a capture this reader knows: the accessibility tree.
                let mut frames = HashMap::new();
                frames.insert(main_id.clone(), accessibility_main(tab).await?);
                (frames, HashMap::new())
            }
        };
        // A frame the capture did not hold (out of process after all) is
        // read from its accessibility tree; one that cannot be read is left out.
        let missing = children.into_iter().filter(|id| !frames.contains_key(id));
        let read = missing.map(|frame_id| async move {
            let (frame, owner) = tokio::join!(
                read_frame(tab, 0, Some(&frame_id)),
                call(tab, "DOM.getFrameOwner", json!({ "frameId": frame_id }))
            );
            (frame_id, frame, owner)
        });
        for (frame_id, frame, owner) in futures::future::join_all(read).await {
            let Ok(frame) = frame else {
                continue;
            };
            if let Ok(owner) = owner
                && let Some(backend) = owner["backendNodeId"].as_i64()
            {
                owners.insert(backend, frame_id.clone());
            }
            frames.insert(frame_id, frame);
        }
        out_of_process(tab, source, &mut frames, &mut owners).await;
        let ctx = Ctx {
            page_url: main["url"].as_str().and_then(|u| url::Url::parse(u).ok()),
            frames: &frames,
            owners: &owners,
        };
        let mut lines = Vec::new();
        let mut elements = Vec::new();
        if let Some(root) = frames[&main_id].root.clone() {
            self.render(&ctx, &main_id, &root, 0, &mut lines, &mut elements);
        }
        for e in &elements {
            if let Ok(backend) = e.id.0.parse::<i64>() {
                self.last.insert(e.ref_id.clone(), backend);
            }
        }
        let title = frames[&main_id].title.clone();
        Ok(Snapshot::from_lines(
            lines,
            elements,
            main["url"].as_str().unwrap_or_default().to_string(),
            title,
            max_chars,
            started.elapsed(),
        ))
    }

    fn ref_for(&mut self, backend: i64) -> String {
        if self.next == 0 {
            self.next = 1;
        }
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
        elements: &mut Vec<SnapshotElement>,
    ) {
        let Some(node) = ctx.frames[frame].nodes.get(id) else {
            return;
        };
        // A date or time input is one fillable textbox, not its spin buttons.
        let children = if !node.ignored && opaque(&node.role) {
            Vec::new()
        } else {
            node.children.clone()
        };
        let walk_children =
            |me: &mut Self, depth: usize, out: &mut Vec<Line>, elements: &mut Vec<SnapshotElement>| {
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
                        text: format!("- text: {name}"),
                        keep: false,
                    });
                }
            }
            Shape::Role(role) => {
                let mut head = format!("- {role}");
                if !name.is_empty() {
                    head.push(' ');
                    head.push_str(&quote(&name));
                }
                for flag in flags(&node.props) {
                    head.push_str(&format!(" [{flag}]"));
                }
                if let Some(backend) = node.backend {
                    let r = self.ref_for(backend);
                    head.push_str(&format!(" [ref={r}]"));
                    elements.push(SnapshotElement {
                        ref_id: r,
                        role: role.to_string(),
                        name: name.clone(),
                        id: ElementId(backend.to_string()),
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
                        v
                    }
                });
                let mut inner = Vec::new();
                if role == "link"
                    && let Some(url) = prop(&node.props, "url").and_then(|v| v.as_str().map(str::to_owned))
                {
                    inner.push(Line {
                        depth: depth + 1,
                        text: format!("- /url: {}", short_url(&url, ctx.page_url.as_ref())),
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
                let (text_only, folded) = fold_text(&mut inner, first_child, &name, value.as_deref());
                let keep = interactive(role)
                    || node
                        .backend
                        .is_some_and(|_| name.len() < 80 && role != "paragraph");
                push_element(
                    out,
                    depth,
                    head,
                    keep,
                    value,
                    inner,
                    text_only && first_child == 0,
                    &folded,
                );
            }
        }
    }
}

/// Text nodes under a CSS `text-transform` (uppercase, lowercase,
/// capitalize): what the transform shows → what the DOM says. Empty at once
/// when no style sheet or inline style mentions `text-transform`; a shown
/// text two different DOM texts share is left as it is.
const UNTRANSFORMED_JS: &str = r#"(() => {
  let maybe = !!document.querySelector('[style*="text-transform"]');
  if (!maybe) {
    for (const sheet of document.styleSheets) {
      try {
        for (const rule of sheet.cssRules) { if (rule.cssText.includes('text-transform')) { maybe = true; break; } }
      } catch (e) { maybe = true; }
      if (maybe) break;
    }
  }
  if (!maybe || !document.body) return [];
  const norm = (s) => s.replace(/\s+/g, ' ').trim();
  const styles = new Map(), pairs = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  let node, seen = 0;
  while ((node = walker.nextNode()) && seen++ < 20000 && pairs.length < 2000) {
    const el = node.parentElement;
    if (!el) continue;
    let t = styles.get(el);
    if (t === undefined) { t = getComputedStyle(el).textTransform; styles.set(el, t); }
    if (!t || t === 'none') continue;
    const text = norm(node.data);
    if (!text) continue;
    // Capitalize is matched without case: Chromium's word starts are its own.
    const shown = t === 'uppercase' ? text.toUpperCase() : t === 'lowercase' ? text.toLowerCase()
      : 'ci:' + text.toLowerCase();
    if (shown !== text) pairs.push([shown, text]);
  }
  return pairs;
})()"#;

async fn untransformed(tab: &Tab) -> HashMap<String, String> {
    let Some(Value::Array(pairs)) = tab.evaluate_quiet(UNTRANSFORMED_JS).await else {
        return HashMap::new();
    };
    let mut map: HashMap<String, Option<String>> = HashMap::new();
    for p in pairs {
        let (Some(shown), Some(text)) = (p[0].as_str(), p[1].as_str()) else {
            continue;
        };
        let entry = map
            .entry(shown.to_string())
            .or_insert_with(|| Some(text.to_string()));
        if entry.as_deref() != Some(text) {
            *entry = None;
        }
    }
    map.into_iter().filter_map(|(k, v)| Some((k, v?))).collect()
}

/// Adds the frames other processes render (site isolation puts a frame of
/// another site in a renderer of its own, out of the page's capture): each
/// is read in its own session, as the page is, its nodes named with its
/// slot, and hung under its `<iframe>`. A frame that cannot be read is
/// left out.
async fn out_of_process(
    tab: &Tab,
    source: SnapshotSource,
    frames: &mut HashMap<String, Frame>,
    owners: &mut HashMap<i64, String>,
) {
    let read = tab
        .frame_slots()
        .await
        .into_iter()
        .map(|(slot, frame)| async move {
            let captured = match source {
                SnapshotSource::Dom => {
                    let params = json!({ "computedStyles": dom::STYLES, "includeDOMRects": false });
                    call_in(tab, slot, "DOMSnapshot.captureSnapshot", params)
                        .await
                        .ok()
                        .as_ref()
                        .and_then(dom::frames)
                        .filter(|c| c.frames.contains_key(&frame.frame_id))
                }
                SnapshotSource::AccessibilityTree => None,
            };
            let captured = match captured {
                Some(c) => Some((c.frames, c.owners)),
                None => read_frame(tab, slot, None)
                    .await
                    .ok()
                    .map(|f| (HashMap::from([(frame.frame_id.clone(), f)]), HashMap::new())),
            };
            let owner = call_in(
                tab,
                frame.parent,
                "DOM.getFrameOwner",
                json!({ "frameId": frame.frame_id }),
            )
            .await
            .ok()
            .and_then(|o| o["backendNodeId"].as_i64())
            .map(|b| node_id(frame.parent, b));
            (slot, frame.frame_id, captured, owner)
        });
    for (slot, frame_id, captured, owner) in futures::future::join_all(read).await {
        let Some((captured, inner_owners)) = captured else {
            continue;
        };
        for (id, mut frame) in captured {
            for node in frame.nodes.values_mut() {
                node.backend = node.backend.map(|b| node_id(slot, b));
            }
            frames.insert(id, frame);
        }
        for (backend, sub) in inner_owners {
            owners.insert(node_id(slot, backend), sub);
        }
        if let Some(owner) = owner {
            owners.insert(owner, frame_id);
        }
    }
}

fn collect_children(node: &Value, out: &mut Vec<String>) {
    for child in node["childFrames"].as_array().into_iter().flatten() {
        if let Some(id) = child["frame"]["id"].as_str() {
            out.push(id.to_string());
        }
        collect_children(child, out);
    }
}

/// The main frame read from Chromium's accessibility tree, its names put
/// back to the DOM's own texts where CSS `text-transform` changed them
/// (Chromium's tree says "SIGN IN" for a "Sign in" in capitals; Playwright,
/// and the locators, go by the DOM's text).
async fn accessibility_main(tab: &Tab) -> Result<Frame, BrowserError> {
    let (frame, originals) = tokio::join!(read_frame(tab, 0, None), untransformed(tab));
    let mut frame = frame?;
    if !originals.is_empty() {
        for node in frame.nodes.values_mut() {
            let name = normalize(&node.name);
            let original = originals
                .get(&name)
                .or_else(|| originals.get(&format!("ci:{}", name.to_lowercase())));
            if let Some(original) = original {
                node.name = original.clone();
            }
        }
    }
    Ok(frame)
}

async fn read_frame(tab: &Tab, slot: Slot, frame_id: Option<&str>) -> Result<Frame, BrowserError> {
    let params = match frame_id {
        Some(id) => json!({ "frameId": id }),
        None => json!({}),
    };
    let raw = call_in(tab, slot, "Accessibility.getFullAXTree", params).await?;
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
    let title = root
        .as_ref()
        .and_then(|r| nodes.get(r))
        .map(|n: &Node| n.name.clone())
        .unwrap_or_default();
    Ok(Frame { nodes, root, title })
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

/// Shows a link to the page's own origin by path, query and fragment (the
/// way the page's author wrote it), any other whole.
fn short_url(url: &str, page: Option<&url::Url>) -> String {
    match url::Url::parse(url) {
        Ok(u) if matches!(u.scheme(), "http" | "https") && page.is_some_and(|p| p.origin() == u.origin()) => {
            let mut s = u.path().to_string();
            if let Some(q) = u.query() {
                s.push('?');
                s.push_str(q);
            }
            if let Some(f) = u.fragment() {
                s.push('#');
                s.push_str(f);
            }
            s
        }
        _ => url.to_string(),
    }
}

/// Whether the lines under an element are text alone (and that text
/// joined); text the element's name or value already says is dropped.
fn fold_text(inner: &mut Vec<Line>, first_child: usize, name: &str, value: Option<&str>) -> (bool, String) {
    let kids = &inner[first_child..];
    let mut text_only = !kids.is_empty() && kids.iter().all(|l| l.text.starts_with("- text: "));
    let mut folded = normalize(
        &kids
            .iter()
            .map(|l| l.text.trim_start_matches("- text: "))
            .collect::<Vec<_>>()
            .join(" "),
    );
    if text_only && (folded == name || value == Some(folded.as_str())) {
        // The name or the value already says it.
        inner.truncate(first_child);
        text_only = false;
        folded.clear();
    }
    (text_only, folded)
}

/// An element's line: `: value`, `: text` when its lines below are text
/// alone, `:` over its children, or bare.
#[allow(clippy::too_many_arguments)]
fn push_element(
    out: &mut Vec<Line>,
    depth: usize,
    mut head: String,
    keep: bool,
    value: Option<String>,
    inner: Vec<Line>,
    folds: bool,
    folded: &str,
) {
    if let Some(v) = value {
        head.push_str(&format!(": {v}"));
        out.push(Line {
            depth,
            text: head,
            keep,
        });
        out.extend(inner);
    } else if folds {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_to_the_page_origin_show_path_query_and_fragment_others_whole() {
        let page = url::Url::parse("https://shop.example/app/item?id=1").unwrap();
        assert_eq!(
            short_url("https://shop.example/docs/a?b=1#top", Some(&page)),
            "/docs/a?b=1#top"
        );
        assert_eq!(
            short_url("https://other.example/docs", Some(&page)),
            "https://other.example/docs"
        );
        assert_eq!(short_url("mailto:a@b.c", Some(&page)), "mailto:a@b.c");
        assert_eq!(
            short_url("https://shop.example/x", None),
            "https://shop.example/x"
        );
    }
}
