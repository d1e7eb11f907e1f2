//! Workflows that survive their worker: a worker SIGKILLed mid-run, the
//! job redelivered to another worker, which continues from the run's
//! checkpoint with the browser state restored; each side effect happens
//! once, and a submit that may have happened and shows no outcome ends
//! `resume_uncertain` instead of being sent again.

use std::time::Duration;

use oxwright_artifacts::ArtifactStore;
use oxwright_fixtures::LEDGER_PAY;
use oxwright_fixtures::llm::{ReceivedCall, Reply, ScriptedLlm};
use oxwright_jobs::{Job, JobKind, JobSpec, WorkflowSpec, keys};
use oxwright_queue::JobQueue;
use serde_json::{Value, json};

use crate::cluster::{Cluster, eventually};

const KEY: &str = "5f0c1e4d2a3b69788796a5b4c3d2e1f00112233445566778899aabbccddeeff0";

/// Twenty steps: five entries signed, each checked; a pause after the
/// second, where the first worker is killed.
const LEDGER_FLOW: &str = r#"goto: /app/ledger?owner=owner-7f3a
fill: textbox "Entry" = alpha
click: button "Sign"
expect: text "Signed: alpha"
fill: textbox "Entry" = bravo
click: button "Sign"
expect: text "Signed: bravo"
wait: 4s
fill: textbox "Entry" = charlie
click: button "Sign"
expect: text "Signed: charlie"
fill: textbox "Entry" = delta
click: button "Sign"
expect: text "Signed: delta"
fill: textbox "Entry" = echo
click: button "Sign"
expect: text "Signed: echo"
expect: count listitem = 5
expect: text "Owner: owner-7f3a"
expect: url includes /app/ledger
"#;

async fn publish(cluster: &Cluster, workflow: &str) -> Job {
    let start = cluster.site.url("/app/ledger").parse().unwrap();
    publish_spec(cluster, WorkflowSpec::new(workflow, start)).await
}

async fn publish_spec(cluster: &Cluster, spec: WorkflowSpec) -> Job {
    let job = Job::new(JobSpec::Workflow(Box::new(spec)), None);
    cluster.queue.publish(&job).await.unwrap();
    job
}

/// The scripted LLM as a function of the prompt, so that whichever
/// worker asks gets the answer for its step: the checklist, a decision
/// per step (`Type X into Entry`, `Click Sign`), and `true` from the judge.
fn ledger_llm(call: &ReceivedCall) -> Reply {
    let prompt = call.prompt();
    if prompt.contains("converting natural-language workflow instructions") {
        return Reply::json(json!([
            "Type alpha into Entry",
            "Click Sign",
            "Type bravo into Entry",
            "Click Sign"
        ]));
    }
    let Some(rest) = prompt.split("Current step: ").nth(1) else {
        return Reply::text("true");
    };
    let step: String = serde_json::Deserializer::from_str(rest)
        .into_iter::<String>()
        .next()
        .and_then(Result::ok)
        .unwrap_or_default();
    let mut decision = json!({"method": "getByRole", "confidence": 0.9});
    if let Some(entry) = step
        .strip_prefix("Type ")
        .and_then(|s| s.strip_suffix(" into Entry"))
    {
        decision["selector"] = json!({"role": "textbox", "name": "Entry"});
        decision["action"] = json!("fill");
        decision["value"] = json!({"kind": "literal", "value": entry});
    } else {
        decision["selector"] = json!({"role": "button", "name": "Sign"});
        decision["action"] = json!("click");
    }
    Reply::json(decision)
}

async fn json(store: &dyn ArtifactStore, key: &str) -> Option<Value> {
    let body = store.get(key).await.ok()?;
    serde_json::from_slice(&body).ok()
}

/// Waits for the checkpoint to say `ready`, then SIGKILLs the worker that
/// wrote it (checked against `worker`'s pid).
async fn kill_when(
    cluster: &mut Cluster,
    job: &Job,
    worker: usize,
    what: &str,
    ready: impl Fn(&Value) -> bool,
) {
    let key = keys::session_artifact(&job.id.to_string(), "checkpoint.json");
    let started = std::time::Instant::now();
    let checkpoint = loop {
        if let Some(cp) = json(&cluster.store, &key).await
            && ready(&cp)
        {
            break cp;
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "no checkpoint with {what}; worker log:\n{}",
            cluster.log(&format!("worker-{worker}"))
        );
        tokio::time::sleep(Duration::from_millis(40)).await;
    };
    let pid = cluster.pid(worker);
    assert!(
        checkpoint["worker"]
            .as_str()
            .unwrap()
            .ends_with(&format!(":{pid}")),
        "{checkpoint}"
    );
    cluster.signal(worker, libc::SIGKILL);
    cluster.wait(worker);
}

/// Starts a second worker and waits for the job's result; returns the
/// worker's index and the result.
async fn on_a_second_worker(cluster: &mut Cluster, job: &Job) -> (usize, Value) {
    let second = cluster.worker_of("workflow", 1, &[]);
    let result = result_of(cluster, job, &format!("worker-{second}")).await;
    // Shown when the test fails.
    eprintln!("worker-{second}:\n{}", cluster.log(&format!("worker-{second}")));
    (second, result)
}

async fn result_of(cluster: &Cluster, job: &Job, log: &str) -> Value {
    let key = keys::job_result(JobKind::Workflow, job.id);
    let store = &cluster.store;
    eventually("the workflow's result", Duration::from_secs(180), || {
        let key = key.clone();
        async move { store.exists(&key).await.unwrap() }
    })
    .await;
    let result = json(&cluster.store, &key).await.unwrap();
    assert!(result.is_object(), "{}", cluster.log(log));
    result
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_workers_workflow_resumes_on_another_and_signs_each_entry_once() {
    let mut cluster = Cluster::start().await;
    cluster.with_env("OXWRIGHT_CHECKPOINT_KEY", KEY);
    let first = cluster.worker_of("workflow", 1, &[]);
    let job = publish(&cluster, LEDGER_FLOW).await;
    // Step 7 (the second entry's check) done: the first worker is in the pause.
    kill_when(&mut cluster, &job, first, "next_step 7", |cp| {
        cp["next_step"] == 7
    })
    .await;
    let sealed = json(
        &cluster.store,
        &keys::session_artifact(&job.id.to_string(), "checkpoint.json"),
    )
    .await
    .unwrap();
    let text = sealed.to_string();
    assert!(sealed["sealed"].is_string(), "{text}");
    // The storage's key and the page's URL with its query are sealed.
    assert!(
        !text.contains("ledger-owner") && !text.contains("/app/ledger?signed"),
        "{text}"
    );
    assert!(sealed.get("open").is_none(), "{text}");
    let (second, result) = on_a_second_worker(&mut cluster, &job).await;
    assert_eq!(result["status"], "completed", "{result:#}");
    let resumed = result["resumed"].as_array().expect("a resumed mark");
    assert_eq!(resumed.len(), 1, "{result:#}");
    assert_eq!(resumed[0]["at_step"], 8, "{result:#}");
    assert_eq!(resumed[0]["reason"], "redelivered");
    assert_eq!(resumed[0]["state_restored"], true);
    let pid = cluster.pid(second);
    assert!(
        resumed[0]["worker"]
            .as_str()
            .unwrap()
            .ends_with(&format!(":{pid}")),
        "{result:#}"
    );
    let steps = result["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 20);
    assert!(steps.iter().all(|s| s["status"] == "completed"), "{result:#}");
    // Every signature reached the server once, in order.
    assert_eq!(
        cluster.site.ledger_entries(),
        ["alpha", "bravo", "charlie", "delta", "echo"]
    );
    let checkpoint = keys::session_artifact(&job.id.to_string(), "checkpoint.json");
    assert!(
        !cluster.store.exists(&checkpoint).await.unwrap(),
        "the checkpoint outlived the run"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_language_workflow_resumes_on_another_worker_with_the_scripted_llm() {
    let mut cluster = Cluster::start().await;
    cluster.with_env("OXWRIGHT_CHECKPOINT_KEY", KEY);
    let llm = ScriptedLlm::start().await.unwrap();
    llm.respond_with(ledger_llm);
    // Each answer takes a while: the kill lands inside step 3's decision.
    llm.set_latency(Duration::from_millis(700), Duration::ZERO);
    let first = cluster.worker_of("workflow", 1, &[]);
    let mut spec = WorkflowSpec::new(
        "Sign the ledger as alpha, then as bravo",
        cluster.site.url("/app/ledger").parse().unwrap(),
    );
    spec.llm = Some(oxwright_jobs::LlmSpec {
        base_url: llm.base_url(),
        model: "scripted".into(),
        api_key_env: None,
        large_model: None,
    });
    let job = publish_spec(&cluster, spec).await;
    kill_when(&mut cluster, &job, first, "next_step 2", |cp| {
        cp["next_step"] == 2
    })
    .await;
    let (second, result) = on_a_second_worker(&mut cluster, &job).await;
    assert_eq!(result["status"], "completed", "{result:#}");
    assert_eq!(result["mode"], "llm");
    let pid = cluster.pid(second);
    assert!(
        result["resumed"][0]["worker"]
            .as_str()
            .unwrap()
            .ends_with(&format!(":{pid}")),
        "{result:#}"
    );
    assert_eq!(result["resumed"][0]["at_step"], 3, "{result:#}");
    assert_eq!(result["checklist"].as_array().unwrap().len(), 4);
    assert_eq!(cluster.site.ledger_entries(), ["alpha", "bravo"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_submit_in_flight_when_its_worker_died_is_not_sent_again() {
    let mut cluster = Cluster::start().await;
    cluster.with_env("OXWRIGHT_CHECKPOINT_KEY", KEY);
    let first = cluster.worker_of("workflow", 1, &[]);
    let flow = "goto: /app/ledger\nfill: textbox \"Amount\" = 12\nonce: click: button \"Pay\"\nexpect: text \"Paid: 12\"\n";
    let job = publish(&cluster, flow).await;
    // The payment reached the server, which takes its time to answer.
    let site = &cluster.site;
    eventually("the payment request", Duration::from_secs(120), || async move {
        site.hits(LEDGER_PAY) == 1
    })
    .await;
    kill_when(&mut cluster, &job, first, "step 3 in flight", |cp| {
        cp["acting"] == 2
    })
    .await;
    let (_, result) = on_a_second_worker(&mut cluster, &job).await;
    assert_eq!(result["status"], "failed", "{result:#}");
    assert_eq!(result["error"]["kind"], "resume_uncertain", "{result:#}");
    assert_eq!(result["steps"][2]["status"], "failed", "{result:#}");
    assert_eq!(result["resumed"][0]["at_step"], 3, "{result:#}");
    // Its artefacts: the page as the second worker found it.
    assert!(
        result["artifacts"]
            .as_array()
            .unwrap()
            .iter()
            .any(|k| k.as_str().unwrap().contains("screenshots/step-3-")),
        "{result:#}"
    );
    assert_eq!(cluster.site.hits(LEDGER_PAY), 1, "the payment was sent again");
}
