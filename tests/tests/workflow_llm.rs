//! The plain-language workflow loop against real Chromium and the scripted
//! LLM server: a login → search → select flow, a decision refused by the
//! precheck and retried, a step that never completes, and an answer that is
//! not JSON.

mod wf;

use oxwright_fixtures::APP_PASSWORD;
use oxwright_fixtures::llm::{Reply, ScriptedLlm};
use oxwright_jobs::{ErrorKind, RunStatus, WorkflowMode};
use oxwright_workflow::STEP_TOKEN_BUDGET;
use wf::{LOGIN_ID, Wf, checklist, literal, page_text, role, script_login_search_select};

const LOGIN_SEARCH_SELECT: &str = "1. Log in as {{LOGIN_ID}} with the password {{PASSWORD}}\n\
                                   2. Search for \"rust\"\n\
                                   3. Open \"Rust in Action\" from the results\n\
                                   4. Choose Japan as the shipping country";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_language_login_search_select_completes() {
    login_search_select(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_language_login_search_select_completes_on_playwright_mcp() {
    login_search_select(true).await;
}

async fn login_search_select(playwright_mcp: bool) {
    let wf = Wf::start_on(playwright_mcp).await;
    let llm = ScriptedLlm::start().await.expect("scripted llm starts");
    script_login_search_select(&llm);
    let (result, lease) = wf
        .run("flow", "/app/login", LOGIN_SEARCH_SELECT, Some(&llm))
        .await;

    assert_eq!(
        result.status,
        RunStatus::Completed,
        "{result:#?}\n{}",
        wf.console_text()
    );
    assert_eq!(result.mode, WorkflowMode::Llm);
    assert_eq!(result.totals.steps, 7);
    assert_eq!(result.totals.steps_ok, 7);
    assert_eq!(result.totals.llm_calls, 15);
    assert!(result.totals.total_tokens > 0);
    assert!(
        result.steps.iter().all(|s| s.attempts == 1),
        "{:#?}",
        result.steps
    );
    assert_eq!(result.checklist[1], "[] Type {{PASSWORD}} into Password");
    assert!(
        result
            .final_url
            .as_deref()
            .unwrap_or("")
            .contains("/app/item?id=1")
    );
    assert_eq!(llm.remaining(), 0);

    // The page really went through the flow.
    assert_eq!(
        page_text(lease.as_ref(), "document.getElementById('ship').textContent").await,
        "Ships to Japan"
    );
    assert_eq!(
        page_text(lease.as_ref(), "document.getElementById('name').textContent").await,
        "Rust in Action"
    );

    // One JSONL line per attempt, with the fields the seed names.
    let lines = wf.jsonl("flow", "steps.jsonl").await;
    assert_eq!(lines.len(), 7);
    for (i, l) in lines.iter().enumerate() {
        assert_eq!(l["stepNumber"], i as u64 + 1);
        assert_eq!(l["completed"], true);
        assert_eq!(l["precheckCount"], 1);
        assert_eq!(l["result"]["success"], true);
        assert_eq!(l["metadataMissing"], true);
        assert!(l["metadataKeys"].as_array().unwrap().is_empty());
        assert!(l["tokens"]["prompt"].as_u64().unwrap() > 0);
        assert!(l["durations"]["totalMs"].as_f64().unwrap() > 0.0);
        assert!(l["timestamp"].as_str().unwrap().starts_with("20"));
        assert!(l["originalInstruction"].is_string());
    }
    assert_eq!(lines[1]["decision"]["value"]["kind"], "placeholder");
    assert_eq!(lines[1]["decision"]["value"]["value"], "{{PASSWORD}}");

    // What the LLM was sent: placeholders, the snapshot, within the budget.
    let calls = llm.received();
    assert_eq!(calls.len(), 15);
    assert!(calls[0].prompt().contains("{{PASSWORD}}"));
    assert!(calls[0].max_tokens().unwrap() <= 3_000);
    assert!(
        calls[1].prompt().contains("textbox \"Username\" [ref=e"),
        "{}",
        calls[1].prompt()
    );
    assert!(calls[1].prompt().contains("→ [] Type {{LOGIN_ID}} into Username"));
    assert!(calls[3].prompt().contains("[x] Type {{LOGIN_ID}} into Username"));
    for call in &calls {
        let prompt = call.prompt();
        assert!(!prompt.contains(APP_PASSWORD), "password in a prompt");
        let tokens = oxwright_markdown::count_tokens(&prompt) + call.max_tokens().unwrap() as usize;
        assert!(tokens <= STEP_TOKEN_BUDGET, "{tokens} tokens: {prompt}");
    }
    // After login the page shows the user, which the snapshot replaces by its placeholder.
    let after_login = calls[7].prompt();
    assert!(after_login.contains("Signed in as {{LOGIN_ID}}"), "{after_login}");
    assert!(!after_login.contains(&format!("Signed in as {LOGIN_ID}")));

    // Result and LLM log are stored.
    let keys: Vec<String> = wf.all_artifacts().await.into_iter().map(|(k, _)| k).collect();
    assert!(
        keys.contains(&"sessions/flow/result.json".to_string()),
        "{keys:?}"
    );
    assert_eq!(wf.jsonl("flow", "llm.jsonl").await.len(), 15);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ambiguous_decision_is_refused_then_retried() {
    ambiguous_decision_is_refused_then_retried_on(false).await;
}

// Not run on the Playwright MCP backend: its snapshot shows the modal
// `dialog` without the name `aria-labelledby` gives it (Chromium's tree
// has `dialog "Added to cart"`), which this test's judge prompt checks.
async fn ambiguous_decision_is_refused_then_retried_on(playwright_mcp: bool) {
    let wf = Wf::start_on(playwright_mcp).await;
    let llm = ScriptedLlm::start().await.expect("scripted llm starts");
    llm.push(checklist(&["Add the item to the cart"]));
    // Two buttons are named "Add to cart": the precheck must refuse this one.
    llm.push(role("button", "Add to cart", "click", None));
    llm.push(Reply::json(serde_json::json!({
        "method": "getByTestId", "selector": {"testId": "add-main"}, "action": "click", "confidence": 0.8
    })));
    llm.push(Reply::text("true"));
    let (result, lease) = wf
        .run(
            "ambiguous",
            "/app/item?id=2",
            "Add the item to the cart",
            Some(&llm),
        )
        .await;

    assert_eq!(result.status, RunStatus::Completed, "{result:#?}");
    assert_eq!(result.steps[0].attempts, 2);
    assert!(
        result.steps[0].reasons[0].starts_with("PRECHECK_NOT_UNIQUE"),
        "{:?}",
        result.steps[0].reasons
    );
    let lines = wf.jsonl("ambiguous", "steps.jsonl").await;
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["precheckCount"], 2);
    assert_eq!(lines[0]["result"]["success"], false);
    assert_eq!(lines[0]["result"]["error"], "PRECHECK_NOT_UNIQUE");
    assert_eq!(lines[0]["completed"], false);
    assert_eq!(lines[1]["precheckCount"], 1);
    assert_eq!(lines[1]["completed"], true);
    // The retry re-decided with the reason in its prompt, and the modal dialog opened.
    let calls = llm.received();
    assert!(
        calls[2]
            .prompt()
            .contains("previous attempt at this step failed: PRECHECK_NOT_UNIQUE")
    );
    assert_eq!(
        page_text(lease.as_ref(), "document.getElementById('added').open").await,
        true
    );
    assert!(
        calls[3].prompt().contains("dialog \"Added to cart\""),
        "{}",
        calls[3].prompt()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn step_that_never_completes_fails_after_emergency_mode() {
    step_that_never_completes_fails_after_emergency_mode_on(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn step_that_never_completes_fails_after_emergency_mode_on_playwright_mcp() {
    step_that_never_completes_fails_after_emergency_mode_on(true).await;
}

async fn step_that_never_completes_fails_after_emergency_mode_on(playwright_mcp: bool) {
    let wf = Wf::start_on(playwright_mcp).await;
    let llm = ScriptedLlm::start().await.expect("scripted llm starts");
    llm.push(checklist(&["Make the status say done", "Sign out"]));
    // Three attempts on the small model, two in emergency mode on the large one.
    for _ in 0..5 {
        llm.push(role("button", "Refresh", "click", None));
        llm.push(Reply::text("false"));
    }
    let (result, _lease) = wf
        .run(
            "stuck",
            "/app/stuck",
            "Make the status say done, then sign out",
            Some(&llm),
        )
        .await;

    assert_eq!(result.status, RunStatus::Failed);
    let err = result.error.clone().expect("an error");
    assert_eq!(err.kind, ErrorKind::StepFailed, "{err}");
    assert!(!err.is_retryable());
    let step = &result.steps[0];
    assert_eq!(step.status, RunStatus::Failed);
    assert_eq!(step.attempts, 5);
    assert_eq!(step.reasons.len(), 5);
    assert!(
        step.reasons.iter().all(|r| r.starts_with("NOT_COMPLETED")),
        "{:?}",
        step.reasons
    );
    assert_eq!(result.steps[1].status, RunStatus::Skipped);
    let calls = llm.received();
    assert_eq!(calls.len(), 11, "no call after the failed step");
    // The server saw the switch: decisions and judgements of attempts 4 and 5 name the large model.
    let models = llm.models();
    assert!(models[..7].iter().all(|m| m == "scripted-small"), "{models:?}");
    assert!(models[7..].iter().all(|m| m == "scripted-large"), "{models:?}");
    let light_dom = calls[7].prompt();
    assert!(
        light_dom.contains("Light DOM") && !light_dom.contains("<script"),
        "{light_dom}"
    );

    let shot = step.screenshot.clone().expect("a failure screenshot");
    assert!(shot.starts_with("sessions/stuck/screenshots/step-1-") && shot.ends_with(".png"));
    let artifacts = wf.all_artifacts().await;
    let png = oxwright_artifacts::ArtifactStore::get(&wf.store, &shot)
        .await
        .unwrap();
    assert!(png.starts_with(b"\x89PNG"));
    let (_, error_json) = artifacts
        .iter()
        .find(|(k, _)| k.starts_with("sessions/stuck/errors/step-1-"))
        .expect("an error artefact");
    let error: serde_json::Value = serde_json::from_str(error_json).unwrap();
    assert_eq!(error["details"]["reasons"].as_array().unwrap().len(), 5);
    assert_eq!(error["errorType"], "STEP_NOT_COMPLETED");
    assert!(
        error["details"]["ariaSnapshot"]
            .as_str()
            .unwrap()
            .contains("button \"Refresh\"")
    );
    assert!(error["pageUrl"].as_str().unwrap().ends_with("/app/stuck"));

    let lines = wf.jsonl("stuck", "steps.jsonl").await;
    assert_eq!(lines.len(), 5);
    for (i, l) in lines.iter().enumerate() {
        let trigger = &l["emergency"]["trigger"];
        assert_eq!(
            *trigger,
            if i < 3 {
                serde_json::Value::Null
            } else {
                "failures".into()
            },
            "{l}"
        );
    }
    assert_eq!(lines[3]["emergency"]["model"], "scripted-large");
    assert!(
        lines
            .iter()
            .all(|l| l["completed"] == false && l["reason"].as_str().unwrap().starts_with("NOT_COMPLETED"))
    );
    assert!(
        wf.console_text().contains("emergency mode for step 1 (failures)")
            && wf
                .console_text()
                .contains("emergency mode off after step 1: back to scripted-small")
            && wf.console_text().contains("step 1 failed after 5 attempts"),
        "{}",
        wf.console_text()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_json_answer_fails_the_attempt_cleanly() {
    invalid_json_answer_fails_the_attempt_cleanly_on(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_json_answer_fails_the_attempt_cleanly_on_playwright_mcp() {
    invalid_json_answer_fails_the_attempt_cleanly_on(true).await;
}

async fn invalid_json_answer_fails_the_attempt_cleanly_on(playwright_mcp: bool) {
    let wf = Wf::start_on(playwright_mcp).await;
    let llm = ScriptedLlm::start().await.expect("scripted llm starts");
    llm.push(checklist(&[
        "Wait for the Download report button",
        "Click Download report",
    ]));
    llm.push(Reply::text(
        "I think you should press the download button once it shows up.",
    ));
    // The button appears 800 ms after load: `wait` polls until exactly one matches.
    llm.push(role("button", "Download report", "wait", None));
    llm.push(Reply::text("true"));
    llm.push(role("button", "Download report", "click", None));
    llm.push(Reply::text("True."));
    let (result, lease) = wf
        .run(
            "badjson",
            "/app/late",
            "Wait for the report, then download it",
            Some(&llm),
        )
        .await;

    assert_eq!(result.status, RunStatus::Completed, "{result:#?}");
    assert_eq!(result.steps[0].attempts, 2);
    assert!(
        result.steps[0].reasons[0].starts_with("LLM_FALLBACK_DISABLED"),
        "{:?}",
        result.steps[0].reasons
    );
    let lines = wf.jsonl("badjson", "steps.jsonl").await;
    assert_eq!(lines[0]["result"]["error"], "LLM_FALLBACK_DISABLED");
    assert!(lines[0]["decision"].is_null());
    assert!(
        lines[0]["precheckCount"].is_null(),
        "no precheck without a decision"
    );
    assert_eq!(lines[1]["completed"], true);
    assert_eq!(
        page_text(lease.as_ref(), "document.getElementById('state').textContent").await,
        "Report downloaded"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn target_not_found_and_unreachable_llm_are_logged_reasons() {
    target_not_found_and_unreachable_llm_are_logged_reasons_on(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn target_not_found_and_unreachable_llm_are_logged_reasons_on_playwright_mcp() {
    target_not_found_and_unreachable_llm_are_logged_reasons_on(true).await;
}

async fn target_not_found_and_unreachable_llm_are_logged_reasons_on(playwright_mcp: bool) {
    let wf = Wf::start_on(playwright_mcp).await;
    let llm = ScriptedLlm::start().await.expect("scripted llm starts");
    llm.push(checklist(&["Click Sign in"]));
    llm.push(Reply::text("{\"error\": \"TARGET_NOT_FOUND\"}"));
    llm.push(Reply::Status(503, "overloaded".into()));
    llm.push(Reply::Status(503, "overloaded".into()));
    llm.push(Reply::Status(503, "overloaded".into()));
    llm.push(role("button", "Sign in", "click", None));
    llm.push(Reply::text("true"));
    let (result, _lease) = wf.run("reasons", "/app/login", "Click Sign in", Some(&llm)).await;
    assert_eq!(result.status, RunStatus::Completed, "{result:#?}");
    let reasons = &result.steps[0].reasons;
    assert!(reasons[0].starts_with("TARGET_NOT_FOUND"), "{reasons:?}");
    assert!(
        reasons[1].starts_with("LLM_ERROR") && reasons[1].contains("503"),
        "{reasons:?}"
    );
    assert_eq!(result.steps[0].attempts, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_link_named_with_an_e_mail_address_stays_targetable() {
    let wf = Wf::start().await;
    let llm = ScriptedLlm::start().await.expect("scripted llm starts");
    llm.push(checklist(&["Open the support address"]));
    llm.push(role("link", "support@shop.example", "click", None));
    llm.push(Reply::text("true"));
    let (result, _page) = wf
        .run("mail", "/app/help", "Open the support address", Some(&llm))
        .await;
    assert_eq!(
        result.status,
        RunStatus::Completed,
        "{result:#?}\n{}",
        wf.console_text()
    );
    assert!(result.final_url.unwrap().contains("/app/help/contact?to=support"));
    // The page's address reached the LLM (it is page text, not a secret)...
    let calls = llm.received();
    assert!(
        calls[1].prompt().contains("link \"support@shop.example\""),
        "{}",
        calls[1].prompt()
    );
    // ...and the artefacts mask it like any e-mail address.
    for (key, text) in wf.all_artifacts().await {
        assert!(!text.contains("support@shop.example"), "in {key}");
    }
}

/// A sitemap far larger than the step budget allows.
struct HugeSitemap;

#[async_trait::async_trait]
impl oxwright_workflow::SitemapSource for HugeSitemap {
    async fn urls(&self, page: &url::Url) -> Vec<String> {
        let origin = page.origin().ascii_serialization();
        (0..2_000)
            .map(|i| format!("{origin}/catalogue/section-{i}/a-rather-long-product-page-name-{i}.html"))
            .collect()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn site_profiles_and_sitemap_urls_reach_the_decision_within_the_budget() {
    use std::sync::Arc;
    let wf = Wf::start().await;
    let origin = format!("http://{}", wf.site.addr());
    let sites = oxwright_workflow::SiteProfiles::parse_yaml(&format!(
        "sites:\n  - url: \"{origin}/app\"\n    name: \"Shop fixture\"\n    characteristics: [\"search results load on submit\"]\n    \
         common_selectors:\n      search_box: 'input[type=search]'\n    login_hints: [\"any username works\"]\n"
    ))
    .unwrap();
    for (source, huge) in [
        (
            Arc::new(oxwright_workflow::SitemapHints::new(wf.policy.clone()))
                as Arc<dyn oxwright_workflow::SitemapSource>,
            false,
        ),
        (
            Arc::new(HugeSitemap) as Arc<dyn oxwright_workflow::SitemapSource>,
            true,
        ),
    ] {
        let llm = ScriptedLlm::start().await.expect("scripted llm starts");
        llm.push(checklist(&["Type rust into the search box"]));
        llm.push(role(
            "searchbox",
            "Search products",
            "fill",
            Some(literal("rust")),
        ));
        llm.push(Reply::text("true"));
        let page = wf.page().await;
        let mut opts = wf.options(if huge { "huge" } else { "hints" }, "/app/search");
        opts.hints.sites = Some(Arc::new(sites.clone()));
        opts.hints.sitemaps = Some(source);
        let workflow = oxwright_workflow::Workflow::parse("Type rust into the search box").unwrap();
        let result = oxwright_workflow::run_workflow(
            page.as_ref(),
            &workflow,
            wf.deps(Some(&llm), wf.secrets()),
            opts,
        )
        .await
        .unwrap();
        assert_eq!(result.status, RunStatus::Completed, "{result:#?}");
        let decision = llm.received()[1].clone();
        let prompt = decision.prompt();
        assert!(
            prompt.contains("\"site\":{") && prompt.contains("Shop fixture"),
            "{prompt}"
        );
        assert!(
            prompt.contains("any username works") && prompt.contains("input[type=search]"),
            "{prompt}"
        );
        assert!(prompt.contains("The site's sitemap"), "{prompt}");
        // The snapshot survives the squeeze: the target is still in it.
        assert!(prompt.contains("searchbox \"Search products\""), "{prompt}");
        let tokens = oxwright_markdown::count_tokens(&prompt) + decision.max_tokens().unwrap() as usize;
        assert!(tokens <= STEP_TOKEN_BUDGET, "{tokens} tokens");
        if huge {
            assert!(!prompt.contains("section-1999"), "the URL list was not cut");
        } else {
            // The fixture site's own sitemap, found through robots.txt.
            assert!(prompt.contains(&format!("{origin}/articles/")), "{prompt}");
            assert!(wf.site.hits("/robots.txt") >= 1);
        }
        let lines = wf.jsonl(if huge { "huge" } else { "hints" }, "steps.jsonl").await;
        assert_eq!(lines[0]["metadataPresent"], true);
        assert_eq!(lines[0]["metadataKeys"], serde_json::json!(["site", "sitemap"]));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_target_the_cap_cut_is_found_for_the_retry() {
    let wf = Wf::start().await;
    let llm = ScriptedLlm::start().await.expect("scripted llm starts");
    llm.push(checklist(&["Click \"Load more\""]));
    llm.push(Reply::json(serde_json::json!({"error": "TARGET_NOT_FOUND"})));
    llm.push(role("button", "Load more", "click", None));
    llm.push(Reply::text("true"));
    let page = wf.page().await;
    let mut opts = wf.options("cut", "/app/controls");
    opts.snapshot_max_chars = 600;
    let workflow = oxwright_workflow::Workflow::parse("Click \"Load more\"").unwrap();
    let result =
        oxwright_workflow::run_workflow(page.as_ref(), &workflow, wf.deps(Some(&llm), wf.secrets()), opts)
            .await
            .unwrap();
    assert_eq!(result.status, RunStatus::Completed, "{result:#?}");
    let calls = llm.received();
    assert!(
        !calls[1].prompt().contains("button \"Load more\""),
        "the cap did not cut it"
    );
    let retry = calls[2].prompt();
    assert!(
        retry.contains("the page's lines holding \"Load more\"")
            && retry.contains("button \"Load more\" [ref="),
        "{retry}"
    );
}
