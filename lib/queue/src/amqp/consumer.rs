//! Prefetch-bounded consumers that survive connection loss: a
//! [`Subscription`] to one queue re-subscribes on a new channel after the
//! connection drops (the broker redelivers what was unacked), and
//! [`AmqpConsumer`] turns its deliveries into [`Delivery`] values.

use std::sync::Arc;

use async_trait::async_trait;
use futures::StreamExt;
use lapin::options::{BasicConsumeOptions, BasicQosOptions};
use lapin::types::FieldTable;
use lapin::{Channel, message};
use oxwright_jobs::JobKind;
use tokio::time::Instant;
use tracing::{debug, info, warn};

use super::backoff::{self, Backoff, Report};
use super::link::Link;
use super::settle::AmqpSettler;
use super::wire::{broker_error, message_of};
use crate::{Consumer, Delivery, QueueError};

/// A manual-ack subscription to one queue with `basic_qos(prefetch)`.
#[derive(Debug)]
pub(super) struct Subscription {
    link: Arc<Link>,
    queue: String,
    prefetch: u16,
    current: Option<(Channel, lapin::Consumer)>,
    /// Kept across `next` calls: a caller polling `next` in a `select!`
    /// must not restart the backoff (or skip its pause) each time.
    backoff: Backoff,
    /// When the next re-subscribe attempt is due.
    retry_at: Option<Instant>,
}

impl Subscription {
    /// Subscribes to `queue`, retrying while the broker is unreachable up
    /// to the reconnect timeout.
    pub(super) async fn open(link: Arc<Link>, queue: String, prefetch: u16) -> Result<Self, QueueError> {
        let mut sub = Self {
            link: Arc::clone(&link),
            queue,
            prefetch,
            current: None,
            backoff: Backoff::new(backoff::SUBSCRIBE_MAX),
            retry_at: None,
        };
        let current = link.with_retry("consume", || sub.subscribe()).await?;
        sub.current = Some(current);
        Ok(sub)
    }

    async fn subscribe(&self) -> Result<(Channel, lapin::Consumer), QueueError> {
        let channel = self.link.channel().await?;
        channel
            .basic_qos(self.prefetch, BasicQosOptions::default())
            .await
            .map_err(|e| broker_error("basic_qos", e))?;
        let consumer = channel
            .basic_consume(
                self.queue.as_str().into(),
                "".into(),
                BasicConsumeOptions::default(),
                FieldTable::default(),
            )
            .await
            .map_err(|e| broker_error("basic_consume", e))?;
        Ok((channel, consumer))
    }

    /// Returns the next delivery, re-subscribing with backoff whenever the
    /// channel or connection is lost; `None` once the queue is closed.
    /// Cancel-safe: a delivery is only taken from lapin's buffer when it
    /// is returned.
    pub(super) async fn next(&mut self) -> Option<message::Delivery> {
        loop {
            if self.link.closed.is_cancelled() {
                return None;
            }
            let Some((_, consumer)) = self.current.as_mut() else {
                self.resubscribe().await?;
                continue;
            };
            let item = tokio::select! {
                () = self.link.closed.cancelled() => return None,
                item = consumer.next() => item,
            };
            match item {
                Some(Ok(delivery)) => return Some(delivery),
                Some(Err(err)) => {
                    warn!(queue = %self.queue, error = %err, "consumer lost its channel, re-subscribing");
                    self.current = None;
                }
                None => {
                    warn!(queue = %self.queue, "consumer cancelled by the broker, re-subscribing");
                    self.current = None;
                }
            }
        }
    }

    /// Makes one re-subscribe attempt once its pause is over; `None` when
    /// the queue was closed meanwhile. Cancel-safe: the pause and the
    /// backoff live in `self`.
    async fn resubscribe(&mut self) -> Option<()> {
        if let Some(at) = self.retry_at {
            tokio::select! {
                () = self.link.closed.cancelled() => return None,
                () = tokio::time::sleep_until(at) => {}
            }
            self.retry_at = None;
        }
        match self.subscribe().await {
            Ok(current) => {
                self.current = Some(current);
                match self.backoff.succeeded(Instant::now()) {
                    Some((down, failures)) => info!(
                        queue = %self.queue, down_s = down.as_secs(), failures,
                        "re-subscribed, the broker is back"
                    ),
                    None => debug!(queue = %self.queue, "re-subscribed after connection loss"),
                }
            }
            Err(err) => {
                let now = Instant::now();
                let (pause, report) = self.backoff.failed(now, backoff::jitter());
                let (down_s, failures) = (self.backoff.down_for(now).as_secs(), self.backoff.failures());
                match report {
                    Report::Warn => warn!(
                        queue = %self.queue, error = %err, max_pause = ?backoff::SUBSCRIBE_MAX,
                        remind_every = ?backoff::REMIND_EVERY, "cannot re-subscribe, retrying with backoff"
                    ),
                    Report::Remind => warn!(
                        queue = %self.queue, error = %err, down_s, failures,
                        "still cannot re-subscribe"
                    ),
                    Report::Quiet => debug!(queue = %self.queue, error = %err, ?pause, "cannot re-subscribe"),
                }
                self.retry_at = Some(now + pause);
            }
        }
        Some(())
    }

    /// Returns the link this subscription uses.
    pub(super) fn link(&self) -> &Arc<Link> {
        &self.link
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        if let Some((channel, consumer)) = self.current.take() {
            // Closing the channel ends the subscription and requeues
            // whatever it still holds unacked, like a crashed consumer.
            self.link.defer(async move {
                let _ = channel.close(200, "OK".into()).await;
                drop(consumer);
            });
        }
    }
}

/// A consumer of one kind's queue.
#[derive(Debug)]
pub(super) struct AmqpConsumer {
    pub(super) subscription: Subscription,
    pub(super) kind: JobKind,
}

#[async_trait]
impl Consumer for AmqpConsumer {
    async fn next(&mut self) -> Option<Delivery> {
        let delivery = self.subscription.next().await?;
        let link = Arc::clone(self.subscription.link());
        let message = message_of(self.kind, &delivery);
        let max = link.options.max_message_bytes;
        let settler = AmqpSettler::new(link, delivery.acker, self.kind);
        Some(Delivery::new(
            message,
            delivery.redelivered,
            max,
            Box::new(settler),
        ))
    }
}
