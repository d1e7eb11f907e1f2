//! Raw DevTools commands: JSON in, JSON out, through the tab's deadline.
//! Raw JSON keeps the accessibility tree readable when Chromium adds roles
//! or property names the typed protocol crate does not know yet.

use std::borrow::Cow;

use crate::{BrowserError, Tab};
use chromiumoxide::types::{Command, Method, MethodId};
use serde::Serialize;
use serde_json::Value;

/// One DevTools command with untyped parameters and response.
#[derive(Debug, Clone)]
pub(crate) struct Raw {
    method: &'static str,
    params: Value,
}

impl Serialize for Raw {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.params.serialize(s)
    }
}

impl Method for Raw {
    fn identifier(&self) -> MethodId {
        Cow::Borrowed(self.method)
    }
}

impl Command for Raw {
    type Response = Value;
}

/// Sends `method` with `params` under the tab's call deadline.
pub(crate) async fn call(tab: &Tab, method: &'static str, params: Value) -> Result<Value, BrowserError> {
    tab.call(Raw { method, params }).await
}

/// Calls `function` on the remote object `object_id` and returns its JSON
/// value; a thrown exception becomes an error.
pub(crate) async fn call_on(
    tab: &Tab,
    object_id: &str,
    function: &str,
    args: Vec<Value>,
) -> Result<Value, BrowserError> {
    let arguments: Vec<Value> = args
        .into_iter()
        .map(|v| serde_json::json!({ "value": v }))
        .collect();
    let out = call(
        tab,
        "Runtime.callFunctionOn",
        serde_json::json!({
            "objectId": object_id,
            "functionDeclaration": function,
            "arguments": arguments,
            "returnByValue": true,
            "awaitPromise": true,
        }),
    )
    .await?;
    if let Some(ex) = out.get("exceptionDetails") {
        let text = ex["exception"]["description"]
            .as_str()
            .or_else(|| ex["text"].as_str())
            .unwrap_or("exception")
            .to_string();
        return Err(BrowserError::Extraction(format!("page script failed: {text}")));
    }
    Ok(out["result"]["value"].clone())
}

/// Returns a remote object id for the DOM node `backend`.
pub(crate) async fn resolve(tab: &Tab, backend: i64) -> Result<String, BrowserError> {
    let out = call(
        tab,
        "DOM.resolveNode",
        serde_json::json!({ "backendNodeId": backend, "objectGroup": "oxwright" }),
    )
    .await?;
    out["object"]["objectId"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| BrowserError::Extraction(format!("node {backend} has no object")))
}
