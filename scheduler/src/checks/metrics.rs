//! The checks' OpenTelemetry metrics, each series carrying the check's
//! name: runs by status and trigger, run durations, whether the check is
//! failing, ticks skipped while a run was going, and alerts delivered.
//! Instruments report through the global meter provider that
//! `oxwright_telemetry::init` installs when an OTLP endpoint is
//! configured; without one they are no-ops.

use std::sync::OnceLock;

use opentelemetry::KeyValue;
use opentelemetry::metrics::{Counter, Gauge, Histogram};
use oxwright_checks::CheckRun;

use super::Health;

struct Instruments {
    runs: Counter<u64>,
    duration: Histogram<f64>,
    failing: Gauge<u64>,
    skipped: Counter<u64>,
    alerts: Counter<u64>,
}

fn instruments() -> &'static Instruments {
    static INSTRUMENTS: OnceLock<Instruments> = OnceLock::new();
    INSTRUMENTS.get_or_init(|| {
        let meter = opentelemetry::global::meter("oxwright.scheduler");
        Instruments {
            runs: meter
                .u64_counter("oxwright.check.runs")
                .with_description("Check runs ended, by check, status (passed, flaky, failed) and trigger")
                .build(),
            duration: meter
                .f64_histogram("oxwright.check.duration")
                .with_unit("s")
                .with_description("Wall time of a check run, its retries included, by check and status")
                .build(),
            failing: meter
                .u64_gauge("oxwright.check.failing")
                .with_description("1 while the check is failing (it alerted), else 0")
                .build(),
            skipped: meter
                .u64_counter("oxwright.check.skipped_ticks")
                .with_description("Scheduled ticks skipped because the check's last run was still going")
                .build(),
            alerts: meter
                .u64_counter("oxwright.check.alerts")
                .with_description("Alerts delivered, by check and event")
                .build(),
        }
    })
}

/// Records an ended run and the health it left the check in.
pub(crate) fn record_run(run: &CheckRun, health: Health) {
    let m = instruments();
    let check = KeyValue::new("check", run.check.clone());
    let status = KeyValue::new("status", run.status.as_str());
    m.runs.add(
        1,
        &[
            check.clone(),
            status.clone(),
            KeyValue::new("trigger", run.trigger.as_str()),
        ],
    );
    m.duration
        .record(run.duration_ms as f64 / 1000.0, &[check.clone(), status]);
    m.failing.record(u64::from(health == Health::Failing), &[check]);
}

/// Records a tick skipped while the check's last run was going.
pub(crate) fn record_skipped(check: &str) {
    instruments()
        .skipped
        .add(1, &[KeyValue::new("check", check.to_string())]);
}

/// Records a delivered alert.
pub(crate) fn record_alert(check: &str, event: &str) {
    instruments().alerts.add(
        1,
        &[
            KeyValue::new("check", check.to_string()),
            KeyValue::new("event", event.to_string()),
        ],
    );
}
