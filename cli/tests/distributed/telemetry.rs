//! A worker's metrics, received over OTLP/HTTP by an in-process receiver:
//! jobs by kind and outcome (ok, retried, failed), job durations, queue
//! lag, and the pool's use, admission limit and ceiling.

use std::time::Duration;

use oxwright_fixtures::OtlpReceiver;

use crate::cluster::Cluster;
use crate::support::otlp::series;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workers_metrics_reach_an_otlp_receiver() {
    let otlp = OtlpReceiver::start().await.expect("OTLP receiver");
    let mut cluster = Cluster::start().await;
    cluster.with_env("OTEL_EXPORTER_OTLP_ENDPOINT", otlp.endpoint());
    cluster.with_env("OTEL_METRIC_EXPORT_INTERVAL", "500");
    cluster.scheduler();
    let worker = cluster.worker(2, &["--max-attempts", "3", "--retry-delay-ms", "200"]);
    // One page fine, one failing once with a 503 (retried by the queue),
    // one missing (a 404 is final).
    let batch = cluster.submit(
        &[
            "/".to_owned(),
            "/flaky/metrics?fail=1".to_owned(),
            "/no-such-page".to_owned(),
        ],
        &["--retries", "0"],
    );
    let lines = cluster.manifest(&batch, Duration::from_secs(120)).await;
    let status = |suffix: &str| {
        lines
            .iter()
            .find(|l| l["url"].as_str().unwrap().ends_with(suffix))
            .map(|l| l["status"].as_str().unwrap().to_owned())
    };
    assert_eq!(status("/").as_deref(), Some("ok"), "{lines:?}");
    assert_eq!(status("fail=1").as_deref(), Some("ok"), "{lines:?}");
    assert_eq!(status("/no-such-page").as_deref(), Some("failed"), "{lines:?}");

    // A stopping worker exports its last readings.
    cluster.signal(worker, libc::SIGTERM);
    let exit = tokio::task::block_in_place(|| cluster.wait(worker));
    assert!(
        exit.success(),
        "{exit:?}\n{}",
        cluster.log(&format!("worker-{worker}"))
    );
    let metrics = otlp.metrics();
    let names: std::collections::BTreeSet<&str> = metrics.iter().map(|m| m.name.as_str()).collect();

    let jobs = series(&metrics, "oxwright.jobs");
    assert_eq!(
        jobs.get("kind=fetch,outcome=ok"),
        Some(&2.0),
        "{jobs:?} of {names:?}"
    );
    assert_eq!(jobs.get("kind=fetch,outcome=retried"), Some(&1.0), "{jobs:?}");
    assert_eq!(jobs.get("kind=fetch,outcome=failed"), Some(&1.0), "{jobs:?}");
    let durations = series(&metrics, "oxwright.job.duration");
    assert_eq!(
        durations.values().sum::<f64>(),
        4.0,
        "one duration per delivery: {durations:?}"
    );
    let lag = series(&metrics, "oxwright.queue.lag");
    assert_eq!(lag.get("kind=fetch"), Some(&4.0), "one lag per delivery: {lag:?}");
    // Two pages per browser: adaptive admission may go up to twice that.
    let capacity = series(&metrics, "oxwright.pool.capacity");
    assert_eq!(capacity.get(""), Some(&4.0), "{capacity:?} of {names:?}");
    let limit = series(&metrics, "oxwright.pool.limit");
    assert!(
        limit.get("").is_some_and(|v| (1.0..=4.0).contains(v)),
        "{limit:?} of {names:?}"
    );
    let in_use = series(&metrics, "oxwright.pool.in_use");
    assert!(
        in_use.get("").is_some_and(|v| *v <= 4.0),
        "{in_use:?} of {names:?}"
    );
}
