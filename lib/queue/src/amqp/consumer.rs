//! Prefetch-bounded consumers that survive connection loss: a
//! [`Subscription`] to one or more queues on one channel re-subscribes on
//! a new channel after the connection drops (the broker redelivers what was
//! unacked), and [`AmqpConsumer`] turns its deliveries into [`Delivery`]
//! values.

use std::sync::Arc;

use async_trait::async_trait;
use futures::StreamExt;
use futures::stream::{SelectAll, Stream};
use lapin::options::{BasicConsumeOptions, BasicQosOptions};
use lapin::types::FieldTable;
use lapin::{Channel, message};
use oxwright_jobs::JobKind;
use tokio::time::Instant;
use tracing::{debug, info, warn};

use super::backoff::{self, Backoff, Report};
use super::link::Link;
use super::settle::AmqpSettler;
use super::wire::{broker_error, message_of, within};
use crate::{Consumer, Delivery, QueueError};

/// What the merged consumers of a channel yield: the index of the queue,
/// then a delivery, or `None` once that queue's consumer ended.
type Item = (usize, Option<Result<message::Delivery, lapin::Error>>);

/// One queue's consumer as merged into the channel's stream.
type Merged = std::pin::Pin<Box<dyn Stream<Item = Item> + Send + Sync>>;

/// A manual-ack subscription to one or more queues on one channel. With
/// one queue the prefetch bounds its consumer; with several it is shared
/// (RabbitMQ's per-channel `basic_qos(global)`): the broker never has more
/// than `prefetch` deliveries of all of them unacked on the channel.
pub(super) struct Subscription {
    link: Arc<Link>,
    queues: Vec<String>,
    prefetch: u16,
    current: Option<(Channel, SelectAll<Merged>)>,
    /// Kept across `next` calls: a caller polling `next` in a `select!`
    /// must not restart the backoff (or skip its pause) each time.
    backoff: Backoff,
    /// When the next re-subscribe attempt is due.
    retry_at: Option<Instant>,
}

impl std::fmt::Debug for Subscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscription")
            .field("queues", &self.queues)
            .field("prefetch", &self.prefetch)
            .field("subscribed", &self.current.is_some())
            .finish_non_exhaustive()
    }
}

impl Subscription {
    /// Subscribes to `queues`, retrying while the broker is unreachable up
    /// to the reconnect timeout.
    pub(super) async fn open(
        link: Arc<Link>,
        queues: Vec<String>,
        prefetch: u16,
    ) -> Result<Self, QueueError> {
        let mut sub = Self {
            link: Arc::clone(&link),
            queues,
            prefetch,
            current: None,
            backoff: Backoff::new(backoff::SUBSCRIBE_MAX),
            retry_at: None,
        };
        let current = link.with_retry("consume", || sub.subscribe()).await?;
        sub.current = Some(current);
        Ok(sub)
    }

    fn name(&self) -> String {
        self.queues.join(",")
    }

    async fn subscribe(&self) -> Result<(Channel, SelectAll<Merged>), QueueError> {
        let channel = self.link.channel().await?;
        within(
            "subscribe",
            self.link.options.round_trip_timeout,
            self.consume_on(channel),
        )
        .await
    }

    /// Sets the prefetch on `channel` and starts a consumer of every queue.
    async fn consume_on(&self, channel: Channel) -> Result<(Channel, SelectAll<Merged>), QueueError> {
        let shared = self.queues.len() > 1;
        channel
            .basic_qos(self.prefetch, BasicQosOptions { global: shared })
            .await
            .map_err(|e| broker_error("basic_qos", e))?;
        let mut merged = SelectAll::new();
        for (index, queue) in self.queues.iter().enumerate() {
            let consumer = channel
                .basic_consume(
                    queue.as_str().into(),
                    "".into(),
                    BasicConsumeOptions::default(),
                    FieldTable::default(),
                )
                .await
                .map_err(|e| broker_error("basic_consume", e))?;
            // The end of one consumer is an item too: it means re-subscribing.
            let stream: Merged = Box::pin(
                consumer
                    .map(move |item| (index, Some(item)))
                    .chain(futures::stream::once(async move { (index, None) })),
            );
            merged.push(stream);
        }
        Ok((channel, merged))
    }

    /// Returns the next delivery and the index of its queue, re-subscribing
    /// with backoff whenever the channel or connection is lost; `None` once
    /// the queue handle is closed. Cancel-safe: a delivery is only taken
    /// from lapin's buffer when it is returned.
    pub(super) async fn next(&mut self) -> Option<(usize, message::Delivery)> {
        loop {
            if self.link.closed.is_cancelled() {
                return None;
            }
            let Some((_, consumers)) = self.current.as_mut() else {
                self.resubscribe().await?;
                continue;
            };
            let item = tokio::select! {
                () = self.link.closed.cancelled() => return None,
                item = consumers.next() => item,
            };
            match item {
                Some((index, Some(Ok(delivery)))) => return Some((index, delivery)),
                Some((_, Some(Err(err)))) => {
                    warn!(queue = %self.name(), error = %err, "consumer lost its channel, re-subscribing");
                    self.drop_current();
                }
                Some((_, None)) | None => {
                    warn!(queue = %self.name(), "consumer cancelled by the broker, re-subscribing");
                    self.drop_current();
                }
            }
        }
    }

    /// Closes the current channel (its other consumers' unacked deliveries
    /// go back to their queues) before re-subscribing.
    fn drop_current(&mut self) {
        if let Some((channel, consumers)) = self.current.take() {
            self.link.defer(async move {
                let _ = channel.close(200, "OK".into()).await;
                drop(consumers);
            });
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
                        queue = %self.name(), down_s = down.as_secs(), failures,
                        "re-subscribed, the broker is back"
                    ),
                    None => debug!(queue = %self.name(), "re-subscribed after connection loss"),
                }
            }
            Err(err) => {
                let now = Instant::now();
                let (pause, report) = self.backoff.failed(now, backoff::jitter());
                let (down_s, failures) = (self.backoff.down_for(now).as_secs(), self.backoff.failures());
                match report {
                    Report::Warn => warn!(
                        queue = %self.name(), error = %err, max_pause = ?backoff::SUBSCRIBE_MAX,
                        remind_every = ?backoff::REMIND_EVERY, "cannot re-subscribe, retrying with backoff"
                    ),
                    Report::Remind => warn!(
                        queue = %self.name(), error = %err, down_s, failures,
                        "still cannot re-subscribe"
                    ),
                    Report::Quiet => {
                        debug!(queue = %self.name(), error = %err, ?pause, "cannot re-subscribe")
                    }
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
        // Closing the channel ends the subscription and requeues whatever
        // it still holds unacked, like a crashed consumer.
        self.drop_current();
    }
}

/// A consumer of one or more kinds' queues, `kinds[i]` read from the
/// subscription's queue `i`.
#[derive(Debug)]
pub(super) struct AmqpConsumer {
    pub(super) subscription: Subscription,
    pub(super) kinds: Vec<JobKind>,
}

#[async_trait]
impl Consumer for AmqpConsumer {
    async fn next(&mut self) -> Option<Delivery> {
        let (index, delivery) = self.subscription.next().await?;
        let kind = self.kinds[index];
        let link = Arc::clone(self.subscription.link());
        let message = message_of(kind, &delivery);
        let max = link.options.max_message_bytes;
        let settler = AmqpSettler::new(link, delivery.acker, kind);
        Some(Delivery::new(
            message,
            delivery.redelivered,
            max,
            Box::new(settler),
        ))
    }
}
