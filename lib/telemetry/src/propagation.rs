//! W3C trace-context propagation through message headers, so a worker's
//! job span continues the scheduler's trace.

use std::collections::BTreeMap;

use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use tracing_opentelemetry::OpenTelemetrySpanExt;

struct HeaderInjector<'a>(&'a mut BTreeMap<String, String>);

impl Injector for HeaderInjector<'_> {
    fn set(&mut self, key: &str, value: String) {
        self.0.insert(key.to_owned(), value);
    }
}

struct HeaderExtractor<'a>(&'a BTreeMap<String, String>);

impl Extractor for HeaderExtractor<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(String::as_str)
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(String::as_str).collect()
    }
}

/// Adds the `traceparent` (and `tracestate`) of the current span to
/// `headers`; adds nothing when no span is being exported.
pub fn inject_trace_context(headers: &mut BTreeMap<String, String>) {
    let context = tracing::Span::current().context();
    TraceContextPropagator::new().inject_context(&context, &mut HeaderInjector(headers));
}

/// Makes `span` a child of the trace named by the `traceparent` in
/// `headers`; leaves it alone when the header is missing or invalid.
pub fn set_parent_from_headers(span: &tracing::Span, headers: &BTreeMap<String, String>) {
    if !headers.contains_key("traceparent") {
        return;
    }
    let parent = TraceContextPropagator::new().extract(&HeaderExtractor(headers));
    // Fails only when the span is disabled or already started children;
    // losing the link then is better than failing the job.
    let _ = span.set_parent(parent);
}

#[cfg(test)]
mod tests {
    use opentelemetry::trace::{TraceContextExt, TracerProvider as _};
    use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};
    use tracing_subscriber::layer::SubscriberExt;

    use super::*;

    #[test]
    fn trace_continues_through_headers() {
        let exporter = InMemorySpanExporter::default();
        let provider = SdkTracerProvider::builder()
            .with_simple_exporter(exporter.clone())
            .build();
        let subscriber = tracing_subscriber::registry()
            .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("test")));
        let trace_id = tracing::subscriber::with_default(subscriber, || {
            let mut headers = BTreeMap::new();
            let publisher = tracing::info_span!("publish");
            let trace_id = publisher.context().span().span_context().trace_id();
            publisher.in_scope(|| inject_trace_context(&mut headers));
            drop(publisher);
            let traceparent = headers.get("traceparent").expect("traceparent injected");
            assert!(traceparent.contains(&trace_id.to_string()), "{traceparent}");

            let consumer = tracing::info_span!("run_job");
            set_parent_from_headers(&consumer, &headers);
            assert_eq!(consumer.context().span().span_context().trace_id(), trace_id);
            trace_id
        });
        let mut untouched = BTreeMap::new();
        inject_trace_context(&mut untouched);
        assert!(untouched.is_empty(), "no span, no header");
        set_parent_from_headers(&tracing::Span::none(), &BTreeMap::new());
        let spans = exporter.get_finished_spans().unwrap();
        let run_job = spans
            .iter()
            .find(|s| s.name == "run_job")
            .expect("run_job exported");
        assert_eq!(run_job.span_context.trace_id(), trace_id);
        provider.shutdown().unwrap();
    }
}
