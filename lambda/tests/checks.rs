//! Checks started by cloud events on `oxwright-lambda`, against the fake
//! Lambda Runtime API, with real Chromium and the fixture site switched
//! between healthy and broken: an S3 notification and an EventBridge
//! deploy event each run the check their route names, its record, state
//! and run log where the fleet keeps them; the failure raises exactly one
//! signed `check.failed` and the heal one `check.recovered`, delivered
//! before the function answers (or before the check's next run when the
//! receiver is down); a check invoked by name runs as an API call does;
//! an event no route matches runs nothing, and a deploy URL the policy
//! refuses is a bad event.

mod support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use oxwright_fixtures::{FixtureServer, SiteHealth};
use serde_json::{Value, json};
use support::{Answer, FakeRuntime, Function, fixture};

/// The alerts a receiver took: event header, body, signature header.
type Taken = Arc<Mutex<Vec<(String, Value, String)>>>;

/// Starts an alert receiver; while the flag is set it answers 503.
async fn receiver() -> (std::net::SocketAddr, Taken, Arc<AtomicBool>) {
    let taken: Taken = Arc::default();
    let down = Arc::new(AtomicBool::new(false));
    let app = axum::Router::new().route(
        "/alerts",
        axum::routing::post({
            let taken = taken.clone();
            let down = down.clone();
            move |headers: axum::http::HeaderMap, body: String| {
                let taken = taken.clone();
                let down = down.clone();
                async move {
                    if down.load(Ordering::SeqCst) {
                        return axum::http::StatusCode::SERVICE_UNAVAILABLE;
                    }
                    let header = |name: &str| {
                        headers
                            .get(name)
                            .and_then(|v| v.to_str().ok())
                            .unwrap_or_default()
                            .to_string()
                    };
                    let body: Value = serde_json::from_str(&body).unwrap();
                    taken.lock().unwrap().push((
                        header("x-oxwright-event"),
                        body,
                        header("x-oxwright-signature"),
                    ));
                    axum::http::StatusCode::OK
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (addr, taken, down)
}

fn s3_event(bucket: &str, key: &str) -> Value {
    fixture("s3-event.json", &[("BUCKET", bucket), ("KEY", key)])
}

fn eventbridge_event(source: &str, detail_type: &str, detail: &Value) -> Value {
    let detail = detail.to_string();
    fixture(
        "eventbridge-event.json",
        &[
            ("EVENT_ID", "6a7e8feb-b491-4cf7-a9f1-bf3703467718"),
            ("DETAIL_TYPE", detail_type),
            ("SOURCE", source),
            (
                "RESOURCE",
                "arn:aws:codedeploy:eu-west-1:111122223333:deploymentgroup:shop/prod",
            ),
            ("DETAIL", &detail),
        ],
    )
}

fn response(answer: Answer, function: &Function) -> Value {
    match answer {
        Answer::Response(v) => v,
        Answer::Error(e) => panic!("the invocation failed: {e}\n{}", function.log()),
    }
}

fn events_of(taken: &Taken) -> Vec<String> {
    taken.lock().unwrap().iter().map(|(e, _, _)| e.clone()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_and_eventbridge_events_run_their_checks_and_a_change_alerts_once() {
    let site = FixtureServer::start().await.expect("fixture site");
    let (alerts, taken, receiver_down) = receiver().await;
    let checks = tempfile::tempdir().unwrap();
    std::fs::write(
        checks.path().join("account.check.toml"),
        format!(
            "url = \"{}\"\nsteps = '''\nexpect: text \"Plan: Pro\"\n'''\ntimeout = \"30s\"\n\n\
             [alert]\nafter = 1\nwebhook = \"http://{alerts}/alerts\"\n",
            site.url("/app/account")
        ),
    )
    .unwrap();
    let routes = json!([
        {"on": "s3", "bucket": "site-releases", "prefix": "prod/", "event": "ObjectCreated", "checks": ["account"]},
        {"on": "eventbridge", "source": "com.example.deploy", "detail_type": "Deployment Succeeded",
         "checks": ["account"], "url_field": "environment.url", "metadata_fields": ["sha"]}
    ]);
    let mut env = vec![
        ("OXWRIGHT_ALLOW_HOSTS", format!("{}, {alerts}", site.addr())),
        ("OXWRIGHT_SCHEDULER__CHECKS", checks.path().display().to_string()),
        ("OXWRIGHT_CHECK_EVENTS", routes.to_string()),
        ("OXWRIGHT_WEBHOOK_SECRET", "whsec-lambda-checks".to_string()),
    ];
    if let Ok(path) = std::env::var("CHROME_PATH") {
        env.push(("CHROME_PATH", path));
    }
    let mut runtime = FakeRuntime::start().await;
    let function = Function::start(&runtime, &env);

    // 1. A release lands in S3 while the site is healthy: the check passes.
    let first = response(
        runtime
            .invoke(s3_event("site-releases", "prod/shop+v2.tar.gz"))
            .await,
        &function,
    );
    let runs = first["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 1, "{first}");
    assert_eq!(runs[0]["check"], "account", "{first}");
    assert_eq!(runs[0]["status"], "passed", "{first}\n{}", function.log());
    assert_eq!(runs[0]["trigger"], "event");
    assert_eq!(runs[0]["metadata"]["s3_key"], "prod/shop v2.tar.gz");
    assert_eq!(runs[0]["metadata"]["s3_bucket"], "site-releases");
    assert!(events_of(&taken).is_empty(), "no alert while healthy");

    // 2. A deploy breaks it: the EventBridge event's run fails, at the
    // deployed URL, and exactly one signed `check.failed` is delivered
    // before the function answers.
    site.set_health(SiteHealth::Broken);
    let deploy = eventbridge_event(
        "com.example.deploy",
        "Deployment Succeeded",
        &json!({"environment": {"url": site.url("/")}, "sha": "3f2a9c1", "token": "tok-never-recorded"}),
    );
    let second = response(runtime.invoke(deploy.clone()).await, &function);
    let run = &second["runs"][0];
    assert_eq!(run["status"], "failed", "{second}");
    assert_eq!(run["metadata"]["sha"], "3f2a9c1");
    assert_eq!(
        run["metadata"]["event_id"],
        "6a7e8feb-b491-4cf7-a9f1-bf3703467718"
    );
    assert!(
        run["failed_step"]["text"]
            .as_str()
            .is_some_and(|t| t.contains("Plan: Pro")),
        "{run}"
    );
    assert_eq!(events_of(&taken), ["check.failed"]);
    {
        let taken = taken.lock().unwrap();
        let (_, body, signature) = &taken[0];
        assert!(signature.starts_with("t="), "alerts are signed: {signature:?}");
        assert_eq!(body["check"], "account", "{body}");
        assert_eq!(body["run_id"], run["run_id"], "{body}");
        assert!(!body.to_string().contains("tok-never-recorded"), "{body}");
    }
    // The fleet's store layout: state, run log, no alert left in the outbox.
    let out = function.out.path();
    let state: Value =
        serde_json::from_slice(&std::fs::read(out.join("checks/account/state.json")).unwrap()).unwrap();
    assert_eq!(state["health"], "failing", "{state}");
    assert_eq!(state["consecutive_failures"], 1, "{state}");
    let logged = std::fs::read_dir(out.join("checks/account/runs"))
        .unwrap()
        .count();
    assert_eq!(logged, 2, "both runs are in the run log");
    assert!(
        !out.join("checks/account/outbox").exists()
            || std::fs::read_dir(out.join("checks/account/outbox"))
                .unwrap()
                .next()
                .is_none(),
        "the delivered alert left the outbox"
    );
    assert!(!out.join("checks/account/inflight.json").exists());

    // 3. Still broken: another failed run, no second alert.
    let third = response(runtime.invoke(deploy).await, &function);
    assert_eq!(third["runs"][0]["status"], "failed", "{third}");
    assert_eq!(events_of(&taken), ["check.failed"]);

    // 4. Healed while the receiver is down: the run passes, and its
    // `check.recovered` waits in the outbox after the delivery's retries.
    site.set_health(SiteHealth::Healthy);
    receiver_down.store(true, Ordering::SeqCst);
    let fourth = response(
        runtime
            .invoke(s3_event("site-releases", "prod/shop-v3.tar.gz"))
            .await,
        &function,
    );
    assert_eq!(fourth["runs"][0]["status"], "passed", "{fourth}");
    assert_eq!(events_of(&taken), ["check.failed"]);
    let waiting = std::fs::read_dir(out.join("checks/account/outbox"))
        .unwrap()
        .count();
    assert_eq!(waiting, 1, "the undelivered alert is kept");

    // The receiver is back: the check's next run delivers it first, once.
    receiver_down.store(false, Ordering::SeqCst);
    let fifth = response(
        runtime
            .invoke(s3_event("site-releases", "prod/shop-v4.tar.gz"))
            .await,
        &function,
    );
    assert_eq!(fifth["runs"][0]["status"], "passed", "{fifth}");
    assert_eq!(events_of(&taken), ["check.failed", "check.recovered"]);
    let waiting = std::fs::read_dir(out.join("checks/account/outbox"))
        .unwrap()
        .count();
    assert_eq!(waiting, 0, "delivered, the alert left the outbox");

    // 6. A check invoked by name, as a CI job calls the function.
    let called = response(
        runtime
            .invoke(json!({"check": "account", "url": site.url("/"), "metadata": {"sha": "9e1f"}}))
            .await,
        &function,
    );
    assert_eq!(called["runs"][0]["status"], "passed", "{called}");
    assert_eq!(called["runs"][0]["trigger"], "api", "{called}");
    assert_eq!(called["runs"][0]["metadata"]["sha"], "9e1f", "{called}");
    match runtime.invoke(json!({"check": "nope"})).await {
        Answer::Error(e) => {
            assert_eq!(e["errorType"], "Permanent.bad_event", "{e}");
            assert!(
                e["errorMessage"].as_str().is_some_and(|m| m.contains("nope")),
                "{e}"
            );
        }
        Answer::Response(v) => panic!("an unknown check must fail the invocation, got {v}"),
    }

    // 7. An event no route takes runs nothing, and is not an error.
    let other = response(
        runtime.invoke(s3_event("logs", "prod/access.log")).await,
        &function,
    );
    assert_eq!(other["runs"], json!([]), "{other}");

    // 8. A deploy URL the policy refuses is a bad event; nothing runs.
    let hostile = eventbridge_event(
        "com.example.deploy",
        "Deployment Succeeded",
        &json!({"environment": {"url": "http://169.254.169.254/latest/meta-data/"}}),
    );
    match runtime.invoke(hostile).await {
        Answer::Error(e) => {
            assert_eq!(e["errorType"], "Permanent.bad_event", "{e}");
            assert!(
                e["errorMessage"]
                    .as_str()
                    .is_some_and(|m| m.contains("environment.url")),
                "{e}"
            );
        }
        Answer::Response(v) => panic!("a refused deploy URL must fail the invocation, got {v}"),
    }
    let logged = std::fs::read_dir(out.join("checks/account/runs"))
        .unwrap()
        .count();
    assert_eq!(logged, 6, "the refused event ran nothing");
    assert_eq!(events_of(&taken), ["check.failed", "check.recovered"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_route_naming_no_check_stops_the_function_at_its_start() {
    let checks = tempfile::tempdir().unwrap();
    let runtime = FakeRuntime::start().await;
    let routes = json!([{"on": "s3", "checks": ["missing"]}]);
    let mut function = Function::start(
        &runtime,
        &[
            ("OXWRIGHT_SCHEDULER__CHECKS", checks.path().display().to_string()),
            ("OXWRIGHT_CHECK_EVENTS", routes.to_string()),
        ],
    );
    // It exits before asking for an event, naming the route's mistake.
    let mut status = None;
    for _ in 0..100 {
        status = function.child.try_wait().expect("the function's status");
        if status.is_some() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    let status = status.unwrap_or_else(|| panic!("the function did not stop\n{}", function.log()));
    assert!(!status.success(), "{status:?}\n{}", function.log());
    assert!(
        function.log().contains("no check is named") && function.log().contains("missing"),
        "{}",
        function.log()
    );
}
