//! Runs the shared job-queue suite against `AmqpQueue` on a real RabbitMQ
//! (started by `infra/services.sh start`), each test under a fresh name
//! prefix.
//!
//! Environment: `OXWRIGHT_TEST_AMQP_URL` (default
//! `amqp://guest:guest@127.0.0.1:5672/%2f`). A missing broker fails the
//! tests.

use std::time::Duration;

use oxwright_queue::{AmqpOptions, AmqpQueue, JobQueue, QueueError, test_suite};

fn amqp_url() -> String {
    std::env::var("OXWRIGHT_TEST_AMQP_URL")
        .unwrap_or_else(|_| "amqp://guest:guest@127.0.0.1:5672/%2f".to_owned())
}

fn options() -> AmqpOptions {
    AmqpOptions {
        prefix: format!("oxwright-test-{}", uuid::Uuid::new_v4().simple()),
        retry_delays: vec![Duration::from_secs(1), Duration::from_secs(5)],
        ..AmqpOptions::default()
    }
}

/// Connects under a fresh prefix, failing with instructions when the
/// broker is not there.
async fn fresh_queue() -> AmqpQueue {
    let url = amqp_url();
    match AmqpQueue::connect(&url, options()).await {
        Ok(queue) => queue,
        Err(err) => panic!(
            "RabbitMQ not reachable at {url} ({err}); start it with `infra/services.sh install && \
             infra/services.sh start` or point OXWRIGHT_TEST_AMQP_URL at one"
        ),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn amqp_queue_passes_the_suite() {
    let queue = fresh_queue().await;
    test_suite::run_all(&queue).await;
    queue.delete_topology().await.expect("delete topology");
    queue.close().await;
}

#[tokio::test]
async fn amqp_queue_passes_the_suite_on_one_thread() {
    let queue = fresh_queue().await;
    test_suite::run_all(&queue).await;
    queue.delete_topology().await.expect("delete topology");
    queue.close().await;
}

#[tokio::test]
async fn a_missing_broker_fails_at_once_with_the_address() {
    let started = std::time::Instant::now();
    let err = AmqpQueue::connect("amqp://guest:secret@127.0.0.1:1/%2f", options())
        .await
        .expect_err("nothing listens on port 1");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "took {:?}",
        started.elapsed()
    );
    let text = err.to_string();
    assert!(text.contains("127.0.0.1:1"), "{text}");
    assert!(!text.contains("secret"), "password leaked: {text}");
    assert!(matches!(err, QueueError::Broker { retryable: true, .. }));
}

#[tokio::test]
async fn closed_queue_ends_consumers_and_refuses_publishes() {
    let queue = fresh_queue().await;
    let mut consumer = queue
        .consume(oxwright_jobs::JobKind::Fetch, 1)
        .await
        .expect("consume");
    queue.delete_topology().await.expect("delete topology");
    queue.close().await;
    let next = tokio::time::timeout(Duration::from_secs(5), consumer.next()).await;
    assert!(matches!(next, Ok(None)), "consumer ends on close");
    let job = oxwright_jobs::Job::new(
        oxwright_jobs::JobSpec::Fetch(oxwright_jobs::FetchSpec::new(
            "https://example.com/".parse().unwrap(),
        )),
        None,
    );
    assert!(matches!(queue.publish(&job).await, Err(QueueError::Closed)));
}
