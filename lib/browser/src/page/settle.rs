//! Waiting for the page to settle after an action: a navigation it started
//! reaches `load`, and the network goes quiet — both bounded.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use crate::{BrowserError, Tab};
use chromiumoxide::cdp::browser_protocol::network::{
    EventLoadingFailed, EventLoadingFinished, EventRequestWillBeSent, ResourceType,
};
use chromiumoxide::cdp::browser_protocol::page::{
    EventFrameNavigated, EventFrameRequestedNavigation, EventFrameStartedLoading, EventFrameStoppedLoading,
    EventNavigatedWithinDocument,
};
use futures::StreamExt;
use futures::stream::BoxStream;

/// Quiet time after the last load or request event that counts as settled.
const QUIET: Duration = Duration::from_millis(150);
/// When the action started nothing at all (no request, no document load)
/// within this long, the page is asked to run what the action queued and
/// to draw a frame (see [`Settle::wait`]): its handlers ran during the
/// input events, and what they started at once (a request, a load) has
/// been announced by then. Longer than one frame at 60 Hz, so the frame
/// the page then draws comes after work a handler deferred by two.
const IDLE_GRACE: Duration = Duration::from_millis(20);
/// After the page ran the action's queued tasks, the time left for the
/// browser's own announcements (a started load) to arrive.
const FLUSHED_GRACE: Duration = Duration::from_millis(10);
/// Longest wait for a requested navigation to start loading (a fragment
/// link, a download or a navigation the page cancelled never does).
const REQUESTED_CAP: Duration = Duration::from_millis(500);
/// Longest wait for the network alone (long polls never finish).
const NETWORK_CAP: Duration = Duration::from_secs(2);

/// Listeners armed before an action, so no event is missed.
pub(crate) struct Settle {
    requested: BoxStream<'static, std::sync::Arc<EventFrameRequestedNavigation>>,
    committed: BoxStream<'static, std::sync::Arc<EventFrameNavigated>>,
    within: BoxStream<'static, std::sync::Arc<EventNavigatedWithinDocument>>,
    started: BoxStream<'static, std::sync::Arc<EventFrameStartedLoading>>,
    stopped: BoxStream<'static, std::sync::Arc<EventFrameStoppedLoading>>,
    sent: BoxStream<'static, std::sync::Arc<EventRequestWillBeSent>>,
    finished: BoxStream<'static, std::sync::Arc<EventLoadingFinished>>,
    failed: BoxStream<'static, std::sync::Arc<EventLoadingFailed>>,
}

/// How the wait ended.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Settled {
    /// A frame committed a new document, or started loading one that had
    /// not committed when the wait ended (a same-document navigation, a
    /// fragment link, is not one).
    pub navigated: bool,
    /// The bound was reached before quiet.
    pub bounded: bool,
}

impl Settle {
    /// Subscribes to the events the wait reads.
    pub(crate) async fn arm(tab: &Tab) -> Result<Self, BrowserError> {
        let page = tab.raw_page();
        Ok(Self {
            requested: listen(page).await?,
            committed: listen(page).await?,
            within: listen(page).await?,
            started: listen(page).await?,
            stopped: listen(page).await?,
            sent: listen(page).await?,
            finished: listen(page).await?,
            failed: listen(page).await?,
        })
    }

    /// Waits until no frame is loading and no request is in flight for
    /// [`QUIET`] (for [`IDLE_GRACE`] when the action started neither), at
    /// most `limit` (the network alone at most [`NETWORK_CAP`]).
    ///
    /// Before it counts an action that started nothing as settled, the
    /// wait lets the page run the tasks the action queued (a form's submit
    /// is a posted task, late on a loaded machine): one zero-delay timer in
    /// the page, whose answer arrives after the navigation those tasks
    /// requested was announced.
    pub(crate) async fn wait(mut self, tab: &Tab, limit: Duration) -> Settled {
        let started = Instant::now();
        let mut loading: HashSet<String> = HashSet::new();
        let mut requested: HashMap<String, Instant> = HashMap::new();
        let mut inflight: HashSet<String> = HashSet::new();
        // Frames that started loading and neither committed a document nor
        // stopped nor showed a same-document navigation (a fragment link
        // loads too, but replaces nothing): a navigation still under way
        // when the wait is bounded.
        let mut documents: HashSet<String> = HashSet::new();
        let mut out = Settled::default();
        let mut last = Instant::now();
        let mut seen_any = false;
        let mut flushed = false;
        loop {
            let elapsed = started.elapsed();
            if elapsed >= limit || (loading.is_empty() && elapsed >= NETWORK_CAP) {
                out.bounded = true;
                out.navigated |= !documents.is_empty();
                return out;
            }
            requested.retain(|_, at| at.elapsed() < REQUESTED_CAP);
            let idle = loading.is_empty() && requested.is_empty() && inflight.is_empty();
            let quiet = match (seen_any, flushed) {
                (true, _) => QUIET,
                (false, false) => IDLE_GRACE,
                (false, true) => FLUSHED_GRACE,
            };
            let quiet_at = tokio::time::Instant::from_std(last + quiet);
            let bound = tokio::time::Instant::from_std(started + limit);
            let expiry = requested.values().min().map(|at| *at + REQUESTED_CAP);
            let expires_at = tokio::time::Instant::from_std(expiry.unwrap_or(started + limit));
            tokio::select! {
                // Events first, in the order a navigation sends them (each
                // kind has its own channel, filled in arrival order): an
                // announced navigation outranks a quiet that fell due
                // meanwhile, and a load's start is read before its stop.
                biased;
                Some(ev) = self.requested.next() => {
                    seen_any = true;
                    requested.insert(ev.frame_id.as_ref().to_string(), Instant::now());
                    last = Instant::now();
                }
                Some(_) = self.committed.next() => {
                    out.navigated = true;
                    last = Instant::now();
                }
                Some(ev) = self.started.next() => {
                    seen_any = true;
                    documents.insert(ev.frame_id.as_ref().to_string());
                    requested.remove(ev.frame_id.as_ref());
                    loading.insert(ev.frame_id.as_ref().to_string());
                    last = Instant::now();
                }
                Some(ev) = self.stopped.next() => {
                    requested.remove(ev.frame_id.as_ref());
                    loading.remove(ev.frame_id.as_ref());
                    documents.remove(ev.frame_id.as_ref());
                    last = Instant::now();
                }
                Some(ev) = self.within.next() => {
                    requested.remove(ev.frame_id.as_ref());
                    documents.remove(ev.frame_id.as_ref());
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
                _ = tokio::time::sleep_until(quiet_at), if idle => {
                    if seen_any || flushed {
                        out.navigated |= !documents.is_empty();
                        return out;
                    }
                    flushed = true;
                    let left = limit.saturating_sub(started.elapsed());
                    tab.run_queued_tasks(left.min(NETWORK_CAP)).await;
                    last = Instant::now();
                }
                _ = tokio::time::sleep_until(expires_at), if expiry.is_some() => {}
                _ = tokio::time::sleep_until(bound) => {}
            }
        }
    }
}

/// One event kind's stream, subscribed now.
async fn listen<T>(page: &chromiumoxide::Page) -> Result<BoxStream<'static, std::sync::Arc<T>>, BrowserError>
where
    T: chromiumoxide::cdp::IntoEventKind + Unpin + Send + Sync + 'static,
{
    Ok(page
        .event_listener::<T>()
        .await
        .map_err(|e| BrowserError::Protocol {
            call: "event subscription".into(),
            message: e.to_string(),
        })?
        .boxed())
}
