//! Pointer actions: the point a click, hover or drag aims at, found as
//! Playwright finds it (the element connected, visible, enabled, its box
//! stable over two animation frames and receiving the pointer there), and
//! the mouse events sent to it through the DevTools Input domain, watched
//! so that events that reach another element are swallowed and the action
//! tried again (see [`super::hit`]).

use std::time::{Duration, Instant};

use oxwright_engine::{EngineError, EngineErrorKind, Modifier, MouseButton};
use serde_json::{Value, json};

use super::hit;
use super::raw::{Remote, call, call_node, call_on, frame_origin, resolve, split};
use super::{act_error, interactable};
use crate::Tab;

/// Poll interval of auto-waits.
const POLL: Duration = Duration::from_millis(50);

const ACTIONABLE_JS: &str = r#"function() {
  if (!this.isConnected) return 'detached';
  const st = this.ownerDocument.defaultView.getComputedStyle(this);
  const r = this.getBoundingClientRect();
  if (r.width === 0 || r.height === 0 || st.visibility === 'hidden') return 'hidden';
  if (this.disabled || this.getAttribute('aria-disabled') === 'true') return 'disabled';
  return 'ok';
}"#;

/// Waits until the element is actionable, stable and receives the pointer,
/// and returns the point a pointer action aims at.
pub(super) async fn actionable_point(
    tab: &Tab,
    backend: i64,
    obj: &Remote,
    deadline: Instant,
    timeout: Duration,
) -> Result<(f64, f64), EngineError> {
    let mut last = String::from("is not actionable");
    loop {
        let state = call_on(tab, obj, ACTIONABLE_JS, vec![])
            .await
            .map_err(act_error)?;
        match state.as_str() {
            Some("detached") => return Err(gone()),
            Some("ok") => {
                let _ = call_node(tab, "DOM.scrollIntoViewIfNeeded", backend, json!({})).await;
                match stable_box(tab, backend).await {
                    Some(Ok(quad)) => {
                        let point = middle(&quad);
                        match hit::intercepted_at(tab, obj, point.0, point.1).await? {
                            None => return Ok(point),
                            Some(what) => last = format!("is covered: {what} intercepts pointer events"),
                        }
                    }
                    Some(Err(())) => last = "is not stable (moving)".into(),
                    None => last = "has no box on screen".into(),
                }
            }
            Some(other) => last = format!("is {other}"),
            None => {}
        }
        if Instant::now() >= deadline {
            return Err(interactable(format!(
                "element {last} after {} ms",
                timeout.as_millis()
            )));
        }
        tokio::time::sleep(POLL).await;
    }
}

fn gone() -> EngineError {
    EngineError::new(
        EngineErrorKind::Stale,
        "the element left the page; take a new snapshot",
    )
}

/// The element's box once it is the same over two animation frames (an
/// accordion still opening, a menu sliding in: not yet); `Some(Err(()))`
/// while it moves, `None` without a box.
async fn stable_box(tab: &Tab, backend: i64) -> Option<Result<Quad, ()>> {
    let a = quad(tab, backend).await?;
    next_frame(tab).await;
    let b = quad(tab, backend).await?;
    if !same(&a, &b) {
        return Some(Err(()));
    }
    next_frame(tab).await;
    let c = quad(tab, backend).await?;
    Some(if same(&b, &c) { Ok(c) } else { Err(()) })
}

/// Four corners, x and y in turn, in the page's viewport.
type Quad = [f64; 8];

fn same(a: &Quad, b: &Quad) -> bool {
    a.iter().zip(b).all(|(p, q)| (p - q).abs() < 0.5)
}

fn middle(q: &Quad) -> (f64, f64) {
    (
        (q[0] + q[2] + q[4] + q[6]) / 4.0,
        (q[1] + q[3] + q[5] + q[7]) / 4.0,
    )
}

/// What a pointer action sends once its point is found.
#[derive(Clone, Copy)]
pub(super) enum Gesture<'a> {
    /// The pointer moves onto the element.
    Hover,
    /// `count` clicks of `press`.
    Click { press: &'a Press, count: u32 },
}

/// Performs `gesture` on the element: finds its point, sends the events
/// under a hit-target listener, and starts again when the events reached
/// another element (the element moved as the pointer arrived, something
/// came over it), until the deadline; then fails naming what took the
/// pointer.
pub(super) async fn pointer_action(
    tab: &Tab,
    backend: i64,
    obj: &Remote,
    deadline: Instant,
    timeout: Duration,
    gesture: Gesture<'_>,
) -> Result<(), EngineError> {
    loop {
        let (x, y) = actionable_point(tab, backend, obj, deadline, timeout).await?;
        let watch = hit::Interceptor::install(tab, obj, matches!(gesture, Gesture::Hover)).await?;
        let sent = match gesture {
            Gesture::Hover => mouse(tab, "mouseMoved", x, y, 0).await,
            Gesture::Click { press, count } => click_at(tab, x, y, press, count).await,
        };
        let missed = watch.stop(tab).await;
        sent?;
        let Some(what) = missed else {
            return Ok(());
        };
        if Instant::now() >= deadline {
            return Err(interactable(format!(
                "{what} intercepts pointer events: the element did not get them within {} ms",
                timeout.as_millis()
            )));
        }
        tokio::time::sleep(POLL).await;
    }
}

/// The button of a click and the modifier keys held through it.
pub(super) struct Press {
    button: MouseButton,
    /// DevTools' modifier bit field: Alt 1, Control 2, Meta 4, Shift 8.
    bits: u32,
    /// (key, code, Windows key code) of each held key, in press order.
    keys: Vec<(&'static str, &'static str, u32)>,
}

impl Press {
    pub(super) const LEFT: Press = Press {
        button: MouseButton::Left,
        bits: 0,
        keys: Vec::new(),
    };

    pub(super) fn new(button: MouseButton, modifiers: &[Modifier]) -> Self {
        let mut press = Press {
            button,
            bits: 0,
            keys: Vec::new(),
        };
        for m in modifiers {
            // ControlOrMeta is Control off macOS (Chromium here runs on Linux).
            let (bit, key) = match m {
                Modifier::Alt => (1, ("Alt", "AltLeft", 18)),
                Modifier::Control | Modifier::ControlOrMeta => (2, ("Control", "ControlLeft", 17)),
                Modifier::Meta => (4, ("Meta", "MetaLeft", 91)),
                Modifier::Shift => (8, ("Shift", "ShiftLeft", 16)),
            };
            if press.bits & bit == 0 {
                press.bits |= bit;
                press.keys.push(key);
            }
        }
        press
    }

    /// Presses (or releases, in reverse order) the modifier keys, so the
    /// page's key handlers and `event.shiftKey` and the like agree.
    pub(super) async fn hold(&self, tab: &Tab, down: bool) -> Result<(), EngineError> {
        let mut bits = if down { 0 } else { self.bits };
        let keys: Vec<_> = if down {
            self.keys.clone()
        } else {
            self.keys.iter().rev().copied().collect()
        };
        for (key, code, vk) in keys {
            let bit = match key {
                "Alt" => 1,
                "Control" => 2,
                "Meta" => 4,
                _ => 8,
            };
            if down {
                bits |= bit;
            } else {
                bits &= !bit;
            }
            let ev = json!({
                "type": if down { "rawKeyDown" } else { "keyUp" },
                "key": key,
                "code": code,
                "windowsVirtualKeyCode": vk,
                "modifiers": bits,
            });
            call(tab, "Input.dispatchKeyEvent", ev).await.map_err(act_error)?;
        }
        Ok(())
    }
}

/// Clicks the element `count` times with `press` (see [`pointer_action`]).
pub(super) async fn click(
    tab: &Tab,
    backend: i64,
    obj: &Remote,
    deadline: Instant,
    timeout: Duration,
    press: &Press,
    count: u32,
) -> Result<(), EngineError> {
    pointer_action(
        tab,
        backend,
        obj,
        deadline,
        timeout,
        Gesture::Click { press, count },
    )
    .await
}

/// Moves to (x, y) and clicks `count` times with `press`.
async fn click_at(tab: &Tab, x: f64, y: f64, press: &Press, count: u32) -> Result<(), EngineError> {
    mouse(tab, "mouseMoved", x, y, 0).await?;
    let held: u32 = match press.button {
        MouseButton::Left => 1,
        MouseButton::Right => 2,
        MouseButton::Middle => 4,
    };
    for n in 1..=count {
        for kind in ["mousePressed", "mouseReleased"] {
            let mut ev = json!({
                "type": kind,
                "x": x,
                "y": y,
                "button": press.button.as_str(),
                "clickCount": n,
                "modifiers": press.bits,
            });
            ev["buttons"] = json!(if kind == "mousePressed" { held } else { 0 });
            call(tab, "Input.dispatchMouseEvent", ev)
                .await
                .map_err(act_error)?;
        }
    }
    Ok(())
}

/// Drags `source` onto `dest`. Drags are intercepted first: when the press
/// and the first move start an HTML drag (`dragstart`), Chromium hands its
/// data over instead of starting a native drag, and the drag events are
/// dispatched onto the target with it (what Playwright does); otherwise the
/// mouse moves over in steps, as a pointer-driven drag expects.
pub(crate) async fn drag(tab: &Tab, source: i64, dest: i64, timeout: Duration) -> Result<(), EngineError> {
    use chromiumoxide::cdp::browser_protocol::input::EventDragIntercepted;
    use futures::StreamExt;
    let deadline = Instant::now() + timeout;
    let from_obj = resolve(tab, source).await.map_err(act_error)?;
    let to_obj = resolve(tab, dest).await.map_err(act_error)?;
    let (x0, y0) = actionable_point(tab, source, &from_obj, deadline, timeout).await?;
    let mut intercepted = tab
        .raw_page()
        .event_listener::<EventDragIntercepted>()
        .await
        .map_err(|e| EngineError::new(EngineErrorKind::Protocol, format!("event subscription: {e}")))?;
    call(tab, "Input.setInterceptDrags", json!({ "enabled": true }))
        .await
        .map_err(act_error)?;
    let dragged = async {
        mouse(tab, "mouseMoved", x0, y0, 0).await?;
        button(tab, "mousePressed", x0, y0).await?;
        // A few pixels: what starts a drag.
        mouse(tab, "mouseMoved", x0 + 5.0, y0 + 5.0, 1).await?;
        // The event, when there is one, comes before the move's answer;
        // a short wait covers a renderer that is slow to tell.
        let data = tokio::time::timeout(Duration::from_millis(100), intercepted.next())
            .await
            .ok()
            .flatten()
            .map(|ev| serde_json::to_value(&ev.data).unwrap_or(Value::Null));
        // The target may have moved when the drag started (a placeholder).
        let (x1, y1) = actionable_point(tab, dest, &to_obj, deadline, timeout).await?;
        match data {
            Some(data) => {
                for kind in ["dragEnter", "dragOver", "drop"] {
                    call(
                        tab,
                        "Input.dispatchDragEvent",
                        json!({ "type": kind, "x": x1, "y": y1, "data": data }),
                    )
                    .await
                    .map_err(act_error)?;
                }
                button(tab, "mouseReleased", x1, y1).await
            }
            None => {
                let steps = 8;
                for i in 1..=steps {
                    let t = f64::from(i) / f64::from(steps);
                    let (x, y) = (x0 + 5.0 + (x1 - x0 - 5.0) * t, y0 + 5.0 + (y1 - y0 - 5.0) * t);
                    mouse(tab, "mouseMoved", x, y, 1).await?;
                }
                button(tab, "mouseReleased", x1, y1).await
            }
        }
    }
    .await;
    if call(tab, "Input.setInterceptDrags", json!({ "enabled": false }))
        .await
        .is_err()
    {
        // Drags left intercepted would reach the next job's page.
        tab.taint();
    }
    if dragged.is_err() {
        // Never leave the button down.
        let _ = button(tab, "mouseReleased", x0, y0).await;
    }
    dragged
}

async fn button(tab: &Tab, kind: &str, x: f64, y: f64) -> Result<(), EngineError> {
    let buttons = if kind == "mousePressed" { 1 } else { 0 };
    call(
        tab,
        "Input.dispatchMouseEvent",
        json!({ "type": kind, "x": x, "y": y, "button": "left", "buttons": buttons, "clickCount": 1 }),
    )
    .await
    .map(|_| ())
    .map_err(act_error)
}

pub(super) async fn mouse(tab: &Tab, kind: &str, x: f64, y: f64, buttons: u32) -> Result<(), EngineError> {
    call(
        tab,
        "Input.dispatchMouseEvent",
        // A move with the button held names it, as a drag needs.
        json!({ "type": kind, "x": x, "y": y, "buttons": buttons, "button": if buttons & 1 == 1 { "left" } else { "none" } }),
    )
    .await
    .map(|_| ())
    .map_err(act_error)
}

/// The node `backend`'s first box in the page's viewport (a node of an
/// out-of-process frame is measured in its frame's viewport, which is then
/// placed in the page's).
async fn quad(tab: &Tab, backend: i64) -> Option<Quad> {
    let q = call_node(tab, "DOM.getContentQuads", backend, json!({}))
        .await
        .ok()?;
    let (dx, dy) = frame_origin(tab, split(backend).0).await?;
    let pts: Vec<f64> = q["quads"].as_array()?.iter().find_map(|quad| {
        let pts: Vec<f64> = quad.as_array()?.iter().filter_map(Value::as_f64).collect();
        (pts.len() == 8).then_some(pts)
    })?;
    let mut out = [0.0; 8];
    for (i, v) in pts.into_iter().enumerate() {
        out[i] = v + if i % 2 == 0 { dx } else { dy };
    }
    Some(out)
}

async fn next_frame(tab: &Tab) {
    let _ = tab
        .evaluate(
            "new Promise((r) => requestAnimationFrame(() => r(true)))",
            Duration::from_millis(500),
        )
        .await;
}
