//! `oxwright-lambda` against a fake Lambda Runtime API on 127.0.0.1, with
//! real Chromium and the fixture site: a RabbitMQ event fetches a page, a
//! failing job answers with its `errorType`, two invocations share one warm
//! browser, an SQS batch reports exactly its poison message, and the
//! shutdown signal leaves no Chromium and no profile behind.

mod support;

use base64::Engine as _;
use oxwright_fixtures::FixtureServer;
use oxwright_jobs::{FetchSpec, Job, JobSpec};
use serde_json::Value;
use support::{Answer, FakeRuntime, Function, files_under, fixture};

fn fetch_job(site: &FixtureServer, path: &str) -> Job {
    let mut spec = FetchSpec::new(site.url(path).parse().unwrap());
    spec.timeout_ms = 15_000;
    spec.retry_delay_ms = 20;
    Job::new(JobSpec::Fetch(spec), None)
}

fn function_env(site: &FixtureServer) -> Vec<(&'static str, String)> {
    let mut env = vec![("OXWRIGHT_ALLOW_HOSTS", site.addr().to_string())];
    if let Ok(path) = std::env::var("CHROME_PATH") {
        env.push(("CHROME_PATH", path));
    }
    env
}

fn response(answer: Answer, log: &str) -> Value {
    match answer {
        Answer::Response(v) => v,
        Answer::Error(e) => panic!("the invocation failed: {e}\n{log}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rabbitmq_event_then_warm_reuse_then_typed_error_then_clean_shutdown() {
    let site = FixtureServer::start().await.expect("fixture site");
    let mut runtime = FakeRuntime::start().await;
    let mut function = Function::start(&runtime, &function_env(&site));

    // 1. An Amazon MQ event: a real Chromium fetch of the fixture page.
    let job = fetch_job(&site, "/");
    let data = base64::engine::general_purpose::STANDARD.encode(serde_json::to_vec(&job).unwrap());
    let event = fixture(
        "rabbitmq-event.json",
        &[("DATA", &data), ("MESSAGE_ID", &job.id.to_string())],
    );
    let first = response(runtime.invoke(event).await, &function.log());
    let reports = first["reports"].as_array().expect("reports");
    assert_eq!(reports.len(), 1, "{first}");
    assert_eq!(reports[0]["status"], "ok", "{first}");
    assert_eq!(reports[0]["job_id"], job.id.to_string());
    assert_eq!(
        first["browsers_launched"], 1,
        "the first invocation starts Chromium"
    );
    let files = files_under(function.out.path());
    let md = format!("jobs/fetch/{}/page.md", job.id);
    assert!(files.contains(&md), "{files:?}");
    let markdown = std::fs::read_to_string(function.out.path().join(&md)).unwrap();
    assert!(!markdown.trim().is_empty());
    assert_eq!(
        reports[0]["artifacts"],
        serde_json::json!([md, format!("jobs/fetch/{}/result.json", job.id)]),
        "the same keys `oxwright worker` writes"
    );

    // 2. A direct invocation: the warm browser serves it, none is launched.
    let second_job = fetch_job(&site, "/redirect/chain");
    let second = response(
        runtime.invoke(serde_json::to_value(&second_job).unwrap()).await,
        &function.log(),
    );
    assert_eq!(second["report"]["status"], "ok", "{second}");
    let pids = &first["browser_pids"];
    assert_eq!(
        pids.as_array().map(Vec::len),
        Some(1),
        "one warm browser: {first}"
    );
    assert_eq!(
        &second["browser_pids"], pids,
        "the same browser process served both"
    );
    assert_eq!(
        second["browsers_launched"], 1,
        "the second invocation reuses the warm browser"
    );

    // 3. A permanent failure: a typed errorType, error.json left behind.
    let bad = fetch_job(&site, "/data.json");
    match runtime.invoke(serde_json::to_value(&bad).unwrap()).await {
        Answer::Error(e) => {
            assert_eq!(e["errorType"], "Permanent.non_html", "{e}");
            assert!(
                e["errorMessage"].as_str().unwrap().contains(&bad.id.to_string()),
                "{e}"
            );
        }
        Answer::Response(v) => panic!("a PDF must fail the invocation, got {v}"),
    }
    let error_json = function
        .out
        .path()
        .join(format!("jobs/fetch/{}/error.json", bad.id));
    let error: Value = serde_json::from_slice(&std::fs::read(&error_json).expect("error.json")).unwrap();
    assert_eq!(error["error"]["kind"], "non_html", "{error}");

    // 4. An event that is nothing we know: Permanent.bad_event.
    match runtime.invoke(serde_json::json!({"hello": "world"})).await {
        Answer::Error(e) => assert_eq!(e["errorType"], "Permanent.bad_event", "{e}"),
        Answer::Response(v) => panic!("expected an error, got {v}"),
    }

    // 5. The shutdown signal closes Chromium and removes its profile.
    assert!(
        !function.chromium_processes().is_empty(),
        "Chromium is running under the function's TMPDIR before shutdown"
    );
    let status = function.terminate();
    assert!(
        status.success(),
        "graceful shutdown exits 0: {status:?}\n{}",
        function.log()
    );
    let left = function.chromium_processes();
    assert!(left.is_empty(), "Chromium left after shutdown: {left:?}");
    let profiles = files_under(function.tmp.path());
    assert!(profiles.is_empty(), "profiles left in TMPDIR: {profiles:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_sqs_batch_reports_exactly_its_poison_message() {
    let site = FixtureServer::start().await.expect("fixture site");
    let mut runtime = FakeRuntime::start().await;
    let function = Function::start(&runtime, &function_env(&site));

    let good = fetch_job(&site, "/");
    let mut event = fixture("sqs-event.json", &[]);
    let template = event["Records"][0].clone();
    let record = |id: &str, body: String| {
        let mut r = template.clone();
        r["messageId"] = Value::String(id.into());
        r["body"] = Value::String(body);
        r
    };
    event["Records"] = serde_json::json!([
        record("good-1", serde_json::to_string(&good).unwrap()),
        record(
            "poison-2",
            "{\"schema_version\": 1, \"kind\": \"fetch\", \"spec\": 42".into()
        ),
    ]);
    let answer = response(runtime.invoke(event).await, &function.log());
    assert_eq!(
        answer,
        serde_json::json!({"batchItemFailures": [{"itemIdentifier": "poison-2"}]}),
        "{}",
        function.log()
    );
    let md = format!("jobs/fetch/{}/page.md", good.id);
    assert!(
        function.out.path().join(&md).is_file(),
        "{:?}",
        files_under(function.out.path())
    );
}
