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
use tracing::{debug, warn};

use super::link::{Link, first_backoff, next_backoff};
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
        let mut backoff = first_backoff();
        loop {
            if self.link.closed.is_cancelled() {
                return None;
            }
            let Some((_, consumer)) = self.current.as_mut() else {
                match self.subscribe().await {
                    Ok(current) => {
                        debug!(queue = %self.queue, "re-subscribed after connection loss");
                        self.current = Some(current);
                        backoff = first_backoff();
                    }
                    Err(err) => {
                        warn!(queue = %self.queue, error = %err, ?backoff, "cannot re-subscribe, retrying");
                        tokio::select! {
                            () = self.link.closed.cancelled() => return None,
                            () = tokio::time::sleep(backoff) => {}
                        }
                        backoff = next_backoff(backoff);
                    }
                }
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
