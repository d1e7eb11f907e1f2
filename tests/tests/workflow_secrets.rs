//! A workflow typing a real password, through every output: steps.jsonl,
//! llm.jsonl, result.json, every checkpoint written on the way, console
//! lines, the requests the scripted LLM server received, the returned
//! result, and every span and event field recorded by a tracing layer.
//! The password must appear nowhere, and the checkpoints' browser state
//! (the app's remember-me cookie and storage) is sealed.

mod wf;

use std::sync::{Arc, Mutex};

use oxwright_fixtures::APP_PASSWORD;
use oxwright_fixtures::llm::{Reply, ScriptedLlm};
use oxwright_jobs::RunStatus;
use oxwright_secrets::FileSecrets;
use oxwright_workflow::{CheckpointKey, Checkpoints, Workflow, run_workflow};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::prelude::*;
use wf::{KeepsCheckpoints, Wf, checklist, page_text, placeholder, role};

/// Records every span name, field and event message it sees.
#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<String>>>);

struct Fields<'a>(&'a mut Vec<String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.push(format!("{}={:?}", field.name(), value));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.push(format!("{}={}", field.name(), value));
    }
}

impl<S: Subscriber> Layer<S> for Capture {
    fn on_new_span(&self, attrs: &Attributes<'_>, _id: &Id, _ctx: Context<'_, S>) {
        let mut out = self.0.lock().unwrap();
        out.push(format!("span {}", attrs.metadata().name()));
        attrs.record(&mut Fields(&mut out));
    }
    fn on_record(&self, _id: &Id, values: &Record<'_>, _ctx: Context<'_, S>) {
        values.record(&mut Fields(&mut self.0.lock().unwrap()));
    }
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let mut out = self.0.lock().unwrap();
        out.push(format!("event {}", event.metadata().target()));
        event.record(&mut Fields(&mut out));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn password_appears_in_no_output() {
    password_hidden(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn password_appears_in_no_output_on_playwright_mcp() {
    password_hidden(true).await;
}

async fn password_hidden(playwright_mcp: bool) {
    let capture = Capture::default();
    // Everything at DEBUG and below from every crate, our own crates at TRACE.
    let filter = tracing_subscriber::filter::Targets::new()
        .with_default(tracing::Level::DEBUG)
        .with_target("oxwright_workflow", tracing::Level::TRACE)
        .with_target("oxwright_llm", tracing::Level::TRACE);
    tracing_subscriber::registry()
        .with(capture.clone().with_filter(filter))
        .try_init()
        .expect("the only subscriber in this test binary");

    let wf = Wf::start_on(playwright_mcp).await;
    let llm = ScriptedLlm::start().await.expect("scripted llm starts");
    let dir = tempfile::tempdir().unwrap();
    let secrets_file = dir.path().join("secrets.env");
    std::fs::write(
        &secrets_file,
        format!("LOGIN_ID=alice\nPASSWORD='{APP_PASSWORD}'\n"),
    )
    .unwrap();
    let secrets = Arc::new(FileSecrets::load(&secrets_file).unwrap());

    llm.push(checklist(&[
        "Type {{LOGIN_ID}} into Username",
        "Type {{PASSWORD}} into Password",
        "Tick Remember me",
        "Click Sign in",
    ]));
    llm.push(role("textbox", "Username", "fill", Some(placeholder("LOGIN_ID"))));
    llm.push(Reply::text("true"));
    llm.push(role("textbox", "Password", "fill", Some(placeholder("PASSWORD"))));
    llm.push(Reply::text("true"));
    llm.push(role("checkbox", "Remember me", "click", None));
    llm.push(Reply::text("true"));
    llm.push(role("button", "Sign in", "click", None));
    llm.push(Reply::text("true"));

    let lease = wf.page().await;
    let workflow = Workflow::parse("Log in as {{LOGIN_ID}} with password {{PASSWORD}}, remember me").unwrap();
    let mut deps = wf.deps(Some(&llm), secrets);
    let checkpoints = Arc::new(Mutex::new(Vec::new()));
    deps.store = Arc::new(KeepsCheckpoints {
        inner: deps.store.clone(),
        written: checkpoints.clone(),
    });
    let mut opts = wf.options("secret", "/app/login");
    let key = CheckpointKey::parse(&"7e".repeat(32)).unwrap();
    opts.checkpoints = Some(Checkpoints::new(Some(key), "test-worker"));
    let result = run_workflow(lease.as_ref(), &workflow, deps, opts)
        .await
        .expect("the workflow runs");
    assert_eq!(
        result.status,
        RunStatus::Completed,
        "{result:#?}\n{}",
        wf.console_text()
    );
    // The password was really typed: the app accepted it.
    let who = page_text(lease.as_ref(), "document.getElementById('who').textContent").await;
    assert_eq!(who, "Signed in as alice");

    let escaped_json = serde_json::to_string(APP_PASSWORD).unwrap();
    let forms = [
        APP_PASSWORD.to_string(),
        escaped_json.trim_matches('"').to_string(),
        url::form_urlencoded::byte_serialize(APP_PASSWORD.as_bytes()).collect::<String>(),
    ];
    let assert_clean = |what: &str, text: &str| {
        for form in &forms {
            assert!(
                !text.contains(form.as_str()),
                "the password is in {what}:\n{text}"
            );
        }
    };

    // Artefacts: steps.jsonl, llm.jsonl, result.json (and anything else written).
    let artifacts = wf.all_artifacts().await;
    let keys: Vec<&str> = artifacts.iter().map(|(k, _)| k.as_str()).collect();
    for wanted in [
        "sessions/secret/steps.jsonl",
        "sessions/secret/llm.jsonl",
        "sessions/secret/result.json",
    ] {
        assert!(keys.contains(&wanted), "{wanted} missing from {keys:?}");
    }
    for (key, text) in &artifacts {
        assert_clean(key, text);
    }
    // Every checkpoint written on the way; none is left once the run ended.
    let checkpoints = checkpoints.lock().unwrap().clone();
    assert!(checkpoints.len() >= 4, "{checkpoints:?}");
    assert!(!keys.contains(&"sessions/secret/checkpoint.json"), "{keys:?}");
    for text in &checkpoints {
        assert_clean("a checkpoint", text);
        let v: serde_json::Value = serde_json::from_str(text).unwrap();
        assert!(v["sealed"].is_string() && v.get("open").is_none(), "{text}");
        assert!(!text.contains("/app/search"), "the URL is sealed: {text}");
    }
    // The placeholder is what the log keeps.
    let steps = wf.jsonl("secret", "steps.jsonl").await;
    assert_eq!(steps[1]["decision"]["value"]["value"], "{{PASSWORD}}");
    // Console lines.
    let console = wf.console_text();
    assert!(console.contains("{{PASSWORD}}"), "{console}");
    assert_clean("console output", &console);
    // Requests as the scripted LLM server received them (bodies and headers).
    let calls = llm.received();
    assert_eq!(calls.len(), 9);
    for call in &calls {
        assert_clean("an LLM request", &call.body);
        for (name, value) in &call.headers {
            assert_clean(name, value);
        }
    }
    // Later snapshots show the filled password field masked (call 4 judges the password step).
    let after_fill = calls[4].prompt();
    assert!(after_fill.contains("textbox \"Password\""), "{after_fill}");
    assert!(after_fill.contains("••••"), "{after_fill}");
    // The returned result.
    assert_clean("the result", &serde_json::to_string(&result).unwrap());
    assert_clean("the result (debug)", &format!("{result:?}"));
    // Spans and events.
    let recorded = capture.0.lock().unwrap().join("\n");
    assert!(recorded.contains("span workflow_run"), "no spans captured");
    assert!(recorded.contains("span workflow_step"));
    assert_clean("spans and events", &recorded);
}
