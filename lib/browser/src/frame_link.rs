//! Out-of-process frames: a DevTools connection of a page's own that
//! reaches the frames Chromium's site isolation renders in other
//! processes.
//!
//! Chromium puts an `<iframe>` of another site in a renderer of its own;
//! the page's DevTools session does not see into it (its frame tree, its
//! DOM snapshot and its nodes stop at the `<iframe>`). The frame is a
//! target of its own, reached as Playwright reaches it: the page is told
//! to attach to its frame targets automatically, with flattened sessions
//! (`Target.setAutoAttach`), and each frame's commands carry its session
//! id. chromiumoxide routes commands to the sessions it made itself only,
//! so a link is a second WebSocket to the browser, opened the first time a
//! page needs its frames: it attaches to the page's target, asks for its
//! frame targets (nested ones too, each frame asked in turn) and keeps a
//! slot per frame session, in the order they attached. Slots are never
//! reused, so a node id that names a frame that went away fails as stale
//! rather than reaching another frame.
//!
//! Nothing is held: frames are attached without waiting for the debugger,
//! so they load as they would without a link. Closing the link (dropping
//! it) detaches every session.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_tungstenite::tungstenite::Message;
use futures::StreamExt;
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinHandle;

use crate::BrowserError;

/// A frame session's place in its page's list; slot 0 is the page itself.
pub(crate) type Slot = u32;

/// One out-of-process frame.
#[derive(Debug, Clone)]
pub(crate) struct FrameSession {
    /// The DevTools session of the frame's target.
    session: String,
    /// The frame's id (its target's id).
    pub(crate) frame_id: String,
    /// The slot of the frame that holds its `<iframe>` (0: the page).
    pub(crate) parent: Slot,
    /// Whether the session is still attached.
    alive: bool,
}

type Reply = oneshot::Sender<Result<Value, String>>;

#[derive(Debug, Default)]
struct State {
    /// Frame sessions by slot − 1.
    frames: Vec<FrameSession>,
    /// Commands sent and not yet answered.
    pending: HashMap<u64, Reply>,
    /// The page's session on this link.
    page_session: String,
    /// The ids of the frames' `Target.setAutoAttach` calls not yet
    /// answered: while any is out, a frame may still be on its way.
    attaching: HashSet<u64>,
    closed: bool,
}

/// A page's link to its out-of-process frames.
#[derive(Debug)]
pub(crate) struct FrameLink {
    state: Arc<Mutex<State>>,
    out: mpsc::UnboundedSender<String>,
    next_id: Arc<AtomicU64>,
    /// Ticks whenever an attach call is answered or the link closes.
    settled: watch::Receiver<u64>,
    tasks: [JoinHandle<()>; 2],
}

impl Drop for FrameLink {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

/// What a frame is asked when it attaches: to attach its own frames in turn.
fn auto_attach_params() -> Value {
    json!({
        "autoAttach": true,
        "waitForDebuggerOnStart": false,
        "flatten": true,
        "filter": [{ "type": "iframe", "exclude": false }],
    })
}

fn message(id: u64, session: Option<&str>, method: &str, params: Value) -> String {
    let mut msg = json!({ "id": id, "method": method, "params": params });
    if let Some(s) = session {
        msg["sessionId"] = json!(s);
    }
    msg.to_string()
}

impl FrameLink {
    /// Opens a link to `ws_url` (the browser's DevTools endpoint) for the
    /// page target `target_id`, and waits (within `limit`) until the frames
    /// the page has now are attached.
    pub(crate) async fn open(ws_url: &str, target_id: &str, limit: Duration) -> Result<Self, BrowserError> {
        let unavailable = |why: String| BrowserError::Protocol {
            call: "frame link".into(),
            message: why,
        };
        let (ws, _) = tokio::time::timeout(limit, async_tungstenite::tokio::connect_async(ws_url))
            .await
            .map_err(|_| unavailable(format!("no DevTools connection within {} ms", limit.as_millis())))?
            .map_err(|e| unavailable(format!("DevTools connection: {e}")))?;
        let (mut sink, mut stream) = ws.split();
        let (out, mut rx) = mpsc::unbounded_channel::<String>();
        let writer = tokio::spawn(async move {
            while let Some(text) = rx.recv().await {
                if sink.send(Message::Text(text.into())).await.is_err() {
                    break;
                }
            }
            let _ = sink.close(None).await;
        });
        let state = Arc::new(Mutex::new(State::default()));
        let next_id = Arc::new(AtomicU64::new(1));
        let (tick, settled) = watch::channel(0u64);
        let reader = {
            let state = state.clone();
            let out = out.clone();
            let next_id = next_id.clone();
            tokio::spawn(async move {
                while let Some(Ok(msg)) = stream.next().await {
                    let Message::Text(text) = msg else { continue };
                    let Ok(value) = serde_json::from_str::<Value>(&text) else {
                        continue;
                    };
                    on_message(&state, &out, &next_id, &tick, value);
                }
                let mut st = state.lock().expect("frame link");
                st.closed = true;
                for (_, reply) in st.pending.drain() {
                    let _ = reply.send(Err("the frames' DevTools connection closed".into()));
                }
                tick.send_modify(|n| *n += 1);
            })
        };
        let link = FrameLink {
            state,
            out,
            next_id,
            settled,
            tasks: [writer, reader],
        };
        let attached = link
            .send(
                None,
                "Target.attachToTarget",
                json!({ "targetId": target_id, "flatten": true }),
                limit,
            )
            .await?;
        let session = attached["sessionId"]
            .as_str()
            .ok_or_else(|| unavailable("attaching to the page gave no session".into()))?
            .to_string();
        link.state.lock().expect("frame link").page_session = session.clone();
        // The page's frames attach before this answer comes; theirs are
        // waited for by `settle`.
        link.send(
            Some(&session),
            "Target.setAutoAttach",
            auto_attach_params(),
            limit,
        )
        .await?;
        link.settle(limit).await;
        Ok(link)
    }

    /// Waits (at most `limit`) until no frame is still being attached.
    pub(crate) async fn settle(&self, limit: Duration) {
        let mut settled = self.settled.clone();
        let state = self.state.clone();
        let _ = tokio::time::timeout(
            limit,
            settled.wait_for(move |_| {
                let st = state.lock().expect("frame link");
                st.attaching.is_empty() || st.closed
            }),
        )
        .await;
    }

    /// Whether the connection closed (the browser went away).
    pub(crate) fn closed(&self) -> bool {
        self.state.lock().expect("frame link").closed
    }

    /// The frames attached now, by slot (alive ones only).
    pub(crate) fn frames(&self) -> Vec<(Slot, FrameSession)> {
        let st = self.state.lock().expect("frame link");
        st.frames
            .iter()
            .enumerate()
            .filter(|(_, f)| f.alive)
            .map(|(i, f)| (slot_of(i), f.clone()))
            .collect()
    }

    /// The frame in `slot`, alive or not.
    pub(crate) fn frame(&self, slot: Slot) -> Option<FrameSession> {
        let st = self.state.lock().expect("frame link");
        st.frames.get(slot.checked_sub(1)? as usize).cloned()
    }

    /// Sends `method` to the frame in `slot` and waits (at most `limit`)
    /// for its answer.
    pub(crate) async fn call(
        &self,
        slot: Slot,
        method: &str,
        params: Value,
        limit: Duration,
    ) -> Result<Value, BrowserError> {
        let session = {
            let st = self.state.lock().expect("frame link");
            match slot.checked_sub(1).and_then(|i| st.frames.get(i as usize)) {
                Some(f) if f.alive => f.session.clone(),
                _ => {
                    return Err(BrowserError::Protocol {
                        call: method.to_string(),
                        message: "No node: the frame left the page".into(),
                    });
                }
            }
        };
        self.send(Some(&session), method, params, limit).await
    }

    async fn send(
        &self,
        session: Option<&str>,
        method: &str,
        params: Value,
        limit: Duration,
    ) -> Result<Value, BrowserError> {
        let id = self.next_id.fetch_add(1, Ordering::SeqCst);
        let (tx, rx) = oneshot::channel();
        {
            let mut st = self.state.lock().expect("frame link");
            if st.closed {
                return Err(BrowserError::Protocol {
                    call: method.to_string(),
                    message: "the frames' DevTools connection closed".into(),
                });
            }
            st.pending.insert(id, tx);
        }
        let _ = self.out.send(message(id, session, method, params));
        let answer = tokio::time::timeout(limit, rx).await;
        match answer {
            Ok(Ok(Ok(value))) => Ok(value),
            Ok(Ok(Err(message))) => Err(BrowserError::Protocol {
                call: method.to_string(),
                message,
            }),
            Ok(Err(_)) => Err(BrowserError::Protocol {
                call: method.to_string(),
                message: "the frames' DevTools connection closed".into(),
            }),
            Err(_) => {
                self.state.lock().expect("frame link").pending.remove(&id);
                Err(BrowserError::Timeout {
                    what: format!("{method} in a frame"),
                    ms: u64::try_from(limit.as_millis()).unwrap_or(u64::MAX),
                })
            }
        }
    }
}

fn slot_of(index: usize) -> Slot {
    Slot::try_from(index + 1).unwrap_or(Slot::MAX)
}

/// Handles one message from the browser: an answer, a frame attached or
/// detached.
fn on_message(
    state: &Mutex<State>,
    out: &mpsc::UnboundedSender<String>,
    next_id: &AtomicU64,
    tick: &watch::Sender<u64>,
    value: Value,
) {
    if let Some(id) = value["id"].as_u64() {
        let (reply, attached) = {
            let mut st = state.lock().expect("frame link");
            (st.pending.remove(&id), st.attaching.remove(&id))
        };
        if attached {
            tick.send_modify(|n| *n += 1);
        }
        if let Some(reply) = reply {
            let answer = match value.get("error") {
                Some(err) => Err(err["message"].as_str().unwrap_or("error").to_string()),
                None => Ok(value["result"].clone()),
            };
            let _ = reply.send(answer);
        }
        return;
    }
    match value["method"].as_str() {
        Some("Target.attachedToTarget") => {
            let params = &value["params"];
            let (Some(session), Some(frame_id)) = (
                params["sessionId"].as_str(),
                params["targetInfo"]["targetId"].as_str(),
            ) else {
                return;
            };
            if params["targetInfo"]["type"].as_str() != Some("iframe") {
                return;
            }
            let from = value["sessionId"].as_str().unwrap_or_default();
            let id = next_id.fetch_add(1, Ordering::SeqCst);
            {
                let mut st = state.lock().expect("frame link");
                let parent = if from == st.page_session {
                    0
                } else {
                    match st.frames.iter().position(|f| f.session == from) {
                        Some(i) => slot_of(i),
                        None => return,
                    }
                };
                st.frames.push(FrameSession {
                    session: session.to_string(),
                    frame_id: frame_id.to_string(),
                    parent,
                    alive: true,
                });
                st.attaching.insert(id);
            }
            // The frame's own frames, in turn; the frame is settled when
            // its answer comes (its frames' attachments come first).
            let _ = out.send(message(
                id,
                Some(session),
                "Target.setAutoAttach",
                auto_attach_params(),
            ));
        }
        Some("Target.detachedFromTarget") => {
            if let Some(session) = value["params"]["sessionId"].as_str() {
                let mut st = state.lock().expect("frame link");
                if let Some(f) = st.frames.iter_mut().find(|f| f.session == session) {
                    f.alive = false;
                }
            }
        }
        _ => {}
    }
}
