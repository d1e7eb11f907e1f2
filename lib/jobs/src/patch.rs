//! Some of a fetch's options, laid over a spec: the config's `[fetch]`
//! defaults and MCP's `fetch_markdown` arguments are each one. The keys are
//! [`FetchSpec`]'s own fields, their values what the job JSON takes for
//! them; which keys exist, what each takes and what it means come from
//! `FetchSpec` alone, so an option added there is a key here with nothing
//! else to change. A surface names the options it does not take, each with
//! the reason a refused key is told.

use std::sync::OnceLock;

use serde_json::{Map, Value};

use crate::FetchSpec;

/// Keys the job JSON reads under an older name, and the field they fill.
const ALIASES: &[(&str, &str)] = &[("wait_for_load_state", "wait_until")];

/// Some of [`FetchSpec`]'s fields, each checked against the field it names.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FetchPatch {
    values: Map<String, Value>,
}

/// A key or value a patch refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatchError {
    /// No fetch option has this name.
    #[error("`{key}` is no fetch option (the options: {known})")]
    Unknown {
        /// The key given.
        key: String,
        /// Every option, comma-separated.
        known: String,
    },
    /// An option this surface does not take.
    #[error("`{key}` is not taken here: {why}")]
    NotHere {
        /// The option.
        key: String,
        /// Why.
        why: String,
    },
    /// A value the option does not take.
    #[error("`{key}`: {message}")]
    Invalid {
        /// The option.
        key: String,
        /// What is wrong with its value.
        message: String,
    },
}

impl PatchError {
    /// The option the error is about.
    pub fn key(&self) -> &str {
        match self {
            Self::Unknown { key, .. } | Self::NotHere { key, .. } | Self::Invalid { key, .. } => key,
        }
    }
}

/// Every fetch option's name but `url`, in the order `FetchSpec` declares them.
pub fn option_names() -> &'static [String] {
    static NAMES: OnceLock<Vec<String>> = OnceLock::new();
    NAMES.get_or_init(|| {
        crate::schema::fetch_option_properties(&[])
            .keys()
            .cloned()
            .collect()
    })
}

/// A spec with every option at its default, for checking one value.
fn probe() -> FetchSpec {
    FetchSpec::new(url::Url::parse("https://example.invalid/").expect("a fixed URL parses"))
}

impl FetchPatch {
    /// Reads `object` (option → value), refusing a key that names no
    /// option, one of `refused` (option, why), and a value its option does
    /// not take. Older names are read as the option they became.
    pub fn from_object(object: Map<String, Value>, refused: &[(&str, &str)]) -> Result<Self, PatchError> {
        let mut values = Map::new();
        for (key, value) in object {
            let name = ALIASES
                .iter()
                .find(|(old, _)| *old == key)
                .map_or(key.as_str(), |(_, new)| new)
                .to_string();
            if !option_names().contains(&name) {
                return Err(PatchError::Unknown {
                    key,
                    known: option_names().join(", "),
                });
            }
            if let Some((_, why)) = refused.iter().find(|(r, _)| *r == name) {
                return Err(PatchError::NotHere {
                    key,
                    why: (*why).to_string(),
                });
            }
            let mut one = Self::default();
            one.values.insert(name.clone(), value.clone());
            one.apply(&mut probe()).map_err(|e| PatchError::Invalid {
                key: key.clone(),
                message: match e {
                    PatchError::Invalid { message, .. } => message,
                    other => other.to_string(),
                },
            })?;
            values.insert(name, value);
        }
        Ok(Self { values })
    }

    /// The options set, by name.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.values.keys().map(String::as_str)
    }

    /// This patch without the options `drop` says yes to.
    pub fn without(&self, drop: impl Fn(&str) -> bool) -> Self {
        Self {
            values: self
                .values
                .iter()
                .filter(|(k, _)| !drop(k))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        }
    }

    /// The options set, as the job JSON writes them.
    pub fn as_object(&self) -> &Map<String, Value> {
        &self.values
    }

    /// Sets each option of this patch on `spec`; the others keep their value.
    pub fn apply(&self, spec: &mut FetchSpec) -> Result<(), PatchError> {
        if self.values.is_empty() {
            return Ok(());
        }
        let invalid = |message: String| PatchError::Invalid {
            key: self.values.keys().cloned().collect::<Vec<_>>().join(", "),
            message,
        };
        let mut object = match serde_json::to_value(&*spec) {
            Ok(Value::Object(o)) => o,
            Ok(_) => return Err(invalid("a spec is an object".into())),
            Err(e) => return Err(invalid(e.to_string())),
        };
        for (key, value) in &self.values {
            object.insert(key.clone(), value.clone());
        }
        *spec = serde_json::from_value(Value::Object(object)).map_err(|e| invalid(e.to_string()))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::{BlockResource, Render, WaitUntil};

    fn object(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn a_patch_sets_its_options_and_keeps_the_rest() {
        let patch = FetchPatch::from_object(
            object(json!({ "timeout_ms": 5000, "render": "auto", "block_resources": ["image"], "locale": "de-DE" })),
            &[],
        )
        .unwrap();
        let mut spec = probe();
        spec.retry_count = 7;
        spec.user_agent = Some("Bot/1".into());
        patch.apply(&mut spec).unwrap();
        assert_eq!(spec.timeout_ms, 5_000);
        assert_eq!(spec.render, Render::Auto);
        assert_eq!(spec.block_resources, [BlockResource::Image]);
        assert_eq!(spec.locale.as_deref(), Some("de-DE"));
        assert_eq!(
            spec.retry_count, 7,
            "an option the patch does not set keeps its value"
        );
        assert_eq!(spec.user_agent.as_deref(), Some("Bot/1"));
        // Setting an option back to its default is setting it.
        let back = FetchPatch::from_object(object(json!({ "render": "always" })), &[]).unwrap();
        back.apply(&mut spec).unwrap();
        assert_eq!(spec.render, Render::Always);
    }

    #[test]
    fn every_option_survives_the_round_trip_a_patch_makes() {
        // Every field away from its default: a patch over it changes nothing else.
        let spec: FetchSpec = serde_json::from_value(json!({
            "url": "https://a.test/", "headless": false, "timeout_ms": 9000, "render": "never",
            "wait_until": "load", "wait_for": "#x", "wait_ms": 5, "retry_count": 0,
            "retry_delay_ms": 3, "block_resources": ["font"], "frames": "load", "content": "full",
            "include_html": true, "screenshot": true, "include": ["a"], "exclude": ["b"],
            "keep_overlays": true, "headers": { "X-A": "1" },
            "cookies": [{ "name": "s", "value": "v" }], "user_agent": "U", "locale": "fr-FR",
            "timezone": "Asia/Tokyo", "viewport": { "width": 800, "height": 600 }, "mobile": true,
            "basic_auth": { "username": "u", "password": "p" },
            "proxy": "http://u:p@127.0.0.1:3128", "formats": ["text"],
            "response_headers": ["etag"], "max_tokens": 100, "dialogs": "accept",
            "actions": ["click: button \"Go\""], "scroll": true, "max_age_ms": 60000, "link_style": "text",
            "extract_css": { "baseSelector": "li", "fields": [{ "name": "t", "type": "text" }] },
            "extract": { "type": "object" }, "extract_prompt": "Prices in euros.", "learn": true
        }))
        .unwrap();
        let mut after = spec.clone();
        FetchPatch::from_object(object(json!({ "wait_ms": 5 })), &[])
            .unwrap()
            .apply(&mut after)
            .unwrap();
        assert_eq!(after, spec);
        assert_eq!(
            serde_json::to_value(&spec).unwrap().as_object().unwrap().len(),
            option_names().len() + 1,
            "the test sets every option"
        );
    }

    #[test]
    fn unknown_refused_and_bad_keys_are_named() {
        let err = FetchPatch::from_object(object(json!({ "colour": 1 })), &[]).unwrap_err();
        assert!(
            matches!(err, PatchError::Unknown { .. }) && err.key() == "colour",
            "{err}"
        );
        assert!(
            err.to_string().contains("timeout_ms"),
            "the options are listed: {err}"
        );
        let err = FetchPatch::from_object(
            object(json!({ "headers": { "A": "b" } })),
            &[("headers", "credentials: per request")],
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "`headers` is not taken here: credentials: per request"
        );
        let err = FetchPatch::from_object(object(json!({ "render": "sometimes" })), &[]).unwrap_err();
        assert!(
            matches!(err, PatchError::Invalid { .. }) && err.key() == "render",
            "{err}"
        );
        assert!(err.to_string().contains("sometimes"), "{err}");
        assert!(FetchPatch::from_object(object(json!({ "url": "https://b.test/" })), &[]).is_err());
    }

    #[test]
    fn an_older_name_sets_the_option_it_became() {
        let patch = FetchPatch::from_object(object(json!({ "wait_for_load_state": "load" })), &[]).unwrap();
        assert_eq!(patch.keys().collect::<Vec<_>>(), ["wait_until"]);
        let mut spec = probe();
        patch.apply(&mut spec).unwrap();
        assert_eq!(spec.wait_until, WaitUntil::Load);
    }
}
