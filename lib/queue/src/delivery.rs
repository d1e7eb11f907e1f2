//! One message as a consumer sees it, and the ways to settle it: the
//! [`Delivery`] handed out by consumers, the [`Settler`] each backend
//! implements, and dead-letter records.

use std::collections::BTreeMap;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use chrono::{DateTime, Utc};
use oxwright_jobs::{Job, JobKind};
use tracing::debug;

use crate::{DecodeError, HEADER_ERROR_KIND, HEADER_ERROR_MESSAGE, HEADER_TRACEPARENT, QueueError};

/// Message headers (AMQP header table, string values only).
pub type Headers = BTreeMap<String, String>;

/// A message as it sits on a queue: raw bytes plus metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// The kind queue the message was routed to.
    pub kind: JobKind,
    /// The broker message id; the job id for jobs published with
    /// `publish`, `None` for raw messages.
    pub message_id: Option<String>,
    /// Headers, including `traceparent` when the publisher had a trace.
    pub headers: Headers,
    /// The body: serde_json of a `Job`, or anything for raw messages.
    pub body: Bytes,
}

/// Why a message was dead-lettered; travels as the
/// [`HEADER_ERROR_KIND`] and [`HEADER_ERROR_MESSAGE`] headers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeadLetterReason {
    /// A snake_case error kind (`oxwright_jobs::ErrorKind` names, or
    /// `decode_*` for undecodable messages).
    pub kind: String,
    /// A human-readable explanation.
    pub message: String,
}

/// A message on the dead-letter queue, with why it is there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeadLetter {
    /// The message as dead-lettered, its headers carrying the reason.
    pub message: Message,
    /// Why it was dead-lettered.
    pub reason: DeadLetterReason,
    /// When it was dead-lettered.
    pub dead_lettered_at: DateTime<Utc>,
}

impl DeadLetter {
    /// The message to publish again: the job at attempt 0 (an undecodable
    /// body unchanged), without the dead-letter reason headers.
    pub fn revived(&self) -> Message {
        let mut message = self.message.clone();
        message.headers.remove(HEADER_ERROR_KIND);
        message.headers.remove(HEADER_ERROR_MESSAGE);
        if let Ok(mut job) = serde_json::from_slice::<oxwright_jobs::Job>(&message.body) {
            job.attempt = 0;
            if let Ok(body) = serde_json::to_vec(&job) {
                message.body = Bytes::from(body);
            }
        }
        message
    }

    /// Returns the error kind header of the dead-lettered message.
    pub fn error_kind(&self) -> Option<&str> {
        self.message.headers.get(HEADER_ERROR_KIND).map(String::as_str)
    }
}

/// How a delivery is settled; what a backend's [`Settler`] carries out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Settlement {
    /// Done: remove the message.
    Ack,
    /// Put the message back on its queue for immediate redelivery.
    Requeue,
    /// Remove the message and publish `message` (attempt + 1) again after
    /// `delay`.
    Retry {
        /// How long the message waits before it is ready again.
        delay: Duration,
        /// The message to re-publish.
        message: Message,
    },
    /// Move the message to the dead-letter queue.
    DeadLetter(DeadLetterReason),
}

/// The backend side of one delivery: carries out its settlement.
/// A backend hands one to each [`Delivery`] it creates.
#[async_trait]
pub trait Settler: Send + Sync + std::fmt::Debug {
    /// Settles the delivery of `message` (as delivered, except that for
    /// [`Settlement::DeadLetter`] the reason headers are already added) and
    /// frees its prefetch slot.
    async fn settle(self: Box<Self>, message: Message, settlement: Settlement) -> Result<(), QueueError>;

    /// Requeues `message` because its delivery was dropped unsettled, the
    /// way a broker requeues the unacked messages of a closed channel.
    /// Must not block.
    fn abandon(self: Box<Self>, message: Message);
}

/// One delivered message. It settles exactly once, through `ack`,
/// `requeue`, `retry` or `dead_letter`; dropped unsettled it is requeued.
#[derive(Debug)]
pub struct Delivery {
    message: Message,
    redelivered: bool,
    job: Result<Job, DecodeError>,
    settler: Option<Box<dyn Settler>>,
}

impl Delivery {
    /// Creates a delivery of `message`, decoding its body with a limit of
    /// `max_bytes`. Backends call this.
    pub fn new(message: Message, redelivered: bool, max_bytes: usize, settler: Box<dyn Settler>) -> Self {
        let job = crate::decode_job(&message.body, message.kind, max_bytes);
        Self {
            message,
            redelivered,
            job,
            settler: Some(settler),
        }
    }

    /// Returns the decoded job, or why the body is not one.
    pub fn job(&self) -> &Result<Job, DecodeError> {
        &self.job
    }

    /// Returns the raw body.
    pub fn body(&self) -> &Bytes {
        &self.message.body
    }

    /// Returns the headers.
    pub fn headers(&self) -> &Headers {
        &self.message.headers
    }

    /// Returns the broker message id, if the publisher set one.
    pub fn message_id(&self) -> Option<&str> {
        self.message.message_id.as_deref()
    }

    /// Returns the `traceparent` header, if any.
    pub fn traceparent(&self) -> Option<&str> {
        self.message.headers.get(HEADER_TRACEPARENT).map(String::as_str)
    }

    /// Returns the kind queue the message came from.
    pub fn kind(&self) -> JobKind {
        self.message.kind
    }

    /// Says whether the message was delivered before and not acked
    /// (requeued or abandoned).
    pub fn redelivered(&self) -> bool {
        self.redelivered
    }

    /// Returns the message.
    pub fn message(&self) -> &Message {
        &self.message
    }

    /// Acknowledges the message: it is done and leaves the queue.
    pub async fn ack(self) -> Result<(), QueueError> {
        self.settle(Settlement::Ack).await
    }

    /// Puts the message back on its queue for immediate redelivery, with
    /// the redelivered flag set.
    pub async fn requeue(self) -> Result<(), QueueError> {
        self.settle(Settlement::Requeue).await
    }

    /// Removes the message and publishes it again after `delay` with the
    /// job's `attempt` incremented. An undecodable body is re-published
    /// unchanged (there is no attempt to increment).
    pub async fn retry(self, delay: Duration) -> Result<(), QueueError> {
        let mut message = self.message.clone();
        if let Ok(job) = &self.job {
            let mut job = job.clone();
            job.attempt = job.attempt.saturating_add(1);
            message.body = Bytes::from(serde_json::to_vec(&job).map_err(QueueError::Encode)?);
        }
        self.settle(Settlement::Retry { delay, message }).await
    }

    /// Removes the message and publishes it again at once, unchanged: the
    /// job goes on in a fresh consumer's hands and the hand-over counts as
    /// no attempt (a workflow continuing from its checkpoint).
    pub async fn hand_over(self) -> Result<(), QueueError> {
        let message = self.message.clone();
        self.settle(Settlement::Retry {
            delay: Duration::ZERO,
            message,
        })
        .await
    }

    /// Moves the message to the dead-letter queue with `reason`, recorded
    /// in its headers.
    pub async fn dead_letter(self, reason: DeadLetterReason) -> Result<(), QueueError> {
        self.settle(Settlement::DeadLetter(reason)).await
    }

    async fn settle(mut self, settlement: Settlement) -> Result<(), QueueError> {
        let Some(settler) = self.settler.take() else {
            // Unreachable: settling consumes the delivery and only Drop
            // also takes the settler.
            return Ok(());
        };
        let mut message = self.message.clone();
        if let Settlement::DeadLetter(reason) = &settlement {
            message
                .headers
                .insert(HEADER_ERROR_KIND.to_owned(), reason.kind.clone());
            message
                .headers
                .insert(HEADER_ERROR_MESSAGE.to_owned(), reason.message.clone());
        }
        settler.settle(message, settlement).await
    }
}

impl Drop for Delivery {
    fn drop(&mut self) {
        if let Some(settler) = self.settler.take() {
            debug!(
                message_id = self.message.message_id.as_deref().unwrap_or(""),
                kind = %self.message.kind,
                "delivery dropped unsettled, requeueing"
            );
            settler.abandon(self.message.clone());
        }
    }
}
