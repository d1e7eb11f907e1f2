//! The worker's OpenTelemetry metrics: jobs by kind and outcome, job
//! durations, queue-level retries, queue lag (publish → start), and pool
//! utilisation. Instruments report through the global meter provider that
//! `oxwright_telemetry::init` installs when an OTLP endpoint is configured;
//! without one they are no-ops.

use std::sync::OnceLock;

use opentelemetry::KeyValue;
use opentelemetry::metrics::{Counter, Histogram};
use oxwright_browser::BrowserPool;
use oxwright_jobs::JobKind;

/// What finally happened to a delivery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The job produced its result.
    Ok,
    /// A transient failure sent it to a retry queue.
    Retried,
    /// It failed for good (report published, then dead-lettered).
    Failed,
    /// The message did not decode and was dead-lettered.
    Undecodable,
}

impl Outcome {
    fn as_str(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Retried => "retried",
            Outcome::Failed => "failed",
            Outcome::Undecodable => "undecodable",
        }
    }
}

struct Instruments {
    jobs: Counter<u64>,
    duration: Histogram<f64>,
    lag: Histogram<f64>,
}

fn instruments() -> &'static Instruments {
    static INSTRUMENTS: OnceLock<Instruments> = OnceLock::new();
    INSTRUMENTS.get_or_init(|| {
        let meter = opentelemetry::global::meter("oxwright.worker");
        Instruments {
            jobs: meter
                .u64_counter("oxwright.jobs")
                .with_description("Deliveries handled, by job kind and outcome")
                .build(),
            duration: meter
                .f64_histogram("oxwright.job.duration")
                .with_unit("s")
                .with_description("Time from delivery to settlement")
                .build(),
            lag: meter
                .f64_histogram("oxwright.queue.lag")
                .with_unit("s")
                .with_description("Time from job creation to the start of a delivery")
                .build(),
        }
    })
}

/// Records a settled delivery of `kind`.
pub fn record_job(kind: Option<JobKind>, outcome: Outcome, seconds: f64) {
    let attrs = [
        KeyValue::new("kind", kind.map_or("unknown", JobKind::as_str)),
        KeyValue::new("outcome", outcome.as_str()),
    ];
    let m = instruments();
    m.jobs.add(1, &attrs);
    m.duration.record(seconds, &attrs);
}

/// Records how long a job waited on the queue before this delivery.
pub fn record_lag(kind: JobKind, seconds: f64) {
    instruments()
        .lag
        .record(seconds.max(0.0), &[KeyValue::new("kind", kind.as_str())]);
}

/// Registers pool gauges (pages in use, the admission limit and its
/// ceiling) read at each export.
pub fn observe_pool(pool: &BrowserPool) {
    let meter = opentelemetry::global::meter("oxwright.worker");
    let in_use = pool.clone();
    meter
        .u64_observable_gauge("oxwright.pool.in_use")
        .with_description("Pages leased from the browser pool")
        .with_callback(move |gauge| gauge.observe(in_use.in_use() as u64, &[]))
        .build();
    let capacity = pool.clone();
    meter
        .u64_observable_gauge("oxwright.pool.capacity")
        .with_description("The most pages the browser pool leases at once (adaptive admission's ceiling)")
        .with_callback(move |gauge| gauge.observe(capacity.capacity() as u64, &[]))
        .build();
    let limit = pool.clone();
    meter
        .u64_observable_gauge("oxwright.pool.limit")
        .with_description("Pages the browser pool admits at once now (adaptive admission)")
        .with_callback(move |gauge| gauge.observe(limit.limit() as u64, &[]))
        .build();
}
