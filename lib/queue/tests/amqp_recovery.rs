//! Restarts the broker under a consumer and a publisher and checks that
//! both carry on: the unacked delivery comes back on the new connection
//! and publishing works again.
//!
//! It stops the shared broker for a few seconds, which would break tests
//! running beside it (nextest runs test binaries in parallel), so it is
//! ignored by default: run it alone with
//! `cargo test -p oxwright-queue --test amqp_recovery -- --ignored`.
//! It restarts the broker with `infra/services.sh restart-rabbitmq`, so the
//! broker must be the script's (`OXWRIGHT_TEST_AMQP_URL` unset).

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use oxwright_jobs::{FetchSpec, Job, JobKind, JobSpec};
use oxwright_queue::{AmqpOptions, AmqpQueue, JobQueue};

fn job(name: &str) -> Job {
    let url = format!("https://example.com/recovery/{name}")
        .parse()
        .expect("url");
    Job::new(JobSpec::Fetch(FetchSpec::new(url)), None)
}

fn restart_broker() {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../infra/services.sh");
    let status = Command::new("bash")
        .arg(&script)
        .arg("restart-rabbitmq")
        .status()
        .expect("run infra/services.sh");
    assert!(status.success(), "infra/services.sh restart-rabbitmq failed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "restarts the shared broker; run alone with --ignored"]
async fn consumer_and_publisher_survive_a_broker_restart() {
    let url = "amqp://guest:guest@127.0.0.1:5672/%2f";
    let options = AmqpOptions {
        prefix: format!("oxwright-test-{}", uuid::Uuid::new_v4().simple()),
        reconnect_timeout: Duration::from_secs(90),
        ..AmqpOptions::default()
    };
    let queue = AmqpQueue::connect(url, options)
        .await
        .unwrap_or_else(|e| panic!("RabbitMQ not reachable at {url} ({e}); run `infra/services.sh start`"));
    let first = job("before-restart");
    queue.publish(&first).await.expect("publish");
    let mut consumer = queue.consume(JobKind::Fetch, 1).await.expect("consume");
    let unacked = tokio::time::timeout(Duration::from_secs(5), consumer.next())
        .await
        .expect("delivery before restart")
        .expect("consumer open");
    assert_eq!(unacked.message_id(), Some(first.id.to_string().as_str()));

    tokio::task::spawn_blocking(restart_broker)
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
