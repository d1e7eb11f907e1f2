//! Roles and states: the `role` attribute, HTML-AAM's implicit roles, and
//! the flags the snapshot prints (checked, disabled, expanded, level,
//! pressed, selected) with a link's URL.

use serde_json::Value;

use super::Doc;

impl<'a> Doc<'a> {
    /// The element's role: its `role` attribute's first known token, else
    /// the HTML element's implicit role; "none" when it has none. A
    /// focusable or globally annotated element marked presentational keeps
    /// its implicit role ([`oxwright_engine::aria::keeps_implicit_role`]).
    pub(super) fn role(&self, i: usize) -> &'static str {
        if let Some(list) = self.attr(i, "role") {
            for token in list.split_ascii_whitespace() {
                let token = token.to_ascii_lowercase();
                if token == "presentation" || token == "none" {
                    let implicit = self.implicit_role(i);
                    if oxwright_engine::aria::keeps_implicit_role(&self.tag[i], implicit, |n| self.attr(i, n))
                    {
                        break;
                    }
                    return "none";
                }
                if let Some(r) = super::super::roles::aria(&token) {
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

    pub(super) fn editable(&self, i: usize) -> bool {
        self.attr(i, "contenteditable").is_some_and(|v| {
            matches!(
                v.trim().to_ascii_lowercase().as_str(),
                "" | "true" | "plaintext-only"
            )
        })
    }

    /// `contenteditable` here and not inside another editable element.
    pub(super) fn editable_root(&self, i: usize) -> bool {
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

    pub(super) fn implicit_role(&self, i: usize) -> &'static str {
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

    pub(super) fn disabled_here(&self, i: usize) -> bool {
        matches!(
            self.tag[i].as_str(),
            "BUTTON" | "INPUT" | "SELECT" | "TEXTAREA" | "OPTION" | "OPTGROUP" | "FIELDSET"
        ) && self.attr(i, "disabled").is_some()
    }

    pub(super) fn props(&self, i: usize, role: &str, disabled: bool) -> Vec<(String, Value)> {
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
}
