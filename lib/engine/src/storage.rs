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
