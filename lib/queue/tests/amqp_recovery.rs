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
