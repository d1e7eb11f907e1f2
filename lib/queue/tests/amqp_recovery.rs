//! Restarts the broker under a consumer and a publisher and checks that
//! both carry on: the unacked delivery comes back on the new connection
//! and publishing works again.
//!
//! The broker is a private one (`oxwright_fixtures::PrivateBroker`, its own
//! port and node, started with `infra/services.sh`), so restarting it
//! disturbs no other test.

use std::sync::Arc;
use std::time::Duration;

use oxwright_jobs::{FetchSpec, Job, JobKind, JobSpec};
use oxwright_queue::{AmqpOptions, AmqpQueue, JobQueue};

fn job(name: &str) -> Job {
    let url = format!("https://example.com/recovery/{name}")
        .parse()
        .expect("url");
    Job::new(JobSpec::Fetch(FetchSpec::new(url)), None)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consumer_and_publisher_survive_a_broker_restart() {
    let broker = Arc::new(oxwright_fixtures::PrivateBroker::start());
    let url = broker.url();
    let options = AmqpOptions {
        prefix: format!("oxwright-test-{}", uuid::Uuid::new_v4().simple()),
        reconnect_timeout: Duration::from_secs(90),
        ..AmqpOptions::default()
    };
    let queue = AmqpQueue::connect(url, options)
        .await
        .unwrap_or_else(|e| panic!("private RabbitMQ not reachable at {url} ({e})"));
    let first = job("before-restart");
    queue.publish(&first).await.expect("publish");
    let mut consumer = queue.consume(JobKind::Fetch, 1).await.expect("consume");
    let unacked = tokio::time::timeout(Duration::from_secs(5), consumer.next())
        .await
        .expect("delivery before restart")
        .expect("consumer open");
    assert_eq!(unacked.message_id(), Some(first.id.to_string().as_str()));

    let restarting = broker.clone();
    tokio::task::spawn_blocking(move || restarting.restart())
        .await
        .expect("restart task");

    // The old channel is gone: the ack fails or is lost, and the broker
    // redelivers the persistent message on the consumer's new channel.
    let _ = unacked.ack().await;
    let again = tokio::time::timeout(Duration::from_secs(60), consumer.next())
        .await
        .expect("redelivery after restart")
        .expect("consumer still open");
    assert_eq!(again.message_id(), Some(first.id.to_string().as_str()));
    assert!(again.redelivered(), "redelivered flag after restart");
    again.ack().await.expect("ack on the new channel");

    let second = job("after-restart");
    queue.publish(&second).await.expect("publish after restart");
    let next = tokio::time::timeout(Duration::from_secs(10), consumer.next())
        .await
        .expect("delivery after restart")
        .expect("consumer open");
    assert_eq!(next.message_id(), Some(second.id.to_string().as_str()));
    next.ack().await.expect("ack");
    assert_eq!(queue.depth(JobKind::Fetch).await.expect("depth"), 0);
    queue.delete_topology().await.expect("delete topology");
    queue.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_patient_connect_waits_for_a_broker_that_starts_late() {
    let broker = Arc::new(oxwright_fixtures::PrivateBroker::start());
    let stopping = broker.clone();
    tokio::task::spawn_blocking(move || stopping.stop())
        .await
        .unwrap();
    let options = AmqpOptions {
        prefix: format!("oxwright-test-{}", uuid::Uuid::new_v4().simple()),
        ..AmqpOptions::default()
    };
    let stop = tokio_util::sync::CancellationToken::new();
    let connecting = tokio::spawn({
        let (url, stop) = (broker.url().to_owned(), stop.clone());
        async move { AmqpQueue::connect_patiently(&url, options, &stop).await }
    });
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(!connecting.is_finished(), "gave up while the broker was down");
    let starting = broker.clone();
    tokio::task::spawn_blocking(move || starting.start_again())
        .await
        .unwrap();
    // At most one backoff step (10 s) after the broker is back.
    let queue = tokio::time::timeout(Duration::from_secs(30), connecting)
        .await
        .expect("connected once the broker was back")
        .unwrap()
        .expect("connects");
    let sent = job("late");
    queue.publish(&sent).await.expect("publish");
    let mut consumer = queue.consume(JobKind::Fetch, 1).await.expect("consume");
    let delivery = tokio::time::timeout(Duration::from_secs(10), consumer.next())
        .await
        .expect("delivery")
        .expect("open");
    assert_eq!(delivery.job().as_ref().unwrap().id, sent.id);
    delivery.ack().await.unwrap();
    queue.delete_topology().await.unwrap();
    queue.close().await;
    drop(broker);
}

#[tokio::test]
async fn a_patient_connect_stops_when_asked_and_refuses_bad_credentials_at_once() {
    let options = || AmqpOptions {
        prefix: format!("oxwright-test-{}", uuid::Uuid::new_v4().simple()),
        ..AmqpOptions::default()
    };
    let stop = tokio_util::sync::CancellationToken::new();
    let cancel = stop.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(500)).await;
        cancel.cancel();
    });
    let err = AmqpQueue::connect_patiently("amqp://guest:guest@127.0.0.1:1/%2f", options(), &stop)
        .await
        .expect_err("nothing listens on port 1");
    assert!(matches!(err, oxwright_queue::QueueError::Closed), "{err}");

    let err = AmqpQueue::connect_patiently("amqpx://not a url", options(), &stop)
        .await
        .expect_err("malformed");
    assert!(
        matches!(err, oxwright_queue::QueueError::InvalidArgument(_)),
        "{err}"
    );

    // The shared broker answers, and says no: that is not waited out.
    let url = std::env::var("OXWRIGHT_TEST_AMQP_URL")
        .unwrap_or_else(|_| "amqp://guest:guest@127.0.0.1:5672/%2f".to_owned())
        .replacen("guest:guest@", "guest:wrong-password@", 1);
    let forever = tokio_util::sync::CancellationToken::new();
    let err = tokio::time::timeout(
        Duration::from_secs(20),
        AmqpQueue::connect_patiently(&url, options(), &forever),
    )
    .await
    .expect("refused credentials fail at once")
    .expect_err("wrong password");
    assert!(
        !err.to_string().contains("wrong-password"),
        "password leaked: {err}"
    );
}
