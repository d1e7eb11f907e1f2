//! The snapshot's usual source: the flattened DOM with its layout
//! (`DOMSnapshot.captureSnapshot`: every in-process frame's document, shadow
//! trees composed and slotted content under its slot), with roles, names,
//! states and values worked out here by the HTML-AAM and accname rules —
//! what Playwright works out in the page — instead of asked of Chromium's
//! accessibility tree, whose serialisation costs ~50 µs a node
//! (BENCHMARKS §9). It yields the node shape the accessibility-tree reader
//! yields, so one renderer serves both; a document the capture does not
//! hold (an out-of-process frame) is still read from the accessibility tree.
//!
//! Names come from the DOM's text, so CSS `text-transform` never shows in
//! them. A password field's value comes out as bullets, as Chromium's
//! tree has it. A `contenteditable` root is a `textbox` whose value is its
//! text (Chromium's tree calls it an editable generic; agents type into it).

mod doc;
mod names;
mod role;

use std::collections::HashMap;

use serde_json::Value;

use super::{Frame, Node};
use doc::Doc;

/// What the capture asks for: the two styles visibility needs.
pub(super) const STYLES: [&str; 2] = ["display", "visibility"];

/// Roles left out when they hold nothing and have no name.
const EMPTY_DROPPED: &[&str] = &["paragraph", "blockquote", "code", "caption", "term", "definition"];

/// Deepest element nesting read; deeper content is left out (no page
/// shows an agent anything useful 400 levels down, and the walk recurses).
const MAX_DEPTH: usize = 400;

/// The frames of one capture, keyed by frame id, and each `<iframe>`'s
/// backend node id → the frame it hosts.
pub(super) struct Captured {
    pub(super) frames: HashMap<String, Frame>,
    pub(super) owners: HashMap<i64, String>,
}

/// Turns a `DOMSnapshot.captureSnapshot` response into frames. `None` when
/// the response is not the shape this reader knows.
pub(super) fn frames(raw: &Value) -> Option<Captured> {
    let strings = raw["strings"].as_array()?;
    let docs = raw["documents"].as_array()?;
    let parsed: Vec<Doc<'_>> = docs
        .iter()
        .map(|d| Doc::parse(strings, d))
        .collect::<Option<_>>()?;
    let mut frames = HashMap::new();
    let mut owners = HashMap::new();
    // A document without a frame id (an `<object>`'s, say) is left out.
    for doc in parsed.iter().filter(|d| !d.frame_id.is_empty()) {
        for (&node, &sub) in &doc.content_doc {
            if let Some(sub) = parsed
                .get(sub)
                .filter(|s| !s.frame_id.is_empty() && s.frame_id != doc.frame_id)
            {
                owners.insert(doc.backend[node], sub.frame_id.to_string());
            }
        }
        frames.insert(doc.frame_id.to_string(), doc.frame());
    }
    Some(Captured { frames, owners })
}

/// What the walk carries down the tree.
#[derive(Debug, Clone, Copy, Default)]
struct Walk {
    /// Show everything, drawn or not (an option list).
    forced: bool,
    /// Under a disabled fieldset, select or `aria-disabled`.
    disabled: bool,
    /// Text here names a control already (inside its `<label>`).
    muted: bool,
}

impl<'a> Doc<'a> {
    /// A check box or radio button sits somewhere under `i`.
    pub(super) fn holds_check(&self, i: usize, depth: usize) -> bool {
        depth <= MAX_DEPTH
            && self.children[i].iter().any(|&c| {
                self.is_element(c)
                    && ((self.tag[c] == "INPUT"
                        && matches!(self.input_type(c).as_str(), "checkbox" | "radio"))
                        || self.holds_check(c, depth + 1))
            })
    }

    pub(super) fn frame(&self) -> Frame {
        let mut nodes = HashMap::new();
        let root = (!self.parent.is_empty()).then(|| {
            let mut kids = Vec::new();
            for &c in &self.children[0] {
                self.build(c, Walk::default(), 0, &mut nodes, &mut kids);
            }
            nodes.insert(
                "root".to_string(),
                Node {
                    ignored: true,
                    role: "RootWebArea".to_string(),
                    name: String::new(),
                    value: None,
                    props: Vec::new(),
                    children: kids,
                    backend: None,
                },
            );
            "root".to_string()
        });
        Frame {
            nodes,
            root,
            title: oxwright_engine::normalize(self.title),
        }
    }

    /// Adds node `i` (and what is under it) to `nodes`; pushes the ids
    /// that take its place among its parent's children onto `out`.
    pub(super) fn build(
        &self,
        i: usize,
        walk: Walk,
        depth: usize,
        nodes: &mut HashMap<String, Node>,
        out: &mut Vec<String>,
    ) {
        if depth > MAX_DEPTH {
            return;
        }
        let Walk { forced, disabled, .. } = walk;
        if self.is_text(i) {
            if (forced || self.visible(i)) && !walk.muted && !self.value[i].trim().is_empty() {
                let id = i.to_string();
                nodes.insert(
                    id.clone(),
                    Node {
                        ignored: false,
                        role: "StaticText".to_string(),
                        name: self.value[i].to_string(),
                        value: None,
                        props: Vec::new(),
                        children: Vec::new(),
                        backend: Some(self.backend[i]),
                    },
                );
                out.push(id);
            }
            return;
        }
        if self.left_out(i, forced) {
            return;
        }
        let tag = self.tag[i].as_str();
        if matches!(tag, "BR" | "WBR" | "CANVAS") {
            return;
        }
        let role = self.role(i);
        // A disabled fieldset disables what is in it, not itself (as
        // Chromium's tree has it).
        let disabled = disabled
            || (self.disabled_here(i) && tag != "FIELDSET")
            || self.attr(i, "aria-disabled") == Some("true")
            || (tag == "OPTION" && self.parent[i].is_some_and(|p| self.disabled_here(p)));
        let disabled_below = disabled || self.disabled_here(i);
        // Under a drop-down or list box every option shows, drawn or not.
        let forced = forced || tag == "SELECT";
        // A check box's or radio button's label text is its name already
        // (as in Chromium's tree, where it is ignored).
        let muted = walk.muted || (tag == "LABEL" && self.holds_check(i, 0));
        let mut children = Vec::new();
        // A rich-text editor shows its text as its value, not as lines.
        let opaque = role == "textbox" && self.editable_root(i);
        if !matches!(tag, "IFRAME" | "SVG" | "INPUT" | "TEXTAREA" | "IMG") && !opaque {
            let walk = Walk {
                forced,
                disabled: disabled_below,
                muted,
            };
            for &c in &self.children[i] {
                self.build(c, walk, depth + 1, nodes, &mut children);
            }
        }
        // Hidden by visibility: its children may still show.
        let hidden = self.style[i].is_some() && !self.visible(i) && !forced;
        if hidden || role == "none" {
            out.extend(children);
            return;
        }
        let name = self.name(i, role);
        if tag == "SVG" && name.is_empty() {
            return; // A decorative icon.
        }
        if children.is_empty() && name.is_empty() && EMPTY_DROPPED.contains(&role) {
            return; // An empty paragraph says nothing (Chromium leaves it out).
        }
        let value = (role != "option").then(|| self.control_value(i, role)).flatten();
        let id = i.to_string();
        nodes.insert(
            id.clone(),
            Node {
                ignored: false,
                role: if tag == "IFRAME" {
                    "Iframe".to_string()
                } else {
                    role.to_string()
                },
                name,
                value,
                props: self.props(i, role, disabled),
                children,
                backend: Some(self.backend[i]),
            },
        );
        out.push(id);
    }
}
