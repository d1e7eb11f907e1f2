//! The alert outbox: an alert is written to the store
//! (`checks/<name>/outbox/<alert-id>.json`) before the state change that
//! raised it is stored, and deleted once its webhook took it. A daemon
//! killed in between finds it at its next start and delivers it then, so
//! every alert reaches its receiver; each delivery carries the alert's id
//! (`x-oxwright-delivery`), the same on every try, for a receiver that
//! must not act twice on a delivery it already took.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use chrono::Utc;
use oxwright_artifacts::ArtifactStore;
use serde::{Deserialize, Serialize};

use crate::hooks::{SIGNATURE_HEADER, sign};

/// An alert waiting for delivery.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingAlert {
    /// The alert's id: the check, the run and the event, so the same run
    /// folded twice writes the same entry.
    pub id: String,
    /// The check.
    pub check: String,
    /// Where it goes.
    pub webhook: String,
    /// The event (`check.failed`, `check.recovered`, `check.reminder`).
    pub event: String,
    /// The body POSTed.
    pub body: serde_json::Value,
}

/// The key of `check`'s outbox entries.
pub fn prefix(check: &str) -> String {
    format!("checks/{check}/outbox/")
}

fn key(alert: &PendingAlert) -> String {
    format!("{}{}.json", prefix(&alert.check), alert.id)
}

/// Waits between delivery tries; then the alert stays in the outbox for
/// the next start (or the next sweep).
pub const RETRY_DELAYS: [Duration; 4] = [
    Duration::from_secs(1),
    Duration::from_secs(2),
    Duration::from_secs(4),
    Duration::from_secs(8),
];

/// Delivers alerts from the store's outbox.
#[derive(Clone)]
pub struct Outbox {
    store: Arc<dyn ArtifactStore>,
    client: reqwest::Client,
    secret: Option<String>,
}

impl std::fmt::Debug for Outbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Outbox")
            .field("signed", &self.secret.is_some())
            .finish_non_exhaustive()
    }
}

impl Outbox {
    /// An outbox over `store`, signing with `secret` (as batch webhooks are).
    pub fn new(store: Arc<dyn ArtifactStore>, secret: Option<String>) -> Self {
        let client = crate::hooks::webhook_client();
        Self {
            store,
            client,
            secret,
        }
    }

    /// Writes `alert` to the outbox (before the state that raised it).
    pub async fn put(&self, alert: &PendingAlert) -> Result<(), oxwright_artifacts::ArtifactError> {
        let body = serde_json::to_vec(alert).expect("alerts serialise");
        self.store
            .put(&key(alert), Bytes::from(body), "application/json")
            .await
    }

    /// Every alert waiting in the outbox, oldest first.
    pub async fn pending(&self) -> Result<Vec<PendingAlert>, oxwright_artifacts::ArtifactError> {
        self.pending_under("checks/").await
    }

    /// The alerts waiting under `under` (all checks', or one's
    /// [`prefix`]), oldest first.
    async fn pending_under(
        &self,
        under: &str,
    ) -> Result<Vec<PendingAlert>, oxwright_artifacts::ArtifactError> {
        let mut keys: Vec<String> = self
            .store
            .list(under)
            .await?
            .into_iter()
            .filter(|k| k.contains("/outbox/") && k.ends_with(".json"))
            .collect();
        keys.sort();
        let mut alerts = Vec::new();
        for key in keys {
            match self.store.get(&key).await {
                Ok(bytes) => match serde_json::from_slice(&bytes) {
                    Ok(alert) => alerts.push(alert),
                    Err(err) => tracing::warn!(%key, error = %err, "unreadable outbox entry left alone"),
                },
                Err(err) => tracing::debug!(%key, error = %err, "outbox entry gone"),
            }
        }
        Ok(alerts)
    }

    /// Takes `alert` back out of the outbox undelivered (its state change
    /// lost to another scheduler's).
    pub async fn withdraw(&self, alert: &PendingAlert) -> Result<(), oxwright_artifacts::ArtifactError> {
        self.store.delete(&key(alert)).await
    }

    /// Delivers `alert`, trying again with [`RETRY_DELAYS`], and removes it
    /// from the outbox once its receiver took it. Says whether it did.
    pub async fn deliver(&self, alert: &PendingAlert) -> bool {
        let body = serde_json::to_vec(&alert.body).expect("alerts serialise");
        for attempt in 0..=RETRY_DELAYS.len() {
            let t = Utc::now().timestamp();
            let mut request = self
                .client
                .post(&alert.webhook)
                .header("content-type", "application/json")
                .header("x-oxwright-event", alert.event.as_str())
                .header("x-oxwright-delivery", alert.id.as_str())
                .body(body.clone());
            if let Some(secret) = &self.secret {
                request = request.header(SIGNATURE_HEADER, sign(secret, t, &body));
            }
            let outcome = match request.send().await {
                Ok(response) if response.status().is_success() => Ok(()),
                Ok(response) => Err(format!("HTTP {}", response.status().as_u16())),
                Err(err) => Err(err.without_url().to_string()),
            };
            match outcome {
                Ok(()) => {
                    super::metrics::record_alert(&alert.check, &alert.event);
                    if let Err(err) = self.store.delete(&key(alert)).await {
                        // Left in the outbox it goes again, with the same id.
                        tracing::warn!(check = %alert.check, error = %err, "delivered alert not removed from the outbox");
                    }
                    return true;
                }
                Err(why) => match RETRY_DELAYS.get(attempt) {
                    Some(delay) => {
                        tracing::debug!(check = %alert.check, event = %alert.event, attempt, error = %why, "alert delivery failed; retrying");
                        tokio::time::sleep(*delay).await;
                    }
                    None => tracing::warn!(
                        check = %alert.check, event = %alert.event, error = %why,
                        "alert not delivered; it stays in the outbox for the next start"
                    ),
                },
            }
        }
        false
    }

    /// Delivers every alert left in the outbox (at the daemon's start).
    pub async fn sweep(&self) {
        self.sweep_under("checks/").await;
    }

    /// Delivers the alerts left in `check`'s outbox only, listing no other
    /// key (a function that runs one check).
    pub async fn sweep_check(&self, check: &str) {
        self.sweep_under(&prefix(check)).await;
    }

    async fn sweep_under(&self, under: &str) {
        match self.pending_under(under).await {
            Ok(alerts) => {
                for alert in alerts {
                    self.deliver(&alert).await;
                }
            }
            Err(err) => tracing::warn!(error = %err, "the alert outbox could not be read"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxwright_artifacts::MemoryStore;

    fn alert(check: &str, id: &str) -> PendingAlert {
        PendingAlert {
            id: id.into(),
            check: check.into(),
            webhook: "http://127.0.0.1:9/alerts".into(),
            event: "check.failed".into(),
            body: serde_json::json!({"check": check}),
        }
    }

    #[tokio::test]
    async fn one_checks_outbox_is_read_without_the_others() {
        let store = Arc::new(MemoryStore::new());
        let outbox = Outbox::new(store.clone(), None);
        outbox.put(&alert("login", "r1-failed")).await.unwrap();
        outbox.put(&alert("checkout", "r2-failed")).await.unwrap();
        outbox.put(&alert("login", "r0-failed")).await.unwrap();
        let login: Vec<_> = outbox
            .pending_under(&prefix("login"))
            .await
            .unwrap()
            .into_iter()
            .map(|a| a.id)
            .collect();
        assert_eq!(login, ["r0-failed", "r1-failed"], "oldest first, login's only");
        assert_eq!(outbox.pending().await.unwrap().len(), 3);
        assert!(outbox.pending_under(&prefix("log")).await.unwrap().is_empty());
    }
}
