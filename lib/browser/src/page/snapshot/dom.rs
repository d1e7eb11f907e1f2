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

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::{Frame, Node};

/// What the capture asks for: the two styles visibility needs.
pub(super) const STYLES: [&str; 2] = ["display", "visibility"];

/// Elements that never show: their subtrees are skipped.
const UNSHOWN: &[&str] = &[
    "HEAD", "SCRIPT", "STYLE", "TEMPLATE", "NOSCRIPT", "LINK", "META", "TITLE", "BASE",
];

/// Roles whose name comes from their content when nothing else names them.
const NAMED_BY_CONTENT: &[&str] = &[
    "button",
    "cell",
    "checkbox",
    "columnheader",
    "gridcell",
    "heading",
    "link",
    "menuitem",
    "menuitemcheckbox",
    "menuitemradio",
    "option",
    "radio",
    "rowheader",
    "switch",
    "tab",
    "term",
    "tooltip",
    "treeitem",
];

/// Roles whose content a name from content leaves out, as Chromium does: a
/// link around a figure is named by its `title`, not by the figure's text.
const NOT_IN_NAMES: &[&str] = &[
    "alert",
    "alertdialog",
    "application",
    "article",
    "banner",
    "blockquote",
    "complementary",
    "contentinfo",
    "dialog",
    "document",
    "feed",
    "figure",
    "form",
    "group",
    "log",
    "main",
    "marquee",
    "math",
    "navigation",
    "note",
    "region",
    "search",
    "status",
    "tabpanel",
    "timer",
    "toolbar",
];

/// Roles left out when they hold nothing and have no name.
const EMPTY_DROPPED: &[&str] = &["paragraph", "blockquote", "code", "caption", "term", "definition"];

/// Roles a `title` does not name (it is their description).
const TEXT_ROLES: &[&str] = &[
    "blockquote",
    "caption",
    "code",
    "definition",
    "list",
    "listitem",
    "paragraph",
    "row",
    "rowgroup",
    "term",
];

/// Longest name from content, in characters.
const MAX_NAME: usize = 1_000;

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

struct Doc<'a> {
    frame_id: &'a str,
    title: &'a str,
    base: Option<url::Url>,
    parent: Vec<Option<usize>>,
    kind: Vec<i64>,
    /// Element names upper-cased; `#text` and the like as they come.
    tag: Vec<String>,
    value: Vec<&'a str>,
    backend: Vec<i64>,
    attrs: Vec<Vec<(&'a str, &'a str)>>,
    children: Vec<Vec<usize>>,
    /// (display, visibility) of a node with a layout box.
    style: Vec<Option<(&'a str, &'a str)>>,
    /// The node or something under it has a layout box.
    shown_below: Vec<bool>,
    input_value: HashMap<usize, &'a str>,
    text_value: HashMap<usize, &'a str>,
    checked: HashSet<usize>,
    selected: HashSet<usize>,
    pseudo: HashSet<usize>,
    content_doc: HashMap<usize, usize>,
    by_id: HashMap<&'a str, usize>,
    label_for: HashMap<&'a str, Vec<usize>>,
}

/// A name from content cut to [`MAX_NAME`] characters (a table cell that
/// holds a whole story is not named by all of it; its text shows below).
fn capped(mut text: String) -> String {
    if let Some((at, _)) = text.char_indices().nth(MAX_NAME) {
        text.truncate(at);
        text.push('…');
    }
    text
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

impl<'a> Doc<'a> {
    fn parse(strings: &'a [Value], d: &'a Value) -> Option<Self> {
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
        let mut attrs: Vec<Vec<(&str, &str)>> = nodes["attributes"]
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
        let mut children = vec![Vec::new(); n];
        for (i, p) in parent.iter().enumerate() {
            if let Some(p) = p.filter(|&p| p < i) {
                children[p].push(i);
            }
        }
        let mut style = vec![None; n];
        let layout = &d["layout"];
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
        let mut shown_below: Vec<bool> = style.iter().map(Option::is_some).collect();
        for i in (0..n).rev() {
            if shown_below[i]
                && let Some(p) = parent[i].filter(|&p| p < i)
            {
                shown_below[p] = true;
            }
        }
        let content_doc = nodes["contentDocumentIndex"]["index"]
            .as_array()
            .into_iter()
            .flatten()
            .zip(
                nodes["contentDocumentIndex"]["value"]
                    .as_array()
                    .into_iter()
                    .flatten(),
            )
            .filter_map(|(i, v)| {
                Some((
                    usize::try_from(i.as_i64()?).ok()?,
                    usize::try_from(v.as_i64()?).ok()?,
                ))
            })
            .collect();
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

    fn attr(&self, i: usize, name: &str) -> Option<&'a str> {
        self.attrs[i].iter().find(|(k, _)| *k == name).map(|(_, v)| *v)
    }

    fn attr_set(&self, i: usize, name: &str) -> Option<&'a str> {
        self.attr(i, name).map(str::trim).filter(|v| !v.is_empty())
    }

    fn is_element(&self, i: usize) -> bool {
        self.kind[i] == 1 && !self.pseudo.contains(&i)
    }

    fn is_text(&self, i: usize) -> bool {
        self.kind[i] == 3
    }

    /// A text node or element drawn visibly (it has a box, not hidden).
    fn visible(&self, i: usize) -> bool {
        matches!(self.style[i], Some((_, v)) if v == "visible")
    }

    /// Left out with everything under it, unless `forced` (an option list,
    /// a label by reference): never drawn, or hidden from assistive tech.
    fn left_out(&self, i: usize, forced: bool) -> bool {
        if !self.is_element(i) || UNSHOWN.contains(&self.tag[i].as_str()) {
            return true;
        }
        if self.attr(i, "aria-hidden") == Some("true") || self.attr(i, "inert").is_some() {
            return !forced;
        }
        !forced && !self.shown_below[i]
    }

    fn block(&self, i: usize) -> bool {
        matches!(self.style[i], Some((d, _)) if !d.starts_with("inline") && d != "contents" && !d.is_empty())
    }

    fn input_type(&self, i: usize) -> String {
        self.attr(i, "type").unwrap_or("text").trim().to_ascii_lowercase()
    }

    /// An ancestor of `i` is one of `tags`, or has one of their roles.
    fn within(&self, i: usize, tags: &[&str]) -> bool {
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

    /// The element's role: its `role` attribute's first known token, else
    /// the HTML element's implicit role; "none" when it has none.
    fn role(&self, i: usize) -> &'static str {
        if let Some(list) = self.attr(i, "role") {
            for token in list.split_ascii_whitespace() {
                let token = token.to_ascii_lowercase();
                if token == "presentation" || token == "none" {
                    return "none";
                }
                if let Some(r) = super::roles::aria(&token) {
                    return r;
                }
            }
        }
        match self.implicit_role(i) {
            // A rich-text editor is where an agent types: a text box (Chromium
            // calls it an editable generic, and `fill` takes it).
            "generic" | "paragraph" if self.editable_root(i) => "textbox",
            role => role,
        }
    }

    fn editable(&self, i: usize) -> bool {
        self.attr(i, "contenteditable").is_some_and(|v| {
            matches!(
                v.trim().to_ascii_lowercase().as_str(),
                "" | "true" | "plaintext-only"
            )
        })
    }

    /// `contenteditable` here and not inside another editable element.
    fn editable_root(&self, i: usize) -> bool {
        if !self.editable(i) {
            return false;
        }
        let mut at = self.parent[i];
        while let Some(p) = at {
            if self.editable(p) {
                return false;
            }
            at = self.parent[p];
        }
        true
    }

    fn implicit_role(&self, i: usize) -> &'static str {
        let named = || {
            self.attr_set(i, "aria-label").is_some()
                || self.attr_set(i, "aria-labelledby").is_some()
                || self.attr_set(i, "title").is_some()
        };
        const SECTIONING: &[&str] = &["ARTICLE", "ASIDE", "MAIN", "NAV", "SECTION"];
        match self.tag[i].as_str() {
            "A" | "AREA" if self.attr(i, "href").is_some() => "link",
            "ARTICLE" => "article",
            "ASIDE" if named() || !self.within(i, &["ARTICLE", "ASIDE", "NAV", "SECTION"]) => "complementary",
            "BLOCKQUOTE" => "blockquote",
            "BUTTON" | "SUMMARY" => "button",
            "CAPTION" => "caption",
            "CODE" => "code",
            "DD" => "definition",
            "DT" => "term",
            "DEL" | "S" => "deletion",
            "DIALOG" => "dialog",
            "DL" | "MENU" | "OL" | "UL" => "list",
            "FIELDSET" | "DETAILS" | "OPTGROUP" | "ADDRESS" => "group",
            "FIGURE" => "figure",
            "FOOTER" if !self.within(i, SECTIONING) => "contentinfo",
            "FORM" => "form",
            "H1" | "H2" | "H3" | "H4" | "H5" | "H6" => "heading",
            "HEADER" if !self.within(i, SECTIONING) => "banner",
            "HR" => "separator",
            "IFRAME" => "iframe",
            "IMG" if self.attr(i, "alt") == Some("") && self.attr_set(i, "title").is_none() => "none",
            "IMG" | "SVG" => "img",
            "INPUT" => match self.input_type(i).as_str() {
                "button" | "image" | "reset" | "submit" | "file" | "color" => "button",
                "checkbox" => "checkbox",
                "radio" => "radio",
                "range" => "slider",
                "number" => "spinbutton",
                "hidden" => "none",
                "search" if self.attr(i, "list").is_none() => "searchbox",
                _ if self.attr(i, "list").is_some() => "combobox",
                _ => "textbox",
            },
            "INS" => "insertion",
            "LI" => "listitem",
            "MAIN" => "main",
            "MATH" => "math",
            "METER" => "meter",
            "NAV" => "navigation",
            "OPTION" => "option",
            "OUTPUT" => "status",
            "P" => "paragraph",
            "PROGRESS" => "progressbar",
            "SEARCH" => "search",
            "SECTION" if named() => "region",
            "SELECT"
                if self.attr(i, "multiple").is_some()
                    || self
                        .attr(i, "size")
                        .and_then(|s| s.trim().parse::<u32>().ok())
                        .is_some_and(|s| s > 1) =>
            {
                "listbox"
            }
            "SELECT" => "combobox",
            "TABLE" => "table",
            "THEAD" | "TFOOT" => "rowgroup",
            "TBODY" => "none",
            "TD" => "cell",
            "TEXTAREA" => "textbox",
            "TH" if self
                .attr(i, "scope")
                .is_some_and(|s| s.eq_ignore_ascii_case("row")) =>
            {
                "rowheader"
            }
            "TH" => "columnheader",
            "TR" => "row",
            _ => "generic",
        }
    }

    /// The element's value as the snapshot shows it after a colon.
    fn control_value(&self, i: usize, role: &str) -> Option<String> {
        match (self.tag[i].as_str(), role) {
            ("SELECT", _) => self.chosen_option(i).map(|o| self.text_of(o, true)),
            ("INPUT", "textbox" | "searchbox" | "combobox" | "spinbutton" | "slider") => {
                let v = self.input_value.get(&i).copied().unwrap_or_default();
                Some(if self.input_type(i) == "password" {
                    "•".repeat(v.chars().count())
                } else {
                    v.to_string()
                })
            }
            ("TEXTAREA", _) => self.text_value.get(&i).map(|v| v.to_string()),
            ("PROGRESS" | "METER", _) => self.attr_set(i, "value").map(str::to_owned),
            (_, "textbox") if self.editable_root(i) => Some(capped(self.text_of(i, false))),
            _ => self
                .attr_set(i, "aria-valuetext")
                .or(self.attr_set(i, "aria-valuenow"))
                .map(str::to_owned),
        }
    }

    /// The option a drop-down shows: the selected one, else the first.
    fn chosen_option(&self, select: usize) -> Option<usize> {
        let mut options = Vec::new();
        self.options(select, &mut options);
        options
            .iter()
            .copied()
            .find(|o| self.selected.contains(o))
            .or(options.first().copied())
    }

    fn options(&self, i: usize, out: &mut Vec<usize>) {
        for &c in &self.children[i] {
            match self.tag[c].as_str() {
                "OPTION" => out.push(c),
                "OPTGROUP" => self.options(c, out),
                _ => {}
            }
        }
    }

    /// Text of `i`'s content, as a name from content reads it.
    fn text_of(&self, i: usize, forced: bool) -> String {
        let mut out = String::new();
        self.content(i, forced, None, &mut out, 0);
        oxwright_engine::normalize(&out)
    }

    fn content(&self, i: usize, forced: bool, skip: Option<usize>, out: &mut String, depth: usize) {
        // Enough for any name (a name is cut to MAX_NAME characters).
        if depth > MAX_DEPTH || out.len() > 16 * MAX_NAME {
            return;
        }
        for &c in &self.children[i] {
            if Some(c) == skip {
                continue;
            }
            if self.is_text(c) {
                if forced || self.visible(c) {
                    out.push_str(self.value[c]);
                }
                continue;
            }
            if self.left_out(c, forced) {
                continue;
            }
            if self.tag[c] == "BR" {
                out.push(' ');
                continue;
            }
            let block = self.block(c);
            if block {
                out.push(' ');
            }
            let role = self.role(c);
            if let Some(label) = self.attr_set(c, "aria-label") {
                out.push_str(label);
            } else if (NOT_IN_NAMES.contains(&role) && self.tag[c] != "DETAILS")
                || matches!(self.tag[c].as_str(), "HEADER" | "FOOTER" | "ASIDE")
            {
                // A landmark or container lends no text to a name (Chromium).
            } else if matches!(
                role,
                "textbox" | "searchbox" | "spinbutton" | "slider" | "combobox"
            ) && matches!(self.tag[c].as_str(), "INPUT" | "SELECT" | "TEXTAREA")
            {
                out.push_str(&self.control_value(c, role).unwrap_or_default());
            } else if matches!(self.tag[c].as_str(), "IMG" | "AREA") {
                out.push_str(self.attr(c, "alt").or(self.attr(c, "title")).unwrap_or_default());
            } else if (self.tag[c] == "INPUT" && role == "button") || self.tag[c] == "SVG" {
                out.push_str(&self.name(c, role));
            } else {
                self.content(c, forced, skip, out, depth + 1);
            }
            if block {
                out.push(' ');
            }
        }
    }

    /// The texts of the `<label>`s that name control `i`.
    fn labels(&self, i: usize) -> String {
        let mut found: Vec<usize> = Vec::new();
        if let Some(id) = self.attr_set(i, "id")
            && let Some(ls) = self.label_for.get(id)
        {
            found.extend(ls);
        }
        let mut at = self.parent[i];
        while let Some(p) = at {
            if self.tag[p] == "LABEL" {
                let target = self.attr_set(p, "for");
                if (target.is_none() || target == self.attr_set(i, "id")) && !found.contains(&p) {
                    found.push(p);
                }
                break;
            }
            at = self.parent[p];
        }
        let parts: Vec<String> = found
            .into_iter()
            .map(|l| {
                let mut s = String::new();
                if let Some(label) = self.attr_set(l, "aria-label") {
                    s.push_str(label);
                } else {
                    self.content(l, !self.shown_below[l], Some(i), &mut s, 0);
                }
                oxwright_engine::normalize(&s)
            })
            .filter(|s| !s.is_empty())
            .collect();
        parts.join(" ")
    }

    fn child_text(&self, i: usize, tag: &str) -> String {
        self.children[i]
            .iter()
            .find(|&&c| self.is_element(c) && self.tag[c] == tag)
            .map(|&c| self.text_of(c, true))
            .unwrap_or_default()
    }

    /// The element's accessible name.
    fn name(&self, i: usize, role: &str) -> String {
        if let Some(ids) = self.attr_set(i, "aria-labelledby") {
            let parts: Vec<String> = ids
                .split_ascii_whitespace()
                .filter_map(|id| self.by_id.get(id).copied())
                .map(|r| match self.attr_set(r, "aria-label") {
                    Some(l) => l.to_string(),
                    None => self.text_of(r, true),
                })
                .filter(|s| !s.is_empty())
                .collect();
            if !parts.is_empty() {
                return parts.join(" ");
            }
        }
        if let Some(label) = self.attr_set(i, "aria-label") {
            return label.to_string();
        }
        let native = match self.tag[i].as_str() {
            "INPUT" => match self.input_type(i).as_str() {
                "button" | "submit" | "reset" => {
                    let default = match self.input_type(i).as_str() {
                        "submit" => "Submit",
                        "reset" => "Reset",
                        _ => "",
                    };
                    let labels = self.labels(i);
                    if labels.is_empty() {
                        self.attr(i, "value").unwrap_or(default).to_string()
                    } else {
                        labels
                    }
                }
                "image" => self
                    .attr_set(i, "alt")
                    .or(self.attr_set(i, "value"))
                    .or(self.attr_set(i, "title"))
                    .unwrap_or("Submit")
                    .to_string(),
                _ => self.labels(i),
            },
            "TEXTAREA" | "SELECT" | "METER" | "PROGRESS" | "OUTPUT" | "BUTTON" => self.labels(i),
            // An `alt` names an image even when empty (a `title` then does not).
            "IMG" | "AREA" if self.attr(i, "alt").is_some() => {
                return oxwright_engine::normalize(self.attr(i, "alt").unwrap_or_default());
            }
            "FIELDSET" => self.child_text(i, "LEGEND"),
            "TABLE" => self.child_text(i, "CAPTION"),
            "SVG" => self.child_text(i, "TITLE"),
            "OPTGROUP" => self.attr(i, "label").unwrap_or_default().to_string(),
            "OPTION" => self
                .attr_set(i, "label")
                .map(str::to_owned)
                .unwrap_or_else(|| self.text_of(i, true)),
            _ => String::new(),
        };
        let native = oxwright_engine::normalize(&native);
        if !native.is_empty() {
            return native;
        }
        if NAMED_BY_CONTENT.contains(&role) {
            let text = self.text_of(i, false);
            if !text.is_empty() {
                return capped(text);
            }
        }
        if let Some(title) = self.attr_set(i, "title")
            && !TEXT_ROLES.contains(&role)
        {
            return oxwright_engine::normalize(title);
        }
        if (matches!(self.tag[i].as_str(), "INPUT" | "TEXTAREA") || self.editable_root(i))
            && let Some(p) = self
                .attr_set(i, "placeholder")
                .or(self.attr_set(i, "aria-placeholder"))
        {
            return oxwright_engine::normalize(p);
        }
        String::new()
    }

    /// A check box or radio button sits somewhere under `i`.
    fn holds_check(&self, i: usize, depth: usize) -> bool {
        depth <= MAX_DEPTH
            && self.children[i].iter().any(|&c| {
                self.is_element(c)
                    && ((self.tag[c] == "INPUT"
                        && matches!(self.input_type(c).as_str(), "checkbox" | "radio"))
                        || self.holds_check(c, depth + 1))
            })
    }

    fn disabled_here(&self, i: usize) -> bool {
        matches!(
            self.tag[i].as_str(),
            "BUTTON" | "INPUT" | "SELECT" | "TEXTAREA" | "OPTION" | "OPTGROUP" | "FIELDSET"
        ) && self.attr(i, "disabled").is_some()
    }

    fn props(&self, i: usize, role: &str, disabled: bool) -> Vec<(String, Value)> {
        let mut props = Vec::new();
        let mut push = |k: &str, v: Value| props.push((k.to_string(), v));
        let checkable = matches!(
            role,
            "checkbox" | "radio" | "switch" | "menuitemcheckbox" | "menuitemradio"
        );
        if checkable {
            if self.tag[i] == "INPUT" && matches!(self.input_type(i).as_str(), "checkbox" | "radio") {
                push(
                    "checked",
                    Value::from(if self.checked.contains(&i) {
                        "true"
                    } else {
                        "false"
                    }),
                );
            } else if let Some(v) = self.attr_set(i, "aria-checked") {
                push("checked", Value::from(v));
            }
        }
        if disabled {
            push("disabled", Value::Bool(true));
        }
        let expanded = self.attr(i, "aria-expanded") == Some("true")
            || (self.tag[i] == "SUMMARY"
                && self.parent[i]
                    .is_some_and(|p| self.tag[p] == "DETAILS" && self.attr(p, "open").is_some()));
        if expanded {
            push("expanded", Value::Bool(true));
        }
        if role == "heading" {
            let level = self
                .attr_set(i, "aria-level")
                .and_then(|l| l.parse::<i64>().ok())
                .or_else(|| {
                    let t = &self.tag[i];
                    (t.len() == 2 && t.starts_with('H'))
                        .then(|| t[1..].parse().ok())
                        .flatten()
                })
                .unwrap_or(2);
            push("level", Value::from(level));
        }
        if self.attr(i, "aria-pressed") == Some("true") {
            push("pressed", Value::Bool(true));
        }
        if self.attr(i, "aria-selected") == Some("true")
            || (self.tag[i] == "OPTION" && self.selected.contains(&i))
        {
            push("selected", Value::Bool(true));
        }
        if role == "link"
            && let Some(href) = self.attr(i, "href")
        {
            let url = match &self.base {
                Some(base) => base
                    .join(href.trim())
                    .map(String::from)
                    .unwrap_or_else(|_| href.to_string()),
                None => href.to_string(),
            };
            push("url", Value::from(url));
        }
        props
    }

    fn frame(&self) -> Frame {
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
    fn build(
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
