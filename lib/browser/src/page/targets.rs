//! Finding the DOM nodes a step targets: a page script run in the main
//! world and in an isolated world of every frame of another origin, the
//! backend nodes a locator matches, and a ref or locator resolved to one.

use serde_json::json;

use super::*;
use crate::frame_link::Slot;

impl ChromiumPage {
    pub(super) async fn script_targets(&self, script: &str) -> Result<Vec<i64>, EngineError> {
        let mut targets = self.script_targets_in(script, 0, None).await?;
        // The script walks same-origin frames itself; a frame of another
        // origin is closed to it, so it runs again inside each such frame,
        // and inside each frame another process renders.
        for (slot, context) in self.cross_origin_frame_contexts().await {
            for id in self.script_targets_in(script, slot, Some(context)).await? {
                if !targets.contains(&id) {
                    targets.push(id);
                }
            }
        }
        Ok(targets)
    }

    /// Execution contexts (isolated worlds) of the frames whose origin is
    /// not the main frame's, in frame-tree order, and of every frame an
    /// other process renders (with the frames of other origins inside it),
    /// each with its frame's slot.
    pub(super) async fn cross_origin_frame_contexts(&self) -> Vec<(Slot, i64)> {
        let tab = &*self.lease;
        let mut slots = vec![0];
        slots.extend(tab.frame_slots().await.into_iter().map(|(slot, _)| slot));
        let mut contexts = Vec::new();
        for slot in slots {
            let Ok(tree) = raw::call_in(tab, slot, "Page.getFrameTree", json!({})).await else {
                continue;
            };
            for frame in frames_of_other_origins(&tree, slot != 0) {
                let world = raw::call_in(
                    tab,
                    slot,
                    "Page.createIsolatedWorld",
                    json!({ "frameId": frame, "worldName": "oxwright-locate" }),
                )
                .await;
                if let Some(id) = world.ok().and_then(|w| w["executionContextId"].as_i64()) {
                    contexts.push((slot, id));
                }
            }
        }
        contexts
    }

    /// Runs a locator script in the main frame, or in `context` of the
    /// frame in `slot`, and returns the node ids of the elements it returned.
    pub(super) async fn script_targets_in(
        &self,
        script: &str,
        slot: Slot,
        context: Option<i64>,
    ) -> Result<Vec<i64>, EngineError> {
        let tab = &*self.lease;
        let mut params = json!({ "expression": script, "objectGroup": "oxwright", "returnByValue": false });
        if let Some(id) = context {
            params["contextId"] = json!(id);
        }
        let out = raw::call_in(tab, slot, "Runtime.evaluate", params).await?;
        if let Some(ex) = out.get("exceptionDetails") {
            let text = ex["exception"]["description"]
                .as_str()
                .unwrap_or("locator script failed");
            let kind = if text.contains("invalid") {
                EngineErrorKind::InvalidInput
            } else {
                EngineErrorKind::Script
            };
            return Err(EngineError::new(
                kind,
                text.lines().next().unwrap_or(text).to_string(),
            ));
        }
        let Some(array) = out["result"]["objectId"].as_str() else {
            return Ok(Vec::new());
        };
        let props = raw::call_in(
            tab,
            slot,
            "Runtime.getProperties",
            json!({ "objectId": array, "ownProperties": true }),
        )
        .await?;
        let mut targets = Vec::new();
        for p in props["result"].as_array().into_iter().flatten() {
            let is_index = p["name"].as_str().is_some_and(|n| n.parse::<usize>().is_ok());
            let Some(obj) = p["value"]["objectId"].as_str().filter(|_| is_index) else {
                continue;
            };
            let node = raw::call_in(tab, slot, "DOM.describeNode", json!({ "objectId": obj })).await?;
            if let Some(backend) = node["node"]["backendNodeId"].as_i64() {
                targets.push(raw::node_id(slot, backend));
            }
        }
        if slot != 0 {
            let _ = raw::call_in(
                tab,
                slot,
                "Runtime.releaseObjectGroup",
                json!({ "objectGroup": "oxwright" }),
            )
            .await;
        }
        Ok(targets)
    }

    pub(super) async fn locate_backends(
        &self,
        locator: &Locator,
    ) -> Result<Vec<(i64, Option<String>, Option<String>)>, EngineError> {
        match locator {
            Locator::Role { role, name, exact } => {
                let snap = self.snapshot(&SnapshotOptions::default()).await?;
                let role = role.to_ascii_lowercase();
                Ok(snap
                    .elements
                    .iter()
                    .filter(|e| e.role == role)
                    .filter(|e| name.as_deref().is_none_or(|n| name_matches(&e.name, n, *exact)))
                    .filter_map(|e| Some((e.id.0.parse().ok()?, Some(e.role.clone()), Some(e.name.clone()))))
                    .collect())
            }
            other => {
                let script = locate::page_script(other).unwrap_or_default();
                let found = self.script_targets(&script).await;
                let _ = raw::call(
                    &self.lease,
                    "Runtime.releaseObjectGroup",
                    json!({ "objectGroup": "oxwright" }),
                )
                .await;
                Ok(found?.into_iter().map(|b| (b, None, None)).collect())
            }
        }
    }

    pub(super) async fn resolve(&self, target: &Target) -> Result<i64, EngineError> {
        match target {
            Target::Element(id) => id
                .0
                .parse()
                .map_err(|_| EngineError::new(EngineErrorKind::InvalidInput, format!("bad element id {id}"))),
            Target::Ref(r) => {
                let current = self.loader().await?;
                let snaps = self.snapshots.lock().await;
                if snaps.loader.is_none() || snaps.loader != current {
                    return Err(EngineError::stale(r));
                }
                snaps.last.get(r).copied().ok_or_else(|| EngineError::stale(r))
            }
            Target::Locator { locator, nth } => {
                let found = self.locate_backends(locator).await?;
                match (nth, found.len()) {
                    (Some(n), len) if *n < len => Ok(found[*n].0),
                    (Some(_), _) | (None, 0) => Err(EngineError::not_found(target)),
                    (None, 1) => Ok(found[0].0),
                    (None, len) => Err(EngineError::not_unique(target, len)),
                }
            }
        }
    }
}

/// The frames of a frame tree whose origin is not its root's, in tree
/// order, after the root itself when `with_root` (the root of frames
/// another process renders: the page's script does not reach it).
fn frames_of_other_origins(tree: &Value, with_root: bool) -> Vec<String> {
    let root = &tree["frameTree"]["frame"];
    let root_origin = root["securityOrigin"].as_str().unwrap_or("");
    let mut frames: Vec<String> = root["id"]
        .as_str()
        .filter(|_| with_root)
        .map(str::to_owned)
        .into_iter()
        .collect();
    let mut stack: Vec<&Value> = tree["frameTree"]["childFrames"]
        .as_array()
        .into_iter()
        .flatten()
        .collect();
    while let Some(node) = stack.pop() {
        let origin = node["frame"]["securityOrigin"].as_str().unwrap_or("");
        if origin != root_origin
            && let Some(id) = node["frame"]["id"].as_str()
        {
            frames.push(id.to_string());
        }
        stack.extend(node["childFrames"].as_array().into_iter().flatten());
    }
    frames
}
