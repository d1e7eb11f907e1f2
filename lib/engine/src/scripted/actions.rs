//! What the scripted page's actions do: a link navigates, a submit button
//! or Enter in a field submits its form with GET, fields take values,
//! boxes check, selects select. An action says whether it navigated.

use super::dom::{Doc, Node};
use super::{ScriptedPage, State};
use crate::{Act, EngineError, EngineErrorKind};

fn not_interactable(message: impl Into<String>) -> EngineError {
    EngineError::new(EngineErrorKind::NotInteractable, message)
}

/// Changes node `i` of the current document.
fn set(st: &mut State, i: usize, f: impl FnOnce(&mut Node)) {
    if let Some(d) = st.doc.as_mut() {
        f(&mut d.nodes[i]);
    }
}

impl ScriptedPage {
    pub(super) fn form_of(doc: &Doc, i: usize) -> Option<usize> {
        let mut cur = doc.nodes[i].parent;
        while let Some(p) = cur {
            if doc.nodes[p].tag == "form" {
                return Some(p);
            }
            cur = doc.nodes[p].parent;
        }
        None
    }

    /// Submits `form` with GET (its fields in the query); a POST form
    /// loads its action bare.
    fn submit(&self, st: &mut State, form: usize) -> Result<bool, EngineError> {
        let doc = Self::doc(st)?;
        let f = &doc.nodes[form];
        let action = f.attr("action").unwrap_or("");
        let mut url = doc
            .url
            .join(action)
            .map_err(|e| EngineError::new(EngineErrorKind::InvalidInput, format!("form action: {e}")))?;
        if !f.attr("method").is_some_and(|m| m.eq_ignore_ascii_case("post")) {
            let pairs: Vec<(String, String)> = doc
                .nodes
                .iter()
                .enumerate()
                .filter(|(j, n)| Self::form_of(doc, *j) == Some(form) && n.attr("name").is_some())
                .filter(|(_, n)| submitted(n))
                .map(|(_, n)| (n.attr("name").unwrap_or_default().to_string(), form_value(n)))
                .collect();
            url.query_pairs_mut().clear().extend_pairs(pairs);
        }
        self.load(st, url, true).map(|_| true)
    }

    pub(super) fn perform(&self, st: &mut State, i: usize, act: &Act) -> Result<bool, EngineError> {
        let n = Self::doc(st)?.nodes[i].clone();
        if !n.visible {
            return Err(not_interactable("element is not visible"));
        }
        let needs_enabled = !matches!(act, Act::Hover | Act::ScrollIntoView);
        if needs_enabled && n.disabled() {
            return Err(not_interactable("element is disabled"));
        }
        match act {
            Act::Click | Act::DoubleClick | Act::ClickWith { .. } => self.click(st, i, &n),
            Act::Fill { value, secret } => {
                if !n.is_text_field() {
                    return Err(not_interactable("cannot fill: element is not editable"));
                }
                if n.attrs.contains_key("readonly") {
                    return Err(not_interactable("cannot fill: element is readonly"));
                }
                let masked = *secret || n.input_type() == "password";
                set(st, i, |x| {
                    x.value = value.clone();
                    x.masked |= masked;
                });
                Ok(false)
            }
            Act::Type { text } => {
                if !n.is_text_field() {
                    return Err(not_interactable("cannot type: element is not editable"));
                }
                set(st, i, |x| x.value.push_str(text));
                Ok(false)
            }
            Act::Press { key } => {
                let form = Self::form_of(Self::doc(st)?, i);
                match form {
                    Some(form) if key == "Enter" && n.is_text_field() && n.tag == "input" => {
                        self.submit(st, form)
                    }
                    _ => Ok(false),
                }
            }
            Act::Select { values } => {
                let picked = picked_options(&n, values)?;
                set(st, i, |x| {
                    for (k, o) in x.options.iter_mut().enumerate() {
                        o.2 = picked.contains(&k);
                    }
                });
                Ok(false)
            }
            Act::Check | Act::Uncheck => {
                if !matches!(n.role.as_deref(), Some("checkbox" | "radio" | "switch")) {
                    return Err(not_interactable("not a checkbox or radio"));
                }
                let on = matches!(act, Act::Check);
                set(st, i, |x| x.checked = on);
                Ok(false)
            }
            Act::Hover | Act::ScrollIntoView | Act::Focus => Ok(false),
        }
    }

    /// A click: a link navigates, a box toggles, a submit button submits.
    fn click(&self, st: &mut State, i: usize, n: &Node) -> Result<bool, EngineError> {
        let doc = Self::doc(st)?;
        if n.tag == "a"
            && let Some(href) = n.attr("href")
        {
            let url = doc
                .url
                .join(href)
                .map_err(|e| EngineError::new(EngineErrorKind::InvalidInput, format!("href: {e}")))?;
            return self.load(st, url, true).map(|_| true);
        }
        if n.tag == "input" && matches!(n.input_type().as_str(), "checkbox") {
            set(st, i, |x| x.checked = !x.checked);
            return Ok(false);
        }
        if n.tag == "input" && n.input_type() == "radio" {
            set(st, i, |x| x.checked = true);
            return Ok(false);
        }
        let submits = (n.tag == "button" && n.attr("type").is_none_or(|t| t.eq_ignore_ascii_case("submit")))
            || (n.tag == "input" && n.input_type() == "submit");
        match Self::form_of(doc, i) {
            Some(form) if submits => self.submit(st, form),
            _ => Ok(false),
        }
    }
}

/// Whether a form control's value goes with its form.
fn submitted(n: &Node) -> bool {
    match n.tag.as_str() {
        "input" if matches!(n.input_type().as_str(), "checkbox" | "radio") => n.checked,
        "input" => !matches!(n.input_type().as_str(), "submit" | "button" | "reset"),
        "select" | "textarea" => true,
        _ => false,
    }
}

/// A control's submitted value (a select's chosen option).
fn form_value(n: &Node) -> String {
    if n.tag == "select" {
        n.options
            .iter()
            .find(|o| o.2)
            .map(|o| o.0.clone())
            .unwrap_or_default()
    } else {
        n.value.clone()
    }
}

/// The options of a select that `values` name (by value or label).
fn picked_options(n: &Node, values: &[String]) -> Result<Vec<usize>, EngineError> {
    if n.tag != "select" {
        return Err(not_interactable("not a select element"));
    }
    let norm = |s: &str| crate::normalize(s).to_lowercase();
    values
        .iter()
        .map(|v| {
            n.options
                .iter()
                .position(|o| o.0 == *v || norm(&o.1) == norm(v))
                .ok_or_else(|| {
                    let labels: Vec<String> = n.options.iter().map(|o| format!("{:?}", o.1)).collect();
                    not_interactable(format!("no option matches; options are {}", labels.join(", ")))
                })
        })
        .collect()
}
