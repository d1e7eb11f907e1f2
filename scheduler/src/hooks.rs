//! Batch webhooks: the events of a batch (`started`, one `page` per
//! manifest line, then `completed` or `failed`) POSTed to the URL its
//! submitter gave, in order, signed with HMAC-SHA256, retried with backoff.
//! Deliveries run on their own tasks: a slow or failing receiver never
//! holds a batch back.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use chrono::Utc;
use hmac::{Hmac, Mac};
use oxwright_jobs::JobReport;
use oxwright_policy::UrlPolicy;
use serde::{Deserialize, Serialize};
use sha2::Sha256;
use tokio::sync::mpsc;

use crate::batch::BatchSummary;

/// The webhook of a batch, as given in `POST /v1/batches` and kept in its
/// record (no secret: deliveries are signed with the daemon's key).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BatchWebhook {
    /// Where events are POSTed (http or https; the URL policy applies).
    pub url: String,
    /// The events wanted (`started`, `page`, `completed`, `failed`); all
    /// when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<String>,
    /// Echoed in every event.
    #[serde(default, skip_serializing_if = "serde_json::Value::is_null")]
    pub metadata: serde_json::Value,
}

/// The events a batch webhook can ask for.
pub const EVENTS: [&str; 4] = ["started", "page", "completed", "failed"];

/// The header carrying the signature: `t=<unix seconds>,v1=<hex>`, the hex
/// HMAC-SHA256 of `"<t>.<body>"` under the signing secret.
pub const SIGNATURE_HEADER: &str = "x-oxwright-signature";

impl BatchWebhook {
    /// Checks the URL (scheme, the policy) and the event names.
    pub fn validate(&self, policy: &UrlPolicy) -> Result<(), String> {
        let url = url::Url::parse(&self.url).map_err(|e| format!("webhook url {:?}: {e}", self.url))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(format!("webhook url {:?}: only http and https", self.url));
        }
        policy
            .parse_input(url.as_str())
            .map_err(|e| format!("webhook url {:?} refused by the URL policy: {e}", self.url))?;
        if let Some(bad) = self.events.iter().find(|e| !EVENTS.contains(&e.as_str())) {
            return Err(format!(
                "unknown webhook event {bad:?}: one of {}",
                EVENTS.join(", ")
            ));
        }
        Ok(())
    }

    fn wants(&self, event: &str) -> bool {
        self.events.is_empty() || self.events.iter().any(|e| e == event)
    }
}

/// Signs `body` sent at unix time `t`: the value of [`SIGNATURE_HEADER`].
pub fn sign(secret: &str, t: i64, body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes any key length");
    mac.update(format!("{t}.").as_bytes());
    mac.update(body);
    let digest = mac.finalize().into_bytes();
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("t={t},v1={hex}")
}

/// Waits between delivery attempts: an event is tried `len() + 1` times.
pub const RETRY_DELAYS: [Duration; 4] = [
    Duration::from_secs(1),
    Duration::from_secs(2),
    Duration::from_secs(4),
    Duration::from_secs(8),
];

struct Event {
    name: &'static str,
    body: Vec<u8>,
}

/// A batch's webhook (`None`: it has none), and its delivery queue once
/// an event was sent.
type BatchHooks = HashMap<String, (Option<BatchWebhook>, Option<mpsc::UnboundedSender<Event>>)>;

/// The client every outgoing webhook (batch events, check alerts) is
/// sent with: a 10 s deadline, and no redirect followed.
pub(crate) fn webhook_client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("an HTTP client builds")
}

/// The webhook sender of a daemon: one ordered delivery queue per batch.
pub struct Hooks {
    client: reqwest::Client,
    secret: Option<String>,
    batches: Mutex<BatchHooks>,
}

impl std::fmt::Debug for Hooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hooks")
            .field("signed", &self.secret.is_some())
            .finish_non_exhaustive()
    }
}

impl Hooks {
    /// Creates a sender signing with `secret` (unsigned without one).
    pub fn new(secret: Option<String>) -> Self {
        let client = webhook_client();
        Self {
            client,
            secret,
            batches: Mutex::new(HashMap::new()),
        }
    }

    /// Says whether the webhook of `batch_id` is known (even as none).
    pub fn knows(&self, batch_id: &str) -> bool {
        self.batches.lock().expect("hooks lock").contains_key(batch_id)
    }

    /// Says whether `batch_id` has a webhook.
    pub fn has_webhook(&self, batch_id: &str) -> bool {
        matches!(
            self.batches.lock().expect("hooks lock").get(batch_id),
            Some((Some(_), _))
        )
    }

    /// Forgets `batch_id` (complete, with no webhook).
    pub fn forget(&self, batch_id: &str) {
        self.batches.lock().expect("hooks lock").remove(batch_id);
    }

    /// Remembers the webhook of `batch_id` (from its record).
    pub fn register(&self, batch_id: &str, hook: Option<BatchWebhook>) {
        self.batches
            .lock()
            .expect("hooks lock")
            .entry(batch_id.to_owned())
            .or_insert((hook, None));
    }

    /// `started`: the batch was submitted.
    pub fn started(&self, batch_id: &str, total: usize) {
        self.send(batch_id, "started", serde_json::json!({ "total": total }));
    }

    /// `page`: a job of the batch has its manifest line.
    pub fn page(&self, report: &JobReport) {
        let Some(batch_id) = report.batch_id.as_deref() else {
            return;
        };
        let data = serde_json::json!({
            "job_id": report.job_id,
            "url": report.url,
            "status": report.status,
            "error": report.error,
            "artifacts": crate::links::artifact_links(&report.artifacts),
        });
        self.send(batch_id, "page", data);
    }

    /// `completed` (at least one job succeeded, not cancelled) or `failed`
    /// (cancelled, or every job failed); the batch's queue closes after it.
    pub fn finished(&self, summary: &BatchSummary, cancelled: bool) {
        let failed = cancelled || (summary.total > 0 && summary.ok == 0);
        let event = if failed { "failed" } else { "completed" };
        let mut data = serde_json::to_value(summary).unwrap_or_default();
        data["cancelled"] = cancelled.into();
        self.send(&summary.batch_id, event, data);
        // Dropping its sender ends the delivery task once the queued
        // events are sent.
        self.batches.lock().expect("hooks lock").remove(&summary.batch_id);
    }

    fn send(&self, batch_id: &str, event: &'static str, data: serde_json::Value) {
        let mut batches = self.batches.lock().expect("hooks lock");
        let Some((Some(hook), queue)) = batches.get_mut(batch_id) else {
            return;
        };
        if !hook.wants(event) {
            return;
        }
        let body = serde_json::to_vec(&serde_json::json!({
            "event": event,
            "batch_id": batch_id,
            "delivery_id": uuid::Uuid::new_v4(),
            "created_at": Utc::now(),
            "data": data,
            "metadata": hook.metadata,
        }))
        .expect("events serialise");
        let sender = queue.get_or_insert_with(|| {
            let (tx, rx) = mpsc::unbounded_channel();
            tokio::spawn(deliver_all(
                self.client.clone(),
                self.secret.clone(),
                hook.url.clone(),
                batch_id.to_owned(),
                rx,
            ));
            tx
        });
        if sender.send(Event { name: event, body }).is_err() {
            tracing::debug!(batch_id, event, "webhook queue closed; event dropped");
        }
    }
}

/// Delivers a batch's events in order, each tried with [`RETRY_DELAYS`].
async fn deliver_all(
    client: reqwest::Client,
    secret: Option<String>,
    url: String,
    batch_id: String,
    mut events: mpsc::UnboundedReceiver<Event>,
) {
    while let Some(event) = events.recv().await {
        let mut attempt = 0;
        loop {
            let t = Utc::now().timestamp();
            let mut request = client
                .post(&url)
                .header("content-type", "application/json")
                .header("x-oxwright-event", event.name)
                .body(event.body.clone());
            if let Some(secret) = &secret {
                request = request.header(SIGNATURE_HEADER, sign(secret, t, &event.body));
            }
            let outcome = match request.send().await {
                Ok(response) if response.status().is_success() => Ok(()),
                Ok(response) => Err(format!("HTTP {}", response.status().as_u16())),
                Err(err) => Err(err.to_string()),
            };
            match outcome {
                Ok(()) => break,
                Err(why) if attempt < RETRY_DELAYS.len() => {
                    tracing::debug!(%batch_id, event = event.name, attempt, error = %why, "webhook delivery failed; retrying");
                    tokio::time::sleep(RETRY_DELAYS[attempt]).await;
                    attempt += 1;
                }
                Err(why) => {
                    tracing::warn!(
                        %batch_id, event = event.name, error = %why, attempts = attempt + 1,
                        "webhook delivery failed for good; the event is dropped"
                    );
                    break;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signature_is_the_hmac_of_time_and_body() {
        // RFC 4231 test case 2 is for the raw message; ours prefixes "t.".
        let sig = sign("key", 1_700_000_000, b"{}");
        assert!(sig.starts_with("t=1700000000,v1="), "{sig}");
        assert_eq!(sig.len(), "t=1700000000,v1=".len() + 64);
        assert_ne!(sig, sign("other", 1_700_000_000, b"{}"));
        assert_ne!(sig, sign("key", 1_700_000_001, b"{}"));
    }

    #[test]
    fn webhooks_are_checked() {
        let policy = UrlPolicy::default();
        let hook = |url: &str, events: &[&str]| BatchWebhook {
            url: url.into(),
            events: events.iter().map(|e| (*e).to_owned()).collect(),
            metadata: serde_json::Value::Null,
        };
        assert!(
            hook("https://hooks.example/x", &["page"])
                .validate(&policy)
                .is_ok()
        );
        assert!(hook("ftp://hooks.example/x", &[]).validate(&policy).is_err());
        assert!(
            hook("https://hooks.example/x", &["pages"])
                .validate(&policy)
                .is_err()
        );
    }
}
