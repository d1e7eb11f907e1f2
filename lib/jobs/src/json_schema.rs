//! The JSON Schema a model's extraction must satisfy (`extract`), checked
//! as a schema when it is read: a schema that is not valid JSON Schema,
//! or that points at another document, is refused with the path of the
//! key at fault before any page is fetched.

use std::borrow::Cow;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// The largest schema taken, serialised: it goes into every prompt.
pub const MAX_JSON_SCHEMA_BYTES: usize = 32 * 1024;

/// A JSON Schema (draft 4 to 2020-12, the draft its `$schema` names,
/// else 2020-12) whose root is an object schema or an array schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonSchema(Value);

/// Why a value is not a usable JSON Schema.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct JsonSchemaError(pub String);

impl JsonSchema {
    /// Checks `value` as a JSON Schema and keeps it.
    pub fn from_value(value: Value) -> Result<Self, JsonSchemaError> {
        let Value::Object(root) = &value else {
            return Err(JsonSchemaError(
                "a JSON Schema is an object, e.g. {\"type\": \"object\", \"properties\": {…}}".into(),
            ));
        };
        let size = serde_json::to_vec(&value).map_or(usize::MAX, |v| v.len());
        if size > MAX_JSON_SCHEMA_BYTES {
            return Err(JsonSchemaError(format!(
                "the schema is {size} bytes; at most {MAX_JSON_SCHEMA_BYTES} are taken (it goes into every prompt)"
            )));
        }
        match root.get("type") {
            Some(Value::String(t)) if t == "object" || t == "array" => {}
            Some(other) => {
                return Err(JsonSchemaError(format!(
                    "type: the root of an extraction schema is \"object\" or \"array\", not {other}"
                )));
            }
            None => {
                return Err(JsonSchemaError(
                    "type: the root of an extraction schema names its type, \"object\" or \"array\"".into(),
                ));
            }
        }
        // Compiling checks the schema against its draft's meta-schema and
        // resolves its references; a reference to another document has no
        // resolver here, so it is refused rather than fetched.
        jsonschema::validator_for(&value).map_err(|e| {
            let at = e.instance_path().to_string();
            let at = if at.is_empty() { "(root)".to_string() } else { at };
            JsonSchemaError(format!("{at}: not a valid JSON Schema: {e}"))
        })?;
        Ok(Self(value))
    }

    /// The schema's JSON.
    pub fn as_value(&self) -> &Value {
        &self.0
    }

    /// Whether the root is an array schema (the answer is a list of records).
    pub fn is_array(&self) -> bool {
        self.0.get("type").and_then(Value::as_str) == Some("array")
    }
}

impl Serialize for JsonSchema {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl<'de> Deserialize<'de> for JsonSchema {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(d)?;
        JsonSchema::from_value(value).map_err(serde::de::Error::custom)
    }
}

impl schemars::JsonSchema for JsonSchema {
    fn schema_name() -> Cow<'static, str> {
        "JsonSchema".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let schema = serde_json::json!({
            "type": "object",
            "description": "A JSON Schema whose root type is \"object\" or \"array\".",
            "required": ["type"],
            "properties": { "type": { "enum": ["object", "array"] } }
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
        JsonSchema::from_value(v).unwrap_err().0
    }

    #[test]
    fn a_product_schema_reads_and_writes_back_as_it_was() {
        let v = json!({
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "price": {"type": "number", "minimum": 0},
                "tags": {"type": "array", "items": {"type": "string"}}
            },
            "required": ["name", "price"]
        });
        let s = JsonSchema::from_value(v.clone()).unwrap();
        assert!(!s.is_array());
        assert_eq!(serde_json::to_value(&s).unwrap(), v);
        assert!(
            JsonSchema::from_value(json!({"type": "array", "items": {"type": "object"}}))
                .unwrap()
                .is_array()
        );
    }

    #[test]
    fn a_bad_schema_is_refused_at_the_key_at_fault() {
        assert!(err(json!([1])).contains("is an object"), "{}", err(json!([1])));
        assert!(err(json!({"properties": {}})).starts_with("type:"));
        assert!(err(json!({"type": "string"})).starts_with("type:"));
        let bad = err(json!({"type": "object", "properties": {"price": {"type": "money"}}}));
        assert!(bad.contains("/properties/price/type"), "{bad}");
        let bad = err(json!({"type": "object", "properties": {"n": {"minimum": "zero"}}}));
        assert!(bad.contains("/properties/n/minimum"), "{bad}");
        let remote =
            err(json!({"type": "object", "properties": {"a": {"$ref": "http://127.0.0.1:9/s.json"}}}));
        assert!(remote.contains("not a valid JSON Schema"), "{remote}");
        let big = json!({"type": "object", "description": "x".repeat(MAX_JSON_SCHEMA_BYTES)});
        assert!(err(big).contains("bytes"));
    }
}
