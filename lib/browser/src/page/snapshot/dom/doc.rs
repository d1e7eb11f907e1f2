//! One captured document: the capture's columns read into per-node
//! vectors, and what a node is (element, text, drawn, left out).

use std::collections::{HashMap, HashSet};

use serde_json::Value;

/// Elements that never show: their subtrees are skipped.
const UNSHOWN: &[&str] = &[
    "HEAD", "SCRIPT", "STYLE", "TEMPLATE", "NOSCRIPT", "LINK", "META", "TITLE", "BASE",
];

/// One captured document, its nodes in document order, indexed as the
/// capture indexes them.
pub(super) struct Doc<'a> {
    pub(super) frame_id: &'a str,
    pub(super) title: &'a str,
    pub(super) base: Option<url::Url>,
    pub(super) parent: Vec<Option<usize>>,
    pub(super) kind: Vec<i64>,
    /// Element names upper-cased; `#text` and the like as they come.
    pub(super) tag: Vec<String>,
    pub(super) value: Vec<&'a str>,
    pub(super) backend: Vec<i64>,
    pub(super) attrs: Vec<Vec<(&'a str, &'a str)>>,
    pub(super) children: Vec<Vec<usize>>,
    /// (display, visibility) of a node with a layout box.
    pub(super) style: Vec<Option<(&'a str, &'a str)>>,
    /// The node or something under it has a layout box.
    pub(super) shown_below: Vec<bool>,
    pub(super) input_value: HashMap<usize, &'a str>,
    pub(super) text_value: HashMap<usize, &'a str>,
    pub(super) checked: HashSet<usize>,
    pub(super) selected: HashSet<usize>,
    pub(super) pseudo: HashSet<usize>,
    pub(super) content_doc: HashMap<usize, usize>,
    pub(super) by_id: HashMap<&'a str, usize>,
    pub(super) label_for: HashMap<&'a str, Vec<usize>>,
}

fn string<'a>(strings: &'a [Value], v: &Value) -> &'a str {
    v.as_i64()
        .and_then(|i| usize::try_from(i).ok())
        .and_then(|i| strings.get(i))
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn rare_strings<'a>(strings: &'a [Value], v: &Value) -> HashMap<usize, &'a str> {
    let (Some(index), Some(value)) = (v["index"].as_array(), v["value"].as_array()) else {
        return HashMap::new();
    };
    index
        .iter()
        .zip(value)
        .filter_map(|(i, s)| Some((usize::try_from(i.as_i64()?).ok()?, string(strings, s))))
        .collect()
}

fn rare_flags(v: &Value) -> HashSet<usize> {
    v["index"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|i| usize::try_from(i.as_i64()?).ok())
        .collect()
}

/// Each node's attributes as (name, value) pairs.
fn node_attributes<'a>(strings: &'a [Value], v: &'a Value, n: usize) -> Vec<Vec<(&'a str, &'a str)>> {
    let mut attrs: Vec<Vec<(&str, &str)>> = v
        .as_array()
        .into_iter()
        .flatten()
        .map(|a| {
            a.as_array()
                .map(|a| {
                    a.chunks(2)
                        .filter(|p| p.len() == 2)
                        .map(|p| (string(strings, &p[0]), string(strings, &p[1])))
                        .collect()
                })
                .unwrap_or_default()
        })
        .collect();
    attrs.resize(n, Vec::new());
    attrs
}

/// (display, visibility) of each node with a layout box.
fn layout_styles<'a>(strings: &'a [Value], layout: &'a Value, n: usize) -> Vec<Option<(&'a str, &'a str)>> {
    let mut style = vec![None; n];
    let styles = layout["styles"].as_array();
    for (k, node) in layout["nodeIndex"].as_array().into_iter().flatten().enumerate() {
        let Some(node) = node
            .as_i64()
            .and_then(|x| usize::try_from(x).ok())
            .filter(|&x| x < n)
        else {
            continue;
        };
        if style[node].is_some() {
            continue;
        }
        let s = styles.and_then(|s| s.get(k)).and_then(Value::as_array);
        let get = |j: usize| {
            s.and_then(|s| s.get(j))
                .map(|v| string(strings, v))
                .unwrap_or_default()
        };
        style[node] = Some((get(0), get(1)));
    }
    style
}

/// Frame owner node → the index of its content document.
fn content_documents(v: &Value) -> HashMap<usize, usize> {
    v["index"]
        .as_array()
        .into_iter()
        .flatten()
        .zip(v["value"].as_array().into_iter().flatten())
        .filter_map(|(i, v)| {
            Some((
                usize::try_from(i.as_i64()?).ok()?,
                usize::try_from(v.as_i64()?).ok()?,
            ))
        })
        .collect()
}

/// Elements by `id` (the first), and the `<label for>` elements of each id.
type IdIndex<'a> = (HashMap<&'a str, usize>, HashMap<&'a str, Vec<usize>>);

fn id_index<'a>(attrs: &[Vec<(&'a str, &'a str)>], kind: &[i64], tag: &[String]) -> IdIndex<'a> {
    let mut by_id = HashMap::new();
    let mut label_for: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, a) in attrs.iter().enumerate() {
        if kind[i] != 1 {
            continue;
        }
        for &(k, v) in a {
            if k == "id" && !v.is_empty() {
                by_id.entry(v).or_insert(i);
            }
            if k == "for" && tag[i] == "LABEL" && !v.is_empty() {
                label_for.entry(v).or_default().push(i);
            }
        }
    }
    (by_id, label_for)
}

impl<'a> Doc<'a> {
    pub(super) fn parse(strings: &'a [Value], d: &'a Value) -> Option<Self> {
        let nodes = &d["nodes"];
        let parent: Vec<Option<usize>> = nodes["parentIndex"]
            .as_array()?
            .iter()
            .map(|p| p.as_i64().and_then(|p| usize::try_from(p).ok()))
            .collect();
        let n = parent.len();
        let ints = |key: &str| -> Vec<i64> {
            let mut v: Vec<i64> = nodes[key]
                .as_array()
                .into_iter()
                .flatten()
                .map(|x| x.as_i64().unwrap_or(-1))
                .collect();
            v.resize(n, -1);
            v
        };
        let kind = ints("nodeType");
        let backend = ints("backendNodeId");
        let mut tag: Vec<String> = nodes["nodeName"]
            .as_array()?
            .iter()
            .map(|s| string(strings, s).to_ascii_uppercase())
            .collect();
        tag.resize(n, String::new());
        let mut value: Vec<&str> = nodes["nodeValue"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|s| string(strings, s))
            .collect();
        value.resize(n, "");
        let attrs = node_attributes(strings, &nodes["attributes"], n);
        let mut children = vec![Vec::new(); n];
        for (i, p) in parent.iter().enumerate() {
            if let Some(p) = p.filter(|&p| p < i) {
                children[p].push(i);
            }
        }
        let style = layout_styles(strings, &d["layout"], n);
        let mut shown_below: Vec<bool> = style.iter().map(Option::is_some).collect();
        for i in (0..n).rev() {
            if shown_below[i]
                && let Some(p) = parent[i].filter(|&p| p < i)
            {
                shown_below[p] = true;
            }
        }
        let content_doc = content_documents(&nodes["contentDocumentIndex"]);
        let (by_id, label_for) = id_index(&attrs, &kind, &tag);
        let base = url::Url::parse(string(strings, &d["baseURL"]))
            .or_else(|_| url::Url::parse(string(strings, &d["documentURL"])))
            .ok();
        Some(Doc {
            frame_id: string(strings, &d["frameId"]),
            title: string(strings, &d["title"]),
            base,
            parent,
            kind,
            tag,
            value,
            backend,
            attrs,
            children,
            style,
            shown_below,
            input_value: rare_strings(strings, &nodes["inputValue"]),
            text_value: rare_strings(strings, &nodes["textValue"]),
            checked: rare_flags(&nodes["inputChecked"]),
            selected: rare_flags(&nodes["optionSelected"]),
            pseudo: rare_flags(&nodes["pseudoType"]),
            content_doc,
            by_id,
            label_for,
        })
    }

    pub(super) fn attr(&self, i: usize, name: &str) -> Option<&'a str> {
        self.attrs[i].iter().find(|(k, _)| *k == name).map(|(_, v)| *v)
    }

    pub(super) fn attr_set(&self, i: usize, name: &str) -> Option<&'a str> {
        self.attr(i, name).map(str::trim).filter(|v| !v.is_empty())
    }

    pub(super) fn is_element(&self, i: usize) -> bool {
        self.kind[i] == 1 && !self.pseudo.contains(&i)
    }

    pub(super) fn is_text(&self, i: usize) -> bool {
        self.kind[i] == 3
    }

    /// A text node or element drawn visibly (it has a box, not hidden).
    pub(super) fn visible(&self, i: usize) -> bool {
        matches!(self.style[i], Some((_, v)) if v == "visible")
    }

    /// Left out with everything under it, unless `forced` (an option list,
    /// a label by reference): never drawn, or hidden from assistive tech.
    pub(super) fn left_out(&self, i: usize, forced: bool) -> bool {
        if !self.is_element(i) || UNSHOWN.contains(&self.tag[i].as_str()) {
            return true;
        }
        if self.attr(i, "aria-hidden") == Some("true") || self.attr(i, "inert").is_some() {
            return !forced;
        }
        !forced && !self.shown_below[i]
    }

    pub(super) fn block(&self, i: usize) -> bool {
        matches!(self.style[i], Some((d, _)) if !d.starts_with("inline") && d != "contents" && !d.is_empty())
    }

    pub(super) fn input_type(&self, i: usize) -> String {
        self.attr(i, "type").unwrap_or("text").trim().to_ascii_lowercase()
    }

    /// An ancestor of `i` is one of `tags`, or has one of their roles.
    pub(super) fn within(&self, i: usize, tags: &[&str]) -> bool {
        let mut at = self.parent[i];
        while let Some(p) = at {
            if tags.contains(&self.tag[p].as_str()) {
                return true;
            }
            if let Some(role) = self.attr(p, "role") {
                let by_role = |tag: &str| match tag {
                    "ARTICLE" => "article",
                    "ASIDE" => "complementary",
                    "MAIN" => "main",
                    "NAV" => "navigation",
                    _ => "region",
                };
                if tags
                    .iter()
                    .any(|t| role.split_ascii_whitespace().next() == Some(by_role(t)))
                {
                    return true;
                }
            }
            at = self.parent[p];
        }
        false
    }
}
