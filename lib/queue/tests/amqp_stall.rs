//! A connection that stops moving without closing (a broker frozen by a
//! full disk or a stalled VM, a network that drops every packet) must not
//! hold a publisher or a consumer forever: every request to the broker has
//! a deadline, and once traffic moves again the queue works on.
//!
//! The broker is the shared one (`infra/services.sh start`), reached
//! through a relay that can freeze both directions while keeping the
//! sockets open.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use oxwright_jobs::{FetchSpec, Job, JobKind, JobSpec};
use oxwright_queue::{AmqpOptions, AmqpQueue, JobQueue};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const BROKER: &str = "127.0.0.1:5672";

/// A TCP relay to the broker whose traffic can be frozen and thawed.
struct Relay {
    port: u16,
    frozen: Arc<AtomicBool>,
}

impl Relay {
    async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let frozen = Arc::new(AtomicBool::new(false));
        let gate = frozen.clone();
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let upstream = TcpStream::connect(BROKER).await.unwrap_or_else(|e| {
                    panic!("RabbitMQ not reachable at {BROKER} ({e}); run infra/services.sh start")
                });
                let (client_read, client_write) = client.into_split();
                let (upstream_read, upstream_write) = upstream.into_split();
                tokio::spawn(pump(client_read, upstream_write, gate.clone()));
                tokio::spawn(pump(upstream_read, client_write, gate.clone()));
            }
        });
        Self { port, frozen }
    }

    fn url(&self) -> String {
        format!("amqp://guest:guest@127.0.0.1:{}/%2f", self.port)
    }

    fn freeze(&self, frozen: bool) {
        self.frozen.store(frozen, Ordering::SeqCst);
    }
}

/// Copies bytes one way, holding them while the gate is frozen.
async fn pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    frozen: Arc<AtomicBool>,
) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        while frozen.load(Ordering::SeqCst) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        if to.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}

fn job(name: &str) -> Job {
    let url = format!("https://example.com/stall/{name}").parse().expect("url");
    Job::new(JobSpec::Fetch(FetchSpec::new(url)), None)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_that_stops_moving_fails_operations_in_bounded_time_and_recovers() {
    let relay = Relay::start().await;
    let options = AmqpOptions {
        prefix: format!("oxwright-test-{}", uuid::Uuid::new_v4().simple()),
        confirm_timeout: Duration::from_secs(2),
        round_trip_timeout: Duration::from_secs(2),
        reconnect_timeout: Duration::from_secs(3),
        ..AmqpOptions::default()
    };
    let queue = AmqpQueue::connect(&relay.url(), options).await.expect("connect");
    queue
        .publish(&job("before"))
        .await
        .expect("publish before the stall");
    let mut consumer = queue.consume(JobKind::Fetch, 1).await.expect("consume");
    let delivery = tokio::time::timeout(Duration::from_secs(10), consumer.next())
        .await
        .expect("a delivery before the stall")
        .expect("consumer open");

    relay.freeze(true);
    // Without deadlines the retry's new channel waits for an answer that
    // never comes; the test's own limit turns that hang into a failure.
    let started = Instant::now();
    let publish = tokio::time::timeout(Duration::from_secs(60), queue.publish(&job("stalled")))
        .await
        .expect("a publish on a stalled connection ends");
    assert!(
        publish.is_err(),
        "nothing was confirmed, yet the publish succeeded"
    );
    let ack = tokio::time::timeout(Duration::from_secs(60), delivery.ack())
        .await
        .expect("an ack on a stalled connection ends");
    let waited = started.elapsed();
    assert!(
        waited < Duration::from_secs(30),
        "the stalled operations took {waited:?} (publish {publish:?}, ack {ack:?})"
    );
    let message = publish.unwrap_err().to_string();
    assert!(message.contains("timed out"), "{message}");

    relay.freeze(false);
    let again = job("after");
    tokio::time::timeout(Duration::from_secs(60), queue.publish(&again))
        .await
        .expect("a publish after the thaw ends")
        .expect("publish after the thaw");
    queue.delete_topology().await.expect("delete topology");
    queue.close().await;
}
