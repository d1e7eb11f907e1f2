//! Raw DevTools commands: JSON in, JSON out, through the tab's deadline.
//! Raw JSON keeps the accessibility tree readable when Chromium adds roles
//! or property names the typed protocol crate does not know yet.

use std::borrow::Cow;

use crate::frame_link::Slot;
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

/// Sends `method` with `params` under the tab's call deadline. What these
/// calls change (the document, its DOM and input, isolated worlds, object
/// groups) goes with the document when the pool resets the tab, so they
/// leave the context reusable; a caller whose change outlives the reset
/// (an emulation override, an input interception left on) taints the tab
/// itself. A command Chromium answered with an error (a node of a
/// document that went away, a box of an element with no layout) leaves the
/// tab as it was and it stays reusable; a timeout or a lost connection does
/// not.
pub(crate) async fn call(tab: &Tab, method: &'static str, params: Value) -> Result<Value, BrowserError> {
    let result = tab.call_unnoted(Raw { method, params }).await;
    match result {
        Err(err @ BrowserError::Protocol { .. }) => Err(err),
        other => tab.note(other),
    }
}

/// How far up a node id the frame's slot sits: backend node ids are a
/// renderer's own counter, so a node of an out-of-process frame is named by
/// its frame's slot (`frame_link`) and its backend id together.
const SLOT_SHIFT: u32 = 40;

/// The node id of backend node `backend` of the frame in `slot`.
pub(crate) fn node_id(slot: Slot, backend: i64) -> i64 {
    (i64::from(slot) << SLOT_SHIFT) | backend
}

/// A node id's frame slot and backend node id.
pub(crate) fn split(id: i64) -> (Slot, i64) {
    let slot = Slot::try_from(id >> SLOT_SHIFT).unwrap_or(Slot::MAX);
    (slot, id & ((1 << SLOT_SHIFT) - 1))
}

/// Sends `method` to the frame in `slot` (0: the page's own session).
pub(crate) async fn call_in(
    tab: &Tab,
    slot: Slot,
    method: &'static str,
    params: Value,
) -> Result<Value, BrowserError> {
    if slot == 0 {
        return call(tab, method, params).await;
    }
    let link = tab.frame_link().await?;
    link.call(slot, method, params, tab.call_timeout()).await
}

/// Sends `method` about the node `id` to its frame, its backend node id
/// put in `params` as `backendNodeId`.
pub(crate) async fn call_node(
    tab: &Tab,
    method: &'static str,
    id: i64,
    mut params: Value,
) -> Result<Value, BrowserError> {
    let (slot, backend) = split(id);
    params["backendNodeId"] = serde_json::json!(backend);
    call_in(tab, slot, method, params).await
}

/// A remote object, in the frame that holds it.
#[derive(Debug, Clone)]
pub(crate) struct Remote {
    pub(crate) slot: Slot,
    pub(crate) id: String,
}

/// Calls `function` on the remote object `object` and returns its JSON
/// value; a thrown exception becomes an error.
pub(crate) async fn call_on(
    tab: &Tab,
    object: &Remote,
    function: &str,
    args: Vec<Value>,
) -> Result<Value, BrowserError> {
    let arguments: Vec<Value> = args
        .into_iter()
        .map(|v| serde_json::json!({ "value": v }))
        .collect();
    let out = call_in(
        tab,
        object.slot,
        "Runtime.callFunctionOn",
        serde_json::json!({
            "objectId": object.id,
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

/// Returns the remote object of the DOM node `id`.
pub(crate) async fn resolve(tab: &Tab, id: i64) -> Result<Remote, BrowserError> {
    let out = call_node(
        tab,
        "DOM.resolveNode",
        id,
        serde_json::json!({ "objectGroup": "oxwright" }),
    )
    .await?;
    let object = out["object"]["objectId"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| BrowserError::Extraction(format!("node {id} has no object")))?;
    Ok(Remote {
        slot: split(id).0,
        id: object,
    })
}

/// Where the viewport of the frame in `slot` sits in the page's viewport:
/// the content box of each `<iframe>` on the way down, added up. `None`
/// when a frame on the way left the page.
pub(crate) async fn frame_origin(tab: &Tab, slot: Slot) -> Option<(f64, f64)> {
    let (mut x, mut y) = (0.0, 0.0);
    let mut slot = slot;
    while slot != 0 {
        let frame = tab.frame_link().await.ok()?.frame(slot)?;
        let owner = call_in(
            tab,
            frame.parent,
            "DOM.getFrameOwner",
            serde_json::json!({ "frameId": frame.frame_id }),
        )
        .await
        .ok()?;
        let backend = owner["backendNodeId"].as_i64()?;
        let model = call_in(
            tab,
            frame.parent,
            "DOM.getBoxModel",
            serde_json::json!({ "backendNodeId": backend }),
        )
        .await
        .ok()?;
        let content = model["model"]["content"].as_array()?;
        x += content.first()?.as_f64()?;
        y += content.get(1)?.as_f64()?;
        slot = frame.parent;
    }
    Some((x, y))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_node_id_names_its_frame_and_its_backend_node() {
        assert_eq!(split(node_id(0, 1234)), (0, 1234));
        assert_eq!(split(node_id(3, 1234)), (3, 1234));
        assert_ne!(node_id(1, 7), node_id(2, 7));
        assert_eq!(node_id(0, 99), 99);
    }
}
