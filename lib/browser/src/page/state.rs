//! The browser state a workflow carries to another browser: every cookie
//! of the page's context and the storage of its origin, exported and
//! restored through DevTools.

use std::time::Duration;

use oxwright_engine::{EngineError, EngineErrorKind, OriginStorage, StorageState};
use serde_json::{Value, json};

use super::raw;
use crate::Tab;

/// Reads the origin and both storages of the page's main frame; an opaque
/// origin (`about:blank`, `data:`) or a storage the page may not touch
/// gives no entry.
const READ_STORAGE: &str = r#"(() => {
  try {
    if (!location.origin || location.origin === "null") return null;
    const all = (s) => { const out = []; for (let i = 0; i < s.length; i++) { const k = s.key(i); out.push({ name: k, value: s.getItem(k) }); } return out; };
    return { origin: location.origin, localStorage: all(localStorage), sessionStorage: all(sessionStorage) };
  } catch (e) { return null; }
})()"#;

/// Every cookie of the page's context, and its origin's storage.
pub(crate) async fn export(tab: &Tab) -> Result<StorageState, EngineError> {
    let cookies = raw::call(tab, "Network.getAllCookies", json!({}))
        .await
        .map_err(|e| failed("reading the cookies", e))?;
    let cookies = cookies
        .get("cookies")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let storage = tab
        .evaluate(READ_STORAGE, Duration::from_secs(5))
        .await
        .map_err(|e| failed("reading the storage", e))?;
    let origins = match serde_json::from_value::<Option<OriginStorage>>(storage) {
        Ok(Some(o)) => vec![o],
        _ => Vec::new(),
    };
    Ok(StorageState { cookies, origins })
}

/// What `Network.setCookies` takes of an exported cookie: a session cookie
/// (`session: true`, `expires: -1`) gets no expiry.
fn cookie_param(c: &Value) -> Option<Value> {
    let mut out = serde_json::Map::new();
    for key in [
        "name",
        "value",
        "domain",
        "path",
        "secure",
        "httpOnly",
        "sameSite",
        "priority",
        "sourceScheme",
        "partitionKey",
    ] {
        if let Some(v) = c.get(key).filter(|v| !v.is_null()) {
            out.insert(key.into(), v.clone());
        }
    }
    let session = c.get("session").and_then(Value::as_bool).unwrap_or(false);
    if let Some(exp) = c
        .get("expires")
        .and_then(Value::as_f64)
        .filter(|e| !session && *e > 0.0)
    {
        out.insert("expires".into(), json!(exp));
    }
    (out.contains_key("name") && out.contains_key("value") && out.contains_key("domain"))
        .then_some(Value::Object(out))
}

/// The script that writes each origin's storage into the top frame of that
/// origin before the page's own scripts run.
fn write_storage(origins: &[OriginStorage]) -> String {
    let data = serde_json::to_string(origins).unwrap_or_else(|_| "[]".into());
    format!(
        r#"(() => {{
  try {{
    if (window !== window.top) return;
    for (const o of {data}) {{
      if (o.origin !== location.origin) continue;
      for (const e of o.localStorage || []) localStorage.setItem(e.name, e.value);
      for (const e of o.sessionStorage || []) sessionStorage.setItem(e.name, e.value);
    }}
  }} catch (e) {{}}
}})()"#
    )
}

/// Sets `state`'s cookies in the page's context and registers the script
/// that writes its storage; returns the script's identifier, to remove
/// once the page is open.
pub(crate) async fn prepare(tab: &Tab, state: &StorageState) -> Result<Option<String>, EngineError> {
    let cookies: Vec<Value> = state.cookies.iter().filter_map(cookie_param).collect();
    if !cookies.is_empty() {
        raw::call(tab, "Network.setCookies", json!({ "cookies": cookies }))
            .await
            .map_err(|e| failed("restoring the cookies", e))?;
    }
    let has_storage = state
        .origins
        .iter()
        .any(|o| !o.local_storage.is_empty() || !o.session_storage.is_empty());
    if !has_storage {
        return Ok(None);
    }
    let added = raw::call(
        tab,
        "Page.addScriptToEvaluateOnNewDocument",
        json!({ "source": write_storage(&state.origins) }),
    )
    .await
    .map_err(|e| failed("restoring the storage", e))?;
    Ok(added.get("identifier").and_then(Value::as_str).map(str::to_owned))
}

/// Removes the storage script, so later documents keep what the page
/// itself stores.
pub(crate) async fn forget(tab: &Tab, identifier: &str) {
    if let Err(e) = raw::call(
        tab,
        "Page.removeScriptToEvaluateOnNewDocument",
        json!({ "identifier": identifier }),
    )
    .await
    {
        tracing::debug!(error = %e, "removing the storage script failed");
    }
}

fn failed(what: &str, err: impl std::fmt::Display) -> EngineError {
    EngineError::new(EngineErrorKind::Protocol, format!("{what}: {err}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxwright_engine::NameValue;

    #[test]
    fn session_cookies_get_no_expiry_and_incomplete_ones_are_left_out() {
        let session = json!({"name":"sid","value":"v","domain":"a.test","path":"/","expires":-1,"session":true,"size":4});
        let p = cookie_param(&session).unwrap();
        assert!(p.get("expires").is_none() && p.get("size").is_none(), "{p}");
        let lasting = json!({"name":"k","value":"v","domain":"a.test","expires":2e9,"session":false});
        assert_eq!(cookie_param(&lasting).unwrap()["expires"], json!(2e9));
        assert!(cookie_param(&json!({"name":"k","value":"v"})).is_none());
    }

    #[test]
    fn the_storage_script_quotes_what_it_writes() {
        let o = OriginStorage {
            origin: "http://a.test".into(),
            local_storage: vec![NameValue {
                name: "k\"</script>".into(),
                value: "line\nbreak".into(),
            }],
            session_storage: Vec::new(),
        };
        let script = write_storage(&[o]);
        assert!(script.contains(r#""name":"k\"</script>""#), "{script}");
        assert!(script.contains(r#"line\nbreak"#));
    }
}
