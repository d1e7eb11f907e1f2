//! Exports a job span over OTLP/HTTP to a receiver on loopback and checks
//! it arrives once the guard drops. Own process: `init` installs the
//! global subscriber.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::mpsc;
use std::time::Duration;

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use oxwright_telemetry::{LogFormat, TelemetryOptions, init};
use prost::Message;

/// Serves OTLP/HTTP protobuf requests on 127.0.0.1:0 from a plain thread
/// (no async runtime to block) and forwards each decoded request.
fn start_receiver() -> (String, mpsc::Receiver<(String, ExportTraceServiceRequest)>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let tx = tx.clone();
            std::thread::spawn(move || serve(stream.unwrap(), tx));
        }
    });
    (format!("http://{addr}"), rx)
}

fn serve(stream: TcpStream, tx: mpsc::Sender<(String, ExportTraceServiceRequest)>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut writer = stream;
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
            return; // connection closed
        }
        let path = request_line
            .split_whitespace()
            .nth(1)
            .unwrap_or_default()
            .to_owned();
        let mut length = 0;
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((name, value)) = line.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().unwrap();
            }
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body).unwrap();
        let request = ExportTraceServiceRequest::decode(body.as_slice()).expect("protobuf body");
        let _ = tx.send((path, request));
        writer
            .write_all(
                b"HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n",
            )
            .unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn job_span_reaches_the_otlp_receiver_after_guard_drops() {
    let (endpoint, received) = start_receiver();
    let env = BTreeMap::from([
        ("OTEL_EXPORTER_OTLP_ENDPOINT".to_owned(), endpoint),
        ("RUST_LOG".to_owned(), "info".to_owned()),
    ]);
    let opts = TelemetryOptions {
        format: LogFormat::Json,
        env,
        ..TelemetryOptions::default()
    };
    let guard = init("oxwright-test", opts).expect("first init succeeds");
    assert!(guard.exports_spans());

    let job_id = "0190f0f0-0000-7000-8000-00000000abcd";
    let span_name = format!("job {job_id}");
    tracing::info_span!("run_job", otel.name = %span_name, job_id).in_scope(|| {
        tracing::info!(job_id, "page fetched");
    });
    drop(guard);

    let (path, request) = received
        .recv_timeout(Duration::from_secs(10))
        .expect("an export request within 10 s");
    assert_eq!(path, "/v1/traces");
    let resource_spans = &request.resource_spans[0];
    let service = resource_spans
        .resource
        .as_ref()
        .and_then(|r| r.attributes.iter().find(|a| a.key == "service.name"))
        .and_then(|a| a.value.as_ref()?.value.clone());
    assert_eq!(service, Some(Value::StringValue("oxwright-test".to_owned())));
    let span = resource_spans
        .scope_spans
        .iter()
        .flat_map(|s| &s.spans)
        .find(|s| s.name == span_name)
        .expect("the job span was exported");
    let job_attr = span
        .attributes
        .iter()
        .find(|a| a.key == "job_id")
        .and_then(|a| a.value.as_ref()?.value.clone());
    assert_eq!(job_attr, Some(Value::StringValue(job_id.to_owned())));

    let again = init("oxwright-test", TelemetryOptions::default());
    assert!(again.is_err(), "second init must fail, not panic");
}
