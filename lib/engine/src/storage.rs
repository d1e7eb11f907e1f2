//! The browser state a run carries to another browser.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Cookies and per-origin storage, as Playwright's `storageState` file
/// holds them (`cookies`, `origins[].localStorage`), plus each origin's
/// `sessionStorage`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StorageState {
    /// DevTools `Network.Cookie` objects (`name`, `value`, `domain`,
    /// `path`, `expires`, `httpOnly`, `secure`, `sameSite` …).
    pub cookies: Vec<Value>,
    /// Storage by origin.
    pub origins: Vec<OriginStorage>,
}

/// One origin's storage.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OriginStorage {
    /// `https://example.com`.
    pub origin: String,
    /// `localStorage` entries.
    pub local_storage: Vec<NameValue>,
    /// `sessionStorage` entries.
    #[serde(default)]
    pub session_storage: Vec<NameValue>,
}

/// A storage entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NameValue {
    /// The key.
    pub name: String,
    /// The value.
    pub value: String,
}

/// The largest storage-state file read (Playwright's are a few KiB).
pub const MAX_STORAGE_STATE_BYTES: usize = 4 << 20;

impl StorageState {
    /// The cookie values to clean from outputs as secrets' are, each named
    /// `cookie:NAME`: those of 8 characters or more (shorter ones, `1` or
    /// `en`, would mask ordinary text).
    pub fn secret_cookies(&self) -> impl Iterator<Item = (String, &str)> {
        self.cookies.iter().filter_map(|c| {
            let value = c.get("value").and_then(Value::as_str).filter(|v| v.len() >= 8)?;
            let name = c.get("name").and_then(Value::as_str).unwrap_or_default();
            Some((format!("cookie:{name}"), value))
        })
    }

    /// Reads a `storageState` file: one Playwright saved, or one this
    /// engine saved. Each cookie needs a `name`, a `value` and a `domain`;
    /// each origin an `http(s)` origin. Says what is wrong, and where.
    pub fn from_json(bytes: &[u8]) -> Result<Self, String> {
        if bytes.len() > MAX_STORAGE_STATE_BYTES {
            return Err(format!(
                "{} bytes, over the {} MiB a storage state may hold",
                bytes.len(),
                MAX_STORAGE_STATE_BYTES >> 20
            ));
        }
        let value: Value = serde_json::from_slice(bytes).map_err(|e| format!("not JSON: {e}"))?;
        if !value.is_object() {
            return Err("not a storage state: it is a JSON object with `cookies` and `origins`".into());
        }
        let state = Self {
            cookies: match value.get("cookies") {
                None | Some(Value::Null) => Vec::new(),
                Some(Value::Array(all)) => all.clone(),
                Some(_) => return Err("`cookies` is not a list".into()),
            },
            origins: match value.get("origins") {
                None | Some(Value::Null) => Vec::new(),
                Some(v) => serde_json::from_value(v.clone()).map_err(|e| format!("`origins`: {e}"))?,
            },
        };
        for (i, cookie) in state.cookies.iter().enumerate() {
            for key in ["name", "value", "domain"] {
                if !cookie.get(key).is_some_and(Value::is_string) {
                    return Err(format!("cookie {} has no `{key}` string", i + 1));
                }
            }
        }
        for o in &state.origins {
            let ok = url::Url::parse(&o.origin)
                .is_ok_and(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some());
            if !ok {
                return Err(format!("origin `{}` is not an http(s) origin", o.origin));
            }
        }
        Ok(state)
    }

    /// Reads the `storageState` file at `path` (at most
    /// [`MAX_STORAGE_STATE_BYTES`] read) and checks it as
    /// [`StorageState::from_json`] does; returns the state and the file's
    /// bytes (what a sealed copy seals). The one reader of saved logins:
    /// an error starts with the path.
    pub fn read_file(path: &std::path::Path) -> Result<(Self, Vec<u8>), String> {
        use std::io::Read as _;
        let mut bytes = Vec::new();
        std::fs::File::open(path)
            .and_then(|f| f.take(MAX_STORAGE_STATE_BYTES as u64 + 1).read_to_end(&mut bytes))
            .map_err(|e| format!("{}: cannot be read: {e}", path.display()))?;
        let state = Self::from_json(&bytes).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok((state, bytes))
    }

    /// The state as Playwright's `storageState` file holds it, so that
    /// Playwright loads it: each cookie's `name`, `value`, `domain`,
    /// `path`, `expires` (-1 for a session cookie), `httpOnly`, `secure`
    /// and `sameSite`, and each origin's `localStorage` (its
    /// `sessionStorage` too when it has one, which Playwright ignores).
    pub fn to_file_json(&self) -> Value {
        let cookies: Vec<Value> = self
            .cookies
            .iter()
            .map(|c| {
                let session = c.get("session").and_then(Value::as_bool).unwrap_or(false);
                let expires = c
                    .get("expires")
                    .and_then(Value::as_f64)
                    .filter(|e| !session && *e > 0.0)
                    .unwrap_or(-1.0);
                // Whole seconds as an integer, as Playwright writes -1.
                let expires = if expires.fract() == 0.0 && expires.abs() < 1e15 {
                    serde_json::json!(expires as i64)
                } else {
                    serde_json::json!(expires)
                };
                let text =
                    |k: &str, default: &str| c.get(k).and_then(Value::as_str).unwrap_or(default).to_string();
                serde_json::json!({
                    "name": text("name", ""),
                    "value": text("value", ""),
                    "domain": text("domain", ""),
                    "path": text("path", "/"),
                    "expires": expires,
                    "httpOnly": c.get("httpOnly").and_then(Value::as_bool).unwrap_or(false),
                    "secure": c.get("secure").and_then(Value::as_bool).unwrap_or(false),
                    "sameSite": text("sameSite", "Lax"),
                })
            })
            .collect();
        let origins: Vec<Value> = self
            .origins
            .iter()
            .map(|o| {
                let mut out = serde_json::json!({ "origin": o.origin, "localStorage": o.local_storage });
                if !o.session_storage.is_empty() {
                    out["sessionStorage"] = serde_json::json!(o.session_storage);
                }
                out
            })
            .collect();
        serde_json::json!({ "cookies": cookies, "origins": origins })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_playwright_file_reads_and_writes_back_in_its_shape() {
        let file = json!({
            "cookies": [{"name": "sid", "value": "abc", "domain": "127.0.0.1", "path": "/", "expires": -1,
                         "httpOnly": true, "secure": false, "sameSite": "Lax"}],
            "origins": [{"origin": "http://127.0.0.1:8080", "localStorage": [{"name": "theme", "value": "dark"}]}]
        });
        let state = StorageState::from_json(file.to_string().as_bytes()).unwrap();
        assert_eq!(state.cookies.len(), 1);
        assert_eq!(state.origins[0].local_storage[0].value, "dark");
        assert_eq!(state.to_file_json(), file);
    }

    #[test]
    fn a_devtools_cookie_is_written_as_playwright_writes_one() {
        let state = StorageState {
            cookies: vec![
                json!({"name": "k", "value": "v", "domain": "a.test", "path": "/x", "expires": -1,
                                  "session": true, "size": 2, "priority": "Medium", "sourcePort": 80}),
            ],
            origins: Vec::new(),
        };
        let out = state.to_file_json();
        assert_eq!(
            out["cookies"][0],
            json!({"name": "k", "value": "v", "domain": "a.test", "path": "/x", "expires": -1,
                   "httpOnly": false, "secure": false, "sameSite": "Lax"})
        );
    }

    #[test]
    fn long_cookie_values_are_secrets_and_short_ones_are_not() {
        let state = StorageState {
            cookies: vec![
                json!({"name": "sid", "value": "s3ss10n-t0ken", "domain": "a.test"}),
                json!({"name": "lang", "value": "en", "domain": "a.test"}),
            ],
            origins: Vec::new(),
        };
        let secrets: Vec<(String, &str)> = state.secret_cookies().collect();
        assert_eq!(secrets, vec![("cookie:sid".to_string(), "s3ss10n-t0ken")]);
    }

    #[test]
    fn what_is_not_a_storage_state_is_refused_saying_where() {
        let bad = |text: &str| StorageState::from_json(text.as_bytes()).unwrap_err();
        assert!(bad("[]").contains("JSON object"));
        assert!(bad("{").contains("not JSON"));
        assert!(bad(r#"{"cookies": {}}"#).contains("not a list"));
        assert!(bad(r#"{"cookies": [{"name": "a", "value": "b"}]}"#).contains("cookie 1 has no `domain`"));
        assert!(bad(r#"{"origins": [{"origin": "file:///x", "localStorage": []}]}"#).contains("file:///x"));
        assert!(bad(r#"{"origins": [{"localStorage": []}]}"#).contains("origins"));
        assert_eq!(StorageState::from_json(b"{}").unwrap(), StorageState::default());
    }
}
