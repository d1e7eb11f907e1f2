//! The scripted page's snapshot: a line per visible element with a role
//! (its name, states, value and ref), a line per run of bare text, depth
//! counted over the lines printed.

use std::time::Duration;

use super::dom::Node;
use super::{ScriptedPage, State};
use crate::{ElementId, EngineError, Snapshot, SnapshotElement, SnapshotLine, SnapshotOptions};

/// The lines and elements of a snapshot being written.
#[derive(Default)]
struct Out {
    lines: Vec<SnapshotLine>,
    elements: Vec<SnapshotElement>,
}

impl ScriptedPage {
    pub(super) fn render(st: &mut State, opts: &SnapshotOptions) -> Result<Snapshot, EngineError> {
        let doc = Self::doc(st)?.clone();
        if st.ref_generation != doc.generation {
            st.refs.clear();
            st.ref_generation = doc.generation;
        }
        let mut out = Out::default();
        // Depth in the snapshot counts only the ancestors that print a line.
        let mut shown_depth: Vec<usize> = vec![0; doc.nodes.len()];
        let mut prints: Vec<bool> = vec![false; doc.nodes.len()];
        for (i, n) in doc.nodes.iter().enumerate() {
            let depth = n
                .parent
                .map(|p| shown_depth[p] + usize::from(prints[p]))
                .unwrap_or(0);
            shown_depth[i] = depth;
            if !n.visible {
                continue;
            }
            match shown_role(n) {
                Some(role) => {
                    prints[i] = true;
                    let ref_id = ref_of(st, i);
                    let id = ElementId(format!("{}:{i}", doc.generation));
                    element_lines(n, role, ref_id, id, depth, &mut out);
                }
                None if !n.own_text.is_empty() => out.lines.push(SnapshotLine {
                    depth,
                    text: format!("- text: {}", n.own_text),
                    keep: false,
                }),
                None => {}
            }
        }
        Ok(Snapshot::from_lines(
            out.lines,
            out.elements,
            doc.url.to_string(),
            doc.title.clone(),
            opts.max_chars,
            Duration::ZERO,
        ))
    }
}

/// The role a line shows, none for the roles that print nothing.
fn shown_role(n: &Node) -> Option<&str> {
    n.role
        .as_deref()
        .filter(|r| !matches!(*r, "none" | "presentation" | "generic"))
}

/// The ref of node `i`: the one it has in this document, or the next.
fn ref_of(st: &mut State, i: usize) -> String {
    if let Some((k, _)) = st.refs.iter().find(|(_, v)| **v == i) {
        return k.clone();
    }
    let r = format!("e{}", st.refs.len() + 1);
    st.refs.insert(r.clone(), i);
    r
}

/// An element's line (and its link's URL line), and the element.
fn element_lines(n: &Node, role: &str, ref_id: String, id: ElementId, depth: usize, out: &mut Out) {
    let mut head = head(n, role, &ref_id);
    if let Some(v) = value(n) {
        head.push_str(&format!(": {v}"));
    } else if !n.has_element_children && !n.own_text.is_empty() && n.own_text != n.name {
        head.push_str(&format!(": {}", n.own_text));
    }
    out.lines.push(SnapshotLine {
        depth,
        text: head,
        keep: crate::interactive_role(role) || (n.name.len() < 80 && role != "paragraph"),
    });
    if role == "link"
        && let Some(href) = n.attr("href")
    {
        out.lines.push(SnapshotLine {
            depth: depth + 1,
            text: format!("- /url: {href}"),
            keep: false,
        });
    }
    out.elements.push(SnapshotElement {
        ref_id,
        role: role.to_string(),
        name: n.name.clone(),
        id,
    });
}

/// `- role "name" [states] [ref=eN]`.
fn head(n: &Node, role: &str, ref_id: &str) -> String {
    let mut head = format!("- {role}");
    if !n.name.is_empty() {
        head.push_str(&format!(
            " {}",
            serde_json::to_string(&n.name).unwrap_or_default()
        ));
    }
    if matches!(role, "checkbox" | "radio") && n.checked {
        head.push_str(" [checked]");
    }
    if n.disabled() {
        head.push_str(" [disabled]");
    }
    if role == "heading"
        && let Some(level) = n.tag.strip_prefix('h').and_then(|l| l.parse::<u8>().ok())
    {
        head.push_str(&format!(" [level={level}]"));
    }
    head.push_str(&format!(" [ref={ref_id}]"));
    head
}

/// A field's value as shown (a secret masked), or a select's choice.
fn value(n: &Node) -> Option<String> {
    match n.tag.as_str() {
        "select" => n.options.iter().find(|o| o.2).map(|o| o.1.clone()),
        _ if n.is_text_field() && !n.value.is_empty() => Some(if n.masked {
            "••••".to_string()
        } else {
            n.value.clone()
        }),
        _ => None,
    }
}
