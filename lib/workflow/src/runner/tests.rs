//! The runner on the scripted page, with an in-memory chat model and
//! virtual time: attempt limits, precheck refusals, the judge and the token
//! budget, with no browser and no LLM server.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use oxwright_artifacts::{ArtifactStore, MemoryStore};
use oxwright_engine::{ScriptedPage, ScriptedSite};
use oxwright_jobs::{ErrorKind, RunStatus, StepRecord, WorkflowResult};
use oxwright_llm::{ChatModel, Completion, LlmError, Message, Usage};

use super::*;
use crate::Workflow;
use oxwright_secrets::MemorySecrets;

const ORIGIN: &str = "http://app.test";

fn site(extra_paragraphs: usize) -> ScriptedSite {
    let filler: String = (0..extra_paragraphs)
        .map(|i| {
            format!("<p>Filler paragraph {i} about nothing in particular, long enough to cost tokens.</p>")
        })
        .collect();
    ScriptedSite::new()
        .page(
            &format!("{ORIGIN}/login"),
            &format!(
                r#"<title>Login</title><h1>Sign in</h1>{filler}
<form action="/home"><label for="u">Username</label><input id="u" name="u">
<label for="p">Password</label><input id="p" name="p" type="password">
<button type="submit">Sign in</button></form>
<button type="button">Twin</button><button type="button">Twin</button>"#
            ),
        )
        .page(&format!("{ORIGIN}/home"), "<title>Home</title><h1>Welcome</h1>")
}

/// Answers from a script, recording every prompt and which model it went
/// to. An answer `@sleep=N rest` takes N (virtual) seconds, then answers `rest`.
#[derive(Default)]
struct ScriptedChat {
    answers: Mutex<VecDeque<String>>,
    seen: Mutex<Vec<Vec<Message>>>,
    models: Mutex<Vec<&'static str>>,
}

impl ScriptedChat {
    fn new(answers: &[&str]) -> Arc<Self> {
        Arc::new(Self {
            answers: Mutex::new(answers.iter().map(|a| a.to_string()).collect()),
            seen: Mutex::new(Vec::new()),
            models: Mutex::new(Vec::new()),
        })
    }

    fn models(&self) -> Vec<&'static str> {
        self.models.lock().unwrap().clone()
    }

    fn prompts(&self) -> Vec<Vec<Message>> {
        self.seen.lock().unwrap().clone()
    }
}

#[async_trait::async_trait]
impl ChatModel for ScriptedChat {
    async fn chat(&self, messages: &[Message], _max_tokens: u32) -> Result<Completion, LlmError> {
        self.answer("small", messages).await
    }

    async fn chat_large(&self, messages: &[Message], _max_tokens: u32) -> Result<Completion, LlmError> {
        self.answer("large", messages).await
    }

    fn model_name(&self, large: bool) -> String {
        if large { "large" } else { "small" }.into()
    }
}

impl ScriptedChat {
    async fn answer(&self, model: &'static str, messages: &[Message]) -> Result<Completion, LlmError> {
        self.seen.lock().unwrap().push(messages.to_vec());
        self.models.lock().unwrap().push(model);
        let mut text = self
            .answers
            .lock()
            .unwrap()
            .pop_front()
            .ok_or_else(|| LlmError::BadAnswer("the script ran out".into()))?;
        if let Some(rest) = text.strip_prefix("@sleep=") {
            let (secs, answer) = rest.split_once(' ').unwrap();
            tokio::time::sleep(Duration::from_secs(secs.parse().unwrap())).await;
            text = answer.to_string();
        }
        Ok(Completion {
            usage: Usage {
                prompt_tokens: prompt_tokens(messages) as u64,
                completion_tokens: 10,
                ..Usage::default()
            },
            text,
        })
    }
}

fn decision(role: &str, name: &str, action: &str, value: Option<&str>) -> String {
    decision_at(0.9, role, name, action, value)
}

fn decision_at(confidence: f64, role: &str, name: &str, action: &str, value: Option<&str>) -> String {
    let mut d = json!({ "method": "getByRole", "selector": { "role": role, "name": name }, "action": action, "confidence": confidence });
    if let Some(v) = value {
        d["value"] =
            json!({ "kind": if v.starts_with("{{") { "placeholder" } else { "literal" }, "value": v });
    }
    d.to_string()
}

struct Harness {
    page: ScriptedPage,
    store: MemoryStore,
}

impl Harness {
    fn new(filler: usize) -> Self {
        Self {
            page: ScriptedPage::new(site(filler)),
            store: MemoryStore::new(),
        }
    }

    async fn run(&self, text: &str, chat: Option<Arc<ScriptedChat>>) -> WorkflowResult {
        self.run_at("/login", text, chat).await
    }

    async fn run_at(&self, path: &str, text: &str, chat: Option<Arc<ScriptedChat>>) -> WorkflowResult {
        let deps = RunDeps {
            llm: chat.map(|c| c as Arc<dyn ChatModel>),
            secrets: Arc::new(MemorySecrets::new([("PASSWORD", "s3cret-pass")])),
            store: Arc::new(self.store.clone()),
            sanitizer: Sanitizer::new(),
        };
        let opts = WorkflowOptions::new("unit", format!("{ORIGIN}{path}").parse().unwrap());
        run_workflow(&self.page, &Workflow::parse(text).unwrap(), deps, opts)
            .await
            .expect("the run starts")
    }

    async fn records(&self) -> Vec<StepRecord> {
        let body = self
            .store
            .get("sessions/unit/steps.jsonl")
            .await
            .unwrap_or_default();
        String::from_utf8_lossy(&body)
            .lines()
            .map(|l| serde_json::from_str(l).expect("every line is a StepRecord"))
            .collect()
    }

    async fn all_text(&self) -> String {
        let mut out = String::new();
        for key in self.store.list("").await.unwrap() {
            out.push_str(&String::from_utf8_lossy(&self.store.get(&key).await.unwrap()));
        }
        out
    }
}

#[tokio::test(start_paused = true)]
async fn structured_flow_completes_without_an_llm() {
    let h = Harness::new(0);
    let result = h
        .run(
            "fill: textbox \"Username\" = alice\nfill: textbox \"Password\" = {{PASSWORD}}\nclick: button \"Sign in\"\nexpect: heading \"Welcome\"",
            None,
        )
        .await;
    assert_eq!(result.status, RunStatus::Completed, "{result:?}");
    assert_eq!(result.totals.llm_calls, 0);
    assert!(
        result
            .final_url
            .as_deref()
            .unwrap_or_default()
            .starts_with(&format!("{ORIGIN}/home"))
    );
    let records = h.records().await;
    assert_eq!(records.len(), 4);
    assert!(records.iter().all(|r| r.completed && r.precheck_count == Some(1)));
    assert_eq!(
        records[1].decision.as_ref().and_then(|d| d.value.clone()),
        Some(oxwright_jobs::StepValue::Placeholder("{{PASSWORD}}".into()))
    );
    assert_eq!(records[2].result.navigated, Some(true));
    assert!(
        !h.all_text().await.contains("s3cret-pass"),
        "the secret leaked into an artefact"
    );
}

#[tokio::test(start_paused = true)]
async fn missing_target_fails_after_three_attempts_in_virtual_time() {
    let h = Harness::new(0);
    let started = tokio::time::Instant::now();
    let result = h.run("click: button \"Nowhere\"", None).await;
    assert_eq!(result.status, RunStatus::Failed);
    assert_eq!(result.steps[0].attempts, MAX_ATTEMPTS);
    assert_eq!(result.error.as_ref().map(|e| e.kind), Some(ErrorKind::StepFailed));
    let records = h.records().await;
    assert_eq!(records.len(), 3);
    assert!(
        records
            .iter()
            .all(|r| r.result.error.as_deref() == Some("PRECHECK_NO_MATCH"))
    );
    assert!(records.iter().all(|r| r.precheck_count == Some(0)));
    // Matching nothing is its own error, naming what the page has instead.
    let reason = &result.steps[0].reasons[0];
    assert!(
        reason.contains("matched 0 elements; closest names on the page: ")
            && reason.contains("button \"Sign in\""),
        "{reason}"
    );
    // The auto-waits ran their full (virtual) deadline.
    assert!(
        started.elapsed() >= Duration::from_secs(9),
        "{:?}",
        started.elapsed()
    );
    let errors: Vec<String> = h.store.list("sessions/unit/errors/").await.unwrap();
    assert_eq!(errors.len(), 1, "{errors:?}");
    let error: Value = serde_json::from_slice(&h.store.get(&errors[0]).await.unwrap()).unwrap();
    assert_eq!(error["errorType"], "ELEMENT_NOT_FOUND");
    assert!(
        error["details"]["ariaSnapshot"]
            .as_str()
            .unwrap()
            .contains("button \"Sign in\"")
    );
}

#[tokio::test(start_paused = true)]
async fn ambiguous_decision_is_refused_then_the_judge_decides() {
    let h = Harness::new(0);
    let chat = ScriptedChat::new(&[
        r#"["[] Press the twin button"]"#,
        &decision("button", "Twin", "click", None),
        &decision("textbox", "Username", "fill", Some("alice")),
        "false",
        &decision("button", "Sign in", "click", None),
        "true",
    ]);
    let result = h.run("Press the twin button", Some(chat.clone())).await;
    assert_eq!(result.status, RunStatus::Completed, "{result:?}");
    let records = h.records().await;
    assert_eq!(records.len(), 3);
    assert_eq!(records[0].result.error.as_deref(), Some("PRECHECK_NOT_UNIQUE"));
    assert_eq!(records[0].precheck_count, Some(2));
    assert_eq!(
        records[1]
            .reason
            .as_deref()
            .map(|r| r.starts_with("NOT_COMPLETED")),
        Some(true)
    );
    assert!(records[2].completed);
    // The second decision's prompt carries the first attempt's reason.
    let prompts = chat.prompts();
    assert!(
        prompts[2]
            .iter()
            .any(|m| m.content.contains("PRECHECK_NOT_UNIQUE"))
    );
    assert_eq!(result.totals.llm_calls, 6);
}

#[tokio::test(start_paused = true)]
async fn a_judge_that_never_agrees_fails_the_step_at_the_attempt_limit() {
    let h = Harness::new(0);
    let mut answers = vec![r#"["[] Sign in"]"#.to_string()];
    for _ in 0..MAX_ATTEMPTS + emergency::EMERGENCY_ATTEMPTS {
        answers.push(decision("textbox", "Username", "fill", Some("alice")));
        answers.push("false".into());
    }
    let refs: Vec<&str> = answers.iter().map(String::as_str).collect();
    let result = h.run("Sign in", Some(ScriptedChat::new(&refs))).await;
    assert_eq!(result.status, RunStatus::Failed);
    // The last two attempts are emergency mode's (the larger model).
    assert_eq!(
        result.steps[0].attempts,
        MAX_ATTEMPTS + emergency::EMERGENCY_ATTEMPTS
    );
    assert!(
        result.steps[0]
            .reasons
            .iter()
            .all(|r| r.starts_with("NOT_COMPLETED"))
    );
    let e = h.error().await;
    assert_eq!(e["errorType"], "STEP_NOT_COMPLETED");
    assert_eq!(e["details"]["attempted"][0]["success"], true);
    assert_eq!(e["intent"], "fill: Sign in");
}

#[tokio::test(start_paused = true)]
async fn decision_prompts_fit_the_step_token_budget() {
    let h = Harness::new(400);
    let chat = ScriptedChat::new(&[
        r#"["[] Sign in"]"#,
        &decision("button", "Sign in", "click", None),
        "true",
    ]);
    let result = h.run("Sign in", Some(chat.clone())).await;
    assert_eq!(result.status, RunStatus::Completed, "{result:?}");
    let prompts = chat.prompts();
    let decision_prompt = &prompts[1];
    let tokens = prompt_tokens(decision_prompt) + DECISION_MAX_TOKENS as usize;
    assert!(tokens <= STEP_TOKEN_BUDGET, "{tokens} tokens");
    let text: String = decision_prompt.iter().map(|m| m.content.clone()).collect();
    assert!(
        text.contains("button \"Sign in\""),
        "the control survives the shrink"
    );
    assert!(
        text.contains("pruned to fit"),
        "the prompt says the snapshot was shrunk"
    );
}

impl Harness {
    /// The one error artefact of the session.
    async fn error(&self) -> Value {
        let errors: Vec<String> = self.store.list("sessions/unit/errors/").await.unwrap();
        assert_eq!(errors.len(), 1, "{errors:?}");
        serde_json::from_slice(&self.store.get(&errors[0]).await.unwrap()).unwrap()
    }
}

#[tokio::test(start_paused = true)]
async fn element_not_found_artefact_has_the_seed_fields() {
    let h = Harness::new(0);
    h.page.push_console("warning", "Deprecated API used");
    let result = h.run("click: button \"Nowhere\"", None).await;
    assert_eq!(result.status, RunStatus::Failed);
    let e = h.error().await;
    assert_eq!(e["errorType"], "ELEMENT_NOT_FOUND");
    assert_eq!(e["sessionId"], "unit");
    assert_eq!(e["step"], 1);
    assert_eq!(e["intent"], "click: button \"Nowhere\"");
    assert_eq!(e["pageUrl"], format!("{ORIGIN}/login"));
    let attempted = e["details"]["attempted"].as_array().unwrap();
    assert_eq!(attempted.len(), 3);
    for a in attempted {
        assert_eq!(a["method"], "getByRole");
        assert_eq!(a["selector"]["role"], "button");
        assert_eq!(a["selector"]["name"], "Nowhere");
        assert_eq!(a["success"], false);
        // Durations are wall-clock (this test runs in virtual time).
        assert!(a["durationMs"].as_f64().unwrap() > 0.0, "{a}");
        assert!(
            a["errorMessage"]
                .as_str()
                .unwrap()
                .starts_with("PRECHECK_NO_MATCH")
        );
    }
    let console = &e["details"]["console"][0];
    assert_eq!(console["type"], "warn", "{e}");
    assert_eq!(console["text"], "Deprecated API used");
    assert!(console["timestamp"].as_str().unwrap().ends_with('Z'), "{console}");
    let shot = e["details"]["screenshotPath"].as_str().unwrap();
    assert!(shot.starts_with("sessions/unit/screenshots/step-1-"), "{shot}");
    assert!(h.store.get(shot).await.is_ok());
    let hint = e["hint"].as_str().unwrap();
    assert!(
        hint.contains("\"Sign in\""),
        "the hint names the buttons there are: {hint}"
    );
}

#[tokio::test(start_paused = true)]
async fn several_matches_give_precheck_not_unique() {
    let h = Harness::new(0);
    h.run("click: button \"Twin\"", None).await;
    let e = h.error().await;
    assert_eq!(e["errorType"], "PRECHECK_NOT_UNIQUE");
    assert_eq!(e["details"]["attempted"][2]["precheckCount"], 2);
    assert!(e["hint"].as_str().unwrap().contains("2 elements"), "{e}");
}

#[tokio::test(start_paused = true)]
async fn a_failed_expect_is_an_assertion_failure() {
    let h = Harness::new(0);
    h.run("expect: heading \"Dashboard\"", None).await;
    let e = h.error().await;
    assert_eq!(e["errorType"], "ASSERTION_FAILED");
    assert!(e["hint"].as_str().unwrap().contains("heading"), "{e}");
}

/// A step whose `else` step ran says why in result.json: the failure of
/// the step before `else`, naming its target; a step that needed no `else`
/// says nothing.
#[tokio::test(start_paused = true)]
async fn the_result_says_why_an_else_step_ran() {
    let h = Harness::new(0);
    let result = h
        .run(
            "fill: textbox \"Coupon\" = SAVE10 else fill: textbox \"Username\" = alice\n\
             click: button \"Sign in\" else click: button \"Twin\"",
            None,
        )
        .await;
    assert_eq!(result.status, RunStatus::Completed, "{result:?}");
    let json = serde_json::to_value(&result).unwrap();
    let why = json["steps"][0]["else_reason"].as_str().unwrap_or_default();
    assert!(
        why.contains("\"Coupon\"") && why.contains("matched 0 elements"),
        "step 1 does not say why its else step ran: {}",
        json["steps"][0]
    );
    assert!(
        json["steps"][1].get("else_reason").is_none(),
        "step 2 needed no else: {}",
        json["steps"][1]
    );
}

#[tokio::test(start_paused = true)]
async fn a_page_that_does_not_load_is_a_navigation_failure() {
    let h = Harness::new(0);
    h.run("goto: /nowhere", None).await;
    let e = h.error().await;
    assert_eq!(e["errorType"], "NAVIGATION_FAILED", "{e}");
    let records = h.records().await;
    assert_eq!(records[0].result.error.as_deref(), Some("NAVIGATION_FAILED"));
}

#[tokio::test(start_paused = true)]
async fn a_wait_that_runs_out_is_a_timeout() {
    let h = Harness::new(0);
    let wait =
        r#"{"method":"getByText","selector":{"text":"Report ready"},"action":"wait","confidence":0.8}"#;
    // Three attempts, then two more in emergency mode.
    let chat = ScriptedChat::new(&[r#"["[] Wait for the report"]"#, wait, wait, wait, wait, wait]);
    let result = h.run("Wait for the report", Some(chat)).await;
    assert_eq!(result.status, RunStatus::Failed);
    let e = h.error().await;
    assert_eq!(e["errorType"], "TIMEOUT", "{e}");
    assert_eq!(e["intent"], "wait: Wait for the report");
    assert_eq!(e["details"]["attempted"][0]["method"], "getByText");
}

#[tokio::test(start_paused = true)]
async fn unusable_answers_are_llm_fallback_disabled() {
    let h = Harness::new(0);
    let chat = ScriptedChat::new(&[
        r#"["[] Sign in"]"#,
        "I would click the button",
        "Sure!",
        r#"{"method":"locator","selector":{},"action":"click"}"#,
        "no",
        "{}",
    ]);
    h.run("Sign in", Some(chat)).await;
    let e = h.error().await;
    assert_eq!(e["errorType"], "LLM_FALLBACK_DISABLED", "{e}");
    assert_eq!(e["details"]["attempted"][0]["method"], Value::Null);
}

#[tokio::test(start_paused = true)]
async fn secrets_stay_out_of_the_error_artefact() {
    let h = Harness::new(0);
    h.run(
        "fill: textbox \"Username\" = {{PASSWORD}}\nclick: button \"Nowhere\"",
        None,
    )
    .await;
    let e = h.error().await;
    let snapshot = e["details"]["ariaSnapshot"].as_str().unwrap();
    assert!(snapshot.contains("textbox \"Username\""), "{snapshot}");
    assert!(!h.all_text().await.contains("s3cret-pass"));
    // The scripted page draws nothing, so it cannot black the field out:
    // it refuses, and no picture is stored.
    assert_eq!(e["details"]["screenshotPath"], Value::Null);
    assert!(
        e["details"]["screenshotError"]
            .as_str()
            .unwrap()
            .contains("masking secret fields"),
        "{e}"
    );
    // Only the first page's, taken before the secret was typed.
    assert_eq!(
        h.store.list("sessions/unit/screenshots/").await.unwrap(),
        vec!["sessions/unit/screenshots/start.png".to_string()]
    );
}

#[tokio::test(start_paused = true)]
async fn long_snapshots_are_cut_at_50_kb() {
    let h = Harness::new(1_000);
    h.run("click: button \"Nowhere\"", None).await;
    let e = h.error().await;
    let snapshot = e["details"]["ariaSnapshot"].as_str().unwrap();
    assert!(snapshot.ends_with("...<truncated>"), "{}", snapshot.len());
    assert!(snapshot.len() <= 50_000 + "...<truncated>".len());
}

fn emergency_of(r: &StepRecord) -> Option<&str> {
    r.emergency.as_ref().map(|e| e.trigger.as_str())
}

#[tokio::test(start_paused = true)]
async fn three_failures_switch_the_step_to_the_large_model_and_back() {
    let h = Harness::new(0);
    let twin = decision("button", "Twin", "click", None);
    let chat = ScriptedChat::new(&[
        r#"["[] Type alice into the user box", "[] Sign in"]"#,
        &twin,
        &twin,
        &twin,
        r#"{"method":"getByLabel","selector":{"label":"Username"},"action":"fill","value":"alice","confidence":0.7}"#,
        "true",
        &decision("button", "Sign in", "click", None),
        "true",
    ]);
    let result = h.run("Type alice, sign in", Some(chat.clone())).await;
    assert_eq!(result.status, RunStatus::Completed, "{result:?}");
    assert_eq!(
        chat.models(),
        [
            "small", "small", "small", "small", "large", "large", "small", "small"
        ]
    );
    let records = h.records().await;
    let triggers: Vec<_> = records.iter().map(emergency_of).collect();
    assert_eq!(triggers, [None, None, None, Some("failures"), None]);
    let e = records[3].emergency.as_ref().unwrap();
    assert_eq!(e.model, "large");
    assert!(e.reason.contains("3 failed attempts"), "{e:?}");
    assert!(records[3].completed);
    // The large model saw the light DOM and the wider selector set, not the snapshot.
    let prompt: String = chat.prompts()[4].iter().map(|m| m.content.clone()).collect();
    assert!(prompt.contains(r#"<label for="u">Username</label>"#), "{prompt}");
    assert!(prompt.contains("getByPlaceholder") && prompt.contains("near"));
    assert!(!prompt.contains("[ref="), "{prompt}");
    assert!(
        prompt.contains("PRECHECK_NOT_UNIQUE"),
        "the failures so far are in it"
    );
}

#[tokio::test(start_paused = true)]
async fn a_stall_of_30_seconds_switches_the_step() {
    let h = Harness::new(0);
    let slow_twin = format!("@sleep=31 {}", decision("button", "Twin", "click", None));
    let chat = ScriptedChat::new(&[
        r#"["[] Type alice into the user box"]"#,
        &slow_twin,
        r##"{"method":"locator","selector":{"locator":"#u"},"action":"fill","value":"alice","confidence":0.8}"##,
        "true",
    ]);
    let result = h.run("Type alice", Some(chat.clone())).await;
    assert_eq!(result.status, RunStatus::Completed, "{result:?}");
    assert_eq!(chat.models(), ["small", "small", "large", "large"]);
    let records = h.records().await;
    assert_eq!(emergency_of(&records[1]), Some("stall"));
    assert!(
        records[1].emergency.as_ref().unwrap().reason.contains("30 s"),
        "{:?}",
        records[1].emergency
    );
}

#[tokio::test(start_paused = true)]
async fn low_confidence_over_five_decisions_switches_the_step() {
    let h = Harness::new(0);
    let unsure = decision_at(0.1, "textbox", "Username", "fill", Some("alice"));
    let chat = ScriptedChat::new(&[
        r#"["[] Type alice", "[] Type alice again", "[] Type the password"]"#,
        &unsure,
        "false",
        &unsure,
        "true",
        &unsure,
        "false",
        &unsure,
        "true",
        &unsure,
        "false",
        r#"{"method":"near","selector":{"text":"Password","role":"textbox"},"action":"fill","value":"{{PASSWORD}}","confidence":0.8}"#,
        "true",
    ]);
    let result = h
        .run("Type alice twice, then the password", Some(chat.clone()))
        .await;
    assert_eq!(result.status, RunStatus::Completed, "{result:?}");
    let records = h.records().await;
    let triggers: Vec<_> = records.iter().map(emergency_of).collect();
    assert_eq!(triggers, [None, None, None, None, None, Some("low_confidence")]);
    assert!(
        records[5]
            .emergency
            .as_ref()
            .unwrap()
            .reason
            .contains("0.10 over the last 5")
    );
    // The nearness decision typed into the password box.
    assert_eq!(records[5].precheck_count, Some(1));
    assert!(records[5].completed);
    assert!(!h.all_text().await.contains("s3cret-pass"));
    assert_eq!(chat.models().last(), Some(&"large"));
}

#[tokio::test(start_paused = true)]
async fn a_start_page_that_does_not_load_leaves_a_step_0_artefact() {
    let h = Harness::new(0);
    let result = h.run_at("/gone", "click: button \"Sign in\"", None).await;
    assert_eq!(result.status, RunStatus::Failed);
    let e = h.error().await;
    assert_eq!(e["errorType"], "NAVIGATION_FAILED", "{e}");
    assert_eq!(e["step"], 0);
    assert_eq!(e["intent"], format!("goto: {ORIGIN}/gone"));
    assert_eq!(e["details"]["attempted"][0]["action"], "goto");
    assert!(e["hint"].as_str().unwrap().contains("URL policy"));
}
