//! One trace end to end through the Lambda path, received by an in-process
//! OTLP/HTTP receiver: the scheduler function's `publish` span, the worker
//! function's job span and its `s3.put` spans share one trace id, carried
//! by the job's `traceparent` header through RabbitMQ and the Amazon MQ
//! event. Needs RabbitMQ and the S3 server (`infra/services.sh start`).

mod support;

use std::time::Duration;

use base64::Engine as _;
use opentelemetry_proto::tonic::trace::v1::Span;
use oxwright_fixtures::{FixtureServer, OtlpReceiver};
use oxwright_jobs::JobKind;
use oxwright_queue::{AmqpOptions, AmqpQueue, JobQueue};
use serde_json::json;
use support::{Answer, FakeRuntime, Function, fixture};

fn env_or(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_trace_from_the_scheduler_publish_to_the_workers_s3_puts() {
    let site = FixtureServer::start().await.expect("fixture site");
    let otlp = OtlpReceiver::start().await.expect("OTLP receiver");
    let amqp_url = env_or("OXWRIGHT_TEST_AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/%2f");
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let prefix = format!("oxwright-trace-{}-{nanos}", std::process::id());
    let options = AmqpOptions {
        prefix: prefix.clone(),
        ..AmqpOptions::default()
    };
    let queue = AmqpQueue::connect(&amqp_url, options).await.unwrap_or_else(|e| {
        panic!("RabbitMQ not reachable at {amqp_url} ({e}); run `infra/services.sh start`")
    });
    let mut env = vec![
        ("OXWRIGHT_ALLOW_HOSTS", site.addr().to_string()),
        ("OXWRIGHT_AMQP_URL", amqp_url.clone()),
        ("OXWRIGHT_QUEUE_PREFIX", prefix.clone()),
        (
            "OXWRIGHT_S3",
            format!("s3://{}/{prefix}", env_or("OXWRIGHT_S3_BUCKET", "oxwright")),
        ),
        (
            "OXWRIGHT_S3_ENDPOINT",
            env_or("OXWRIGHT_TEST_S3_ENDPOINT", "http://127.0.0.1:9000"),
        ),
        ("AWS_ACCESS_KEY_ID", env_or("AWS_ACCESS_KEY_ID", "oxwright")),
        (
            "AWS_SECRET_ACCESS_KEY",
            env_or("AWS_SECRET_ACCESS_KEY", "oxwright-secret"),
        ),
        ("AWS_REGION", "us-east-1".into()),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", otlp.endpoint().to_owned()),
        ("RUST_LOG", "info".into()),
    ];
    if let Ok(path) = std::env::var("CHROME_PATH") {
        env.push(("CHROME_PATH", path));
    }

    // The scheduler function publishes one job on a tick.
    let mut scheduler_env = env.clone();
    scheduler_env.push((
        "OXWRIGHT_SCHEDULE_JOB",
        json!({"urls": [site.url("/")]}).to_string(),
    ));
    let mut runtime = FakeRuntime::start().await;
    let mut scheduler = Function::start_bin(
        env!("CARGO_BIN_EXE_oxwright-scheduler-lambda"),
        &runtime,
        &scheduler_env,
    );
    match runtime
        .invoke(json!({"detail-type": "Scheduled Event", "id": "tick-1"}))
        .await
    {
        Answer::Response(receipt) => assert_eq!(receipt["published"], 1, "{receipt}"),
        Answer::Error(e) => panic!("the tick failed: {e}\n{}", scheduler.log()),
    }
    assert!(scheduler.terminate().success(), "{}", scheduler.log());

    // What Amazon MQ would hand the worker function: the message as published.
    let mut consumer = queue.consume_many(&[JobKind::Fetch], 1).await.expect("consume");
    let delivery = tokio::time::timeout(Duration::from_secs(10), consumer.next())
        .await
        .expect("the published job")
        .expect("consumer open");
    let traceparent = delivery.traceparent().expect("a traceparent header").to_owned();
    let job_id = delivery.message_id().expect("message id").to_owned();
    let data = base64::engine::general_purpose::STANDARD.encode(delivery.body());
    let mut event = fixture(
        "rabbitmq-event.json",
        &[
            ("DATA", &data),
            ("MESSAGE_ID", &job_id),
            ("oxwright.fetch", &format!("{prefix}.fetch")),
        ],
    );
    let message = &mut event["rmqMessagesByQueue"][format!("{prefix}.fetch::/")][0];
    message["basicProperties"]["headers"]["traceparent"] = json!({"bytes": traceparent.as_bytes()});
    delivery.ack().await.expect("ack");
    drop(consumer);

    let mut runtime = FakeRuntime::start().await;
    let mut worker = Function::start(&runtime, &env);
    match runtime.invoke(event).await {
        Answer::Response(v) => assert_eq!(v["reports"][0]["status"], "ok", "{v}"),
        Answer::Error(e) => panic!("the job failed: {e}\n{}", worker.log()),
    }
    assert!(worker.terminate().success(), "{}", worker.log());

    // Both processes flushed on shutdown; collect what arrived.
    let all: Vec<Span> = otlp.spans();
    let trace_of = |name: &str| -> Vec<Vec<u8>> {
        all.iter()
            .filter(|s| s.name == name)
            .map(|s| s.trace_id.clone())
            .collect()
    };
    let names: Vec<&str> = all.iter().map(|s| s.name.as_str()).collect();
    let publish = trace_of("publish");
    assert_eq!(publish.len(), 1, "one publish span: {names:?}");
    let trace = &publish[0];
    assert_eq!(
        hex(trace),
        traceparent.split('-').nth(1).unwrap(),
        "the header carries the publish span's trace"
    );
    let job = trace_of("run_job_attempt");
    assert_eq!(
        job,
        vec![trace.clone()],
        "the job span joins the trace: {names:?}"
    );
    let puts = trace_of("s3.put");
    assert!(puts.len() >= 2, "page.md and result.json were put: {names:?}");
    assert!(puts.iter().all(|t| t == trace), "every S3 put joins the trace");
    queue.delete_topology().await.expect("clean up");
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
