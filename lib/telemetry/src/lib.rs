//! Telemetry for every oxwright binary: one call to [`init`] sets up
//! `tracing` logs on stderr (human or JSON lines), the `RUST_LOG` filter,
//! and, when an OTLP endpoint is configured, span export over OTLP/HTTP;
//! the returned [`TelemetryGuard`] flushes on drop. [`inject_trace_context`]
//! and [`set_parent_from_headers`] carry traces across the job queue.

pub mod console;
pub use console::printable;
mod init;
mod propagation;

pub use init::{
    DEFAULT_FILTER, LogFormat, TelemetryGuard, TelemetryOptions, init, otlp_metrics_endpoint,
    otlp_traces_endpoint,
};
pub use propagation::{inject_trace_context, set_parent_from_headers};
