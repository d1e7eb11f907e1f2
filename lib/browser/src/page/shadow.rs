//! Closed shadow roots, handed to a reader of the page. A component that
//! closes its root (`attachShadow({ mode: "closed" })`) keeps it from every
//! page script, while the browser paints it like any other content; the
//! DevTools DOM domain reaches it. The custom elements with no open root
//! are asked for theirs, and the closed ones are put in an array at a key
//! the reader is given, a few rounds deep (a closed root's own components).

use serde_json::json;

use super::raw::call;
use crate::{BrowserError, Tab};

/// The most custom elements asked about, over all rounds.
const MAX_HOSTS: usize = 500;
/// Rounds: closed roots inside closed roots.
const ROUNDS: usize = 3;

/// The custom elements, in the document, its open roots and the closed
/// roots at `globalThis[key]`, that have no open root and no closed one
/// found yet (`null` for none). `%KEY%` and `%MAX%` are filled in.
const HOSTS_JS: &str = r#"(() => {
  const found = Array.isArray(globalThis[%KEY%]) ? globalThis[%KEY%] : [];
  const known = new Set(found.map((r) => r.host));
  const out = [];
  const walk = (root) => {
    for (const el of root.querySelectorAll('*')) {
      if (out.length >= %MAX%) return;
      const open = el.shadowRoot;
      if (open) { walk(open); continue; }
      if (el.localName.includes('-') && !known.has(el) && customElements.get(el.localName)) out.push(el);
    }
  };
  walk(document);
  for (const r of found) walk(r);
  return out.length ? out : null;
})()"#;

/// Puts the page's closed shadow roots in an array at `globalThis[key]`;
/// returns how many.
pub(crate) async fn expose_closed(tab: &Tab, key: &str) -> Result<usize, BrowserError> {
    let key_js = serde_json::to_string(key).expect("a string serialises");
    let mut exposed = 0;
    let mut asked = 0;
    // Whether any object was kept in the group (a page with no candidate,
    // the common case, costs one round trip).
    let mut held = false;
    for _ in 0..ROUNDS {
        let script = HOSTS_JS
            .replace("%KEY%", &key_js)
            .replace("%MAX%", &(MAX_HOSTS - asked).to_string());
        let out = call(
            tab,
            "Runtime.evaluate",
            json!({ "expression": script, "objectGroup": "oxwright-shadow" }),
        )
        .await?;
        let Some(list) = out["result"]["objectId"].as_str() else {
            break;
        };
        held = true;
        let hosts = array_items(tab, list).await?;
        if hosts.is_empty() {
            break;
        }
        asked += hosts.len();
        // Asked all at once: one round trip's wait for the lot.
        let roots = futures::future::join_all(hosts.iter().map(|host| closed_root(tab, host))).await;
        let mut found = 0;
        for root in roots {
            let Some(root) = root? else {
                continue;
            };
            call(
                tab,
                "Runtime.callFunctionOn",
                json!({
                    "objectId": root,
                    "functionDeclaration": "function(k) { (globalThis[k] = globalThis[k] || []).push(this); }",
                    "arguments": [{ "value": key }],
                }),
            )
            .await?;
            found += 1;
        }
        exposed += found;
        if found == 0 || asked >= MAX_HOSTS {
            break;
        }
    }
    if held {
        let _ = call(
            tab,
            "Runtime.releaseObjectGroup",
            json!({ "objectGroup": "oxwright-shadow" }),
        )
        .await;
    }
    Ok(exposed)
}

/// The object ids of the items of the array `list`.
async fn array_items(tab: &Tab, list: &str) -> Result<Vec<String>, BrowserError> {
    let props = call(
        tab,
        "Runtime.getProperties",
        json!({ "objectId": list, "ownProperties": true }),
    )
    .await?;
    Ok(props["result"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .filter(|p| p["name"].as_str().is_some_and(|n| n.parse::<usize>().is_ok()))
        .filter_map(|p| p["value"]["objectId"].as_str().map(str::to_owned))
        .collect())
}

/// The object id of the closed shadow root of the element `host`, if it
/// has one (user-agent roots, of `<input>` and the like, are not the
/// page's content).
async fn closed_root(tab: &Tab, host: &str) -> Result<Option<String>, BrowserError> {
    let node = match call(
        tab,
        "DOM.describeNode",
        json!({ "objectId": host, "depth": 0, "pierce": true }),
    )
    .await
    {
        Ok(node) => node,
        // The element left the page meanwhile.
        Err(BrowserError::Protocol { .. }) => return Ok(None),
        Err(err) => return Err(err),
    };
    let Some(backend) = node["node"]["shadowRoots"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .find(|r| r["shadowRootType"] == "closed")
        .and_then(|r| r["backendNodeId"].as_i64())
    else {
        return Ok(None);
    };
    let resolved = call(
        tab,
        "DOM.resolveNode",
        json!({ "backendNodeId": backend, "objectGroup": "oxwright-shadow" }),
    )
    .await?;
    Ok(resolved["object"]["objectId"].as_str().map(str::to_owned))
}
