//! Queue overhead on a real RabbitMQ: the round trip of one job (confirmed
//! publish → delivery → ack) with a no-op handler, confirmed-publish
//! throughput, and consume+ack throughput.

use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clap::Args;
use oxwright_jobs::{FetchSpec, Job, JobKind, JobSpec};
use oxwright_queue::{AmqpOptions, AmqpQueue, JobQueue};
use serde::Serialize;

use crate::stats::{ms, percentile};

/// Arguments of `queue`.
#[derive(Debug, Args)]
pub struct QueueArgs {
    /// RabbitMQ URL.
    #[arg(long, default_value = "amqp://guest:guest@127.0.0.1:5672/%2f")]
    pub amqp: String,
    /// Sequential round trips timed.
    #[arg(long, default_value_t = 500)]
    pub round_trips: usize,
    /// Jobs published (then consumed) for the throughput figures.
    #[arg(long, default_value_t = 5000)]
    pub jobs: usize,
    /// Prefetch of the throughput consumer.
    #[arg(long, default_value_t = 8)]
    pub prefetch: usize,
}

/// What `queue` measured.
#[derive(Debug, Serialize)]
pub struct QueueReport {
    pub round_trips: usize,
    pub round_trip_p50_ms: f64,
    pub round_trip_p95_ms: f64,
    pub round_trip_p99_ms: f64,
    pub jobs: usize,
    pub publish_jobs_per_s: f64,
    pub publish_p50_ms: f64,
    pub consume_ack_jobs_per_s: f64,
    pub prefetch: usize,
}

fn job(n: usize) -> Job {
    let url = format!("https://example.com/bench/{n}")
        .parse()
        .expect("valid url");
    Job::new(JobSpec::Fetch(FetchSpec::new(url)), Some("bench".into()))
}

/// Runs the measurements under a fresh name prefix, deleting it after.
pub async fn run(args: &QueueArgs) -> Result<QueueReport> {
    let options = AmqpOptions {
        prefix: format!(
            "oxwright-bench-{}",
            &uuid::Uuid::new_v4().simple().to_string()[..8]
        ),
        ..AmqpOptions::default()
    };
    let queue = AmqpQueue::connect(&args.amqp, options)
        .await
        .with_context(|| format!("RabbitMQ at {} (run `infra/services.sh start`)", args.amqp))?;
    let result = measure(&queue, args).await;
    queue.delete_topology().await?;
    queue.close().await;
    result
}

async fn measure(queue: &AmqpQueue, args: &QueueArgs) -> Result<QueueReport> {
    // Round trips: one job in the system at a time.
    let mut consumer = queue.consume(JobKind::Fetch, 1).await?;
    let mut trips = Vec::with_capacity(args.round_trips);
    for n in 0..args.round_trips + 20 {
        let started = Instant::now();
        queue.publish(&job(n)).await?;
        let delivery = tokio::time::timeout(Duration::from_secs(10), consumer.next())
            .await
            .context("no delivery within 10 s")?
            .context("consumer closed")?;
        delivery.ack().await?;
        if n >= 20 {
            trips.push(ms(started.elapsed()));
        }
    }
    drop(consumer);

    // Confirmed publishes, one after another (each awaits its confirm).
    let mut publishes = Vec::with_capacity(args.jobs);
    let started = Instant::now();
    for n in 0..args.jobs {
        let one = Instant::now();
        queue.publish(&job(n)).await?;
        publishes.push(ms(one.elapsed()));
    }
    let publish_s = started.elapsed().as_secs_f64();

    // Consume and ack them all.
    let mut consumer = queue.consume(JobKind::Fetch, args.prefetch).await?;
    let started = Instant::now();
    for _ in 0..args.jobs {
        let delivery = tokio::time::timeout(Duration::from_secs(10), consumer.next())
            .await
            .context("no delivery within 10 s")?
            .context("consumer closed")?;
        delivery.ack().await?;
    }
    let consume_s = started.elapsed().as_secs_f64();

    Ok(QueueReport {
        round_trips: trips.len(),
        round_trip_p50_ms: percentile(&trips, 0.5),
        round_trip_p95_ms: percentile(&trips, 0.95),
        round_trip_p99_ms: percentile(&trips, 0.99),
        jobs: args.jobs,
        publish_jobs_per_s: args.jobs as f64 / publish_s,
        publish_p50_ms: percentile(&publishes, 0.5),
        consume_ack_jobs_per_s: args.jobs as f64 / consume_s,
        prefetch: args.prefetch,
    })
}

/// Renders the report as a Markdown table.
pub fn markdown(r: &QueueReport) -> String {
    format!(
        "| measure | value |\n|---|---:|\n\
         | round trip publish → deliver → ack, p50 ({} trips) | {:.2} ms |\n\
         | round trip p95 / p99 | {:.2} / {:.2} ms |\n\
         | confirmed publishes, sequential ({} jobs) | {:.0} jobs/s (p50 {:.2} ms) |\n\
         | consume + ack, prefetch {} | {:.0} jobs/s |\n",
        r.round_trips,
        r.round_trip_p50_ms,
        r.round_trip_p95_ms,
        r.round_trip_p99_ms,
        r.jobs,
        r.publish_jobs_per_s,
        r.publish_p50_ms,
        r.prefetch,
        r.consume_ack_jobs_per_s
    )
}
