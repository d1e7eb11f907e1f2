//! Structured extraction: records read out of a page's HTML by a CSS
//! schema ([`CssSchema`], crawl4ai's `JsonCssExtractionStrategy` shape),
//! with no model asked.
//!
//! Each element `baseSelector` matches is one record. A field with a
//! selector reads the first element inside the record's that matches it
//! (descendants only, as crawl4ai's BeautifulSoup strategy does); one
//! without reads the record's element itself. A field whose selector
//! matches nothing, or whose read gives nothing, takes its `default` or
//! is left out; a record with no field is left out. The schema was
//! checked when it was read: nothing here fails.
//!
//! [`llm`] reads a page into a JSON Schema's shape through a chat model
//! instead, checking and repairing the answers; [`learn`] has the model
//! write the CSS schema that reads the same, once per URL pattern.

pub mod learn;
pub mod llm;

use std::collections::HashMap;

use dom_query::{Document, Matcher, NodeRef, Selection};
use oxwright_jobs::{CssField, CssFieldKind, CssSchema};
use serde_json::{Map, Value};

/// What a schema read out of a page.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Records {
    /// One object per element `baseSelector` matched, in page order.
    pub records: Vec<Value>,
    /// Selectors that matched nothing: no records, or a field no record had.
    pub warnings: Vec<String>,
}

/// Reads `schema`'s records out of `html`.
pub fn extract_css(schema: &CssSchema, html: &str) -> Records {
    let doc = Document::from(html);
    let Ok(base) = Matcher::new(&schema.base_selector) else {
        return Records::default();
    };
    let mut reader = Reader::default();
    reader.compile(&schema.base_fields);
    reader.compile(&schema.fields);
    let bases = doc.select_matcher(&base);
    let mut records = Vec::new();
    for element in bases.nodes() {
        let mut item = Map::new();
        for (i, field) in schema.base_fields.iter().enumerate() {
            if let Some(value) = reader.single(element, field, &format!("baseFields[{i}]")) {
                item.insert(field.name.clone(), value);
            }
        }
        item.extend(reader.record(element, &schema.fields, "fields"));
        if !item.is_empty() {
            records.push(Value::Object(item));
        }
    }
    let mut warnings = Vec::new();
    if bases.is_empty() {
        warnings.push(format!(
            "extract_css: baseSelector {:?} matched nothing: no records",
            schema.base_selector
        ));
    } else {
        let mut missed: Vec<(&String, &String)> = reader
            .seen
            .iter()
            .filter(|(_, (_, hit))| !hit)
            .map(|(path, (sel, _))| (path, sel))
            .collect();
        missed.sort();
        for (path, sel) in missed {
            warnings.push(format!(
                "extract_css: {path}.selector {sel:?} matched in none of the {} records",
                bases.length()
            ));
        }
    }
    Records { records, warnings }
}

/// Compiled selectors and patterns, each once a page, and which field
/// selectors ever matched.
#[derive(Default)]
struct Reader {
    matchers: HashMap<String, Matcher>,
    patterns: HashMap<String, regex::Regex>,
    /// Field path → (its selector, whether it matched in any record).
    seen: HashMap<String, (String, bool)>,
}

impl Reader {
    /// Compiles every selector and pattern of `fields` (the schema was
    /// checked when it was read: one that does not compile matches nothing).
    fn compile(&mut self, fields: &[CssField]) {
        for field in fields {
            if let Some(sel) = &field.selector
                && !self.matchers.contains_key(sel)
                && let Ok(m) = Matcher::new(sel)
            {
                self.matchers.insert(sel.clone(), m);
            }
            if let CssFieldKind::Regex(p) = &field.kind
                && !self.patterns.contains_key(p)
                && let Ok(re) = regex::Regex::new(p)
            {
                self.patterns.insert(p.clone(), re);
            }
            if let Some(inner) = field.kind.fields() {
                self.compile(inner);
            }
        }
    }

    /// The elements inside `element` that `field`'s selector matches,
    /// noting whether it matched.
    fn select<'a>(&mut self, element: &NodeRef<'a>, field: &CssField, path: &str) -> Selection<'a> {
        let Some(selector) = &field.selector else {
            return Selection::from(*element);
        };
        let found = match self.matchers.get(selector) {
            Some(m) => Selection::from(*element).select_matcher(m),
            None => Selection::default(),
        };
        let seen = self
            .seen
            .entry(path.to_string())
            .or_insert_with(|| (selector.clone(), false));
        seen.1 |= !found.is_empty();
        found
    }

    /// One record of `fields` read from `element`.
    fn record(&mut self, element: &NodeRef<'_>, fields: &[CssField], path: &str) -> Map<String, Value> {
        let mut item = Map::new();
        for (i, field) in fields.iter().enumerate() {
            let at = format!("{path}[{i}]");
            let value = match &field.kind {
                CssFieldKind::Nested(inner) => {
                    let found = self.select(element, field, &at);
                    Some(match found.nodes().first() {
                        Some(first) => Value::Object(self.record(first, inner, &format!("{at}.fields"))),
                        None => field.default.clone().unwrap_or_else(|| Value::Object(Map::new())),
                    })
                }
                CssFieldKind::List(inner) => {
                    let found = self.select(element, field, &at);
                    let items: Vec<Value> = found
                        .nodes()
                        .iter()
                        .map(|el| {
                            let mut one = Map::new();
                            for (j, f) in inner.iter().enumerate() {
                                if let Some(v) = self.single(el, f, &format!("{at}.fields[{j}]")) {
                                    one.insert(f.name.clone(), v);
                                }
                            }
                            Value::Object(one)
                        })
                        .collect();
                    Some(Value::Array(items))
                }
                CssFieldKind::NestedList(inner) => {
                    let found = self.select(element, field, &at);
                    let items: Vec<Value> = found
                        .nodes()
                        .iter()
                        .map(|el| Value::Object(self.record(el, inner, &format!("{at}.fields"))))
                        .collect();
                    Some(Value::Array(items))
                }
                _ => self.single(element, field, &at),
            };
            if let Some(value) = value {
                item.insert(field.name.clone(), value);
            }
        }
        item
    }

    /// A plain field's value read from `element` (or the first element
    /// inside it its selector matches), transformed, else its default.
    fn single(&mut self, element: &NodeRef<'_>, field: &CssField, path: &str) -> Option<Value> {
        let found = self.select(element, field, path);
        let Some(target) = found.nodes().first() else {
            return field.default.clone();
        };
        let read = match &field.kind {
            CssFieldKind::Text => Some(text_of(target)),
            CssFieldKind::Attribute(name) => target.attr(name).map(|v| v.to_string()),
            CssFieldKind::Html => Some(target.html().to_string()),
            CssFieldKind::Regex(pattern) => self.patterns.get(pattern).and_then(|re| {
                let text = text_of(target);
                re.captures(&text).map(|c| {
                    c.get(1)
                        .or_else(|| c.get(0))
                        .map_or_else(String::new, |m| m.as_str().to_string())
                })
            }),
            // Record-shaped kinds are read by `record`; a `list`'s fields are plain.
            CssFieldKind::Nested(_) | CssFieldKind::List(_) | CssFieldKind::NestedList(_) => None,
        };
        match read {
            Some(s) => Some(Value::String(match field.transform {
                Some(t) => t.apply(&s),
                None => s,
            })),
            None => field.default.clone(),
        }
    }
}

/// Elements whose text is no reader's: code and data.
const NOT_TEXT: &[&str] = &["script", "style", "noscript", "template"];

/// Elements that break a line where they start and end: their text is
/// set apart from their neighbours' (`<li>a</li><li>b</li>` reads `a b`),
/// where an inline element's joins its neighbours' as written.
const BLOCKS: &[&str] = &[
    "address",
    "article",
    "aside",
    "blockquote",
    "br",
    "dd",
    "div",
    "dl",
    "dt",
    "fieldset",
    "figcaption",
    "figure",
    "footer",
    "form",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "header",
    "hr",
    "li",
    "main",
    "nav",
    "ol",
    "option",
    "p",
    "pre",
    "section",
    "table",
    "tbody",
    "td",
    "tfoot",
    "th",
    "thead",
    "tr",
    "ul",
];

/// `element`'s text as a reader sees it, its whitespace collapsed to
/// single spaces.
fn text_of(element: &NodeRef<'_>) -> String {
    fn walk(node: &NodeRef<'_>, raw: &mut String) {
        for child in node.children_it(false) {
            if child.is_text() {
                raw.push_str(&child.text());
                continue;
            }
            let Some(name) = child.node_name() else {
                continue;
            };
            if NOT_TEXT.contains(&name.as_ref()) {
                continue;
            }
            let block = BLOCKS.contains(&name.as_ref());
            if block {
                raw.push(' ');
            }
            walk(&child, raw);
            if block {
                raw.push(' ');
            }
        }
    }
    let mut raw = String::new();
    walk(element, &mut raw);
    raw.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests;
