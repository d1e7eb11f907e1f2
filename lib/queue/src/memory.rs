//! `MemoryQueue`: the in-process queue of embedded runs and tests, with the
//! same semantics the broker gives (prefetch, requeue, delayed retry,
//! dead letters, a durable results queue).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use async_trait::async_trait;
use bytes::Bytes;
use chrono::Utc;
use oxwright_jobs::{Job, JobKind, JobReport};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};
use tracing::debug;

use crate::{
    Consumer, DEFAULT_MAX_MESSAGE_BYTES, DeadLetter, Delivery, Headers, JobQueue, Message, QueueError,
    ReportAck, ReportAcker, ReportStream, Settlement, Settler, encode_job,
};

/// Settings of a [`MemoryQueue`].
#[derive(Debug, Clone)]
pub struct MemoryQueueOptions {
    /// Largest body consumers decode; larger ones are `Oversized`.
    pub max_message_bytes: usize,
    /// Dead letters kept for [`JobQueue::dead_letters`]; past it the
    /// oldest is dropped (an embedded batch also records every failure in
    /// its manifest, and a process that runs for days must not keep every
    /// failed job it ever saw).
    pub max_dead_letters: usize,
}

/// Dead letters a [`MemoryQueue`] keeps by default.
pub const DEFAULT_MAX_DEAD_LETTERS: usize = 1_000;

impl Default for MemoryQueueOptions {
    fn default() -> Self {
        Self {
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
            max_dead_letters: DEFAULT_MAX_DEAD_LETTERS,
        }
    }
}

/// An in-process [`JobQueue`]; clones share the same queues.
#[derive(Debug, Clone)]
pub struct MemoryQueue {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    options: MemoryQueueOptions,
    state: Mutex<State>,
    /// Woken on every change; waiters re-check the state.
    changed: Notify,
}

#[derive(Debug, Default)]
struct State {
    closed: bool,
    queues: HashMap<JobKind, VecDeque<Queued>>,
    reports: VecDeque<Bytes>,
    /// The newest dead letters, oldest first.
    dead_letters: VecDeque<DeadLetter>,
}

#[derive(Debug)]
struct Queued {
    message: Message,
    redelivered: bool,
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        // Every critical section is a single collection operation, so a
        // poisoned lock still guards consistent data.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Changes the state and wakes every waiter.
    fn update<T>(&self, f: impl FnOnce(&mut State) -> T) -> T {
        let out = f(&mut self.lock());
        self.changed.notify_waiters();
        out
    }

    /// Waits until `take` returns `Some`, re-checking after each change.
    /// Cancel-safe when `take` only changes the state when it returns
    /// `Some`.
    async fn wait_for<T>(&self, mut take: impl FnMut(&mut State) -> Option<T>) -> T {
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            // Registers before checking so a change in between is not missed.
            notified.as_mut().enable();
            if let Some(value) = take(&mut self.lock()) {
                return value;
            }
            notified.await;
        }
    }

    fn push(&self, message: Message, redelivered: bool, front: bool) {
        self.update(|state| {
            let queue = state.queues.entry(message.kind).or_default();
            let queued = Queued { message, redelivered };
            if front {
                queue.push_front(queued);
            } else {
                queue.push_back(queued);
            }
        });
    }
}

impl MemoryQueue {
    /// Creates an empty queue with default options.
    pub fn new() -> Self {
        Self::with_options(MemoryQueueOptions::default())
    }

    /// Creates an empty queue with `options`.
    pub fn with_options(options: MemoryQueueOptions) -> Self {
        Self {
            inner: Arc::new(Inner {
                options,
                state: Mutex::new(State::default()),
                changed: Notify::new(),
            }),
        }
    }

    /// Closes the queue for shutdown: consumers and report streams end
    /// (`next` returns `None`), publishing fails with
    /// [`QueueError::Closed`]. Messages stay where they are; unsettled
    /// deliveries can still be settled.
    pub fn close(&self) {
        self.inner.update(|state| state.closed = true);
        debug!("memory queue closed");
    }

    /// Says whether [`MemoryQueue::close`] was called.
    pub fn is_closed(&self) -> bool {
        self.inner.lock().closed
    }

    fn publish_message(&self, message: Message) -> Result<(), QueueError> {
        self.inner.update(|state| {
            if state.closed {
                return Err(QueueError::Closed);
            }
            state.queues.entry(message.kind).or_default().push_back(Queued {
                message,
                redelivered: false,
            });
            Ok(())
        })
    }
}

impl Default for MemoryQueue {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl JobQueue for MemoryQueue {
    async fn publish_with_headers(&self, job: &Job, headers: Headers) -> Result<(), QueueError> {
        let body = encode_job(job, self.inner.options.max_message_bytes)?;
        self.publish_message(Message {
            kind: job.kind(),
            message_id: Some(job.id.to_string()),
            headers,
            body,
        })?;
        debug!(job_id = %job.id, kind = %job.kind(), attempt = job.attempt, "job published");
        Ok(())
    }

    async fn publish_raw(&self, kind: JobKind, body: Bytes, headers: Headers) -> Result<(), QueueError> {
        self.publish_message(Message {
            kind,
            message_id: None,
            headers,
            body,
        })
    }

    async fn consume_many(
        &self,
        kinds: &[JobKind],
        prefetch: usize,
    ) -> Result<Box<dyn Consumer>, QueueError> {
        crate::queue::check_kinds(kinds)?;
        if prefetch == 0 {
            return Err(QueueError::InvalidArgument(
                "prefetch must be at least 1".to_owned(),
            ));
        }
        if self.is_closed() {
            return Err(QueueError::Closed);
        }
        Ok(Box::new(MemoryConsumer {
            inner: self.inner.clone(),
            kinds: kinds.to_vec(),
            turn: 0,
            slots: Arc::new(Semaphore::new(prefetch)),
        }))
    }

    async fn publish_report(&self, report: &JobReport) -> Result<(), QueueError> {
        let body = serde_json::to_vec(report).map_err(QueueError::Encode)?;
        self.inner.update(|state| {
            if state.closed {
                return Err(QueueError::Closed);
            }
            state.reports.push_back(Bytes::from(body));
            Ok(())
        })
    }

    async fn reports(&self) -> Result<Box<dyn ReportStream>, QueueError> {
        Ok(Box::new(MemoryReports {
            inner: self.inner.clone(),
        }))
    }

    async fn dead_letters(&self) -> Result<Vec<DeadLetter>, QueueError> {
        Ok(self.inner.lock().dead_letters.iter().cloned().collect())
    }

    async fn redrive(&self, message_id: Option<&str>) -> Result<usize, QueueError> {
        let taken: Vec<DeadLetter> = self.inner.update(|state| {
            let mut taken = Vec::new();
            let mut kept = std::collections::VecDeque::new();
            for letter in std::mem::take(&mut state.dead_letters) {
                if message_id.is_none_or(|id| letter.message.message_id.as_deref() == Some(id)) {
                    taken.push(letter);
                } else {
                    kept.push_back(letter);
                }
            }
            state.dead_letters = kept;
            taken
        });
        for letter in &taken {
            self.publish_message(letter.revived())?;
        }
        Ok(taken.len())
    }

    async fn depth(&self, kind: JobKind) -> Result<usize, QueueError> {
        Ok(self.inner.lock().queues.get(&kind).map_or(0, VecDeque::len))
    }

    fn max_message_bytes(&self) -> usize {
        self.inner.options.max_message_bytes
    }
}

/// A consumer of one or more kinds' in-memory queues.
#[derive(Debug)]
struct MemoryConsumer {
    inner: Arc<Inner>,
    kinds: Vec<JobKind>,
    /// Which kind is looked at first next time, so no kind starves.
    turn: usize,
    /// One permit per unsettled delivery; each delivery's settler holds one.
    slots: Arc<Semaphore>,
}

#[async_trait]
impl Consumer for MemoryConsumer {
    async fn next(&mut self) -> Option<Delivery> {
        let permit = tokio::select! {
            biased;
            () = self.inner.wait_for(|s| s.closed.then_some(())) => return None,
            permit = self.slots.clone().acquire_owned() => permit.ok()?,
        };
        let (kinds, turn) = (&self.kinds, self.turn);
        let queued = self
            .inner
            .wait_for(|state| {
                if state.closed {
                    return Some(None);
                }
                (0..kinds.len())
                    .map(|i| (turn + i) % kinds.len())
                    .find_map(|i| state.queues.get_mut(&kinds[i])?.pop_front())
                    .map(Some)
            })
            .await?;
        self.turn = (self.turn + 1) % self.kinds.len();
        let settler = MemorySettler {
            inner: self.inner.clone(),
            _permit: permit,
        };
        Some(Delivery::new(
            queued.message,
            queued.redelivered,
            self.inner.options.max_message_bytes,
            Box::new(settler),
        ))
    }
}

/// Settles one in-memory delivery; dropping it frees the prefetch slot.
#[derive(Debug)]
struct MemorySettler {
    inner: Arc<Inner>,
    _permit: OwnedSemaphorePermit,
}

#[async_trait]
impl Settler for MemorySettler {
    async fn settle(self: Box<Self>, message: Message, settlement: Settlement) -> Result<(), QueueError> {
        let message_id = message.message_id.clone().unwrap_or_default();
        match settlement {
            Settlement::Ack => debug!(message_id, "delivery acked"),
            Settlement::Requeue => {
                debug!(message_id, "delivery requeued");
                self.inner.push(message, true, true);
            }
            Settlement::Retry { delay, message } => {
                debug!(
                    message_id,
                    delay_ms = delay.as_millis() as u64,
                    "delivery scheduled for retry"
                );
                let inner = self.inner.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(delay).await;
                    inner.push(message, false, false);
                });
            }
            Settlement::DeadLetter(reason) => {
                debug!(message_id, reason = %reason.kind, "delivery dead-lettered");
                let max = self.inner.options.max_dead_letters;
                self.inner.update(|state| {
                    while state.dead_letters.len() >= max.max(1) {
                        state.dead_letters.pop_front();
                    }
                    state.dead_letters.push_back(DeadLetter {
                        message,
                        reason,
                        dead_lettered_at: Utc::now(),
                    });
                });
            }
        }
        Ok(())
    }

    fn abandon(self: Box<Self>, message: Message) {
        self.inner.push(message, true, true);
    }
}

/// A subscription to the in-memory results queue.
#[derive(Debug)]
struct MemoryReports {
    inner: Arc<Inner>,
}

impl MemoryReports {
    async fn take(&mut self) -> Option<Bytes> {
        self.inner
            .wait_for(|state| match state.reports.pop_front() {
                Some(body) => Some(Some(body)),
                None if state.closed => Some(None),
                None => None,
            })
            .await
    }
}

fn decode_report(body: &[u8]) -> Result<JobReport, QueueError> {
    serde_json::from_slice(body).map_err(|e| QueueError::MalformedReport(e.to_string()))
}

#[async_trait]
impl ReportStream for MemoryReports {
    async fn next(&mut self) -> Option<Result<JobReport, QueueError>> {
        let body = self.take().await?;
        Some(decode_report(&body))
    }

    async fn next_unacked(&mut self) -> Option<(Result<JobReport, QueueError>, ReportAck)> {
        let body = self.take().await?;
        let report = decode_report(&body);
        let ack = MemoryReportAck {
            inner: self.inner.clone(),
            body: Some(body),
        };
        Some((report, ReportAck::new(Box::new(ack))))
    }
}

/// A report handed out unacked: dropped before its ack, it goes back to
/// the front of the results queue, as the broker redelivers the unacked
/// reports of a subscriber that died.
#[derive(Debug)]
struct MemoryReportAck {
    inner: Arc<Inner>,
    body: Option<Bytes>,
}

#[async_trait]
impl ReportAcker for MemoryReportAck {
    async fn ack(mut self: Box<Self>) -> Result<(), QueueError> {
        self.body = None;
        Ok(())
    }
}

impl Drop for MemoryReportAck {
    fn drop(&mut self) {
        if let Some(body) = self.body.take() {
            self.inner.update(|state| state.reports.push_front(body));
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use oxwright_jobs::{FetchSpec, JobSpec};

    use super::*;

    fn job() -> Job {
        Job::new(
            JobSpec::Fetch(FetchSpec::new("https://example.com/".parse().unwrap())),
            None,
        )
    }

    #[tokio::test]
    async fn close_ends_waiting_consumers_and_refuses_publishes() {
        let queue = MemoryQueue::new();
        let mut idle = queue.consume(JobKind::Fetch, 1).await.unwrap();
        let mut full = queue.consume(JobKind::Fetch, 1).await.unwrap();
        queue.publish(&job()).await.unwrap();
        let held = full.next().await.unwrap();
        let waiting_idle = tokio::spawn(async move { idle.next().await.is_none() });
        let waiting_full = tokio::spawn(async move { full.next().await.is_none() });
        tokio::task::yield_now().await;
        queue.close();
        assert!(waiting_idle.await.unwrap());
        assert!(waiting_full.await.unwrap());
        assert!(matches!(queue.publish(&job()).await, Err(QueueError::Closed)));
        // Settling after close still works; the message stays for later.
        held.requeue().await.unwrap();
        assert_eq!(queue.depth(JobKind::Fetch).await.unwrap(), 1);
        let mut reports = queue.reports().await.unwrap();
        assert!(reports.next().await.is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn retry_waits_for_its_delay() {
        let queue = MemoryQueue::new();
        queue.publish(&job()).await.unwrap();
        let mut consumer = queue.consume(JobKind::Fetch, 1).await.unwrap();
        let delivery = consumer.next().await.unwrap();
        delivery.retry(Duration::from_secs(30)).await.unwrap();
        tokio::time::sleep(Duration::from_secs(29)).await;
        assert_eq!(queue.depth(JobKind::Fetch).await.unwrap(), 0);
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert_eq!(queue.depth(JobKind::Fetch).await.unwrap(), 1);
        let again = consumer.next().await.unwrap();
        assert_eq!(again.job().as_ref().unwrap().attempt, 2);
        again.ack().await.unwrap();
    }

    #[tokio::test]
    async fn only_the_newest_dead_letters_are_kept() {
        let queue = MemoryQueue::with_options(MemoryQueueOptions {
            max_dead_letters: 3,
            ..MemoryQueueOptions::default()
        });
        let jobs: Vec<Job> = (0..5).map(|_| job()).collect();
        for job in &jobs {
            queue.publish(job).await.unwrap();
        }
        let mut consumer = queue.consume(JobKind::Fetch, 5).await.unwrap();
        for _ in &jobs {
            let delivery = consumer.next().await.unwrap();
            delivery
                .dead_letter(crate::DeadLetterReason {
                    kind: "timeout".into(),
                    message: "test".into(),
                })
                .await
                .unwrap();
        }
        let kept: Vec<_> = queue
            .dead_letters()
            .await
            .unwrap()
            .iter()
            .map(|d| d.message.message_id.clone().unwrap())
            .collect();
        let newest: Vec<_> = jobs[2..].iter().map(|j| j.id.to_string()).collect();
        assert_eq!(kept, newest);
    }

    #[tokio::test]
    async fn zero_prefetch_is_refused() {
        let queue = MemoryQueue::new();
        assert!(matches!(
            queue.consume(JobKind::Fetch, 0).await,
            Err(QueueError::InvalidArgument(_))
        ));
    }
}
