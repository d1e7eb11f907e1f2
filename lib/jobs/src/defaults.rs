//! `[fetch]`: default fetch options for the commands a person runs
//! (`fetch`, `batch`, `submit`). A flag given on the command line wins;
//! a key set here (or by `OXWRIGHT_FETCH__<KEY>`) replaces the built-in
//! default. The keys are the job JSON's (`FetchSpec`'s fields), each
//! checked against its field when the file is read: an option added to
//! `FetchSpec` is a key here with nothing else to change, unless it
//! belongs to one request only ([`NOT_IN_CONFIG`]).

use std::borrow::Cow;

use crate::{FetchPatch, FetchSpec, PatchError};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The fetch options that are no default of every request, and why.
pub const NOT_IN_CONFIG: &[(&str, &str)] = &[
    (
        "headless",
        "`--headed` on the command; `[browser]` decides for workers",
    ),
    ("wait_for", "a selector of one page"),
    ("include", "selectors of one page"),
    ("exclude", "selectors of one page"),
    ("actions", "steps on one page"),
    ("extract_css", "a schema of one page template"),
    ("extract", "a schema of one kind of page"),
    ("extract_prompt", "instructions for one schema"),
    ("learn", "goes with one schema"),
    ("headers", "credentials: per request"),
    ("cookies", "credentials: per request"),
    ("basic_auth", "credentials: per request, or OXWRIGHT_BASIC_AUTH"),
    ("proxy", "credentials: per request, or OXWRIGHT_PROXY"),
];

/// The `[fetch]` section: any fetch option but those of [`NOT_IN_CONFIG`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "Map<String, Value>", into = "Map<String, Value>")]
pub struct FetchDefaults(FetchPatch);

impl TryFrom<Map<String, Value>> for FetchDefaults {
    type Error = String;

    fn try_from(object: Map<String, Value>) -> Result<Self, String> {
        FetchPatch::from_object(object, NOT_IN_CONFIG)
            .map(Self)
            .map_err(|e| format!("[fetch] {e}"))
    }
}

impl From<FetchDefaults> for Map<String, Value> {
    fn from(d: FetchDefaults) -> Self {
        d.0.as_object().clone()
    }
}

impl schemars::JsonSchema for FetchDefaults {
    fn schema_name() -> Cow<'static, str> {
        "FetchDefaults".into()
    }

    /// `FetchSpec`'s options but those of one request, each optional.
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let mut object = Map::new();
        object.insert("type".into(), "object".into());
        object.insert(
            "properties".into(),
            Value::Object(crate::schema::fetch_option_properties(NOT_IN_CONFIG)),
        );
        object.insert("additionalProperties".into(), Value::Bool(false));
        object.insert(
            "description".into(),
            "Default fetch options of `fetch`, `batch` and `submit`: the job JSON's names; a typed flag wins.".into(),
        );
        object.into()
    }
}

impl FetchDefaults {
    /// Sets each key of this section on `spec` unless `given(key)` says
    /// its flag was typed (the flag's value is already in `spec`). Every
    /// value was checked against its field when the section was read, so
    /// an error here means the spec changed under it.
    pub fn apply(&self, spec: &mut FetchSpec, given: impl Fn(&str) -> bool) -> Result<(), PatchError> {
        self.0.without(given).apply(spec)
    }

    /// Refuses values no fetch accepts, naming the key.
    pub fn check(&self) -> Result<(), String> {
        let mut spec = FetchSpec::new("https://example.invalid/".parse().expect("a URL"));
        self.0.apply(&mut spec).map_err(|e| format!("[fetch] {e}"))?;
        spec.validate().map_err(|e| format!("[fetch] {}", e.message))
    }
}

#[cfg(test)]
mod tests {
    use crate::{BlockResource, Format, Viewport, WaitUntil};

    use super::*;

    #[test]
    fn keys_apply_unless_their_flag_was_typed() {
        let d: FetchDefaults =
            toml::from_str("timeout_ms = 5000\nwait_until = \"networkidle\"\nblock_resources = [\"image\"]\nlocale = \"de-DE\"")
                .unwrap();
        let mut spec = FetchSpec::new("https://a.test/".parse().unwrap());
        spec.timeout_ms = 9_000;
        d.apply(&mut spec, |k| k == "timeout_ms").unwrap();
        assert_eq!(spec.timeout_ms, 9_000, "a typed flag wins");
        assert_eq!(spec.wait_until, WaitUntil::Networkidle);
        assert_eq!(spec.block_resources, vec![BlockResource::Image]);
        assert_eq!(spec.locale.as_deref(), Some("de-DE"));
        let outputs: FetchDefaults = toml::from_str(
            "screenshot = true\nformats = [\"text\"]\nviewport = { width = 800, height = 600 }\nmobile = true",
        )
        .unwrap();
        outputs.apply(&mut spec, |k| k == "mobile").unwrap();
        assert!(spec.screenshot && !spec.mobile, "a typed flag wins over a key");
        assert_eq!(spec.formats, vec![Format::Text]);
        assert_eq!(
            spec.viewport,
            Some(Viewport {
                width: 800,
                height: 600
            })
        );
        let bad: FetchDefaults = toml::from_str("timeout_ms = 0").unwrap();
        assert!(bad.check().unwrap_err().contains("[fetch] "));
    }

    #[test]
    fn a_key_that_is_no_default_is_refused_with_the_reason() {
        let err = toml::from_str::<FetchDefaults>("colour = 1")
            .unwrap_err()
            .to_string();
        assert!(err.contains("[fetch] `colour` is no fetch option"), "{err}");
        let err = toml::from_str::<FetchDefaults>("headers = { A = \"b\" }")
            .unwrap_err()
            .to_string();
        assert!(err.contains("credentials: per request"), "{err}");
        let err = toml::from_str::<FetchDefaults>("render = \"sometimes\"")
            .unwrap_err()
            .to_string();
        assert!(err.contains("`render`"), "{err}");
        // What it writes back is what it read.
        let d: FetchDefaults = toml::from_str("content = \"full\"\nmax_tokens = 500").unwrap();
        let again: FetchDefaults = toml::from_str(&toml::to_string(&d).unwrap()).unwrap();
        assert_eq!(again, d);
    }
}
