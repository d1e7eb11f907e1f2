//! Waiting for the page to settle after an action: a navigation it started
//! reaches `load`, and the network goes quiet — both bounded.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use crate::{BrowserError, Tab};
use chromiumoxide::cdp::browser_protocol::network::{
    EventLoadingFailed, EventLoadingFinished, EventRequestWillBeSent, ResourceType,
};
use chromiumoxide::cdp::browser_protocol::page::{EventFrameStartedLoading, EventFrameStoppedLoading};
use futures::StreamExt;
use futures::stream::BoxStream;

/// Quiet time after the last load or request event that counts as settled.
const QUIET: Duration = Duration::from_millis(150);
/// When the action started nothing at all (no request, no document load)
/// within this long, the page counts as settled: its handlers ran during
/// the input events, and work they queue with a zero timeout or a promise
/// has started its requests by then.
const IDLE_GRACE: Duration = Duration::from_millis(50);
/// Longest wait for the network alone (long polls never finish).
const NETWORK_CAP: Duration = Duration::from_secs(2);

/// Listeners armed before an action, so no event is missed.
pub(crate) struct Settle {
    started: BoxStream<'static, std::sync::Arc<EventFrameStartedLoading>>,
    stopped: BoxStream<'static, std::sync::Arc<EventFrameStoppedLoading>>,
    sent: BoxStream<'static, std::sync::Arc<EventRequestWillBeSent>>,
    finished: BoxStream<'static, std::sync::Arc<EventLoadingFinished>>,
    failed: BoxStream<'static, std::sync::Arc<EventLoadingFailed>>,
}

/// How the wait ended.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Settled {
    /// A frame started loading a document.
    pub navigated: bool,
    /// The bound was reached before quiet.
    pub bounded: bool,
}

impl Settle {
    /// Subscribes to the events the wait reads.
    pub(crate) async fn arm(tab: &Tab) -> Result<Self, BrowserError> {
        let page = tab.raw_page();
        let err = |e: chromiumoxide::error::CdpError| BrowserError::Protocol {
            call: "event subscription".into(),
            message: e.to_string(),
        };
        Ok(Self {
            started: page
                .event_listener::<EventFrameStartedLoading>()
                .await
                .map_err(err)?
                .boxed(),
            stopped: page
                .event_listener::<EventFrameStoppedLoading>()
                .await
                .map_err(err)?
                .boxed(),
            sent: page
                .event_listener::<EventRequestWillBeSent>()
                .await
                .map_err(err)?
                .boxed(),
            finished: page
                .event_listener::<EventLoadingFinished>()
                .await
                .map_err(err)?
                .boxed(),
            failed: page
                .event_listener::<EventLoadingFailed>()
                .await
                .map_err(err)?
                .boxed(),
        })
    }

    /// Waits until no frame is loading and no request is in flight for
    /// [`QUIET`] (for [`IDLE_GRACE`] when the action started neither), at
    /// most `limit` (the network alone at most [`NETWORK_CAP`]).
    pub(crate) async fn wait(mut self, limit: Duration) -> Settled {
        let started = Instant::now();
        let mut loading: HashSet<String> = HashSet::new();
        let mut inflight: HashSet<String> = HashSet::new();
        let mut out = Settled::default();
        let mut last = Instant::now();
        let mut seen_any = false;
        loop {
            let elapsed = started.elapsed();
            if elapsed >= limit || (loading.is_empty() && elapsed >= NETWORK_CAP) {
                out.bounded = true;
                return out;
            }
            let idle = loading.is_empty() && inflight.is_empty();
            let quiet = if seen_any { QUIET } else { IDLE_GRACE };
            let quiet_at = tokio::time::Instant::from_std(last + quiet);
            let bound = tokio::time::Instant::from_std(started + limit);
            tokio::select! {
                _ = tokio::time::sleep_until(quiet_at), if idle => return out,
                _ = tokio::time::sleep_until(bound) => {}
                Some(ev) = self.started.next() => {
                    seen_any = true;
                    out.navigated = true;
                    loading.insert(ev.frame_id.as_ref().to_string());
                    last = Instant::now();
                }
                Some(ev) = self.stopped.next() => {
                    loading.remove(ev.frame_id.as_ref());
                    last = Instant::now();
                }
                Some(ev) = self.sent.next() => {
                    let ignored = matches!(ev.r#type, Some(ResourceType::WebSocket | ResourceType::EventSource))
                        || ev.request.url.starts_with("data:");
                    if !ignored {
                        seen_any = true;
                        inflight.insert(ev.request_id.as_ref().to_string());
                    }
                    last = Instant::now();
                }
                Some(ev) = self.finished.next() => {
                    inflight.remove(ev.request_id.as_ref());
                    last = Instant::now();
                }
                Some(ev) = self.failed.next() => {
                    inflight.remove(ev.request_id.as_ref());
                    last = Instant::now();
                }
            }
        }
    }
}
