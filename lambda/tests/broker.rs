//! The Lambda functions against the real RabbitMQ (`infra/services.sh
//! start`; `OXWRIGHT_TEST_AMQP_URL` overrides the address): a failed job of
//! a RabbitMQ event leaves `error.json`, its report and a dead-letter
//! record, as `oxwright worker` does; the scheduler function publishes its
//! template's jobs, confirmed, on an EventBridge tick; a workflow longer
//! than an invocation may run hands the rest of its run to the next
//! invocation and completes across them.

mod support;

use std::time::Duration;

use base64::Engine as _;
use oxwright_fixtures::FixtureServer;
use oxwright_jobs::{FetchSpec, Job, JobKind, JobSpec, ReportStatus, WorkflowSpec};
use oxwright_queue::{AmqpOptions, AmqpQueue, JobQueue};
use serde_json::Value;
use support::{Answer, FakeRuntime, Function, files_under, fixture};

fn amqp_url() -> String {
    std::env::var("OXWRIGHT_TEST_AMQP_URL").unwrap_or_else(|_| "amqp://guest:guest@127.0.0.1:5672/%2f".into())
}

async fn broker(prefix: &str) -> AmqpQueue {
    let options = AmqpOptions {
        prefix: prefix.to_owned(),
        ..AmqpOptions::default()
    };
    AmqpQueue::connect(&amqp_url(), options)
        .await
        .unwrap_or_else(|e| {
            panic!(
                "RabbitMQ not reachable at {} ({e}); run `infra/services.sh start`",
                amqp_url()
            )
        })
}

fn unique_prefix() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("oxwright-lambda-{}-{nanos}", std::process::id())
}

/// A RabbitMQ event holding one message with `body`, from `queue`.
fn rabbitmq_event(body: &[u8], message_id: &str, queue: &str) -> Value {
    let data = base64::engine::general_purpose::STANDARD.encode(body);
    fixture(
        "rabbitmq-event.json",
        &[
            ("DATA", &data),
            ("MESSAGE_ID", message_id),
            ("oxwright.fetch", queue),
        ],
    )
}

fn common_env(site: &FixtureServer, prefix: &str) -> Vec<(&'static str, String)> {
    let mut env = vec![
        ("OXWRIGHT_ALLOW_HOSTS", site.addr().to_string()),
        ("OXWRIGHT_AMQP_URL", amqp_url()),
        ("OXWRIGHT_QUEUE_PREFIX", prefix.to_owned()),
    ];
    if let Ok(path) = std::env::var("CHROME_PATH") {
        env.push(("CHROME_PATH", path));
    }
    env
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_job_of_a_rabbitmq_event_leaves_error_json_its_report_and_a_dead_letter() {
    let site = FixtureServer::start().await.expect("fixture site");
    let prefix = unique_prefix();
    let queue = broker(&prefix).await;
    let mut reports = queue.reports().await.expect("subscribe to reports");
    let mut runtime = FakeRuntime::start().await;
    let function = Function::start(&runtime, &common_env(&site, &prefix));

    let mut spec = FetchSpec::new(site.url("/data.json").parse().unwrap());
    spec.timeout_ms = 15_000;
    let job = Job::new(JobSpec::Fetch(spec), Some("b-lambda".into()));
    let event = rabbitmq_event(
        &serde_json::to_vec(&job).unwrap(),
        &job.id.to_string(),
        &format!("{prefix}.fetch"),
    );
    let answer = match runtime.invoke(event).await {
        Answer::Response(v) => v,
        Answer::Error(e) => panic!("a dead-lettered job settles the event: {e}\n{}", function.log()),
    };
    assert_eq!(answer["reports"][0]["status"], "failed", "{answer}");

    let error_json = format!("jobs/fetch/{}/error.json", job.id);
    assert!(
        function.out.path().join(&error_json).is_file(),
        "{:?}",
        files_under(function.out.path())
    );
    let report = tokio::time::timeout(Duration::from_secs(30), reports.next())
        .await
        .expect("a report within 30 s")
        .expect("report stream open")
        .expect("report decodes");
    assert_eq!(report.job_id, job.id);
    assert_eq!(report.status, ReportStatus::Failed);
    assert_eq!(report.artifacts, vec![error_json]);
    let dead = queue.dead_letters().await.expect("read dead letters");
    assert_eq!(dead.len(), 1, "{dead:?}");
    assert_eq!(dead[0].error_kind(), Some("non_html"));
    assert_eq!(
        dead[0].message.message_id.as_deref(),
        Some(job.id.to_string().as_str())
    );
    queue.delete_topology().await.expect("clean up");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_scheduler_function_publishes_its_template_on_a_schedule_tick() {
    let site = FixtureServer::start().await.expect("fixture site");
    let prefix = unique_prefix();
    let queue = broker(&prefix).await;
    let mut runtime = FakeRuntime::start().await;
    let mut env = common_env(&site, &prefix);
    let template = serde_json::json!({
        "kind": "fetch",
        "urls": [site.url("/"), site.url("/redirect/chain")],
        "options": {"content": "full"},
    });
    env.push(("OXWRIGHT_SCHEDULE_JOB", template.to_string()));
    env.push(("OXWRIGHT_SCHEDULE_NAME", "homepage".into()));
    let function = Function::start_bin(env!("CARGO_BIN_EXE_oxwright-scheduler-lambda"), &runtime, &env);

    let tick = serde_json::json!({
        "version": "0",
        "id": "53dc4d37-cffa-4f76-80c9-8b7d4a4d2eaa",
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": "111122223333",
        "time": "2026-11-24T00:00:00Z",
        "region": "eu-west-1",
        "resources": ["arn:aws:events:eu-west-1:111122223333:rule/oxwright-homepage"],
        "detail": {}
    });
    let receipt: Value = match runtime.invoke(tick).await {
        Answer::Response(v) => v,
        Answer::Error(e) => panic!("the tick fails: {e}\n{}", function.log()),
    };
    assert_eq!(receipt["published"], 2, "{receipt}");
    assert_eq!(receipt["refused"], 0, "{receipt}");
    let batch_id = receipt["batch_id"].as_str().expect("batch id");
    assert!(batch_id.starts_with("homepage-"), "{batch_id}");
    // Confirmed publishes: both jobs are on the fetch queue when it answers.
    assert_eq!(queue.depth(JobKind::Fetch).await.expect("depth"), 2);
    let mut consumer = queue.consume_many(&[JobKind::Fetch], 2).await.expect("consume");
    for _ in 0..2 {
        let delivery = tokio::time::timeout(Duration::from_secs(10), consumer.next())
            .await
            .expect("a delivery")
            .expect("consumer open");
        let job = delivery.job().as_ref().expect("a job").clone();
        assert_eq!(job.batch_id.as_deref(), Some(batch_id));
        delivery.ack().await.expect("ack");
    }
    drop(consumer);

    // A template the scheduler refuses is a permanent, typed failure.
    drop(function);
    let mut env = common_env(&site, &prefix);
    env.push(("OXWRIGHT_SCHEDULE_JOB", r#"{"kind":"fetch","urls":[]}"#.into()));
    let mut runtime = FakeRuntime::start().await;
    let _bad = Function::start_bin(env!("CARGO_BIN_EXE_oxwright-scheduler-lambda"), &runtime, &env);
    match runtime
        .invoke(serde_json::json!({"detail-type": "Scheduled Event"}))
        .await
    {
        Answer::Error(e) => assert_eq!(e["errorType"], "Permanent.invalid_input", "{e}"),
        Answer::Response(v) => panic!("an empty template must fail, got {v}"),
    }
    queue.delete_topology().await.expect("clean up");
}

/// Signs three entries of the fixture ledger with pauses between: about
/// 15 s of steps, longer than the 14 s an invocation may run here.
const LONG_FLOW: &str = "goto: /app/ledger?owner=lambda-owner
fill: textbox \"Entry\" = one
click: button \"Sign\"
expect: text \"Signed: one\"
wait: 3s
wait: 3s
fill: textbox \"Entry\" = two
click: button \"Sign\"
expect: text \"Signed: two\"
wait: 3s
wait: 3s
fill: textbox \"Entry\" = three
click: button \"Sign\"
expect: text \"Signed: three\"
expect: text \"Owner: lambda-owner\"
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workflow_longer_than_an_invocation_completes_across_invocations() {
    let site = FixtureServer::start().await.expect("fixture site");
    let prefix = unique_prefix();
    let queue = broker(&prefix).await;
    let mut runtime = FakeRuntime::start_with_deadline(Duration::from_secs(14)).await;
    let mut env = common_env(&site, &prefix);
    env.push((
        "OXWRIGHT_CHECKPOINT_KEY",
        "a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90".into(),
    ));
    let function = Function::start(&runtime, &env);
    let mut spec = WorkflowSpec::new(LONG_FLOW, site.url("/app/ledger").parse().unwrap());
    spec.action_timeout_ms = 1_000;
    let job = Job::new(JobSpec::Workflow(Box::new(spec)), None);
    let queue_name = format!("{prefix}.workflow");
    // The test is the event source: what the function hands over comes
    // back on the workflow queue and goes into the next invocation.
    let mut handed = queue.consume(JobKind::Workflow, 1).await.expect("consume");
    let mut body = serde_json::to_vec(&job).unwrap();
    let mut invocations = 0;
    loop {
        invocations += 1;
        assert!(
            invocations <= 6,
            "still not done after 5 invocations\n{}",
            function.log()
        );
        let event = rabbitmq_event(&body, &job.id.to_string(), &queue_name);
        let answer = match runtime.invoke(event).await {
            Answer::Response(v) => v,
            Answer::Error(e) => panic!("invocation {invocations} failed: {e}\n{}", function.log()),
        };
        let report = &answer["reports"][0];
        if report["status"] == "ok" {
            break;
        }
        assert_eq!(
            report["error"]["kind"],
            "handed_over",
            "{answer}\n{}",
            function.log()
        );
        let delivery = tokio::time::timeout(Duration::from_secs(30), handed.next())
            .await
            .expect("the rest of the run is on the queue again")
            .expect("consumer open");
        let again = delivery.job().as_ref().expect("a job").clone();
        assert_eq!(
            (again.id, again.attempt),
            (job.id, job.attempt),
            "a hand-over is no attempt"
        );
        body = delivery.message().body.to_vec();
        delivery.ack().await.unwrap();
    }
    assert!(invocations >= 2, "the run fitted in one invocation");
    let result: Value = serde_json::from_slice(
        &std::fs::read(
            function
                .out
                .path()
                .join(format!("jobs/workflow/{}/result.json", job.id)),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(result["status"], "completed", "{result:#}");
    let resumed = result["resumed"].as_array().expect("resume marks");
    assert_eq!(resumed.len(), invocations - 1, "{result:#}");
    assert!(
        resumed
            .iter()
            .all(|r| r["reason"] == "handed_over" && r["state_restored"] == true),
        "{result:#}"
    );
    assert_eq!(site.ledger_entries(), ["one", "two", "three"]);
    assert!(
        !function
            .out
            .path()
            .join(format!("sessions/{}/checkpoint.json", job.id))
            .exists()
    );
    queue.delete_topology().await.expect("clean up");
}
