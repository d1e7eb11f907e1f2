//! The requests a page makes, recorded from DevTools' Network events for
//! `Page::requests` (what `browser_network_requests` lists and
//! `browser_network_request` details): method, URL, type, headers, a short
//! request body, status, response headers, failure, time and size. Only
//! the current document's: the log is cleared when the main frame starts a
//! new document; at most [`CAP`] entries, the oldest dropped. A redirect
//! keeps its hop as an entry of its own.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use chromiumoxide::Page;
use chromiumoxide::cdp::browser_protocol::network::{
    EnableParams, EventLoadingFailed, EventLoadingFinished, EventRequestWillBeSent, EventResponseReceived,
};
use futures::StreamExt;
use oxwright_engine::RequestRecord;
use serde_json::Value;
use tokio::task::JoinHandle;

/// Requests kept per document.
const CAP: usize = 1_000;
/// A request body is cut at this many bytes.
const BODY_CAP: usize = 64 * 1024;

#[derive(Debug, Default)]
pub(crate) struct Entry {
    record: RequestRecord,
    /// DevTools' monotonic seconds at the request.
    started: f64,
}

/// The shared log a page's recorder fills.
pub(crate) type Log = Arc<Mutex<VecDeque<Entry>>>;

/// Starts recording `page`'s requests; `main_frame` is its top frame's id.
pub(crate) async fn record(
    page: &Page,
    main_frame: String,
) -> Result<(Log, JoinHandle<()>), chromiumoxide::error::CdpError> {
    let mut sent = page.event_listener::<EventRequestWillBeSent>().await?;
    let mut answered = page.event_listener::<EventResponseReceived>().await?;
    let mut failed = page.event_listener::<EventLoadingFailed>().await?;
    let mut finished = page.event_listener::<EventLoadingFinished>().await?;
    // Bodies kept for browser_network_request: 10 MB a response, 50 MB a page.
    page.execute(
        EnableParams::builder()
            .max_total_buffer_size(50_000_000)
            .max_resource_buffer_size(10_000_000)
            .max_post_data_size(BODY_CAP as i64)
            .build(),
    )
    .await?;
    let log: Log = Arc::default();
    let sink = log.clone();
    let task = tokio::spawn(async move {
        loop {
            let (kind, ev) = tokio::select! {
                Some(ev) = sent.next() => (0, serde_json::to_value(&*ev)),
                Some(ev) = answered.next() => (1, serde_json::to_value(&*ev)),
                Some(ev) = failed.next() => (2, serde_json::to_value(&*ev)),
                Some(ev) = finished.next() => (3, serde_json::to_value(&*ev)),
                else => break,
            };
            let Ok(ev) = ev else { continue };
            let mut log = sink.lock().unwrap_or_else(|p| p.into_inner());
            match kind {
                0 => on_sent(&mut log, &ev, &main_frame),
                1 => on_response(&mut log, &ev),
                2 => on_failed(&mut log, &ev),
                _ => on_finished(&mut log, &ev),
            }
        }
    });
    Ok((log, task))
}

/// The records in the log, oldest first.
pub(crate) fn records(log: &Log) -> Vec<RequestRecord> {
    let log = log.lock().unwrap_or_else(|p| p.into_inner());
    log.iter().map(|e| e.record.clone()).collect()
}

fn text(v: &Value) -> String {
    v.as_str().unwrap_or_default().to_string()
}

fn headers(v: &Value) -> Vec<(String, String)> {
    v.as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| (k.clone(), v.as_str().map_or_else(|| v.to_string(), str::to_owned)))
        .collect()
}

fn find<'a>(log: &'a mut VecDeque<Entry>, id: &str) -> Option<&'a mut Entry> {
    log.iter_mut().rev().find(|e| e.record.id == id)
}

fn ms(started: f64, ev: &Value) -> Option<u64> {
    let end = ev["timestamp"].as_f64()?;
    Some(((end - started).max(0.0) * 1000.0).round() as u64)
}

fn on_sent(log: &mut VecDeque<Entry>, ev: &Value, main_frame: &str) {
    let id = text(&ev["requestId"]);
    let kind = text(&ev["type"]).to_ascii_lowercase();
    if let Some(redirect) = ev.get("redirectResponse").filter(|r| r.is_object()) {
        // The hop that answered with a redirect keeps its own line.
        let hops = log
            .iter()
            .filter(|e| e.record.id.starts_with(&format!("{id}:")))
            .count();
        if let Some(hop) = find(log, &id) {
            hop.record.id = format!("{id}:redirect{}", hops + 1);
            hop.record.status = redirect["status"].as_u64().unwrap_or(0) as u16;
            hop.record.status_text = text(&redirect["statusText"]);
            hop.record.response_headers = headers(&redirect["headers"]);
            hop.record.mime = text(&redirect["mimeType"]);
            hop.record.ms = ms(hop.started, ev);
        }
    } else if kind == "document" && text(&ev["frameId"]) == main_frame && id == text(&ev["loaderId"]) {
        // A new document: its requests start the log again.
        log.clear();
    }
    let request = &ev["request"];
    // The body comes in parts, base64-encoded.
    let body = request["postDataEntries"].as_array().map(|parts| {
        use base64::Engine as _;
        let mut bytes = Vec::new();
        for part in parts {
            if let Some(b) = part["bytes"].as_str()
                && let Ok(mut decoded) = base64::engine::general_purpose::STANDARD.decode(b)
            {
                bytes.append(&mut decoded);
            }
        }
        bytes.truncate(BODY_CAP);
        String::from_utf8_lossy(&bytes).into_owned()
    });
    if log.len() >= CAP {
        log.pop_front();
    }
    log.push_back(Entry {
        record: RequestRecord {
            id,
            method: text(&request["method"]),
            url: text(&request["url"]),
            kind,
            request_headers: headers(&request["headers"]),
            request_body: body,
            ..RequestRecord::default()
        },
        started: ev["timestamp"].as_f64().unwrap_or_default(),
    });
}

fn on_response(log: &mut VecDeque<Entry>, ev: &Value) {
    let Some(e) = find(log, &text(&ev["requestId"])) else {
        return;
    };
    let r = &ev["response"];
    e.record.status = r["status"].as_u64().unwrap_or(0) as u16;
    e.record.status_text = text(&r["statusText"]);
    e.record.response_headers = headers(&r["headers"]);
    e.record.mime = text(&r["mimeType"]);
    // The headers as sent (cookies included) come with the response.
    if let Some(sent) = r.get("requestHeaders").filter(|h| h.is_object()) {
        e.record.request_headers = headers(sent);
    }
}

fn on_failed(log: &mut VecDeque<Entry>, ev: &Value) {
    let Some(e) = find(log, &text(&ev["requestId"])) else {
        return;
    };
    let mut why = text(&ev["errorText"]);
    if let Some(blocked) = ev["blockedReason"].as_str() {
        why = format!("{why} (blocked: {blocked})");
    }
    e.record.failure = Some(why);
    e.record.ms = ms(e.started, ev);
}

fn on_finished(log: &mut VecDeque<Entry>, ev: &Value) {
    let Some(e) = find(log, &text(&ev["requestId"])) else {
        return;
    };
    e.record.ms = ms(e.started, ev);
    e.record.bytes = ev["encodedDataLength"].as_f64().map(|b| b.max(0.0) as u64);
}
