//! Settling one delivery on the broker: ack, nack-requeue, retry through a
//! delay queue, or dead-letter with the reason in headers.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use chrono::Utc;
use lapin::Acker;
use lapin::options::{BasicAckOptions, BasicNackOptions};
use oxwright_jobs::JobKind;
use tracing::debug;

use super::link::Link;
use super::topology::retry_level;
use super::wire::{broker_error, properties, within};
use crate::{Message, QueueError, Settlement, Settler};

/// Header of a dead-lettered message: the kind queue it came from.
pub(super) const HEADER_KIND: &str = "x-oxwright-kind";
/// Header of a dead-lettered message: when it was dead-lettered (RFC 3339).
pub(super) const HEADER_DEAD_LETTERED_AT: &str = "x-oxwright-dead-lettered-at";

/// Settles one delivery through its channel's acker; without an acker
/// (a message another party took off the broker, such as a Lambda event
/// source mapping) only the publishing part of a settlement happens.
#[derive(Debug)]
pub(super) struct AmqpSettler {
    link: Arc<Link>,
    acker: Option<Acker>,
    kind: JobKind,
}

impl AmqpSettler {
    pub(super) fn new(link: Arc<Link>, acker: Acker, kind: JobKind) -> Self {
        Self {
            link,
            acker: Some(acker),
            kind,
        }
    }

    pub(super) fn detached(link: Arc<Link>, kind: JobKind) -> Self {
        Self {
            link,
            acker: None,
            kind,
        }
    }

    async fn ack(&self) -> Result<(), QueueError> {
        let Some(acker) = &self.acker else {
            return Ok(());
        };
        within("ack", self.link.options.round_trip_timeout, async {
            acker
                .ack(BasicAckOptions::default())
                .await
                .map(drop)
                .map_err(|e| broker_error("ack", e))
        })
        .await
    }
}

fn expiration(delay: Duration) -> String {
    delay.as_millis().to_string()
}

#[async_trait]
impl Settler for AmqpSettler {
    async fn settle(self: Box<Self>, message: Message, settlement: Settlement) -> Result<(), QueueError> {
        match settlement {
            Settlement::Ack => self.ack().await,
            Settlement::Requeue => match &self.acker {
                Some(acker) => {
                    within("nack", self.link.options.round_trip_timeout, async {
                        acker
                            .nack(BasicNackOptions {
                                requeue: true,
                                ..BasicNackOptions::default()
                            })
                            .await
                            .map(drop)
                            .map_err(|e| broker_error("nack", e))
                    })
                    .await
                }
                // Whoever took the message gets it back by failing.
                None => Err(QueueError::InvalidArgument(
                    "a detached delivery cannot be requeued".into(),
                )),
            },
            Settlement::Retry { delay, message } => {
                let level = retry_level(&self.link.options.retry_delays, delay);
                let queue = self.link.names.retry_queue(self.kind, level);
                // The per-message expiration gives the exact delay; the
                // queue's TTL bounds it.
                let props = properties(message.message_id.as_deref(), &message.headers)
                    .with_expiration(expiration(delay).into());
                self.link.publish("", &queue, &message.body, props).await?;
                debug!(queue = %queue, ?delay, "job sent to retry queue");
                self.ack().await
            }
            Settlement::DeadLetter(reason) => {
                let mut headers = message.headers.clone();
                headers.insert(HEADER_KIND.to_owned(), self.kind.as_str().to_owned());
                headers.insert(HEADER_DEAD_LETTERED_AT.to_owned(), Utc::now().to_rfc3339());
                let props = properties(message.message_id.as_deref(), &headers);
                let queue = self.link.names.dead_letter_queue();
                self.link.publish("", &queue, &message.body, props).await?;
                debug!(error_kind = %reason.kind, "message dead-lettered");
                self.ack().await
            }
        }
    }

    fn abandon(self: Box<Self>, _message: Message) {
        let Some(acker) = self.acker else {
            return;
        };
        self.link.defer(async move {
            // A closed channel requeues it anyway.
            let _ = acker
                .nack(BasicNackOptions {
                    requeue: true,
                    ..BasicNackOptions::default()
                })
                .await;
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expiration_is_in_milliseconds() {
        assert_eq!(expiration(Duration::from_millis(300)), "300");
        assert_eq!(expiration(Duration::ZERO), "0");
    }
}
