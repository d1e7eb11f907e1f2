//! Global subscriber setup: filter, log format, optional OTLP exporter,
//! and the guard that flushes spans at exit.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context, bail};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing::Subscriber;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer, filter};

/// The filter used when `RUST_LOG` is unset: `info` for oxwright crates,
/// `warn` for everything else.
pub const DEFAULT_FILTER: &str = "warn,oxwright=info,chromiumoxide=error";

/// Set once the global subscriber is installed.
static INITIALISED: AtomicBool = AtomicBool::new(false);

/// How log lines are written to stderr.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum LogFormat {
    /// Human-readable when stderr is a terminal, JSON lines otherwise.
    #[default]
    Auto,
    /// Compact human-readable lines, coloured on a terminal.
    Human,
    /// One JSON object per line.
    Json,
}

/// Settings of [`init`].
#[derive(Debug, Clone)]
pub struct TelemetryOptions {
    /// Log line format.
    pub format: LogFormat,
    /// The process environment, injected so tests never call `set_var`;
    /// `RUST_LOG`, `OTEL_EXPORTER_OTLP_ENDPOINT` and
    /// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` are read from it.
    pub env: BTreeMap<String, String>,
    /// Upper bound on the flush and shutdown of the exporter when the
    /// guard drops.
    pub shutdown_timeout: Duration,
    /// Timeout of one OTLP export request.
    pub export_timeout: Duration,
    /// The command is run by a person (fetch, batch, run …), not a
    /// service: with `RUST_LOG` unset (and the format not set to JSON),
    /// only warnings and errors are written, on a terminal or not (the command prints what matters itself); spans
    /// and events still reach the OTLP exporter at the usual levels.
    /// Its lines are plain (`warning: …`), on a terminal or not, unless
    /// the format is set to JSON.
    pub person: bool,
    /// A person asked for what the command does (`-v`): INFO and up.
    pub verbose: bool,
}

impl Default for TelemetryOptions {
    fn default() -> Self {
        Self {
            format: LogFormat::Auto,
            env: BTreeMap::new(),
            shutdown_timeout: Duration::from_secs(5),
            export_timeout: Duration::from_secs(3),
            person: false,
            verbose: false,
        }
    }
}

impl TelemetryOptions {
    /// Creates options reading the real process environment.
    pub fn from_process_env() -> Self {
        Self {
            env: std::env::vars().collect(),
            ..Self::default()
        }
    }
}

/// Flushes and shuts down span export when dropped, within the
/// configured timeout. Keep it alive until `main` returns.
#[derive(Debug)]
#[must_use = "dropping the guard stops span export"]
pub struct TelemetryGuard {
    provider: Option<SdkTracerProvider>,
    meters: Option<SdkMeterProvider>,
    shutdown_timeout: Duration,
}

impl TelemetryGuard {
    /// Says whether spans are exported over OTLP.
    pub fn exports_spans(&self) -> bool {
        self.provider.is_some()
    }

    /// Says whether metrics are exported over OTLP.
    pub fn exports_metrics(&self) -> bool {
        self.meters.is_some()
    }
}

impl Drop for TelemetryGuard {
    fn drop(&mut self) {
        if let Some(meters) = self.meters.take() {
            // Shutdown exports the last readings.
            if let Err(err) = meters.shutdown_with_timeout(self.shutdown_timeout) {
                eprintln!("oxwright telemetry: metric export shutdown failed: {err}");
            }
        }
        if let Some(provider) = self.provider.take() {
            // Shutdown exports what the batch processor still holds.
            if let Err(err) = provider.shutdown_with_timeout(self.shutdown_timeout) {
                eprintln!("oxwright telemetry: span export shutdown failed: {err}");
            }
        }
    }
}

/// Returns the OTLP/HTTP traces URL configured in `env`:
/// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` as is, else
/// `OTEL_EXPORTER_OTLP_ENDPOINT` + `/v1/traces`; `None` when neither is set.
pub fn otlp_traces_endpoint(env: &BTreeMap<String, String>) -> Option<String> {
    let non_empty = |name: &str| env.get(name).map(|v| v.trim()).filter(|v| !v.is_empty());
    if let Some(url) = non_empty("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
        return Some(url.to_owned());
    }
    non_empty("OTEL_EXPORTER_OTLP_ENDPOINT").map(|base| format!("{}/v1/traces", base.trim_end_matches('/')))
}

/// Returns the OTLP/HTTP metrics URL configured in `env`:
/// `OTEL_EXPORTER_OTLP_METRICS_ENDPOINT` as is, else
/// `OTEL_EXPORTER_OTLP_ENDPOINT` + `/v1/metrics`; `None` when neither is set.
pub fn otlp_metrics_endpoint(env: &BTreeMap<String, String>) -> Option<String> {
    let non_empty = |name: &str| env.get(name).map(|v| v.trim()).filter(|v| !v.is_empty());
    if let Some(url) = non_empty("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT") {
        return Some(url.to_owned());
    }
    non_empty("OTEL_EXPORTER_OTLP_ENDPOINT").map(|base| format!("{}/v1/metrics", base.trim_end_matches('/')))
}

/// Builds the meter provider exporting every `interval` (default 60 s,
/// `OTEL_METRIC_EXPORT_INTERVAL` in ms) and installs it globally, so
/// `opentelemetry::global::meter` instruments report through it.
fn build_meters(
    service_name: &str,
    endpoint: &str,
    opts: &TelemetryOptions,
) -> anyhow::Result<SdkMeterProvider> {
    let exporter = opentelemetry_otlp::MetricExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary)
        .with_endpoint(endpoint)
        .with_timeout(opts.export_timeout)
        .build()
        .with_context(|| format!("cannot build the OTLP metric exporter for {endpoint}"))?;
    let interval = opts
        .env
        .get("OTEL_METRIC_EXPORT_INTERVAL")
        .and_then(|ms| ms.trim().parse::<u64>().ok())
        .map_or(Duration::from_secs(60), Duration::from_millis);
    let reader = PeriodicReader::builder(exporter).with_interval(interval).build();
    let resource = Resource::builder()
        .with_service_name(service_name.to_owned())
        .build();
    let provider = SdkMeterProvider::builder()
        .with_reader(reader)
        .with_resource(resource)
        .build();
    opentelemetry::global::set_meter_provider(provider.clone());
    Ok(provider)
}

/// Builds the log filter from `RUST_LOG` in `env`, or [`DEFAULT_FILTER`].
fn build_filter(env: &BTreeMap<String, String>) -> anyhow::Result<EnvFilter> {
    let spec = env
        .get("RUST_LOG")
        .map(|s| s.trim())
        .filter(|s| !s.is_empty())
        .unwrap_or(DEFAULT_FILTER);
    EnvFilter::builder()
        .parse(spec)
        .with_context(|| format!("invalid RUST_LOG filter {spec:?}"))
}

/// Says whether the human format is used.
fn human_format(format: LogFormat) -> bool {
    match format {
        LogFormat::Human => true,
        LogFormat::Json => false,
        LogFormat::Auto => std::io::stderr().is_terminal(),
    }
}

fn fmt_layer<S>(format: LogFormat, quiet: bool, person: bool) -> Box<dyn Layer<S> + Send + Sync>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    let base = tracing_subscriber::fmt::layer().with_writer(crate::console::ConsoleWriter);
    let layer: Box<dyn Layer<S> + Send + Sync> = if person && format != LogFormat::Json {
        base.event_format(PersonFormat).boxed()
    } else if human_format(format) {
        base.compact().with_ansi(std::io::stderr().is_terminal()).boxed()
    } else {
        base.json()
            .flatten_event(true)
            .with_current_span(true)
            .with_span_list(false)
            .boxed()
    };
    if quiet {
        layer.with_filter(filter::LevelFilter::WARN).boxed()
    } else {
        layer
    }
}

/// A person's log line: `warning: what happened key=value …`, as a
/// command-line tool writes one, whether stderr is a terminal or a file.
struct PersonFormat;

impl<S, N> tracing_subscriber::fmt::FormatEvent<S, N> for PersonFormat
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> tracing_subscriber::fmt::FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &tracing_subscriber::fmt::FmtContext<'_, S, N>,
        mut writer: tracing_subscriber::fmt::format::Writer<'_>,
        event: &tracing::Event<'_>,
    ) -> std::fmt::Result {
        let level = match *event.metadata().level() {
            tracing::Level::ERROR => "error",
            tracing::Level::WARN => "warning",
            tracing::Level::INFO => "info",
            tracing::Level::DEBUG => "debug",
            tracing::Level::TRACE => "trace",
        };
        write!(writer, "{level}: ")?;
        ctx.field_format().format_fields(writer.by_ref(), event)?;
        writeln!(writer)
    }
}

fn build_provider(
    service_name: &str,
    endpoint: &str,
    opts: &TelemetryOptions,
) -> anyhow::Result<SdkTracerProvider> {
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary)
        .with_endpoint(endpoint)
        .with_timeout(opts.export_timeout)
        .build()
        .with_context(|| format!("cannot build the OTLP span exporter for {endpoint}"))?;
    let resource = Resource::builder()
        .with_service_name(service_name.to_owned())
        .build();
    Ok(SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource)
        .build())
}

/// Says whether spans and events of `target` may reach the exporter:
/// the exporter's own HTTP stack is kept out so exporting never
/// produces more spans to export.
fn exportable_target(target: &str) -> bool {
    const EXCLUDED: [&str; 5] = ["opentelemetry", "hyper", "reqwest", "h2", "tower"];
    !EXCLUDED.iter().any(|prefix| target.starts_with(prefix))
}

/// Installs the global tracing subscriber for `service_name`: logs to
/// stderr filtered by `RUST_LOG`, plus OTLP/HTTP span export with a batch
/// processor when an OTLP endpoint is configured in `opts.env`.
///
/// Works once per process; later calls return an error.
pub fn init(service_name: &str, opts: TelemetryOptions) -> anyhow::Result<TelemetryGuard> {
    if INITIALISED.swap(true, Ordering::SeqCst) {
        bail!("telemetry is already initialised in this process");
    }
    // reqwest is built with rustls but no bundled provider (the workspace
    // avoids aws-lc): every HTTP client in the process needs one installed.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let filter = build_filter(&opts.env)?;
    let endpoint = otlp_traces_endpoint(&opts.env);
    let provider = endpoint
        .as_deref()
        .map(|url| build_provider(service_name, url, &opts))
        .transpose()?;
    let metrics_endpoint = otlp_metrics_endpoint(&opts.env);
    let meters = metrics_endpoint
        .as_deref()
        .map(|url| build_meters(service_name, url, &opts))
        .transpose()?;
    let otel_layer = provider.as_ref().map(|provider| {
        tracing_opentelemetry::layer()
            .with_tracer(provider.tracer("oxwright"))
            .with_filter(filter::filter_fn(|meta| exportable_target(meta.target())))
    });
    // A person's command shows warnings and errors only, on a terminal or
    // not, unless RUST_LOG (or a caller asking for JSON logs) says otherwise.
    let quiet = opts.person
        && !opts.verbose
        && opts.format != LogFormat::Json
        && opts.env.get("RUST_LOG").is_none_or(|v| v.trim().is_empty());
    crate::console::set_quiet(quiet);
    tracing_subscriber::registry()
        .with(filter)
        .with(fmt_layer(opts.format, quiet, opts.person))
        .with(otel_layer)
        .try_init()
        .context("cannot install the global tracing subscriber")?;
    tracing::info!(
        service = service_name,
        otlp_endpoint = endpoint.as_deref().unwrap_or("none"),
        "telemetry initialised"
    );
    Ok(TelemetryGuard {
        provider,
        meters,
        shutdown_timeout: opts.shutdown_timeout,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn endpoint_resolution() {
        assert_eq!(otlp_traces_endpoint(&env(&[])), None);
        assert_eq!(
            otlp_traces_endpoint(&env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", " ")])),
            None
        );
        assert_eq!(
            otlp_traces_endpoint(&env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318/")])).as_deref(),
            Some("http://c:4318/v1/traces")
        );
        assert_eq!(
            otlp_traces_endpoint(&env(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
                ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://t:1/x"),
            ]))
            .as_deref(),
            Some("http://t:1/x")
        );
    }

    #[test]
    fn filters() {
        let default = build_filter(&env(&[])).unwrap().to_string();
        assert!(
            default.contains("oxwright=info") && default.contains("warn"),
            "{default}"
        );
        assert!(build_filter(&env(&[("RUST_LOG", "debug")])).is_ok());
        assert!(build_filter(&env(&[("RUST_LOG", "oxwright=loud")])).is_err());
    }

    #[test]
    fn exporter_stack_is_not_exported() {
        assert!(exportable_target("oxwright_worker::run"));
        assert!(!exportable_target("hyper_util::client"));
        assert!(!exportable_target("opentelemetry_sdk"));
    }

    #[test]
    fn forced_formats() {
        assert!(human_format(LogFormat::Human));
        assert!(!human_format(LogFormat::Json));
    }
}
