//! Learned extraction: the model reads one page of a template into the
//! JSON Schema, then writes the CSS schema that reads the same value out
//! of that page's HTML; the CSS schema is kept in the artefact store
//! under the site's URL pattern (shared by every worker), and the next
//! pages of the pattern are read by its selectors with no model call.
//! A page the kept schemas read wrongly (the value does not fit the JSON
//! Schema, or a required field comes back empty) is read by the model
//! again and a schema is learned for its template beside the others.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use bytes::Bytes;
use oxwright_artifacts::{ArtifactError, ArtifactStore};
use oxwright_jobs::{CssSchema, ErrorKind, Extraction, ExtractionMethod, FetchResult, FetchSpec, JobError};
use oxwright_llm::{ChatModel, Message};
use serde_json::{Map, Value, json};

use crate::llm::{LlmCost, LlmRequest, extract_llm};

/// The most CSS schemas kept for one URL pattern (one per template seen).
pub const MAX_TEMPLATES: usize = 4;

/// The most calls to write one CSS schema.
const LEARN_CALLS: u32 = 3;

/// The most characters of a page's HTML shown to the model.
const HTML_CHARS: usize = 40_000;

/// The CSS schemas kept for one URL pattern, newest first.
#[derive(Debug, Clone, Default, PartialEq)]
struct Kept {
    schemas: Vec<Value>,
}

impl Kept {
    fn from_bytes(body: &[u8]) -> Self {
        let value: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
        let schemas = value
            .get("schemas")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        Self { schemas }
    }

    fn to_bytes(&self, pattern: &str) -> Bytes {
        let body = json!({ "pattern": pattern, "schemas": self.schemas });
        Bytes::from(serde_json::to_vec_pretty(&body).unwrap_or_default())
    }
}

/// The URL pattern a page's template is known by: its host and its path
/// with every segment that holds a digit, and the last segment, as `*`
/// (`shop.example/p/*`, `shop.example/kettles/*`).
pub fn site_pattern(url: &str) -> String {
    let Ok(url) = url::Url::parse(url) else {
        return String::new();
    };
    let host = url.host_str().unwrap_or_default().to_ascii_lowercase();
    let port = url.port().map_or_else(String::new, |p| format!(":{p}"));
    let segments: Vec<&str> = url
        .path_segments()
        .map(|s| s.filter(|s| !s.is_empty()).collect())
        .unwrap_or_default();
    let last = segments.len().saturating_sub(1);
    let path: Vec<&str> = segments
        .iter()
        .enumerate()
        .map(|(i, s)| {
            if i == last || s.bytes().any(|b| b.is_ascii_digit()) {
                "*"
            } else {
                s
            }
        })
        .collect();
    format!("{host}{port}/{}", path.join("/"))
}

/// The store key of the schemas kept for `pattern` under `schema`.
pub fn kept_key(schema: &Value, pattern: &str) -> String {
    let schema_id = short_hash(&serde_json::to_vec(schema).unwrap_or_default());
    let host: String = pattern
        .split('/')
        .next()
        .unwrap_or_default()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!(
        "extract/learned/{schema_id}/{host}/{}.json",
        short_hash(pattern.as_bytes())
    )
}

fn short_hash(bytes: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(&sha2::Sha256::digest(bytes)[..8])
}

/// One learning at a time per key in this process: pages of a pattern
/// that arrive together wait for the first to learn, then use its schema.
fn key_lock(key: &str) -> Arc<tokio::sync::Mutex<()>> {
    static LOCKS: OnceLock<Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>> = OnceLock::new();
    let mut locks = LOCKS.get_or_init(Default::default).lock().expect("learn locks");
    if locks.len() > 10_000 {
        locks.retain(|_, l| Arc::strong_count(l) > 1);
    }
    locks.entry(key.to_string()).or_default().clone()
}

/// Reads `spec.extract` out of the page by a kept CSS schema when one
/// reads it rightly, else through the model, learning a CSS schema from
/// that reading for the pages after it. `html` is the page's whole HTML.
pub async fn fill_learned(
    model: Result<&dyn ChatModel, JobError>,
    store: &dyn ArtifactStore,
    spec: &FetchSpec,
    html: &str,
    result: &mut FetchResult,
) -> Result<(), JobError> {
    let Some(schema) = &spec.extract else {
        return Ok(());
    };
    let schema = schema.as_value();
    let pattern = site_pattern(&result.final_url);
    let key = kept_key(schema, &pattern);
    let full = jsonschema::validator_for(schema)
        .map_err(|e| JobError::new(ErrorKind::InvalidInput, format!("extract: {e}")))?;
    let kept = read_kept(store, &key).await?;
    if let Some(value) = read_by_kept(&kept, schema, &full, html) {
        result.extract = Some(value);
        result.extraction = Some(learned(&key));
        return Ok(());
    }
    let lock = key_lock(&key);
    let _learning = lock.lock().await;
    // Another page of the pattern may have learned while this one waited.
    let kept = read_kept(store, &key).await?;
    if let Some(value) = read_by_kept(&kept, schema, &full, html) {
        result.extract = Some(value);
        result.extraction = Some(learned(&key));
        return Ok(());
    }
    let model = model?;
    let req = LlmRequest {
        schema,
        prompt: spec.extract_prompt.as_deref(),
        url: &result.final_url,
        markdown: &result.markdown,
    };
    let read = extract_llm(model, req).await.map_err(crate::llm::job_error)?;
    let mut cost = read.cost;
    let learnt = learn(model, schema, &full, html, &read.value, &mut cost).await;
    let mut extraction = crate::llm::llm_extraction(cost);
    match learnt {
        Ok(css) => {
            let mut kept = kept;
            kept.schemas.insert(0, css);
            kept.schemas.truncate(MAX_TEMPLATES);
            store
                .put(&key, kept.to_bytes(&pattern), "application/json")
                .await
                .map_err(|e| store_error(&e))?;
            extraction.learned_schema = Some(key);
        }
        Err(why) => result
            .warnings
            .push(format!("extract: no CSS schema was learned for {pattern}: {why}")),
    }
    result.extract = Some(read.value);
    result.extraction = Some(extraction);
    Ok(())
}

/// Reads `spec.extract` (when asked) into `result`: by learned selectors
/// when `spec.learn` and the page's `html` is at hand (a cached result
/// has none), else through the model.
pub async fn fill(
    model: Result<&dyn ChatModel, JobError>,
    store: &dyn ArtifactStore,
    spec: &FetchSpec,
    html: Option<&str>,
    result: &mut FetchResult,
) -> Result<(), JobError> {
    match html.filter(|_| spec.learn) {
        Some(html) => fill_learned(model, store, spec, html, result).await,
        None => crate::llm::fill_result(model, spec, result).await,
    }
}

fn learned(key: &str) -> Extraction {
    Extraction {
        method: ExtractionMethod::Learned,
        learned_schema: Some(key.to_string()),
        ..Extraction::css()
    }
}

fn store_error(err: &ArtifactError) -> JobError {
    let kind = if err.is_retryable() {
        ErrorKind::Storage
    } else {
        ErrorKind::Internal
    };
    JobError::new(kind, format!("learned schemas: {err}"))
}

async fn read_kept(store: &dyn ArtifactStore, key: &str) -> Result<Kept, JobError> {
    match store.get(key).await {
        Ok(body) => Ok(Kept::from_bytes(&body)),
        Err(ArtifactError::NotFound { .. }) => Ok(Kept::default()),
        Err(e) => Err(store_error(&e)),
    }
}

/// The value the first kept schema that reads the page rightly gives.
fn read_by_kept(kept: &Kept, schema: &Value, full: &jsonschema::Validator, html: &str) -> Option<Value> {
    kept.schemas.iter().find_map(|css| {
        let css = CssSchema::from_value(css).ok()?;
        let value = read_by_css(&css, schema, html);
        sound(schema, full, &value).then_some(value)
    })
}

/// The value `css` reads out of `html`, shaped and typed by `schema`: an
/// object schema takes the first record, an array schema all of them.
pub fn read_by_css(css: &CssSchema, schema: &Value, html: &str) -> Value {
    let records = crate::extract_css(css, html).records;
    let shaped = if schema.get("type").and_then(Value::as_str) == Some("array") {
        Value::Array(records)
    } else {
        records.into_iter().next().unwrap_or(Value::Object(Map::new()))
    };
    coerce(shaped, schema)
}

/// Whether `value` fits the schema with no required field empty.
fn sound(schema: &Value, full: &jsonschema::Validator, value: &Value) -> bool {
    full.is_valid(value) && !required_empty(schema, value)
}

/// Whether a field the schema requires is an empty string, list or object.
fn required_empty(schema: &Value, value: &Value) -> bool {
    match value {
        Value::Object(map) => {
            let required = schema.get("required").and_then(Value::as_array);
            let empty = |v: &Value| match v {
                Value::String(s) => s.trim().is_empty(),
                Value::Array(a) => a.is_empty(),
                Value::Object(o) => o.is_empty(),
                _ => false,
            };
            if required
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .any(|k| map.get(k).is_some_and(empty))
            {
                return true;
            }
            let props = schema.get("properties").and_then(Value::as_object);
            map.iter()
                .any(|(k, v)| props.and_then(|p| p.get(k)).is_some_and(|s| required_empty(s, v)))
        }
        Value::Array(items) => schema
            .get("items")
            .is_some_and(|s| items.iter().any(|v| required_empty(s, v))),
        _ => false,
    }
}

/// Turns the strings selectors read into the types `schema` names:
/// numbers (`$1,299.00` reads 1299), integers, booleans; a string that
/// does not read as its type is left as it is (and fails the schema).
pub fn coerce(value: Value, schema: &Value) -> Value {
    let kind = schema.get("type").and_then(|t| match t {
        Value::String(s) => Some(s.as_str()),
        Value::Array(a) => a.iter().filter_map(Value::as_str).find(|t| *t != "null"),
        _ => None,
    });
    match (value, kind) {
        (Value::String(s), Some("number")) => number(&s)
            .and_then(|n| serde_json::Number::from_f64(n).map(Value::Number))
            .unwrap_or(Value::String(s)),
        (Value::String(s), Some("integer")) => number(&s)
            .filter(|n| n.fract() == 0.0 && n.abs() < 9.0e15)
            .map(|n| Value::from(n as i64))
            .unwrap_or(Value::String(s)),
        (Value::String(s), Some("boolean")) => match s.trim().to_ascii_lowercase().as_str() {
            "true" | "yes" | "1" => Value::Bool(true),
            "false" | "no" | "0" => Value::Bool(false),
            _ => Value::String(s),
        },
        (Value::Array(items), _) => {
            let item = schema.get("items").cloned().unwrap_or(Value::Null);
            Value::Array(items.into_iter().map(|v| coerce(v, &item)).collect())
        }
        (Value::Object(map), _) => {
            let props = schema.get("properties");
            Value::Object(
                map.into_iter()
                    .map(|(k, v)| {
                        let s = props.and_then(|p| p.get(&k)).cloned().unwrap_or(Value::Null);
                        let v = coerce(v, &s);
                        (k, v)
                    })
                    .collect(),
            )
        }
        (other, _) => other,
    }
}

/// The number a price or count is written as: digits with `.` as the
/// decimal point, `,` grouping thousands, any currency or unit around.
fn number(text: &str) -> Option<f64> {
    let start = text.find(|c: char| c.is_ascii_digit() || c == '-')?;
    let body: String = text[start..]
        .chars()
        .take_while(|c| c.is_ascii_digit() || matches!(c, '.' | ',' | '-'))
        .filter(|c| *c != ',')
        .collect();
    body.parse().ok()
}

/// Whether two readings say the same: strings alike but for whitespace
/// and case, numbers equal, lists item by item, objects on the model's
/// keys (a key with null on one side and missing on the other agrees).
pub fn agree(model: &Value, css: &Value) -> bool {
    match (model, css) {
        (Value::String(a), Value::String(b)) => norm(a) == norm(b),
        (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
        (Value::Array(a), Value::Array(b)) => a.len() == b.len() && a.iter().zip(b).all(|(x, y)| agree(x, y)),
        (Value::Object(a), Value::Object(b)) => {
            a.iter()
                .filter(|(_, v)| !v.is_null())
                .all(|(k, v)| b.get(k).is_some_and(|w| agree(v, w)))
                && b.iter()
                    .filter(|(_, v)| !v.is_null())
                    .all(|(k, _)| a.contains_key(k))
        }
        (a, b) => a == b,
    }
}

fn norm(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase()
}

/// Has the model write a CSS schema that reads `expected` out of `html`.
async fn learn(
    model: &dyn ChatModel,
    schema: &Value,
    full: &jsonschema::Validator,
    html: &str,
    expected: &Value,
    cost: &mut LlmCost,
) -> Result<Value, String> {
    let mut messages = vec![
        Message::system(LEARN_SYSTEM),
        Message::user(format!(
            "JSON Schema of the value:\n{}\n\nThe value this page gives:\n{}\n\nThe page's HTML:\n{}",
            serde_json::to_string(schema).unwrap_or_default(),
            serde_json::to_string(expected).unwrap_or_default(),
            clean_html(html)
        )),
    ];
    let mut why = String::new();
    for call in 1..=LEARN_CALLS {
        let answer = model
            .chat(&messages, 2_048)
            .await
            .map_err(|e| format!("the LLM endpoint failed: {e}"))?;
        cost.calls += 1;
        cost.prompt_tokens += answer.usage.prompt_tokens;
        cost.completion_tokens += answer.usage.completion_tokens;
        why = match oxwright_llm::extract_json_object(&answer.text) {
            Err(_) => "the answer holds no JSON object".to_string(),
            Ok(value) => match CssSchema::from_value(&value) {
                Err(e) => format!("not a valid CSS schema: {e}"),
                Ok(css) => {
                    let read = read_by_css(&css, schema, html);
                    if !sound(schema, full, &read) {
                        format!(
                            "its value does not fit the JSON Schema or leaves a required field empty: {}",
                            cut(&read.to_string())
                        )
                    } else if !agree(expected, &read) {
                        format!("it reads {} rather than the value given", cut(&read.to_string()))
                    } else {
                        return Ok(value);
                    }
                }
            },
        };
        if call < LEARN_CALLS {
            messages.push(Message {
                role: "assistant".into(),
                content: answer.text,
            });
            messages.push(Message::user(format!(
                "That schema does not work: {why}. Answer again with the whole corrected schema only."
            )));
        }
    }
    Err(format!(
        "{LEARN_CALLS} schemas written, none reads the page rightly; the last: {why}"
    ))
}

fn cut(s: &str) -> String {
    let mut out: String = s.chars().take(400).collect();
    if out.len() < s.len() {
        out.push('…');
    }
    out
}

const LEARN_SYSTEM: &str = "You write CSS extraction schemas. Given a page's HTML and the value it gives, \
answer with one JSON object, nothing else, in this shape: {\"name\": \"…\", \"baseSelector\": \"CSS selector of \
each record's element (the one element holding the whole value when the value is one object)\", \"fields\": \
[{\"name\": \"property\", \"selector\": \"CSS selector inside the record\", \"type\": \"text\"}]}. Field types: \
text; attribute (with \"attribute\"); html; regex (with \"pattern\", a Rust regex whose first group is the value); \
nested (with \"fields\", one object); list (with \"fields\", a list of objects); nested_list. Prefer stable \
selectors (ids, semantic classes, data attributes, itemprop) over positions, so the schema reads every page of \
this template. Numbers may be read as text: they are converted.";

/// The page's HTML with scripts, styles and comments left out and
/// whitespace collapsed, cut to [`HTML_CHARS`] characters.
fn clean_html(html: &str) -> String {
    let doc = dom_query::Document::from(html);
    doc.select("script, style, noscript, template, svg, link, meta")
        .remove();
    let text = doc.select("body").html().to_string();
    let text = if text.is_empty() {
        doc.html().to_string()
    } else {
        text
    };
    let collapsed = text.split_whitespace().collect::<Vec<_>>().join(" ");
    collapsed.chars().take(HTML_CHARS).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pattern_stands_for_a_template() {
        assert_eq!(site_pattern("https://Shop.example/p/123?x=1"), "shop.example/p/*");
        assert_eq!(
            site_pattern("http://127.0.0.1:8080/shop/p/k-100"),
            "127.0.0.1:8080/shop/p/*"
        );
        assert_eq!(site_pattern("https://a.example/2024/05/post"), "a.example/*/*/*");
        assert_eq!(site_pattern("https://a.example/"), "a.example/");
    }

    #[test]
    fn strings_take_the_schema_types() {
        let schema = json!({"type": "object", "properties": {
            "price": {"type": "number"}, "stock": {"type": "integer"}, "sale": {"type": "boolean"},
            "sizes": {"type": "array", "items": {"type": "integer"}}
        }});
        let v = coerce(
            json!({"price": "$1,299.50", "stock": "12 left", "sale": "Yes", "sizes": ["38", "40"], "x": "7"}),
            &schema,
        );
        assert_eq!(
            v,
            json!({"price": 1299.5, "stock": 12, "sale": true, "sizes": [38, 40], "x": "7"})
        );
        assert_eq!(
            coerce(json!("call us"), &json!({"type": "number"})),
            json!("call us")
        );
    }

    #[test]
    fn readings_agree_but_for_whitespace_and_case() {
        assert!(agree(
            &json!({"n": "Blue  Kettle", "p": 24.5, "t": null}),
            &json!({"n": "blue kettle", "p": 24.5})
        ));
        assert!(!agree(&json!({"n": "Kettle"}), &json!({"n": "Kettle", "p": 3})));
        assert!(!agree(&json!([1, 2]), &json!([1])));
    }
}
