//! Failures and emergency mode on real Chromium (the scripted page has
//! its own tests of each): a wait that runs out leaves a `TIMEOUT`
//! artefact, a page the server never answers a `NAVIGATION_FAILED` one,
//! and a step switches to the large model when it stalls for 30 s and
//! when the small model's confidence stays low.

mod wf;

use std::sync::Arc;
use std::time::Duration;

use oxwright_fixtures::llm::{Reply, ScriptedLlm};
use oxwright_fixtures::{HandServer, Misbehaviour};
use oxwright_jobs::RunStatus;
use oxwright_workflow::{Workflow, run_workflow};
use serde_json::{Value, json};
use wf::{Wf, checklist, literal};

/// A `wait` decision for `text`, at `confidence`.
fn wait_for(text: &str, confidence: f64) -> Reply {
    Reply::json(json!({
        "method": "getByText", "selector": {"text": text}, "action": "wait", "confidence": confidence,
    }))
}

/// Runs `text` from `path` with `action_timeout`, on a fresh page.
async fn run(
    wf: &Wf,
    session: &str,
    path: &str,
    text: &str,
    llm: Option<&ScriptedLlm>,
    action_timeout: Duration,
) -> oxwright_jobs::WorkflowResult {
    let page = wf.page().await;
    let mut opts = wf.options(session, path);
    opts.action_timeout = action_timeout;
    run_workflow(
        page.as_ref(),
        &Workflow::parse(text).unwrap(),
        wf.deps(llm, wf.secrets()),
        opts,
    )
    .await
    .expect("the workflow runs")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_that_runs_out_leaves_a_timeout_artefact() {
    let wf = Wf::start().await;
    let llm = ScriptedLlm::start().await.unwrap();
    llm.push(checklist(&["Wait for the report"]));
    // Three attempts on the small model, two more in emergency mode.
    for _ in 0..5 {
        llm.push(wait_for("Report ready", 0.8));
    }
    let result = run(
        &wf,
        "waits",
        "/app/stuck",
        "Wait for the report",
        Some(&llm),
        Duration::from_secs(1),
    )
    .await;
    assert_eq!(result.status, RunStatus::Failed, "{result:#?}");
    assert_eq!(result.steps[0].attempts, 5);
    let e = wf.only_error_artefact("waits").await;
    assert_eq!(e["errorType"], "TIMEOUT", "{e}");
    assert_eq!(e["intent"], "wait: Wait for the report");
    assert_eq!(e["details"]["attempted"][0]["method"], "getByText");
    assert!(e["pageUrl"].as_str().unwrap().ends_with("/app/stuck"), "{e}");
    let shot = result.steps[0].screenshot.clone().expect("a failure screenshot");
    let png = oxwright_artifacts::ArtifactStore::get(&wf.store, &shot)
        .await
        .unwrap();
    assert!(png.starts_with(b"\x89PNG"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_the_server_never_answers_is_a_navigation_failure() {
    let mut wf = Wf::start().await;
    let silent = HandServer::misbehaving(Misbehaviour::Empty).await.unwrap();
    wf.policy = Arc::new(oxwright_policy::UrlPolicy::allowing([
        wf.site.addr().to_string().parse().unwrap(),
        silent.addr().to_string().parse().unwrap(),
    ]));
    let text = format!("goto: {}", silent.url("/report"));
    let result = run(
        &wf,
        "unreachable",
        "/app/stuck",
        &text,
        None,
        Duration::from_secs(5),
    )
    .await;
    assert_eq!(result.status, RunStatus::Failed, "{result:#?}");
    let e = wf.only_error_artefact("unreachable").await;
    assert_eq!(e["errorType"], "NAVIGATION_FAILED", "{e}");
    assert_eq!(e["details"]["attempted"][0]["action"], "goto");
    assert!(
        e["hint"]
            .as_str()
            .unwrap()
            .contains("the server closed the connection without a response"),
        "{e}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_that_stalls_for_30_seconds_switches_to_the_large_model() {
    let wf = Wf::start().await;
    let llm = ScriptedLlm::start().await.unwrap();
    llm.push(checklist(&["Wait for the status"]));
    // Two waits of 16 s each: no failure limit yet, but 32 s without progress.
    llm.push(wait_for("Report ready", 0.8));
    llm.push(wait_for("Report ready", 0.8));
    // The large model waits for what the page shows.
    llm.push(wait_for("Refresh", 0.8));
    llm.push(Reply::text("true"));
    let result = run(
        &wf,
        "stall",
        "/app/stuck",
        "Wait for the status",
        Some(&llm),
        Duration::from_secs(16),
    )
    .await;
    assert_eq!(result.status, RunStatus::Completed, "{result:#?}");
    let lines = wf.jsonl("stall", "steps.jsonl").await;
    let triggers: Vec<&Value> = lines.iter().map(|l| &l["emergency"]["trigger"]).collect();
    assert_eq!(
        triggers,
        [&Value::Null, &Value::Null, &json!("stall")],
        "{lines:#?}"
    );
    assert!(
        lines[2]["emergency"]["reason"]
            .as_str()
            .unwrap()
            .contains("limit 30 s"),
        "{}",
        lines[2]["emergency"]
    );
    let models = llm.models();
    assert_eq!(models[3], "scripted-large", "{models:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn low_confidence_over_five_decisions_switches_to_the_large_model() {
    let wf = Wf::start().await;
    let llm = ScriptedLlm::start().await.unwrap();
    llm.push(checklist(&[
        "Type alice",
        "Type alice again",
        "Type the password",
    ]));
    let unsure = || {
        Reply::json(json!({
            "method": "getByRole", "selector": {"role": "textbox", "name": "Username"},
            "action": "fill", "value": literal("alice"), "confidence": 0.1,
        }))
    };
    // Five unsure decisions (two steps, then the third's first attempt) …
    for judged in ["false", "true", "false", "true", "false"] {
        llm.push(unsure());
        llm.push(Reply::text(judged));
    }
    // … and the third step's next attempt is the large model's.
    llm.push(Reply::json(json!({
        "method": "near", "selector": {"text": "Password", "role": "textbox"}, "action": "fill",
        "value": {"kind": "placeholder", "value": "{{PASSWORD}}"}, "confidence": 0.8,
    })));
    llm.push(Reply::text("true"));
    let result = run(
        &wf,
        "unsure",
        "/app/login",
        "Type alice twice, then the password",
        Some(&llm),
        Duration::from_secs(5),
    )
    .await;
    assert_eq!(result.status, RunStatus::Completed, "{result:#?}");
    let lines = wf.jsonl("unsure", "steps.jsonl").await;
    let triggers: Vec<&Value> = lines.iter().map(|l| &l["emergency"]["trigger"]).collect();
    assert_eq!(triggers.len(), 6, "{lines:#?}");
    assert!(triggers[..5].iter().all(|t| t.is_null()), "{triggers:?}");
    assert_eq!(triggers[5], &json!("low_confidence"));
    assert!(
        lines[5]["emergency"]["reason"]
            .as_str()
            .unwrap()
            .contains("0.10 over the last 5"),
        "{}",
        lines[5]["emergency"]
    );
    let models = llm.models();
    assert_eq!(models[11], "scripted-large", "{models:?}");
}
