//! Names and values: accname's order (`aria-labelledby`, `aria-label`,
//! native labels, name from content, `title`, placeholder) and what a
//! control shows after a colon.

use super::{Doc, MAX_DEPTH};

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

/// A name from content cut to [`MAX_NAME`] characters (a table cell that
/// holds a whole story is not named by all of it; its text shows below).
fn capped(mut text: String) -> String {
    if let Some((at, _)) = text.char_indices().nth(MAX_NAME) {
        text.truncate(at);
        text.push('…');
    }
    text
}

impl<'a> Doc<'a> {
    /// The element's value as the snapshot shows it after a colon.
    pub(super) fn control_value(&self, i: usize, role: &str) -> Option<String> {
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
    pub(super) fn chosen_option(&self, select: usize) -> Option<usize> {
        let mut options = Vec::new();
        self.options(select, &mut options);
        options
            .iter()
            .copied()
            .find(|o| self.selected.contains(o))
            .or(options.first().copied())
    }

    pub(super) fn options(&self, i: usize, out: &mut Vec<usize>) {
        for &c in &self.children[i] {
            match self.tag[c].as_str() {
                "OPTION" => out.push(c),
                "OPTGROUP" => self.options(c, out),
                _ => {}
            }
        }
    }

    /// Text of `i`'s content, as a name from content reads it.
    pub(super) fn text_of(&self, i: usize, forced: bool) -> String {
        let mut out = String::new();
        self.content(i, forced, None, &mut out, 0);
        oxwright_engine::normalize(&out)
    }

    pub(super) fn content(
        &self,
        i: usize,
        forced: bool,
        skip: Option<usize>,
        out: &mut String,
        depth: usize,
    ) {
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
    pub(super) fn labels(&self, i: usize) -> String {
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

    pub(super) fn child_text(&self, i: usize, tag: &str) -> String {
        self.children[i]
            .iter()
            .find(|&&c| self.is_element(c) && self.tag[c] == tag)
            .map(|&c| self.text_of(c, true))
            .unwrap_or_default()
    }

    /// The element's accessible name.
    pub(super) fn name(&self, i: usize, role: &str) -> String {
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
}
