//! What an outside event may give a check's run: the deployment URL from
//! the one field a trigger allows (its origin replaces the start URL's,
//! after the URL policy allowed it), and metadata fields, bounded. Used by
//! the deploy webhooks and the Lambda worker's event routes alike.

use std::collections::BTreeMap;

use serde_json::Value;

/// Longest metadata value kept from an event.
pub const MAX_METADATA_CHARS: usize = 256;

/// The text (or number, or boolean) at the dotted path `field` of `json`
/// (`deployment_status.environment_url`, `commits.0.sha`).
pub fn field_text(json: &Value, field: &str) -> Option<String> {
    let mut at = json;
    for part in field.split('.') {
        at = match at {
            Value::Object(map) => map.get(part)?,
            Value::Array(items) => items.get(part.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    match at {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// The deployment URL at `field` of `json`: present, allowed by `policy`,
/// and http or https; the error says which and names the field.
pub fn deploy_url(
    policy: &oxwright_policy::UrlPolicy,
    json: &Value,
    field: &str,
) -> Result<url::Url, String> {
    let raw = field_text(json, field)
        .ok_or_else(|| format!("the body has no text at `{field}` (the deployment's URL)"))?;
    let url = policy
        .parse_input(&raw)
        .map_err(|e| format!("`{field}` {raw:?} refused by the URL policy: {e}"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!("`{field}` {raw:?} is not an http or https URL"));
    }
    Ok(url)
}

/// Adds each of `fields` found in `json` to `metadata`, under its path,
/// cut to [`MAX_METADATA_CHARS`].
pub fn add_metadata(metadata: &mut BTreeMap<String, String>, json: &Value, fields: &[String]) {
    for field in fields {
        if let Some(text) = field_text(json, field) {
            metadata.insert(field.clone(), text.chars().take(MAX_METADATA_CHARS).collect());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dotted_paths_reach_nested_fields_and_nothing_else() {
        let body = serde_json::json!({
            "deployment_status": {"environment_url": "https://pr-7.preview.example", "id": 42},
            "commits": [{"sha": "3f2a"}],
            "flag": true,
            "nested": {"object": {}}
        });
        let at = |f: &str| field_text(&body, f);
        assert_eq!(
            at("deployment_status.environment_url").as_deref(),
            Some("https://pr-7.preview.example")
        );
        assert_eq!(at("deployment_status.id").as_deref(), Some("42"));
        assert_eq!(at("commits.0.sha").as_deref(), Some("3f2a"));
        assert_eq!(at("flag").as_deref(), Some("true"));
        assert_eq!(at("nested.object"), None);
        assert_eq!(at("deployment_status.missing"), None);
        assert_eq!(at("commits.x.sha"), None);
    }

    #[test]
    fn a_deploy_url_must_be_there_allowed_and_on_the_web() {
        let policy = oxwright_policy::UrlPolicy::default();
        let body = serde_json::json!({"url": "https://pr-7.preview.example/x", "ftp": "ftp://a.example/", "local": "http://127.0.0.1/"});
        assert_eq!(
            deploy_url(&policy, &body, "url").unwrap().as_str(),
            "https://pr-7.preview.example/x"
        );
        assert!(
            deploy_url(&policy, &body, "none")
                .unwrap_err()
                .contains("no text at `none`")
        );
        assert!(deploy_url(&policy, &body, "ftp").is_err());
        assert!(
            deploy_url(&policy, &body, "local")
                .unwrap_err()
                .contains("URL policy")
        );
        let mut metadata = BTreeMap::new();
        let long = serde_json::json!({"sha": "a".repeat(1000)});
        add_metadata(&mut metadata, &long, &["sha".into(), "absent".into()]);
        assert_eq!(metadata["sha"].len(), MAX_METADATA_CHARS);
        assert_eq!(metadata.len(), 1);
    }
}
