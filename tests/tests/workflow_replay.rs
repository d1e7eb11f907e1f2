//! Zero-token replay from the action cache, against real Chromium and the
//! fixture app: a recorded plain-language run replays with no LLM request
//! once its actions are trusted; a changed page (the button renamed, a
//! second button with the old name elsewhere) heals that one step with one
//! LLM decision and never clicks the look-alike; two replays healing at
//! once leave a cache every later run reads.

mod wf;

use std::sync::Arc;

use oxwright_artifacts::ArtifactStore as _;
use oxwright_fixtures::llm::{Reply, ScriptedLlm};
use oxwright_jobs::{RunStatus, StepSource, WorkflowResult};
use oxwright_workflow::{ActionCache, ReplayOptions, Workflow, run_workflow};
use wf::{Wf, checklist, literal, role};

const PROFILE: &str = "1. Type Ada into Display name\n2. Save the profile";
const STEPS: [&str; 2] = ["Type Ada into Display name", "Save the profile"];
const WORKFLOW: &str = "profile";

/// Records (`replay` None) or replays the profile workflow in a fresh page.
async fn run(wf: &Wf, session: &str, llm: Option<&ScriptedLlm>, replay: Option<u32>) -> WorkflowResult {
    let page = wf.page().await;
    let mut opts = wf.options(session, "/app/profile");
    opts.workflow_id = Some(WORKFLOW.into());
    opts.replay = replay.map(|trust_after| ReplayOptions {
        checklist: STEPS.iter().map(|s| format!("[] {s}")).collect(),
        trust_after,
    });
    let workflow = Workflow::parse(PROFILE).unwrap();
    run_workflow(page.as_ref(), &workflow, wf.deps(llm, wf.secrets()), opts)
        .await
        .expect("the workflow runs")
}

fn script_recording(llm: &ScriptedLlm) {
    llm.push(checklist(&STEPS));
    llm.push(role("textbox", "Display name", "fill", Some(literal("Ada"))));
    llm.push(Reply::text("true"));
    llm.push(role("button", "Save", "click", None));
    llm.push(Reply::text("true"));
}

fn sources(r: &WorkflowResult) -> Vec<Option<StepSource>> {
    r.steps.iter().map(|s| s.source).collect()
}

fn assert_saved(wf: &Wf, r: &WorkflowResult) {
    assert_eq!(r.status, RunStatus::Completed, "{r:#?}\n{}", wf.console_text());
    let url = r.final_url.as_deref().unwrap_or_default();
    assert!(url.contains("/app/profile/saved?name=Ada"), "{url}");
    assert_eq!(
        wf.site.hits("/app/newsletter"),
        0,
        "the newsletter's Save was clicked"
    );
}

async fn cache(wf: &Wf) -> ActionCache {
    let store: Arc<dyn oxwright_artifacts::ArtifactStore> = Arc::new(wf.store.clone());
    ActionCache::load(&store, WORKFLOW).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recorded_run_replays_with_no_llm_request_once_trusted() {
    let wf = Wf::start().await;
    let llm = ScriptedLlm::start().await.unwrap();
    script_recording(&llm);
    let recorded = run(&wf, "rec", Some(&llm), None).await;
    assert_saved(&wf, &recorded);
    assert_eq!(recorded.workflow_id.as_deref(), Some(WORKFLOW));
    assert_eq!(sources(&recorded), vec![Some(StepSource::Llm); 2]);
    assert_eq!(llm.received().len(), 5);
    let c = cache(&wf).await;
    assert_eq!(c.entries.len(), 2, "{c:#?}");
    assert!(c.entries.iter().all(|e| e.successes == 1));
    let save = c
        .entries
        .iter()
        .find(|e| e.key.instruction == "Save the profile")
        .unwrap();
    assert_eq!(save.resolved.fingerprint.name, "Save");
    assert_eq!(
        save.resolved.fingerprint.landmarks,
        vec!["form \"Profile\"", "main"]
    );
    assert!(save.key.url_pattern.ends_with("/app/profile"), "{:?}", save.key);
    assert!(
        save.resolved
            .url_after
            .ends_with("/app/profile/saved?name=*&public=*")
    );

    // One success is not trusted yet (default 2): the judge confirms each
    // replayed action; no decision is asked for.
    llm.push(Reply::text("true"));
    llm.push(Reply::text("true"));
    let confirmed = run(&wf, "replay-1", Some(&llm), Some(2)).await;
    assert_saved(&wf, &confirmed);
    assert_eq!(sources(&confirmed), vec![Some(StepSource::Cache); 2]);
    let calls = llm.received();
    assert_eq!(calls.len(), 7);
    assert!(
        calls[5..]
            .iter()
            .all(|c| c.prompt().contains("Is this step complete?"))
    );
    assert_eq!(confirmed.totals.cache_hits, 2);

    // Trusted now: zero requests to the LLM server.
    let replayed = run(&wf, "replay-2", Some(&llm), Some(2)).await;
    assert_saved(&wf, &replayed);
    assert_eq!(llm.received().len(), 7, "the trusted replay called the LLM");
    assert_eq!(replayed.totals.llm_calls, 0);
    assert_eq!(replayed.totals.total_tokens, 0);
    assert_eq!(replayed.totals.cache_hits, 2);
    assert_eq!(sources(&replayed), vec![Some(StepSource::Cache); 2]);
    // With no LLM at all it replays the same way.
    let offline = run(&wf, "replay-3", None, Some(2)).await;
    assert_saved(&wf, &offline);
    assert!(cache(&wf).await.entries.iter().all(|e| e.successes == 4));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_page_heals_one_step_and_never_clicks_the_look_alike() {
    let wf = Wf::start().await;
    let llm = ScriptedLlm::start().await.unwrap();
    script_recording(&llm);
    assert_saved(&wf, &run(&wf, "rec", Some(&llm), None).await);
    llm.push(Reply::text("true"));
    llm.push(Reply::text("true"));
    assert_saved(&wf, &run(&wf, "confirm", Some(&llm), Some(2)).await);
    let before = llm.received().len();

    // The release renames the button and adds a "Save" elsewhere.
    wf.site.set_app_version(2);
    llm.push(role("button", "Save changes", "click", None));
    llm.push(Reply::text("true"));
    let healed = run(&wf, "heal", Some(&llm), Some(2)).await;
    assert_saved(&wf, &healed);
    assert_eq!(
        sources(&healed),
        vec![Some(StepSource::Cache), Some(StepSource::Healed)]
    );
    assert_eq!(healed.totals.healed, 1);
    let calls = &llm.received()[before..];
    assert_eq!(calls.len(), 2, "one decision and its judgement");
    // Why the cached action was refused is in the step's record.
    let lines = wf.jsonl("heal", "steps.jsonl").await;
    let refused = lines
        .iter()
        .find(|l| l["result"]["error"] == "CACHE_REFUSED")
        .expect("a refused cache attempt");
    assert_eq!(refused["stepNumber"], 2);
    let e = cache(&wf).await;
    let save = e
        .entries
        .iter()
        .find(|e| e.key.instruction == "Save the profile")
        .unwrap();
    assert_eq!(save.resolved.fingerprint.name, "Save changes");
    assert_eq!(save.successes, 1);

    // Healed entries earn trust like new ones: the judge confirms once...
    llm.push(Reply::text("true"));
    let confirmed = run(&wf, "after-heal-1", Some(&llm), Some(2)).await;
    assert_saved(&wf, &confirmed);
    assert_eq!(llm.received().len(), before + 3);
    // ...and the next replay is zero-token again.
    let again = run(&wf, "after-heal-2", Some(&llm), Some(2)).await;
    assert_saved(&wf, &again);
    assert_eq!(llm.received().len(), before + 3);
    assert_eq!(sources(&again), vec![Some(StepSource::Cache); 2]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_look_alike_found_by_an_exact_locator_is_refused_by_its_neighbourhood() {
    let wf = Wf::start().await;
    let llm = ScriptedLlm::start().await.unwrap();
    // Recorded with an exact name: on version 2 it matches exactly one
    // button, the newsletter's, which sits in another landmark.
    llm.push(checklist(&STEPS));
    llm.push(role("textbox", "Display name", "fill", Some(literal("Ada"))));
    llm.push(Reply::text("true"));
    llm.push(Reply::json(serde_json::json!({
        "method": "getByRole", "selector": {"role": "button", "name": "Save", "exact": true},
        "action": "click", "confidence": 0.9,
    })));
    llm.push(Reply::text("true"));
    assert_saved(&wf, &run(&wf, "rec", Some(&llm), None).await);
    wf.site.set_app_version(2);
    // No LLM to heal with: the step fails, typed, and nothing is clicked.
    let r = run(&wf, "blind", None, Some(1)).await;
    assert_eq!(r.status, RunStatus::Failed);
    assert_eq!(wf.site.hits("/app/newsletter"), 0, "the look-alike was clicked");
    let reasons = r.steps[1].reasons.join(" ");
    assert!(reasons.contains("LLM_FALLBACK_DISABLED"), "{reasons}");
    let lines = wf.jsonl("blind", "steps.jsonl").await;
    let refused = lines
        .iter()
        .find(|l| l["result"]["error"] == "CACHE_REFUSED")
        .unwrap();
    let why = refused["reason"].as_str().unwrap();
    assert!(why.contains("Newsletter") && why.contains("Profile"), "{why}");
    let errors: Vec<String> = wf.store.list("sessions/blind/errors/").await.unwrap();
    assert_eq!(errors.len(), 1, "{errors:?}");
    let body = wf.store.get(&errors[0]).await.unwrap();
    let artefact: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(artefact["errorType"], "LLM_FALLBACK_DISABLED", "{artefact:#}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replays_healing_at_once_leave_a_valid_cache() {
    let wf = Wf::start().await;
    let llm = ScriptedLlm::start().await.unwrap();
    script_recording(&llm);
    assert_saved(&wf, &run(&wf, "rec", Some(&llm), None).await);
    wf.site.set_app_version(2);
    // Answers by what is asked: both runs heal the same step at once.
    llm.respond_with(|call| {
        if call.prompt().contains("Is this step complete?") {
            Reply::text("true")
        } else {
            role("button", "Save changes", "click", None)
        }
    });
    let (a, b) = tokio::join!(
        run(&wf, "worker-a", Some(&llm), Some(1)),
        run(&wf, "worker-b", Some(&llm), Some(1))
    );
    assert_saved(&wf, &a);
    assert_saved(&wf, &b);
    assert_eq!(a.steps[1].source, Some(StepSource::Healed));
    assert_eq!(b.steps[1].source, Some(StepSource::Healed));
    // Each run wrote its own event file; the folded view has both.
    let files = wf.store.list("workflows/profile/actions/").await.unwrap();
    assert_eq!(files.len(), 3, "{files:?}");
    let c = cache(&wf).await;
    assert_eq!(c.runs, 3);
    let save = c
        .entries
        .iter()
        .find(|e| e.key.instruction == "Save the profile")
        .unwrap();
    assert_eq!(save.resolved.fingerprint.name, "Save changes");
    assert_eq!(save.successes, 2, "{save:#?}");
    let view: ActionCache =
        serde_json::from_slice(&wf.store.get("workflows/profile/actions.json").await.unwrap()).unwrap();
    assert!(view.runs >= 2, "{view:#?}");
    // The next replay reads it with no LLM.
    let calls = llm.received().len();
    let next = run(&wf, "next", None, Some(2)).await;
    assert_saved(&wf, &next);
    assert_eq!(llm.received().len(), calls);
}

/// A run recorded on one host replays from its cache under another start
/// URL (staging, then production): pages on the start origin are keyed by
/// their path, so no step needs the LLM, and none is configured.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recording_replays_against_another_host() {
    let wf = Wf::start().await;
    let llm = ScriptedLlm::start().await.unwrap();
    script_recording(&llm);
    let recorded = run(&wf, "rec", Some(&llm), None).await;
    assert_saved(&wf, &recorded);

    let production = oxwright_fixtures::FixtureServer::start().await.unwrap();
    let policy = Arc::new(oxwright_engine::UrlPolicy::allowing([
        wf.site.addr().to_string().parse().unwrap(),
        production.addr().to_string().parse().unwrap(),
    ]));
    let page = wf
        .engine
        .open(&oxwright_engine::OpenOptions::new(policy))
        .await
        .expect("page");
    let mut opts = wf.options("prod", "/app/profile");
    opts.start_url = production.url("/app/profile").parse().unwrap();
    opts.workflow_id = Some(WORKFLOW.into());
    opts.replay = Some(ReplayOptions {
        checklist: STEPS.iter().map(|s| format!("[] {s}")).collect(),
        trust_after: 1,
    });
    let workflow = Workflow::parse(PROFILE).unwrap();
    let replayed = run_workflow(page.as_ref(), &workflow, wf.deps(None, wf.secrets()), opts)
        .await
        .expect("the workflow runs");
    assert_eq!(
        replayed.status,
        RunStatus::Completed,
        "{replayed:#?}\n{}",
        wf.console_text()
    );
    assert_eq!(sources(&replayed), vec![Some(StepSource::Cache); 2]);
    let url = replayed.final_url.as_deref().unwrap_or_default();
    assert!(
        url.starts_with(&production.url("/app/profile/saved?name=Ada")),
        "{url}"
    );
    assert_eq!(
        wf.site.hits("/app/profile/saved"),
        1,
        "only the recording saved on staging"
    );
}
