//! A CSS extraction schema: which elements of a page are records and how
//! each field of a record is read, in the shape of crawl4ai's
//! `JsonCssExtractionStrategy` (`name`, `baseSelector`, `baseFields`,
//! `fields`), so schemas written for it are taken as they are.
//!
//! A schema is read from JSON with every key checked: an unknown key, a
//! missing one, a type no reader knows, a selector or pattern that does
//! not compile is refused with the path of the key (`fields[2].type`),
//! before any page is fetched.

use std::borrow::Cow;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

/// Most fields in one schema, nested ones counted.
pub const MAX_CSS_FIELDS: usize = 500;

/// Deepest nesting of `nested`, `list` and `nested_list` fields.
pub const MAX_CSS_DEPTH: usize = 8;

/// Which elements are records (`base_selector`) and what each holds.
#[derive(Debug, Clone, PartialEq)]
pub struct CssSchema {
    /// The schema's name (crawl4ai's `name`); only a label.
    pub name: Option<String>,
    /// Each element it matches is one record.
    pub base_selector: String,
    /// Fields read from the record's element itself (no selector needed).
    pub base_fields: Vec<CssField>,
    /// Fields read from elements inside the record's element.
    pub fields: Vec<CssField>,
}

/// One field of a record.
#[derive(Debug, Clone, PartialEq)]
pub struct CssField {
    /// The record's key.
    pub name: String,
    /// The element read, inside the record's (the first match); none reads
    /// the record's element itself.
    pub selector: Option<String>,
    /// How the value is read.
    pub kind: CssFieldKind,
    /// The value when the selector matches nothing or the read gives none.
    pub default: Option<Value>,
    /// Applied to a string value.
    pub transform: Option<Transform>,
}

/// How a field's value is read.
#[derive(Debug, Clone, PartialEq)]
pub enum CssFieldKind {
    /// The element's text, its whitespace collapsed to single spaces
    /// (scripts and styles left out).
    Text,
    /// One attribute's value, as written.
    Attribute(String),
    /// The element's outer HTML.
    Html,
    /// The first capture group (or the whole match) of a pattern searched
    /// in the element's text.
    Regex(String),
    /// One record of `fields` from the first element the selector matches
    /// (`{}` when none does).
    Nested(Vec<CssField>),
    /// One record of plain `fields` (text, attribute, html, regex) per
    /// element the selector matches.
    List(Vec<CssField>),
    /// One record of `fields`, nested ones included, per element the
    /// selector matches.
    NestedList(Vec<CssField>),
}

impl CssFieldKind {
    fn type_name(&self) -> &'static str {
        match self {
            Self::Text => "text",
            Self::Attribute(_) => "attribute",
            Self::Html => "html",
            Self::Regex(_) => "regex",
            Self::Nested(_) => "nested",
            Self::List(_) => "list",
            Self::NestedList(_) => "nested_list",
        }
    }

    /// The fields of a record-shaped kind.
    pub fn fields(&self) -> Option<&[CssField]> {
        match self {
            Self::Nested(f) | Self::List(f) | Self::NestedList(f) => Some(f),
            _ => None,
        }
    }
}

/// A change applied to a string value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transform {
    /// Lower case.
    Lowercase,
    /// Upper case.
    Uppercase,
    /// Whitespace trimmed at both ends.
    Strip,
}

impl Transform {
    const ALL: [(&'static str, Transform); 3] = [
        ("lowercase", Transform::Lowercase),
        ("uppercase", Transform::Uppercase),
        ("strip", Transform::Strip),
    ];

    fn name(self) -> &'static str {
        Self::ALL.iter().find(|(_, t)| *t == self).map_or("", |(n, _)| n)
    }

    /// `value` transformed.
    pub fn apply(self, value: &str) -> String {
        match self {
            Transform::Lowercase => value.to_lowercase(),
            Transform::Uppercase => value.to_uppercase(),
            Transform::Strip => value.trim().to_string(),
        }
    }
}

/// A schema refused: the path of the key at fault, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {message}")]
pub struct SchemaError {
    /// Where, from the schema's root (`fields[2].selector`); `$` for the
    /// root itself.
    pub path: String,
    /// What is wrong.
    pub message: String,
}

fn refuse(path: &str, message: impl Into<String>) -> SchemaError {
    SchemaError {
        path: if path.is_empty() { "$".into() } else { path.into() },
        message: message.into(),
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

const SCHEMA_KEYS: &[&str] = &["name", "baseSelector", "baseFields", "fields"];
const FIELD_KEYS: &[&str] = &[
    "name",
    "selector",
    "type",
    "attribute",
    "pattern",
    "fields",
    "default",
    "transform",
];
const TYPES: &str = "text, attribute, html, regex, nested, list, nested_list";

fn only_keys(map: &Map<String, Value>, path: &str, allowed: &[&str]) -> Result<(), SchemaError> {
    match map.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(k) => Err(refuse(
            &join(path, k),
            format!("unknown key (a schema's keys: {})", allowed.join(", ")),
        )),
        None => Ok(()),
    }
}

fn string(map: &Map<String, Value>, path: &str, key: &str) -> Result<Option<String>, SchemaError> {
    match map.get(key) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(refuse(&join(path, key), "must be a string")),
    }
}

fn required(map: &Map<String, Value>, path: &str, key: &str, why: &str) -> Result<String, SchemaError> {
    match string(map, path, key)? {
        Some(s) if !s.trim().is_empty() => Ok(s),
        Some(_) => Err(refuse(&join(path, key), "must not be empty")),
        None => Err(refuse(&join(path, key), format!("missing: {why}"))),
    }
}

fn selector(text: &str, path: &str) -> Result<(), SchemaError> {
    dom_query::Matcher::new(text)
        .map(|_| ())
        .map_err(|e| refuse(path, format!("{text:?} is no CSS selector ({e:?})")))
}

/// Counts fields as they are read, against [`MAX_CSS_FIELDS`].
struct Budget(usize);

fn fields(
    value: Option<&Value>,
    path: &str,
    depth: usize,
    plain_only: bool,
    budget: &mut Budget,
) -> Result<Vec<CssField>, SchemaError> {
    let items = match value {
        None => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(_) => return Err(refuse(path, "must be a list of fields")),
    };
    let mut out: Vec<CssField> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let at = format!("{path}[{i}]");
        let f = field(item, &at, depth, budget)?;
        if plain_only && f.kind.fields().is_some() {
            return Err(refuse(
                &format!("{at}.type"),
                "a `list`'s fields are plain values (text, attribute, html, regex): use `nested_list` for records with nested fields",
            ));
        }
        if out.iter().any(|o| o.name == f.name) {
            return Err(refuse(
                &format!("{at}.name"),
                format!("{:?} is named twice", f.name),
            ));
        }
        out.push(f);
    }
    Ok(out)
}

fn field(value: &Value, path: &str, depth: usize, budget: &mut Budget) -> Result<CssField, SchemaError> {
    let Value::Object(map) = value else {
        return Err(refuse(path, "a field is an object: {\"name\", \"type\", …}"));
    };
    budget.0 += 1;
    if budget.0 > MAX_CSS_FIELDS {
        return Err(refuse(path, format!("more than {MAX_CSS_FIELDS} fields")));
    }
    if map.get("type").and_then(Value::as_str) == Some("computed") {
        return Err(refuse(
            &join(path, "type"),
            "`computed` fields run Python expressions, which are not run here: compute the value from the records",
        ));
    }
    only_keys(map, path, FIELD_KEYS)?;
    let name = required(map, path, "name", "the record's key")?;
    let type_name = required(map, path, "type", TYPES)?;
    let sel = string(map, path, "selector")?;
    if let Some(s) = &sel {
        selector(s, &join(path, "selector"))?;
    }
    let needs = |key: &str, what: &str| required(map, path, key, what);
    let nested = |plain: bool, budget: &mut Budget| {
        if depth + 1 > MAX_CSS_DEPTH {
            return Err(refuse(path, format!("nested deeper than {MAX_CSS_DEPTH} levels")));
        }
        if sel.is_none() {
            return Err(refuse(
                &join(path, "selector"),
                format!("missing: a `{type_name}` field reads the elements its selector matches"),
            ));
        }
        if !map.contains_key("fields") {
            return Err(refuse(
                &join(path, "fields"),
                "missing: the fields of each record",
            ));
        }
        fields(map.get("fields"), &join(path, "fields"), depth + 1, plain, budget)
    };
    let kind = match type_name.as_str() {
        "text" => CssFieldKind::Text,
        "html" => CssFieldKind::Html,
        "attribute" => CssFieldKind::Attribute(needs("attribute", "the attribute to read")?),
        "regex" => {
            let pattern = needs("pattern", "the pattern searched in the element's text")?;
            regex::Regex::new(&pattern)
                .map_err(|e| refuse(&join(path, "pattern"), format!("does not compile: {e}")))?;
            CssFieldKind::Regex(pattern)
        }
        "nested" => CssFieldKind::Nested(nested(false, budget)?),
        "list" => CssFieldKind::List(nested(true, budget)?),
        "nested_list" => CssFieldKind::NestedList(nested(false, budget)?),
        other => {
            return Err(refuse(
                &join(path, "type"),
                format!("unknown type {other:?} (one of {TYPES})"),
            ));
        }
    };
    for (key, used) in [
        ("attribute", matches!(kind, CssFieldKind::Attribute(_))),
        ("pattern", matches!(kind, CssFieldKind::Regex(_))),
        ("fields", kind.fields().is_some()),
    ] {
        if map.contains_key(key) && !used {
            return Err(refuse(
                &join(path, key),
                format!("a `{}` field takes no `{key}`", kind.type_name()),
            ));
        }
    }
    let transform = match string(map, path, "transform")? {
        None => None,
        Some(t) => Some(
            Transform::ALL
                .iter()
                .find(|(n, _)| *n == t)
                .map(|(_, t)| *t)
                .ok_or_else(|| {
                    refuse(
                        &join(path, "transform"),
                        format!("unknown transform {t:?} (lowercase, uppercase or strip)"),
                    )
                })?,
        ),
    };
    Ok(CssField {
        name,
        selector: sel,
        kind,
        default: map.get("default").cloned(),
        transform,
    })
}

impl CssSchema {
    /// Reads a schema from its JSON, every key checked (see the module).
    pub fn from_value(value: &Value) -> Result<Self, SchemaError> {
        let Value::Object(map) = value else {
            return Err(refuse(
                "",
                "a schema is an object: {\"baseSelector\", \"fields\", …}",
            ));
        };
        only_keys(map, "", SCHEMA_KEYS)?;
        let base_selector = required(map, "", "baseSelector", "the selector of the records' elements")?;
        selector(&base_selector, "baseSelector")?;
        if !map.contains_key("fields") && !map.contains_key("baseFields") {
            return Err(refuse("fields", "missing: the fields of each record"));
        }
        let mut budget = Budget(0);
        let base_fields = fields(map.get("baseFields"), "baseFields", 0, false, &mut budget)?;
        if let Some(f) = base_fields.iter().position(|f| f.selector.is_some()) {
            return Err(refuse(
                &format!("baseFields[{f}].selector"),
                "a base field reads the record's element itself: move it to `fields`",
            ));
        }
        let fields = fields(map.get("fields"), "fields", 0, false, &mut budget)?;
        Ok(Self {
            name: string(map, "", "name")?,
            base_selector,
            base_fields,
            fields,
        })
    }

    /// The schema's JSON, in crawl4ai's shape.
    pub fn to_value(&self) -> Value {
        let mut map = Map::new();
        if let Some(name) = &self.name {
            map.insert("name".into(), name.clone().into());
        }
        map.insert("baseSelector".into(), self.base_selector.clone().into());
        if !self.base_fields.is_empty() {
            map.insert("baseFields".into(), fields_value(&self.base_fields));
        }
        map.insert("fields".into(), fields_value(&self.fields));
        Value::Object(map)
    }
}

fn fields_value(fields: &[CssField]) -> Value {
    Value::Array(fields.iter().map(CssField::to_value).collect())
}

impl CssField {
    fn to_value(&self) -> Value {
        let mut map = Map::new();
        map.insert("name".into(), self.name.clone().into());
        if let Some(s) = &self.selector {
            map.insert("selector".into(), s.clone().into());
        }
        map.insert("type".into(), self.kind.type_name().into());
        match &self.kind {
            CssFieldKind::Attribute(a) => {
                map.insert("attribute".into(), a.clone().into());
            }
            CssFieldKind::Regex(p) => {
                map.insert("pattern".into(), p.clone().into());
            }
            CssFieldKind::Nested(f) | CssFieldKind::List(f) | CssFieldKind::NestedList(f) => {
                map.insert("fields".into(), fields_value(f));
            }
            CssFieldKind::Text | CssFieldKind::Html => {}
        }
        if let Some(d) = &self.default {
            map.insert("default".into(), d.clone());
        }
        if let Some(t) = self.transform {
            map.insert("transform".into(), t.name().into());
        }
        Value::Object(map)
    }
}

impl Serialize for CssSchema {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_value().serialize(s)
    }
}

impl<'de> Deserialize<'de> for CssSchema {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(d)?;
        CssSchema::from_value(&value).map_err(serde::de::Error::custom)
    }
}

impl schemars::JsonSchema for CssSchema {
    fn schema_name() -> Cow<'static, str> {
        "CssSchema".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let field = serde_json::json!({
            "type": "object",
            "required": ["name", "type"],
            "properties": {
                "name": {"type": "string"},
                "selector": {"type": "string"},
                "type": {"enum": ["text", "attribute", "html", "regex", "nested", "list", "nested_list"]},
                "attribute": {"type": "string"},
                "pattern": {"type": "string"},
                "fields": {"type": "array", "items": {"type": "object"}},
                "default": {},
                "transform": {"enum": ["lowercase", "uppercase", "strip"]}
            },
            "additionalProperties": false
        });
        let schema = serde_json::json!({
            "type": "object",
            "required": ["baseSelector"],
            "properties": {
                "name": {"type": "string"},
                "baseSelector": {"type": "string"},
                "baseFields": {"type": "array", "items": field},
                "fields": {"type": "array", "items": field}
            },
            "additionalProperties": false
        });
        match schema {
            Value::Object(map) => map.into(),
            _ => schemars::Schema::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn err(v: Value) -> String {
        CssSchema::from_value(&v).unwrap_err().to_string()
    }

    #[test]
    fn a_crawl4ai_schema_reads_and_writes_back_as_it_was() {
        let v = json!({
            "name": "Products",
            "baseSelector": "div.card",
            "baseFields": [{"name": "id", "type": "attribute", "attribute": "data-id"}],
            "fields": [
                {"name": "title", "selector": "h2", "type": "text", "transform": "strip"},
                {"name": "price", "selector": ".price", "type": "regex", "pattern": "([0-9.]+)", "default": "0"},
                {"name": "link", "selector": "a", "type": "attribute", "attribute": "href"},
                {"name": "maker", "selector": ".maker", "type": "nested", "fields": [
                    {"name": "name", "type": "text"}
                ]},
                {"name": "tags", "selector": "li.tag", "type": "list", "fields": [
                    {"name": "tag", "type": "text", "transform": "lowercase"}
                ]},
                {"name": "reviews", "selector": ".review", "type": "nested_list", "fields": [
                    {"name": "body", "selector": "p", "type": "html"},
                    {"name": "by", "selector": ".by", "type": "nested", "fields": [{"name": "n", "type": "text"}]}
                ]}
            ]
        });
        let schema = CssSchema::from_value(&v).unwrap();
        assert_eq!(schema.base_selector, "div.card");
        assert_eq!(schema.fields.len(), 6);
        assert_eq!(schema.to_value(), v);
        let back: CssSchema = serde_json::from_value(serde_json::to_value(&schema).unwrap()).unwrap();
        assert_eq!(back, schema);
    }

    #[test]
    fn a_bad_schema_is_refused_at_the_key_at_fault() {
        let e = err(json!({"baseSelector": "div", "fields": [
            {"name": "a", "type": "text"},
            {"name": "b", "type": "txt"}
        ]}));
        assert!(e.starts_with("fields[1].type: unknown type \"txt\""), "{e}");
        let e = err(json!({"baseSelector": "div", "fields": [
            {"name": "a", "selector": "li", "type": "nested_list", "fields": [
                {"name": "x", "selecter": "b", "type": "text"}
            ]}
        ]}));
        assert!(e.starts_with("fields[0].fields[0].selecter: unknown key"), "{e}");
        let e = err(json!({"baseSelector": "div[", "fields": []}));
        assert!(e.starts_with("baseSelector: \"div[\" is no CSS selector"), "{e}");
        let e = err(json!({"baseSelector": "div", "fields": [
            {"name": "p", "selector": ".p", "type": "regex", "pattern": "(unclosed"}
        ]}));
        assert!(e.starts_with("fields[0].pattern: does not compile"), "{e}");
        let e = err(json!({"baseSelector": "div", "fields": [{"name": "a", "type": "attribute"}]}));
        assert!(e.starts_with("fields[0].attribute: missing"), "{e}");
        let e = err(json!({"baseSelector": "div", "fields": [
            {"name": "a", "type": "computed", "expression": "price * 2"}
        ]}));
        assert!(e.contains("Python"), "{e}");
        let e = err(json!({"baseSelector": "div", "fields": [
            {"name": "a", "selector": "li", "type": "list", "fields": [
                {"name": "b", "selector": "x", "type": "nested", "fields": []}
            ]}
        ]}));
        assert!(
            e.starts_with("fields[0].fields[0].type: a `list`'s fields"),
            "{e}"
        );
        let e = err(json!({"baseSelector": "div", "fields": [
            {"name": "a", "type": "text"}, {"name": "a", "type": "html"}
        ]}));
        assert!(e.starts_with("fields[1].name: \"a\" is named twice"), "{e}");
        let e = err(json!({"fields": []}));
        assert!(e.starts_with("baseSelector: missing"), "{e}");
        let e = err(json!({"baseSelector": "div", "fields": [
            {"name": "a", "type": "nested", "fields": []}
        ]}));
        assert!(e.starts_with("fields[0].selector: missing"), "{e}");
        let e = err(json!({"baseSelector": "div", "fields": [
            {"name": "a", "type": "text", "transform": "title"}
        ]}));
        assert!(e.starts_with("fields[0].transform: unknown transform"), "{e}");
        let e = err(json!("div"));
        assert!(e.starts_with("$: a schema is an object"), "{e}");
        let e = err(json!({"baseSelector": "div", "fields": [
            {"name": "a", "type": "text", "attribute": "href"}
        ]}));
        assert!(
            e.starts_with("fields[0].attribute: a `text` field takes no `attribute`"),
            "{e}"
        );
    }

    #[test]
    fn the_fetch_spec_carries_a_schema_and_refuses_a_bad_one_by_path() {
        let spec: crate::FetchSpec = serde_json::from_value(json!({
            "url": "https://example.com/",
            "extract_css": {"baseSelector": "li", "fields": [{"name": "t", "type": "text"}]}
        }))
        .unwrap();
        assert_eq!(spec.extract_css.as_ref().unwrap().base_selector, "li");
        let err = serde_json::from_value::<crate::FetchSpec>(json!({
            "url": "https://example.com/",
            "extract_css": {"baseSelector": "li", "fields": [{"name": "t", "type": "txt"}]}
        }))
        .unwrap_err();
        assert!(err.to_string().contains("fields[0].type: unknown type"), "{err}");
    }
}
