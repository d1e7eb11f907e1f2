//! The scripted page's document model: HTML parsed once (html5ever through
//! dom_query) into a flat list of elements with the roles, accessible names
//! and states a small accessibility tree would give them.

use std::collections::HashMap;

use dom_query::{Document, NodeRef};

use crate::normalize;

/// One element of a scripted document.
#[derive(Debug, Clone)]
pub(crate) struct Node {
    pub parent: Option<usize>,
    pub depth: usize,
    pub tag: String,
    pub attrs: HashMap<String, String>,
    pub role: Option<String>,
    pub name: String,
    /// Normalised text content.
    pub text: String,
    /// Text directly inside the element (not in child elements).
    pub own_text: String,
    pub has_element_children: bool,
    pub visible: bool,
    pub value: String,
    pub checked: bool,
    /// `(value, label, selected)` of a `<select>`.
    pub options: Vec<(String, String, bool)>,
    pub masked: bool,
}

impl Node {
    pub fn attr(&self, name: &str) -> Option<&str> {
        self.attrs.get(name).map(String::as_str)
    }

    pub fn disabled(&self) -> bool {
        self.attrs.contains_key("disabled") || self.attr("aria-disabled") == Some("true")
    }

    pub fn input_type(&self) -> String {
        self.attr("type").unwrap_or("text").to_ascii_lowercase()
    }

    pub fn is_text_field(&self) -> bool {
        match self.tag.as_str() {
            "textarea" => true,
            "input" => !matches!(
                self.input_type().as_str(),
                "checkbox"
                    | "radio"
                    | "button"
                    | "submit"
                    | "reset"
                    | "file"
                    | "image"
                    | "hidden"
                    | "range"
                    | "color"
            ),
            _ => self.attr("contenteditable").is_some_and(|v| v != "false"),
        }
    }
}

/// A parsed document.
#[derive(Debug, Clone)]
pub(crate) struct Doc {
    pub url: url::Url,
    pub title: String,
    pub html: String,
    pub nodes: Vec<Node>,
    /// Bumped per document: refs of an older one are stale.
    pub generation: u64,
}

fn implicit_role(tag: &str, attrs: &HashMap<String, String>) -> Option<&'static str> {
    Some(match tag {
        "a" if attrs.contains_key("href") => "link",
        "button" => "button",
        "input" => match attrs.get("type").map(|t| t.to_ascii_lowercase()).as_deref() {
            Some("checkbox") => "checkbox",
            Some("radio") => "radio",
            Some("button" | "submit" | "reset" | "image") => "button",
            Some("hidden") => return None,
            Some("number") => "spinbutton",
            Some("range") => "slider",
            Some("search") => "searchbox",
            _ => "textbox",
        },
        "textarea" => "textbox",
        "select" if attrs.contains_key("multiple") => "listbox",
        "select" => "combobox",
        "option" => "option",
        "h1" | "h2" | "h3" | "h4" | "h5" | "h6" => "heading",
        "img" => "img",
        "ul" | "ol" => "list",
        "li" => "listitem",
        "nav" => "navigation",
        "main" => "main",
        "header" => "banner",
        "footer" => "contentinfo",
        "aside" => "complementary",
        "p" => "paragraph",
        "table" => "table",
        "tr" => "row",
        "td" => "cell",
        "th" => "columnheader",
        "dialog" => "dialog",
        "iframe" => "iframe",
        _ => return None,
    })
}

fn name_from_content(role: &str) -> bool {
    matches!(
        role,
        "link"
            | "button"
            | "heading"
            | "option"
            | "cell"
            | "columnheader"
            | "listitem"
            | "tab"
            | "menuitem"
            | "checkbox"
            | "radio"
    )
}

fn hidden_by_attrs(attrs: &HashMap<String, String>) -> bool {
    let style = attrs
        .get("style")
        .map(|s| s.replace(' ', "").to_ascii_lowercase())
        .unwrap_or_default();
    attrs.contains_key("hidden")
        || style.contains("display:none")
        || style.contains("visibility:hidden")
        || attrs
            .get("type")
            .is_some_and(|t| t.eq_ignore_ascii_case("hidden"))
}

/// Parses `html` served at `url`.
pub(crate) fn parse(url: url::Url, html: &str, generation: u64) -> Doc {
    let doc = Document::from(html);
    let title = normalize(&doc.select("title").text());
    let mut nodes: Vec<Node> = Vec::new();
    let root = doc.select("html");
    if let Some(html_node) = root.nodes().first() {
        elements(html_node, None, 0, &mut |child, parent, depth| {
            let tag = tag_of(child);
            let attrs: HashMap<String, String> = child
                .attrs()
                .iter()
                .map(|a| (a.name.local.to_string().to_ascii_lowercase(), a.value.to_string()))
                .collect();
            let parent_visible = parent.is_none_or(|p| nodes[p].visible);
            let visible = parent_visible && !hidden_by_attrs(&attrs);
            let implicit = implicit_role(&tag, &attrs);
            let role = attrs
                .get("role")
                .map(|r| {
                    r.split_whitespace()
                        .next()
                        .unwrap_or_default()
                        .to_ascii_lowercase()
                })
                // A focusable or globally annotated element marked
                // presentational keeps its implicit role, as in Chromium.
                .filter(|r| {
                    !matches!(r.as_str(), "presentation" | "none")
                        || !crate::aria::keeps_implicit_role(&tag, implicit.unwrap_or("generic"), |n| {
                            attrs.get(n).map(String::as_str)
                        })
                })
                .or_else(|| implicit.map(str::to_string));
            let options = if tag == "select" {
                select_options(child, &attrs)
            } else {
                Vec::new()
            };
            let value = match tag.as_str() {
                "textarea" => normalize(&child.text()),
                _ => attrs.get("value").cloned().unwrap_or_default(),
            };
            nodes.push(Node {
                parent,
                depth,
                checked: attrs.contains_key("checked"),
                role,
                name: String::new(),
                text: normalize(&child.text()),
                own_text: normalize(&child.immediate_text()),
                has_element_children: child
                    .element_children()
                    .iter()
                    .any(|c| !SKIP.contains(&tag_of(c).as_str())),
                visible,
                value,
                options,
                masked: false,
                tag,
                attrs,
            });
            nodes.len() - 1
        });
    }
    name_nodes(&mut nodes);
    Doc {
        url,
        title,
        html: html.to_string(),
        nodes,
        generation,
    }
}

/// A `<select>`'s options as `(value, label, selected)`; a single select
/// with none chosen has its first.
fn select_options(select: &NodeRef, attrs: &HashMap<String, String>) -> Vec<(String, String, bool)> {
    let mut options = Vec::new();
    for o in select.find(&["option"]) {
        let label = normalize(&o.text());
        let value = o
            .attr("value")
            .map(|v| v.to_string())
            .unwrap_or_else(|| label.clone());
        options.push((value, label, o.has_attr("selected")));
    }
    if !attrs.contains_key("multiple")
        && !options.iter().any(|o| o.2)
        && let Some(first) = options.first_mut()
    {
        first.2 = true;
    }
    options
}

/// Gives every node its accessible name: aria-label, aria-labelledby,
/// its `<label>`, alt, a button's value, content for the roles named by
/// content, title, placeholder last.
fn name_nodes(nodes: &mut [Node]) {
    let by_id: HashMap<String, usize> = nodes
        .iter()
        .enumerate()
        .filter_map(|(i, n)| n.attr("id").map(|id| (id.to_string(), i)))
        .collect();
    let mut labels: HashMap<usize, String> = HashMap::new();
    for (i, n) in nodes.iter().enumerate() {
        if n.tag != "label" {
            continue;
        }
        let target = n.attr("for").and_then(|f| by_id.get(f).copied()).or_else(|| {
            nodes
                .iter()
                .enumerate()
                .skip(i + 1)
                .take_while(|(_, d)| d.depth > n.depth)
                .find(|(_, d)| matches!(d.tag.as_str(), "input" | "select" | "textarea"))
                .map(|(j, _)| j)
        });
        if let Some(t) = target {
            labels.entry(t).or_insert_with(|| n.text.clone());
        }
    }
    for i in 0..nodes.len() {
        let n = &nodes[i];
        let name = if let Some(l) = n.attr("aria-label").filter(|l| !l.trim().is_empty()) {
            normalize(l)
        } else if let Some(ids) = n.attr("aria-labelledby") {
            ids.split_whitespace()
                .filter_map(|id| by_id.get(id).map(|j| nodes[*j].text.clone()))
                .collect::<Vec<_>>()
                .join(" ")
        } else if let Some(l) = labels.get(&i) {
            l.clone()
        } else if n.tag == "img" {
            normalize(n.attr("alt").unwrap_or_default())
        } else if n.tag == "input" && matches!(n.input_type().as_str(), "submit" | "button" | "reset") {
            normalize(&n.value)
        } else if n.role.as_deref().is_some_and(name_from_content) {
            n.text.clone()
        } else if let Some(t) = n.attr("title") {
            normalize(t)
        } else if let Some(p) = n.attr("placeholder") {
            normalize(p)
        } else {
            String::new()
        };
        nodes[i].name = name;
    }
}

/// Returns the indices of the elements `selector` matches in `doc`'s HTML.
pub(crate) fn css(doc: &Doc, selector: &str) -> Result<Vec<usize>, String> {
    let parsed = Document::from(doc.html.as_str());
    // Element order of a second parse is the order of the first, so
    // positions map onto the model's indices.
    let mut order: HashMap<dom_query::NodeId, usize> = HashMap::new();
    if let Some(root) = parsed.select("html").nodes().first() {
        elements(root, None, 0, &mut |n, _, _| {
            let next = order.len();
            order.insert(n.id, next);
            next
        });
    }
    let matcher =
        dom_query::Matcher::new(selector).map_err(|_| format!("invalid CSS selector {selector:?}"))?;
    let sel = parsed.select_matcher(&matcher);
    let mut out: Vec<usize> = sel
        .nodes()
        .iter()
        .filter_map(|n| order.get(&n.id).copied())
        .collect();
    out.sort_unstable();
    Ok(out)
}

/// Elements the model keeps: no head, scripts, styles or templates.
const SKIP: [&str; 8] = [
    "script", "style", "head", "template", "noscript", "title", "meta", "link",
];

fn tag_of(n: &NodeRef<'_>) -> String {
    n.node_name().map(|t| t.to_ascii_lowercase()).unwrap_or_default()
}

/// Visits the kept elements under `n` in document order; `visit` gets the
/// element, its parent's index and its depth and returns its own index.
/// The contents of `<select>` and `<textarea>` belong to them.
fn elements(
    n: &NodeRef<'_>,
    parent: Option<usize>,
    depth: usize,
    visit: &mut dyn FnMut(&NodeRef<'_>, Option<usize>, usize) -> usize,
) {
    for child in n.children() {
        if !child.is_element() {
            continue;
        }
        let tag = tag_of(&child);
        if SKIP.contains(&tag.as_str()) {
            continue;
        }
        let index = visit(&child, parent, depth);
        if tag != "select" && tag != "textarea" {
            elements(&child, Some(index), depth + 1, visit);
        }
    }
}
