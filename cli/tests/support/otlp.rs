//! Reading what an OTLP receiver got: each labelled series of a metric.

use std::collections::BTreeMap;

use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::common::v1::any_value;
use opentelemetry_proto::tonic::metrics::v1::metric::Data;
use opentelemetry_proto::tonic::metrics::v1::number_data_point::Value;
use opentelemetry_proto::tonic::metrics::v1::{Metric, NumberDataPoint};

/// `key=value` pairs of a data point's string attributes, sorted.
fn labels(attributes: &[KeyValue]) -> String {
    let mut pairs: Vec<String> = attributes
        .iter()
        .filter_map(|a| match a.value.as_ref()?.value.as_ref()? {
            any_value::Value::StringValue(v) => Some(format!("{}={v}", a.key)),
            _ => None,
        })
        .collect();
    pairs.sort();
    pairs.join(",")
}

fn number(p: &NumberDataPoint) -> f64 {
    match p.value {
        Some(Value::AsInt(v)) => v as f64,
        Some(Value::AsDouble(v)) => v,
        None => f64::NAN,
    }
}

/// The latest value of each labelled series of the metric `name` (sums
/// and gauges; for histograms, the count). Sums are cumulative, so the
/// latest export holds the totals.
pub fn series(metrics: &[Metric], name: &str) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    for m in metrics.iter().filter(|m| m.name == name) {
        match &m.data {
            Some(Data::Sum(s)) => s.data_points.iter().for_each(|p| {
                out.insert(labels(&p.attributes), number(p));
            }),
            Some(Data::Gauge(g)) => g.data_points.iter().for_each(|p| {
                out.insert(labels(&p.attributes), number(p));
            }),
            Some(Data::Histogram(h)) => h.data_points.iter().for_each(|p| {
                out.insert(labels(&p.attributes), p.count as f64);
            }),
            _ => {}
        }
    }
    out
}
