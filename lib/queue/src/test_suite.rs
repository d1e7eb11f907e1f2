//! The shared job-queue test suite: every [`JobQueue`] implementation
//! (memory, RabbitMQ) runs it so they all behave alike. Each check starts
//! and ends with empty kind queues and finds its own dead letters and
//! reports by id, so the checks can run one after another on one queue.
//!
//! The checks panic on failure, like assertions in a test. Waits are
//! bounded so a broken implementation fails instead of hanging.

use std::future::Future;
use std::time::{Duration, Instant};

use bytes::Bytes;
use chrono::Utc;
use oxwright_jobs::{FetchSpec, Job, JobId, JobKind, JobReport, JobSpec, ReportStatus};
use serde_json::Value;

use crate::{Consumer, DeadLetterReason, Delivery, HEADER_TRACEPARENT, Headers, JobQueue, ReportStream};

/// How long a check waits for something that must happen.
const PATIENCE: Duration = Duration::from_secs(5);
/// How long a check waits to conclude that something does not happen.
const QUIET: Duration = Duration::from_millis(200);

/// Runs every check of the suite against `queue`.
pub async fn run_all(queue: &dyn JobQueue) {
    publish_consume_ack(queue).await;
    prefetch_bounds_unsettled_deliveries(queue).await;
    one_consumer_of_several_kinds_shares_its_prefetch(queue).await;
    requeue_redelivers(queue).await;
    dropped_delivery_is_redelivered(queue).await;
    retry_increments_attempt_after_delay(queue).await;
    dead_letter_keeps_reason(queue).await;
    redrive_moves_a_dead_letter_back(queue).await;
    malformed_bodies_decode_to_typed_errors(queue).await;
    reports_arrive_in_order(queue).await;
    cancelled_report_reads_lose_nothing(queue).await;
    unacked_reports_go_to_the_next_subscriber(queue).await;
    depth_counts_ready_messages(queue).await;
}

fn job(name: &str) -> Job {
    let url = format!("https://example.com/suite/{name}")
        .parse()
        .expect("valid url");
    Job::new(JobSpec::Fetch(FetchSpec::new(url)), Some("suite".to_owned()))
}

fn report(job: &Job, n: u32) -> JobReport {
    JobReport {
        job_id: job.id,
        kind: job.kind(),
        batch_id: job.batch_id.clone(),
        url: job.url().to_owned(),
        status: ReportStatus::Ok,
        error: None,
        artifacts: vec![format!("jobs/fetch/{}/result.json", job.id)],
        attempt: n,
        duration_ms: 1.5,
        finished_at: Utc::now(),
    }
}

async fn next(consumer: &mut dyn Consumer) -> Delivery {
    tokio::time::timeout(PATIENCE, consumer.next())
        .await
        .expect("no delivery within 5 s")
        .expect("consumer ended while a delivery was expected")
}

async fn next_report(stream: &mut dyn ReportStream) -> JobReport {
    tokio::time::timeout(PATIENCE, stream.next())
        .await
        .expect("no report within 5 s")
        .expect("report stream ended")
        .expect("report decodes")
}

async fn assert_quiet(consumer: &mut dyn Consumer, what: &str) {
    if let Ok(delivery) = tokio::time::timeout(QUIET, consumer.next()).await {
        panic!("{what}: unexpected delivery {delivery:?}");
    }
}

/// Polls `check` until it holds, failing after [`PATIENCE`].
async fn wait_until<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let start = Instant::now();
    while !check().await {
        assert!(start.elapsed() < PATIENCE, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn assert_depth(queue: &dyn JobQueue, expected: usize) {
    wait_until(&format!("depth is {expected}"), || async {
        queue.depth(JobKind::Fetch).await.expect("depth") == expected
    })
    .await;
}

fn job_of(delivery: &Delivery) -> &Job {
    delivery.job().as_ref().expect("delivery decodes to a job")
}

/// Checks that a published job arrives intact with its id and headers and
/// leaves the queue when acked.
pub async fn publish_consume_ack(queue: &dyn JobQueue) {
    let job = job("ack");
    let traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let headers = Headers::from([(HEADER_TRACEPARENT.to_owned(), traceparent.to_owned())]);
    queue.publish_with_headers(&job, headers).await.expect("publish");
    let mut consumer = queue.consume(JobKind::Fetch, 1).await.expect("consume");
    let delivery = next(consumer.as_mut()).await;
    assert_eq!(job_of(&delivery), &job);
    assert_eq!(delivery.message_id(), Some(job.id.to_string().as_str()));
    assert_eq!(delivery.traceparent(), Some(traceparent));
    assert_eq!(delivery.kind(), JobKind::Fetch);
    assert!(!delivery.redelivered());
    delivery.ack().await.expect("ack");
    assert_quiet(consumer.as_mut(), "after ack").await;
    assert_depth(queue, 0).await;
}

/// Checks that a consumer never holds more than `prefetch` unsettled
/// deliveries: with prefetch 2 and 5 messages the third `next` waits
/// until one is settled.
pub async fn prefetch_bounds_unsettled_deliveries(queue: &dyn JobQueue) {
    let jobs: Vec<Job> = (0..5).map(|n| job(&format!("prefetch-{n}"))).collect();
    for job in &jobs {
        queue.publish(job).await.expect("publish");
    }
    let mut consumer = queue.consume(JobKind::Fetch, 2).await.expect("consume");
    let first = next(consumer.as_mut()).await;
    let second = next(consumer.as_mut()).await;
    assert_quiet(consumer.as_mut(), "third delivery with prefetch 2").await;
    first.ack().await.expect("ack");
    let third = next(consumer.as_mut()).await;
    assert_quiet(consumer.as_mut(), "fourth delivery with two unsettled").await;
    second.ack().await.expect("ack");
    third.ack().await.expect("ack");
    let mut seen = Vec::new();
    for _ in 0..2 {
        let delivery = next(consumer.as_mut()).await;
        seen.push(job_of(&delivery).id);
        delivery.ack().await.expect("ack");
    }
    assert_eq!(seen, vec![jobs[3].id, jobs[4].id], "FIFO order");
    assert_depth(queue, 0).await;
}

/// Checks `consume_many`: one consumer of two kinds never holds more than
/// its prefetch of both together, hands each delivery out with the kind
/// it came from, serves both kinds, and refuses no kind or a kind twice.
pub async fn one_consumer_of_several_kinds_shares_its_prefetch(queue: &dyn JobQueue) {
    let sitemap = |n: usize| {
        Job::new(
            JobSpec::Sitemap(oxwright_jobs::SitemapSpec {
                target: format!("example.com/shared-{n}"),
            }),
            None,
        )
    };
    let mut sent: Vec<Job> = (0..3).map(|n| job(&format!("shared-{n}"))).collect();
    sent.extend((0..3).map(sitemap));
    for job in &sent {
        queue.publish(job).await.expect("publish");
    }
    let kinds = [JobKind::Fetch, JobKind::Sitemap];
    let mut consumer = queue.consume_many(&kinds, 2).await.expect("consume");
    let first = next(consumer.as_mut()).await;
    let second = next(consumer.as_mut()).await;
    assert_quiet(consumer.as_mut(), "third delivery of two kinds with prefetch 2").await;
    let mut got = Vec::new();
    for delivery in [first, second] {
        assert_eq!(delivery.kind(), job_of(&delivery).kind(), "delivery kind");
        got.push(job_of(&delivery).id);
        delivery.ack().await.expect("ack");
    }
    while got.len() < sent.len() {
        let delivery = next(consumer.as_mut()).await;
        assert_eq!(delivery.kind(), job_of(&delivery).kind(), "delivery kind");
        got.push(job_of(&delivery).id);
        delivery.ack().await.expect("ack");
    }
    got.sort();
    let mut want: Vec<JobId> = sent.iter().map(|j| j.id).collect();
    want.sort();
    assert_eq!(got, want, "every job of both kinds, once");
    drop(consumer);
    assert!(matches!(
        queue.consume_many(&[], 2).await,
        Err(crate::QueueError::InvalidArgument(_))
    ));
    assert!(matches!(
        queue.consume_many(&[JobKind::Fetch, JobKind::Fetch], 2).await,
        Err(crate::QueueError::InvalidArgument(_))
    ));
    assert_depth(queue, 0).await;
}

/// Checks that a requeued delivery comes back flagged as redelivered.
pub async fn requeue_redelivers(queue: &dyn JobQueue) {
    let job = job("requeue");
    queue.publish(&job).await.expect("publish");
    let mut consumer = queue.consume(JobKind::Fetch, 1).await.expect("consume");
    next(consumer.as_mut()).await.requeue().await.expect("requeue");
    let again = next(consumer.as_mut()).await;
    assert_eq!(job_of(&again), &job);
    assert!(again.redelivered(), "requeued delivery is flagged");
    again.ack().await.expect("ack");
    assert_depth(queue, 0).await;
}

/// Checks that a delivery dropped unsettled is redelivered, like the
/// unacked messages of a closed channel.
pub async fn dropped_delivery_is_redelivered(queue: &dyn JobQueue) {
    let job = job("drop");
    queue.publish(&job).await.expect("publish");
    let mut consumer = queue.consume(JobKind::Fetch, 1).await.expect("consume");
    drop(next(consumer.as_mut()).await);
    let again = next(consumer.as_mut()).await;
    assert_eq!(job_of(&again).id, job.id);
    assert!(again.redelivered(), "abandoned delivery is flagged");
    again.ack().await.expect("ack");
    assert_depth(queue, 0).await;
}

/// Checks that `retry` brings the job back no sooner than its delay, with
/// `attempt` incremented.
pub async fn retry_increments_attempt_after_delay(queue: &dyn JobQueue) {
    let delay = Duration::from_millis(300);
    let job = job("retry");
    queue.publish(&job).await.expect("publish");
    let mut consumer = queue.consume(JobKind::Fetch, 1).await.expect("consume");
    let delivery = next(consumer.as_mut()).await;
    let retried_at = Instant::now();
    delivery.retry(delay).await.expect("retry");
    let again = next(consumer.as_mut()).await;
    assert!(
        retried_at.elapsed() >= delay,
        "redelivered after {:?}, before the {delay:?} delay",
        retried_at.elapsed()
    );
    let retried = job_of(&again);
    assert_eq!(retried.id, job.id);
    assert_eq!(retried.attempt, job.attempt + 1);
    assert_eq!(again.message_id(), Some(job.id.to_string().as_str()));
    again.ack().await.expect("ack");
    assert_depth(queue, 0).await;
}

/// Checks that a dead-lettered job lands on the dead-letter queue with its
/// reason in the record and the headers.
pub async fn dead_letter_keeps_reason(queue: &dyn JobQueue) {
    let job = job("dead-letter");
    queue.publish(&job).await.expect("publish");
    let mut consumer = queue.consume(JobKind::Fetch, 1).await.expect("consume");
    let reason = DeadLetterReason {
        kind: "http_status".to_owned(),
        message: "HTTP 404 after 1 attempt".to_owned(),
    };
    next(consumer.as_mut())
        .await
        .dead_letter(reason.clone())
        .await
        .expect("dead-letter");
    let id = job.id.to_string();
    let dead = find_dead_letter(queue, |d| d.message.message_id.as_deref() == Some(id.as_str())).await;
    assert_eq!(dead.reason, reason);
    assert_eq!(dead.error_kind(), Some("http_status"));
    let body: Job = serde_json::from_slice(&dead.message.body).expect("dead letter body is the job");
    assert_eq!(body, job);
    assert_quiet(consumer.as_mut(), "after dead-letter").await;
    assert_depth(queue, 0).await;
}

/// Checks that a re-driven dead letter is delivered again at attempt 0
/// without its reason, and that the others stay dead-lettered.
pub async fn redrive_moves_a_dead_letter_back(queue: &dyn JobQueue) {
    let (first, second) = (job("redrive-1"), job("redrive-2"));
    let mut consumer = queue.consume(JobKind::Fetch, 1).await.expect("consume");
    for job in [&first, &second] {
        let mut tried = job.clone();
        tried.attempt = 2;
        queue.publish(&tried).await.expect("publish");
        let reason = DeadLetterReason {
            kind: "timeout".to_owned(),
            message: "timed out after 3 attempts".to_owned(),
        };
        next(consumer.as_mut())
            .await
            .dead_letter(reason)
            .await
            .expect("dead-letter");
    }
    let id = first.id.to_string();
    find_dead_letter(queue, |d| d.message.message_id.as_deref() == Some(id.as_str())).await;
    let moved = queue.redrive(Some(&id)).await.expect("redrive");
    assert_eq!(moved, 1);
    let again = next(consumer.as_mut()).await;
    let job = again.job().as_ref().expect("the job decodes").clone();
    assert_eq!((job.id, job.attempt), (first.id, 0));
    assert_eq!(again.message().headers.get(crate::HEADER_ERROR_KIND), None);
    again.ack().await.expect("ack");
    let letters = queue.dead_letters().await.expect("dead letters");
    assert!(
        letters
            .iter()
            .all(|d| d.message.message_id.as_deref() != Some(id.as_str()))
    );
    let other = second.id.to_string();
    assert!(
        letters
            .iter()
            .any(|d| d.message.message_id.as_deref() == Some(other.as_str()))
    );
    // Every fetch dead letter so far: this case's second and the one an
    // earlier case left.
    let moved = queue.redrive(None).await.expect("redrive all");
    assert!(moved >= 1);
    for _ in 0..moved {
        next(consumer.as_mut()).await.ack().await.expect("ack");
    }
    assert!(queue.dead_letters().await.expect("dead letters").is_empty());
    assert_quiet(consumer.as_mut(), "after re-driving").await;
}

async fn find_dead_letter(
    queue: &dyn JobQueue,
    pred: impl Fn(&crate::DeadLetter) -> bool,
) -> crate::DeadLetter {
    let start = Instant::now();
    loop {
        let letters = queue.dead_letters().await.expect("dead letters");
        if let Some(found) = letters.into_iter().find(&pred) {
            return found;
        }
        assert!(start.elapsed() < PATIENCE, "dead letter not found within 5 s");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Checks that bad JSON, an unknown kind, a wrong schema version and an
/// oversized body each decode to their typed error and can be
/// dead-lettered with it.
pub async fn malformed_bodies_decode_to_typed_errors(queue: &dyn JobQueue) {
    let valid = serde_json::to_value(job("malformed")).expect("job serialises");
    let with = |field: &str, value: Value| {
        let mut v = valid.clone();
        v[field] = value;
        Bytes::from(serde_json::to_vec(&v).expect("serialises"))
    };
    let cases = [
        (Bytes::from_static(b"{\"schema_version\": 1, "), "bad_json"),
        (with("kind", Value::from("teleport")), "unknown_kind"),
        (with("schema_version", Value::from(99)), "schema_version"),
        (
            Bytes::from(vec![b'x'; queue.max_message_bytes() + 1]),
            "oversized",
        ),
    ];
    let mut consumer = queue.consume(JobKind::Fetch, 1).await.expect("consume");
    for (body, expected) in cases {
        queue
            .publish_raw(JobKind::Fetch, body.clone(), Headers::new())
            .await
            .expect("publish raw");
        let delivery = next(consumer.as_mut()).await;
        assert_eq!(delivery.body(), &body);
        let err = match delivery.job() {
            Err(err) => err.clone(),
            Ok(job) => panic!("{expected} body decoded to {job:?}"),
        };
        assert_eq!(err.as_str(), expected);
        delivery
            .dead_letter(err.dead_letter_reason())
            .await
            .expect("dead-letter");
        let dead = find_dead_letter(queue, |d| d.message.body == body).await;
        assert_eq!(dead.error_kind(), Some(format!("decode_{expected}").as_str()));
    }
    assert_depth(queue, 0).await;
}

/// Checks that reports reach a subscriber in publish order, and that a
/// report published while nobody listens waits for the next subscriber.
pub async fn reports_arrive_in_order(queue: &dyn JobQueue) {
    let jobs: Vec<Job> = (0..3).map(|n| job(&format!("report-{n}"))).collect();
    let mut stream = queue.reports().await.expect("subscribe");
    for (n, job) in (1..).zip(&jobs) {
        queue
            .publish_report(&report(job, n))
            .await
            .expect("publish report");
    }
    let mut got: Vec<JobId> = Vec::new();
    for _ in &jobs {
        got.push(next_report(stream.as_mut()).await.job_id);
    }
    assert_eq!(got, jobs.iter().map(|j| j.id).collect::<Vec<_>>());
    drop(stream);
    let late = job("report-late");
    queue
        .publish_report(&report(&late, 1))
        .await
        .expect("publish report");
    let mut stream = queue.reports().await.expect("subscribe again");
    let got = next_report(stream.as_mut()).await;
    assert_eq!((got.job_id, got.url.as_str()), (late.id, late.url()));
}

/// Checks that `ReportStream::next` is cancel-safe: reads abandoned at
/// any point (a `select!` that picks another branch, a timeout) lose no
/// report and hand none out twice.
pub async fn cancelled_report_reads_lose_nothing(queue: &dyn JobQueue) {
    const N: usize = 200;
    let jobs: Vec<Job> = (0..N).map(|n| job(&format!("cancel-{n}"))).collect();
    let mut stream = queue.reports().await.expect("subscribe");
    for (n, job) in (1..).zip(&jobs) {
        queue
            .publish_report(&report(job, n))
            .await
            .expect("publish report");
    }
    let mut got: Vec<JobId> = Vec::new();
    let started = std::time::Instant::now();
    let mut patience = Duration::from_micros(1);
    while got.len() < N {
        assert!(
            started.elapsed() < PATIENCE * 6,
            "only {} of {N} reports after repeated cancelled reads",
            got.len()
        );
        match tokio::time::timeout(patience, stream.next()).await {
            Ok(Some(Ok(report))) => got.push(report.job_id),
            Ok(other) => panic!("report stream failed: {other:?}"),
            // Cancelled mid-read; vary where the next read is cut off.
            Err(_) => patience = Duration::from_micros((patience.as_micros() as u64 * 3) % 997 + 1),
        }
    }
    assert_eq!(
        got,
        jobs.iter().map(|j| j.id).collect::<Vec<_>>(),
        "every report once, in order"
    );
}

/// Checks `ReportStream::next_unacked`: a report whose ack was never sent
/// (its subscriber died before storing it) goes to the next subscriber; an
/// acked one does not.
pub async fn unacked_reports_go_to_the_next_subscriber(queue: &dyn JobQueue) {
    let (stored, lost) = (job("unacked-stored"), job("unacked-lost"));
    let mut stream = queue.reports().await.expect("subscribe");
    for job in [&stored, &lost] {
        queue
            .publish_report(&report(job, 1))
            .await
            .expect("publish report");
    }
    let mut acks = Vec::new();
    for expected in [&stored, &lost] {
        let (got, ack) = tokio::time::timeout(PATIENCE, stream.next_unacked())
            .await
            .expect("no report within 5 s")
            .expect("report stream ended");
        assert_eq!(got.expect("report decodes").job_id, expected.id);
        acks.push(ack);
    }
    let lost_ack = acks.pop().expect("two acks");
    acks.pop().expect("two acks").ack().await.expect("ack report");
    // The subscriber dies with one report unacked.
    drop(stream);
    drop(lost_ack);
    let mut stream = queue.reports().await.expect("subscribe again");
    let (got, ack) = tokio::time::timeout(PATIENCE, stream.next_unacked())
        .await
        .expect("the unacked report was not handed out again within 5 s")
        .expect("report stream ended");
    assert_eq!(
        got.expect("report decodes").job_id,
        lost.id,
        "only the unacked report comes back"
    );
    ack.ack().await.expect("ack report");
    if let Ok(extra) = tokio::time::timeout(QUIET, stream.next_unacked()).await {
        panic!("an acked report came back: {:?}", extra.map(|(r, _)| r));
    }
}

/// Checks that depth counts ready messages only: published ones, not the
/// unsettled delivery.
pub async fn depth_counts_ready_messages(queue: &dyn JobQueue) {
    assert_depth(queue, 0).await;
    for n in 0..3 {
        queue.publish(&job(&format!("depth-{n}"))).await.expect("publish");
    }
    assert_depth(queue, 3).await;
    let mut consumer = queue.consume(JobKind::Fetch, 1).await.expect("consume");
    let delivery = next(consumer.as_mut()).await;
    assert_depth(queue, 2).await;
    delivery.ack().await.expect("ack");
    for _ in 0..2 {
        next(consumer.as_mut()).await.ack().await.expect("ack");
    }
    assert_depth(queue, 0).await;
}
