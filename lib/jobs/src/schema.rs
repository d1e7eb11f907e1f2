//! JSON Schemas generated from the job types, so the HTTP API's OpenAPI
//! document and MCP's tool catalogue describe exactly what the types
//! accept: one declaration, no copy to keep in step.

use schemars::JsonSchema;
use serde_json::{Map, Value};

use crate::FetchSpec;

/// The JSON Schema (draft 2020-12, subschemas inlined, [`portable`]) of
/// `T`: an object schema without `$schema` or `title`.
pub fn schema_of<T: JsonSchema>() -> Map<String, Value> {
    let schema = schemars::generate::SchemaSettings::draft2020_12()
        .with(|s| s.inline_subschemas = true)
        .into_generator()
        .into_root_schema_for::<T>();
    let mut object = match serde_json::to_value(schema) {
        Ok(Value::Object(o)) => o,
        _ => Map::new(),
    };
    object.remove("title");
    object.remove("$schema");
    for value in object.values_mut() {
        portable(value);
    }
    object.entry("type").or_insert_with(|| "object".into());
    object
        .entry("properties")
        .or_insert_with(|| Value::Object(Map::new()));
    object
}

/// The options of a fetch: every field of [`FetchSpec`] but `url`, with its
/// type, default and description. Open to other properties, so a request
/// schema can add `url` and its own fields beside it (`allOf`); the server
/// still refuses an unknown option.
pub fn fetch_options_schema() -> Map<String, Value> {
    let mut object = schema_of::<FetchSpec>();
    if let Some(Value::Object(props)) = object.get_mut("properties") {
        props.remove("url");
    }
    if let Some(Value::Array(required)) = object.get_mut("required") {
        required.retain(|r| r != "url");
        if required.is_empty() {
            object.remove("required");
        }
    }
    object.remove("additionalProperties");
    object.insert(
        "description".into(),
        "The options of a fetch job, each at its default when left out (the manual's fetch chapter says what each does).".into(),
    );
    if let Some(Value::Object(props)) = object.get_mut("properties") {
        for (name, schema) in props.iter_mut() {
            if let Value::Object(schema) = schema
                && let Some(default) = default_of(name, schema)
            {
                schema.entry("default").or_insert(default);
            }
        }
    }
    object
}

/// The default of option `name` (schema `schema`), read off a spec with
/// every option at its default. A field not written out at its default
/// (`skip_serializing_if`, which also keeps schemars from stating it) has
/// the one value among those its type allows that is again not written
/// out when set; an option whose default is "unset" has none.
fn default_of(name: &str, schema: &Map<String, Value>) -> Option<Value> {
    if let Some(default) = schema.get("default") {
        return Some(default.clone());
    }
    let probe = FetchSpec::new(url::Url::parse("https://example.invalid/").expect("a fixed URL parses"));
    let written = |spec: &FetchSpec| serde_json::to_value(spec).ok()?.get(name).cloned();
    if let Some(value) = written(&probe) {
        return Some(value);
    }
    let mut candidates: Vec<Value> = match schema.get("type").and_then(Value::as_str) {
        Some("boolean") => vec![Value::Bool(false)],
        Some("integer" | "number") => vec![Value::from(0)],
        Some("array") => vec![Value::Array(Vec::new())],
        Some("object") => vec![Value::Object(Map::new())],
        _ => Vec::new(),
    };
    if let Some(Value::Array(values)) = schema.get("enum") {
        candidates.extend(values.iter().cloned());
    }
    candidates.into_iter().find(|candidate| {
        let mut object = match serde_json::to_value(&probe) {
            Ok(Value::Object(o)) => o,
            _ => return false,
        };
        object.insert(name.to_string(), candidate.clone());
        serde_json::from_value::<FetchSpec>(Value::Object(object)).is_ok_and(|spec| written(&spec).is_none())
    })
}

/// One job of any kind, as `POST /v1/jobs` takes it: `kind` (`fetch`,
/// `sitemap`, `workflow`) and the spec of that kind, each generated from
/// its declaration (`FetchSpec`, `SitemapSpec`, `WorkflowSpec`).
pub fn job_request_schema() -> Map<String, Value> {
    let mut object = schema_of::<crate::JobSpec>();
    // The variants say what each kind holds; the envelope adds nothing.
    object.remove("properties");
    object.insert(
        "description".into(),
        "One job: `kind` and the spec of that kind.".into(),
    );
    object
}

/// The options of a fetch ([`fetch_options_schema`]'s properties) but
/// those `refused` names (option, why), each with its schema.
pub fn fetch_option_properties(refused: &[(&str, &str)]) -> Map<String, Value> {
    match fetch_options_schema().remove("properties") {
        Some(Value::Object(mut props)) => {
            props.retain(|k, _| !refused.iter().any(|(r, _)| r == k));
            props
        }
        _ => Map::new(),
    }
}

/// Rewrites schemars' output into the JSON Schema every client takes (the
/// form Playwright MCP's schemas have): an optional field is one type left
/// out of `required`, not `type: [T, "null"]` with `default: null`
/// (Gemini's function declarations refuse type lists), and numbers carry
/// no `format` of schemars' own (`uint32`, `double`: unknown to validators
/// in strict mode); `minimum` still says what may not be negative.
pub fn portable(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            one_enum(map);
            if let Some(Value::Array(types)) = map.get("type") {
                let kept: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
                if kept.len() == 1 {
                    map.insert("type".into(), kept[0].clone());
                }
            }
            if map.get("default") == Some(&Value::Null) {
                map.remove("default");
            }
            if matches!(
                map.get("type").and_then(Value::as_str),
                Some("integer" | "number")
            ) {
                map.remove("format");
            }
            for value in map.values_mut() {
                portable(value);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(portable),
        _ => {}
    }
}

/// A choice among fixed strings, which schemars writes as `oneOf` one
/// `const` each (so each can carry its doc), as the one `enum` every client
/// takes (`oneOf` is refused by some model providers), the values' docs
/// added to the field's description.
fn one_enum(map: &mut Map<String, Value>) {
    let Some(Value::Array(choices)) = map.get("oneOf") else {
        return;
    };
    let mut values = Vec::new();
    let mut docs = Vec::new();
    for choice in choices {
        let Some(value) = choice.get("const").and_then(Value::as_str) else {
            return;
        };
        if choice.get("type").is_some_and(|t| t != "string") {
            return;
        }
        if let Some(doc) = choice.get("description").and_then(Value::as_str) {
            docs.push(format!("`{value}`: {}", doc.trim_end_matches('.')));
        }
        values.push(Value::from(value));
    }
    map.remove("oneOf");
    map.insert("type".into(), "string".into());
    map.insert("enum".into(), Value::Array(values));
    if !docs.is_empty() {
        let lead = map
            .get("description")
            .and_then(Value::as_str)
            .map(|d| format!("{} ", d.trim_end()))
            .unwrap_or_default();
        map.insert("description".into(), format!("{lead}{}.", docs.join("; ")).into());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_fetch_option_is_in_the_schema_and_url_is_not() {
        let schema = fetch_options_schema();
        let props = schema["properties"].as_object().unwrap();
        // Every key a spec writes, with every option set away from its default.
        let mut spec = FetchSpec::new("https://example.com/".parse().unwrap());
        spec.render = crate::Render::Auto;
        spec.wait_for = Some("main".into());
        spec.wait_ms = 1;
        spec.max_age_ms = 1;
        spec.actions = vec!["click: button \"More\"".into()];
        spec.headers.insert("x-a".into(), "b".into());
        let written = serde_json::to_value(&spec).unwrap();
        for key in written.as_object().unwrap().keys().filter(|k| *k != "url") {
            assert!(props.contains_key(key), "the schema lacks {key}");
        }
        assert!(!props.contains_key("url"));
        let modes: Vec<&str> = props["render"]["enum"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|m| m.as_str())
            .collect();
        assert_eq!(modes, ["always", "auto", "never"], "{}", props["render"]);
        assert_eq!(props["render"]["type"], "string");
        assert!(props["render"].get("oneOf").is_none());
        // Each value's doc is kept in the field's description.
        let doc = props["wait_until"]["description"].as_str().unwrap();
        assert!(doc.contains("`networkidle`: "), "{doc}");
        let items = &props["block_resources"]["items"];
        assert!(
            items["enum"].as_array().unwrap().contains(&"image".into()),
            "{items}"
        );
        assert_eq!(props["timeout_ms"]["type"], "integer");
        assert!(props["timeout_ms"].get("format").is_none());
        assert!(props["actions"]["description"].as_str().unwrap().contains("step"));
        assert!(schema.get("additionalProperties").is_none());
    }
}
