//! The `JobQueue` trait and its consumer and report-stream halves.

use async_trait::async_trait;
use bytes::Bytes;
use oxwright_jobs::{Job, JobKind, JobReport};

use crate::{DeadLetter, Delivery, Headers, QueueError};

/// The job transport between the scheduler and the workers, with AMQP
/// semantics: one queue per job kind, publisher confirms, consumers
/// limited by prefetch, a delayed-retry path, a dead-letter queue and a
/// results queue for reports.
#[async_trait]
pub trait JobQueue: Send + Sync + std::fmt::Debug {
    /// Publishes `job` on its kind's queue with `message_id` = job id and
    /// the given headers (e.g. `traceparent`), returning once the broker
    /// has confirmed it. Jobs larger than [`JobQueue::max_message_bytes`]
    /// are refused with [`QueueError::TooLarge`].
    async fn publish_with_headers(&self, job: &Job, headers: Headers) -> Result<(), QueueError>;

    /// Publishes `job` without extra headers; see
    /// [`JobQueue::publish_with_headers`].
    async fn publish(&self, job: &Job) -> Result<(), QueueError> {
        self.publish_with_headers(job, Headers::new()).await
    }

    /// Publishes an arbitrary body on `kind`'s queue, unchecked; for tests
    /// and tools that need malformed messages.
    async fn publish_raw(&self, kind: JobKind, body: Bytes, headers: Headers) -> Result<(), QueueError>;

    /// Starts consuming `kind`'s queue with at most `prefetch` unsettled
    /// deliveries outstanding (0 is refused: prefetch is the only brake).
    async fn consume(&self, kind: JobKind, prefetch: usize) -> Result<Box<dyn Consumer>, QueueError> {
        self.consume_many(&[kind], prefetch).await
    }

    /// Starts one consumer of several kinds' queues with at most
    /// `prefetch` unsettled deliveries of all of them together (a worker's
    /// one pool of browser pages serves every kind that needs one). No
    /// kind, a repeated kind or a prefetch of 0 is refused.
    async fn consume_many(&self, kinds: &[JobKind], prefetch: usize)
    -> Result<Box<dyn Consumer>, QueueError>;

    /// Publishes a job report on the results queue, returning once
    /// confirmed.
    async fn publish_report(&self, report: &JobReport) -> Result<(), QueueError>;

    /// Subscribes to the results queue. Reports wait on the queue until
    /// a subscriber takes them (none is lost when nobody listens); several
    /// subscribers compete for reports, each report going to one.
    async fn reports(&self) -> Result<Box<dyn ReportStream>, QueueError>;

    /// Returns the messages on the dead-letter queue, oldest first,
    /// without removing them.
    async fn dead_letters(&self) -> Result<Vec<DeadLetter>, QueueError>;

    /// Moves dead letters back to their kind's queue: the one whose
    /// message id is `message_id`, or every one. Each job starts again at
    /// attempt 0, without the dead-letter reason headers; the others stay
    /// where they are. Returns how many moved.
    async fn redrive(&self, message_id: Option<&str>) -> Result<usize, QueueError>;

    /// Returns how many messages of `kind` are ready for delivery
    /// (excluding unsettled deliveries and retries still waiting).
    async fn depth(&self, kind: JobKind) -> Result<usize, QueueError>;

    /// Returns the largest body consumers decode (larger ones are
    /// [`crate::DecodeError::Oversized`]).
    fn max_message_bytes(&self) -> usize;
}

/// A consumer of one kind's queue.
#[async_trait]
pub trait Consumer: Send + std::fmt::Debug {
    /// Waits for the next delivery; first waits for a free prefetch slot.
    /// Returns `None` once the queue is closed. Cancel-safe: dropping the
    /// future loses no message.
    async fn next(&mut self) -> Option<Delivery>;
}

/// A subscription to the results queue.
#[async_trait]
pub trait ReportStream: Send + std::fmt::Debug {
    /// Waits for the next report, in publish order, and removes it from
    /// the queue. Returns `None` once the queue is closed and drained, and
    /// an error for an undecodable report. Cancel-safe: dropping the future
    /// loses no report and hands none out twice.
    async fn next(&mut self) -> Option<Result<JobReport, QueueError>>;

    /// Waits for the next report like [`ReportStream::next`] but leaves it
    /// on the queue until its [`ReportAck`] is acked, so a subscriber that
    /// dies before it has stored the report loses nothing: the report goes
    /// to the next subscriber. An undecodable report comes with its ack
    /// too. Cancel-safe.
    async fn next_unacked(&mut self) -> Option<(Result<JobReport, QueueError>, ReportAck)>;
}

/// What a backend hands out with each report of
/// [`ReportStream::next_unacked`]: removes that report from the queue.
#[async_trait]
pub trait ReportAcker: Send + Sync + std::fmt::Debug {
    /// Removes the report from the results queue for good.
    async fn ack(self: Box<Self>) -> Result<(), QueueError>;
}

/// The acknowledgement of one report handed out by
/// [`ReportStream::next_unacked`]. Until [`ReportAck::ack`] the report stays
/// on the results queue; dropped unacked, it is handed out again (by the
/// broker once the subscription's channel closes, by the in-memory queue at
/// once).
#[derive(Debug)]
pub struct ReportAck {
    acker: Box<dyn ReportAcker>,
}

impl ReportAck {
    /// Wraps a backend's acker. Backends call this.
    pub fn new(acker: Box<dyn ReportAcker>) -> Self {
        Self { acker }
    }

    /// Removes the report from the results queue. An error means the
    /// subscription is gone; the report will be handed out again.
    pub async fn ack(self) -> Result<(), QueueError> {
        self.acker.ack().await
    }
}

/// Refuses an empty or repeated list of kinds to consume.
pub(crate) fn check_kinds(kinds: &[JobKind]) -> Result<(), QueueError> {
    if kinds.is_empty() {
        return Err(QueueError::InvalidArgument("no job kind to consume".to_owned()));
    }
    for (i, kind) in kinds.iter().enumerate() {
        if kinds[..i].contains(kind) {
            return Err(QueueError::InvalidArgument(format!(
                "job kind {kind} given twice"
            )));
        }
    }
    Ok(())
}
