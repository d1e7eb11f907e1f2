//! [`AmqpQueue`]: the [`JobQueue`] on RabbitMQ.

use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use chrono::{DateTime, Utc};
use lapin::options::{BasicAckOptions, BasicGetOptions, BasicNackOptions, QueueDeclareOptions};
use lapin::types::FieldTable;
use oxwright_jobs::{Job, JobKind, JobReport};
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use tracing::warn;

use super::consumer::{AmqpConsumer, Subscription};
use super::link::Link;
use super::options::AmqpOptions;
use super::reports::{AmqpReportStream, REPORT_PREFETCH};
use super::settle::{HEADER_DEAD_LETTERED_AT, HEADER_KIND};
use super::topology::{self, Names, REPORT_ROUTING_KEY};
use super::wire::{broker_error, from_field_table, message_of, properties};
use crate::{
    Consumer, DeadLetter, DeadLetterReason, HEADER_ERROR_KIND, HEADER_ERROR_MESSAGE, Headers, JobQueue,
    QueueError, ReportStream, encode_job,
};

/// A [`JobQueue`] on a RabbitMQ broker; clones share one connection.
///
/// Every publish waits for the broker's confirm; consumers use
/// `basic_qos(prefetch)` and manual acks; after a connection loss,
/// publishers and consumers reconnect with backoff and the broker
/// redelivers what was unacked.
#[derive(Debug, Clone)]
pub struct AmqpQueue {
    link: Arc<Link>,
}

impl AmqpQueue {
    /// Connects to the broker at `url` (e.g.
    /// `amqp://guest:guest@127.0.0.1:5672/%2f`) and declares the topology
    /// under `options.prefix`. Fails at once when the broker cannot be
    /// reached.
    pub async fn connect(url: &str, options: AmqpOptions) -> Result<Self, QueueError> {
        Ok(Self {
            link: Link::connect(url, options).await?,
        })
    }

    /// Connects like [`AmqpQueue::connect`], but while the broker cannot be
    /// reached (not started yet, restarting, its name not resolving yet)
    /// keeps trying with capped exponential backoff and jitter (at most
    /// 10 s apart): one warning when the first attempt fails, a reminder
    /// every minute, a line when it answers. Returns
    /// [`QueueError::Closed`] when `stop` is cancelled first. A malformed
    /// URL, refused credentials or a rejected topology fail at once.
    pub async fn connect_patiently(
        url: &str,
        options: AmqpOptions,
        stop: &CancellationToken,
    ) -> Result<Self, QueueError> {
        Ok(Self {
            link: Link::connect_patiently(url, options, stop).await?,
        })
    }

    /// Returns the exchange and queue names this queue uses.
    pub fn names(&self) -> &Names {
        &self.link.names
    }

    /// Returns a settler for a message of `kind` that someone else took
    /// off the broker and settles there (a Lambda event source mapping
    /// acks what its function returns without error): a retry or a
    /// dead-letter publishes exactly as a consumer's would, an ack does
    /// nothing, a requeue is refused.
    pub fn detached_settler(&self, kind: JobKind) -> Box<dyn crate::Settler> {
        Box::new(super::settle::AmqpSettler::detached(self.link.clone(), kind))
    }

    /// Ends consumers and report streams, refuses further operations and
    /// closes the connection. Unacked deliveries go back to their queues.
    pub async fn close(&self) {
        self.link.close().await;
    }

    /// Deletes every exchange and queue under the prefix, messages
    /// included; for tests and tools.
    pub async fn delete_topology(&self) -> Result<(), QueueError> {
        let link = &self.link;
        link.with_retry("delete topology", || async move {
            let channel = link.channel().await?;
            topology::delete(&channel, &link.names, link.options.retry_delays.len()).await?;
            let _ = channel.close(200, "OK".into()).await;
            Ok(())
        })
        .await
    }

    async fn publish_message(
        &self,
        kind: JobKind,
        body: &[u8],
        message_id: Option<&str>,
        headers: &Headers,
    ) -> Result<(), QueueError> {
        let props = properties(message_id, headers);
        self.link
            .publish(&self.link.names.jobs_exchange(), kind.as_str(), body, props)
            .await
    }
}

/// Puts every message got on `channel` up to `tag` and not acked back in
/// place on its queue.
async fn put_back(channel: &lapin::Channel, tag: u64) -> Result<(), QueueError> {
    let options = BasicNackOptions {
        multiple: true,
        requeue: true,
    };
    channel
        .basic_nack(tag, options)
        .await
        .map_err(|e| broker_error("nack dead letters", e))
}

/// Rebuilds a dead-letter record from a message on the dead-letter queue.
fn dead_letter_of(delivery: &lapin::message::Delivery) -> Option<DeadLetter> {
    let headers = from_field_table(delivery.properties.headers().as_ref());
    let kind_name = headers.get(HEADER_KIND)?;
    let kind: JobKind = serde_json::from_value(Value::String(kind_name.clone())).ok()?;
    let mut message = message_of(kind, delivery);
    message.headers.remove(HEADER_KIND);
    let dead_lettered_at = message
        .headers
        .remove(HEADER_DEAD_LETTERED_AT)
        .and_then(|at| DateTime::parse_from_rfc3339(&at).ok())
        .map_or_else(Utc::now, |at| at.with_timezone(&Utc));
    let reason = DeadLetterReason {
        kind: message
            .headers
            .get(HEADER_ERROR_KIND)
            .cloned()
            .unwrap_or_default(),
        message: message
            .headers
            .get(HEADER_ERROR_MESSAGE)
            .cloned()
            .unwrap_or_default(),
    };
    Some(DeadLetter {
        message,
        reason,
        dead_lettered_at,
    })
}

#[async_trait]
impl JobQueue for AmqpQueue {
    async fn publish_with_headers(&self, job: &Job, headers: Headers) -> Result<(), QueueError> {
        let body = encode_job(job, self.link.options.max_message_bytes)?;
        let id = job.id.to_string();
        self.publish_message(job.kind(), &body, Some(&id), &headers).await
    }

    async fn publish_raw(&self, kind: JobKind, body: Bytes, headers: Headers) -> Result<(), QueueError> {
        self.publish_message(kind, &body, None, &headers).await
    }

    async fn consume_many(
        &self,
        kinds: &[JobKind],
        prefetch: usize,
    ) -> Result<Box<dyn Consumer>, QueueError> {
        crate::queue::check_kinds(kinds)?;
        let prefetch = match u16::try_from(prefetch) {
            Ok(0) => {
                return Err(QueueError::InvalidArgument(
                    "prefetch must be at least 1".to_owned(),
                ));
            }
            Ok(n) => n,
            Err(_) => {
                return Err(QueueError::InvalidArgument(format!(
                    "prefetch {prefetch} exceeds {}",
                    u16::MAX
                )));
            }
        };
        let queues = kinds.iter().map(|k| self.link.names.kind_queue(*k)).collect();
        let subscription = Subscription::open(Arc::clone(&self.link), queues, prefetch).await?;
        Ok(Box::new(AmqpConsumer {
            subscription,
            kinds: kinds.to_vec(),
        }))
    }

    async fn publish_report(&self, report: &JobReport) -> Result<(), QueueError> {
        let body = serde_json::to_vec(report).map_err(QueueError::Encode)?;
        let props = properties(Some(&report.job_id.to_string()), &Headers::new());
        self.link
            .publish(
                &self.link.names.results_exchange(),
                REPORT_ROUTING_KEY,
                &body,
                props,
            )
            .await
    }

    async fn reports(&self) -> Result<Box<dyn ReportStream>, QueueError> {
        let queue = self.link.names.results_queue();
        let subscription = Subscription::open(Arc::clone(&self.link), vec![queue], REPORT_PREFETCH).await?;
        Ok(Box::new(AmqpReportStream {
            subscription,
            pending: None,
        }))
    }

    async fn dead_letters(&self) -> Result<Vec<DeadLetter>, QueueError> {
        let link = &self.link;
        let queue = &link.names.dead_letter_queue();
        link.with_retry("read dead letters", || async move {
            let channel = link.channel().await?;
            let mut letters = Vec::new();
            let mut last_tag = None;
            // Each get holds its message unacked, so the loop ends at the
            // queue's end; one nack(multiple, requeue) then puts them all
            // back in place.
            while let Some(got) = channel
                .basic_get(queue.as_str().into(), BasicGetOptions { no_ack: false })
                .await
                .map_err(|e| broker_error("basic_get", e))?
            {
                last_tag = Some(got.delivery.delivery_tag);
                match dead_letter_of(&got.delivery) {
                    Some(letter) => letters.push(letter),
                    None => warn!(queue = %queue, "message on the dead-letter queue lacks its kind header"),
                }
            }
            if let Some(tag) = last_tag {
                put_back(&channel, tag).await?;
            }
            let _ = channel.close(200, "OK".into()).await;
            Ok(letters)
        })
        .await
    }

    async fn redrive(&self, message_id: Option<&str>) -> Result<usize, QueueError> {
        let link = &self.link;
        let queue = &link.names.dead_letter_queue();
        let this = self;
        link.with_retry("re-drive dead letters", || async move {
            let channel = link.channel().await?;
            let mut moved = 0;
            let mut last_kept = None;
            // Each get holds its message unacked, so the loop ends at the
            // queue's end. A moved message is published to its kind's queue
            // before it is acked (a failure between the two leaves it in
            // both: redelivered, never lost); the kept ones go back in place
            // with one nack(multiple, requeue).
            while let Some(got) = channel
                .basic_get(queue.as_str().into(), BasicGetOptions { no_ack: false })
                .await
                .map_err(|e| broker_error("basic_get", e))?
            {
                let tag = got.delivery.delivery_tag;
                let letter = dead_letter_of(&got.delivery);
                let chosen = letter
                    .as_ref()
                    .filter(|l| message_id.is_none_or(|id| l.message.message_id.as_deref() == Some(id)));
                match chosen {
                    Some(letter) => {
                        let message = letter.revived();
                        this.publish_message(
                            message.kind,
                            &message.body,
                            message.message_id.as_deref(),
                            &message.headers,
                        )
                        .await?;
                        channel
                            .basic_ack(tag, BasicAckOptions { multiple: false })
                            .await
                            .map_err(|e| broker_error("ack re-driven dead letter", e))?;
                        moved += 1;
                    }
                    None => last_kept = Some(tag),
                }
            }
            if let Some(tag) = last_kept {
                put_back(&channel, tag).await?;
            }
            let _ = channel.close(200, "OK".into()).await;
            Ok(moved)
        })
        .await
    }

    async fn depth(&self, kind: JobKind) -> Result<usize, QueueError> {
        let link = &self.link;
        let queue = &link.names.kind_queue(kind);
        link.with_retry("queue depth", || async move {
            let channel = link.channel().await?;
            let options = QueueDeclareOptions {
                passive: true,
                ..QueueDeclareOptions::default()
            };
            let declared = channel
                .queue_declare(queue.as_str().into(), options, FieldTable::default())
                .await
                .map_err(|e| broker_error("passive queue declare", e))?;
            let _ = channel.close(200, "OK".into()).await;
            Ok(usize::try_from(declared.message_count()).unwrap_or(usize::MAX))
        })
        .await
    }

    fn max_message_bytes(&self) -> usize {
        self.link.options.max_message_bytes
    }
}
