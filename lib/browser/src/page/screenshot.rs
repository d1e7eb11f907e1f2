//! Screenshots: the capture (viewport, full page or one element's box) and
//! the black boxes over secret fields drawn before it when asked: the fields a secret was
//! typed into (the snapshotter's masked set) and every password field that
//! holds a value. Each box is an absolutely placed element in the field's own
//! document, drawn over the field's border box with a small margin, and
//! removed right after the capture.

use oxwright_engine::{EngineError, EngineErrorKind, ScreenshotOptions};
use serde_json::{Value, json};

use super::{ChromiumPage, raw};
use crate::Tab;

/// Draws a box over `this` (an element) and returns whether it has a box.
const COVER_ONE: &str = r#"function () {
  const r = this.getBoundingClientRect();
  if (!r.width && !r.height) return false;
  const d = this.ownerDocument, w = d.defaultView, b = d.createElement('div');
  b.setAttribute('data-oxwright-cover', '');
  b.style.cssText = `position:absolute!important;left:${r.left + w.scrollX - 2}px!important;top:${r.top + w.scrollY - 2}px!important;width:${r.width + 4}px!important;height:${r.height + 4}px!important;background:#000!important;display:block!important;z-index:2147483647!important;pointer-events:none!important;margin:0!important;padding:0!important;border:0!important;opacity:1!important;transform:none!important;visibility:visible!important`;
  d.documentElement.appendChild(b);
  return true;
}"#;

/// Covers password fields with a value in the main document and its same-origin frames.
const COVER_PASSWORDS: &str = r#"(() => {
  let n = 0;
  const docs = [document];
  for (const f of document.querySelectorAll('iframe')) { try { if (f.contentDocument) docs.push(f.contentDocument); } catch (e) {} }
  for (const d of docs) for (const el of d.querySelectorAll('input[type=password]')) {
    if (!el.value) continue;
    const r = el.getBoundingClientRect();
    if (!r.width && !r.height) continue;
    const w = d.defaultView, b = d.createElement('div');
    b.setAttribute('data-oxwright-cover', '');
    b.style.cssText = `position:absolute!important;left:${r.left + w.scrollX - 2}px!important;top:${r.top + w.scrollY - 2}px!important;width:${r.width + 4}px!important;height:${r.height + 4}px!important;background:#000!important;display:block!important;z-index:2147483647!important;pointer-events:none!important;margin:0!important;padding:0!important;border:0!important;opacity:1!important;transform:none!important;visibility:visible!important`;
    d.documentElement.appendChild(b);
    n++;
  }
  return n;
})()"#;

/// Removes the boxes of `this`'s document.
const UNCOVER_ONE: &str = "function () { for (const b of this.ownerDocument.querySelectorAll('[data-oxwright-cover]')) b.remove(); }";

const UNCOVER_PASSWORDS: &str = r#"(() => {
  const docs = [document];
  for (const f of document.querySelectorAll('iframe')) { try { if (f.contentDocument) docs.push(f.contentDocument); } catch (e) {} }
  for (const d of docs) for (const b of d.querySelectorAll('[data-oxwright-cover]')) b.remove();
})()"#;

/// The boxes drawn for one capture; [`Covers::remove`] takes them away.
pub(super) struct Covers {
    objects: Vec<raw::Remote>,
    /// Where password fields were covered: the page's main world, and an
    /// isolated world of each frame of another origin (whatever process it
    /// renders in).
    worlds: Vec<(crate::frame_link::Slot, Option<i64>)>,
}

/// Runs `expression` in the page and in each of `worlds`; a frame that
/// went away has nothing left to show, only the page's own failure counts.
async fn run_in(
    tab: &Tab,
    worlds: &[(crate::frame_link::Slot, Option<i64>)],
    expression: &str,
) -> Result<(), crate::BrowserError> {
    for &(slot, context) in worlds {
        let mut params = serde_json::json!({ "expression": expression, "returnByValue": true });
        if let Some(id) = context {
            params["contextId"] = serde_json::json!(id);
        }
        let ran = raw::call_in(tab, slot, "Runtime.evaluate", params).await;
        if slot == 0 && context.is_none() {
            ran?;
        }
    }
    Ok(())
}

/// Draws boxes over the elements `masked` (backend node ids; those gone
/// with their document are skipped) and over filled password fields of
/// the page and of every frame in `frames` (isolated worlds of the frames
/// of other origins, by slot).
pub(super) async fn cover(
    tab: &Tab,
    masked: &[i64],
    frames: Vec<(crate::frame_link::Slot, i64)>,
) -> Result<Covers, crate::BrowserError> {
    let mut objects = Vec::new();
    for &backend in masked {
        let Ok(object) = raw::resolve(tab, backend).await else {
            continue;
        };
        if raw::call_on(tab, &object, COVER_ONE, Vec::new()).await? == Value::Bool(true) {
            objects.push(object);
        }
    }
    let mut worlds = vec![(0, None)];
    worlds.extend(frames.into_iter().map(|(slot, context)| (slot, Some(context))));
    run_in(tab, &worlds, COVER_PASSWORDS).await?;
    Ok(Covers { objects, worlds })
}

impl Covers {
    /// Removes the boxes (best effort: a document that went away took its boxes with it).
    pub(super) async fn remove(self, tab: &Tab) {
        for object in &self.objects {
            let _ = raw::call_on(tab, object, UNCOVER_ONE, Vec::new()).await;
        }
        let _ = run_in(tab, &self.worlds, UNCOVER_PASSWORDS).await;
    }
}

impl ChromiumPage {
    /// Takes the PNG `opts` asks for (masking is the caller's).
    pub(super) async fn capture(&self, opts: &ScreenshotOptions) -> Result<Vec<u8>, EngineError> {
        if !opts.full_page && opts.element.is_none() {
            return Ok(self.lease.screenshot_png().await?);
        }
        let clip = match &opts.element {
            Some(target) => {
                let backend = self.resolve(target).await?;
                let _ = raw::call_node(&self.lease, "DOM.scrollIntoViewIfNeeded", backend, json!({})).await;
                let model = raw::call_node(&self.lease, "DOM.getBoxModel", backend, json!({}))
                    .await
                    .map_err(super::act_error)?;
                // A node of an out-of-process frame is measured in its frame.
                let (dx, dy) = raw::frame_origin(&self.lease, raw::split(backend).0)
                    .await
                    .ok_or_else(|| super::interactable("the element's frame left the page"))?;
                let b: Vec<f64> = model["model"]["border"]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .filter_map(Value::as_f64)
                            .enumerate()
                            .map(|(i, v)| v + if i % 2 == 0 { dx } else { dy })
                            .collect()
                    })
                    .unwrap_or_default();
                if b.len() != 8 {
                    return Err(super::interactable("the element has no box to capture"));
                }
                let (xs, ys) = ([b[0], b[2], b[4], b[6]], [b[1], b[3], b[5], b[7]]);
                let (x0, y0) = (
                    xs.iter().cloned().fold(f64::MAX, f64::min),
                    ys.iter().cloned().fold(f64::MAX, f64::min),
                );
                let (x1, y1) = (
                    xs.iter().cloned().fold(f64::MIN, f64::max),
                    ys.iter().cloned().fold(f64::MIN, f64::max),
                );
                let scroll = self
                    .lease
                    .evaluate("[window.scrollX, window.scrollY]", self.lease.call_timeout())
                    .await?;
                let (sx, sy) = (
                    scroll[0].as_f64().unwrap_or(0.0),
                    scroll[1].as_f64().unwrap_or(0.0),
                );
                json!({ "x": x0 + sx, "y": y0 + sy, "width": (x1 - x0).max(1.0), "height": (y1 - y0).max(1.0), "scale": 1 })
            }
            None => {
                let m = raw::call(&self.lease, "Page.getLayoutMetrics", json!({})).await?;
                let size = &m["cssContentSize"];
                let w = size["width"].as_f64().unwrap_or(1280.0).min(16_384.0);
                let h = size["height"].as_f64().unwrap_or(800.0).min(16_384.0);
                json!({ "x": 0, "y": 0, "width": w, "height": h, "scale": 1 })
            }
        };
        let shot = raw::call(
            &self.lease,
            "Page.captureScreenshot",
            json!({ "format": "png", "clip": clip, "captureBeyondViewport": true }),
        )
        .await?;
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD
            .decode(shot["data"].as_str().unwrap_or_default())
            .map_err(|e| EngineError::new(EngineErrorKind::Protocol, format!("screenshot data: {e}")))
    }
}
