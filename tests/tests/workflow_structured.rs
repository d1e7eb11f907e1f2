//! Structured workflows: the deterministic path with no LLM at all — the same
//! precheck and executor, auto-waits, dialogs, a same-origin iframe, a late
//! button, and the refusal of an ambiguous target.

mod wf;

use oxwright_jobs::{ErrorKind, RunStatus, WorkflowMode};
use wf::{Wf, page_text};

const STRUCTURED_FLOW: &str = r#"# the login → search → select flow, written as steps
fill: textbox "Username" = {{LOGIN_ID}}
fill: textbox "Password" = {{PASSWORD}}
click: button "Sign in"
fill: searchbox "Search products" = rust
click: button "Search"
click: link "Rust in Action"
select: combobox "Shipping country" = Japan
expect: text "Ships to Japan"
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn structured_flow_passes_with_no_llm_server() {
    structured_flow(Wf::start().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn structured_flow_passes_on_playwright_mcp() {
    structured_flow(Wf::start_playwright_mcp().await).await;
}

async fn structured_flow(wf: Wf) {
    // No scripted LLM server exists in this test, and no LLM client is configured.
    let (result, lease) = wf.run("structured", "/app/login", STRUCTURED_FLOW, None).await;
    assert_eq!(
        result.status,
        RunStatus::Completed,
        "{result:#?}\n{}",
        wf.console_text()
    );
    assert_eq!(result.mode, WorkflowMode::Structured);
    assert_eq!(result.totals.steps_ok, 8);
    assert_eq!(result.totals.llm_calls, 0);
    assert_eq!(result.totals.total_tokens, 0);
    assert_eq!(
        page_text(lease.as_ref(), "document.getElementById('ship').textContent").await,
        "Ships to Japan"
    );
    let lines = wf.jsonl("structured", "steps.jsonl").await;
    assert_eq!(lines.len(), 8);
    assert!(
        lines
            .iter()
            .all(|l| l["completed"] == true && l["precheckCount"] == 1)
    );
    assert_eq!(lines[1]["metadataPresent"], true);
    assert_eq!(lines[1]["currentStepMeta"]["value"], "{{PASSWORD}}");
    assert_eq!(lines[1]["decision"]["value"]["kind"], "placeholder");
    let artifacts = wf.all_artifacts().await;
    let keys: Vec<&String> = artifacts.iter().map(|(k, _)| k).collect();
    assert!(!keys.iter().any(|k| k.ends_with("llm.jsonl")), "{keys:?}");
    // A completed run keeps the page it ended on: a screenshot and its Markdown.
    let png = format!("sessions/structured/{}", oxwright_workflow::FINAL_SCREENSHOT);
    let md = format!("sessions/structured/{}", oxwright_workflow::FINAL_MARKDOWN);
    assert!(result.artifacts.contains(&png), "{:?}", result.artifacts);
    assert!(result.artifacts.contains(&md), "{:?}", result.artifacts);
    let (_, png_body) = artifacts
        .iter()
        .find(|(k, _)| *k == png)
        .expect("final.png stored");
    assert!(png_body.contains("PNG"), "not a PNG");
    let (_, markdown) = artifacts.iter().find(|(k, _)| *k == md).expect("final.md stored");
    assert!(markdown.contains("Ships to Japan"), "{markdown}");
    assert!(markdown.contains("Rust in Action"), "{markdown}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_target_that_matches_nothing_names_the_closest_on_the_page() {
    let wf = Wf::start().await;
    let (result, _lease) = wf
        .run("nomatch", "/app/login", "click: button \"Sign on\"", None)
        .await;
    assert_eq!(result.status, RunStatus::Failed);
    let reasons = &result.steps[0].reasons;
    assert_eq!(reasons.len(), 3, "{reasons:?}");
    for reason in reasons {
        assert!(
            reason.starts_with("PRECHECK_NO_MATCH: ")
                && reason.contains("matched 0 elements; closest names on the page: button \"Sign in\""),
            "{reason}"
        );
    }
    let lines = wf.jsonl("nomatch", "steps.jsonl").await;
    assert!(lines.iter().all(|l| l["result"]["error"] == "PRECHECK_NO_MATCH"));
    // A failed run keeps no final page: its failure screenshot is the artefact.
    assert!(
        !result.artifacts.iter().any(|k| k.ends_with("final.md")),
        "{:?}",
        result.artifacts
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn structured_steps_reach_dialogs_iframes_and_late_buttons() {
    reach_dialogs_iframes_and_late_buttons(Wf::start().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn structured_steps_reach_dialogs_iframes_and_late_buttons_on_playwright_mcp() {
    reach_dialogs_iframes_and_late_buttons(Wf::start_playwright_mcp().await).await;
}

async fn reach_dialogs_iframes_and_late_buttons(wf: Wf) {
    let text = r#"goto: /app/item?id=2
click: testid "add-main"
expect: dialog "Added to cart"
click: button "Close"
goto: /app/frame
fill: textbox "Email address" = bob@example.com
click: button "Subscribe"
expect: text "Subscribed"
goto: /app/late
click: button "Download report"
expect: text "Report downloaded" exact
wait: 10ms
"#;
    let (result, lease) = wf.run("reach", "/app/login", text, None).await;
    assert_eq!(
        result.status,
        RunStatus::Completed,
        "{result:#?}\n{}",
        wf.console_text()
    );
    assert_eq!(result.totals.steps_ok, 12);
    assert_eq!(
        page_text(lease.as_ref(), "document.getElementById('state').textContent").await,
        "Report downloaded"
    );
    // The e-mail typed into the iframe is masked in every output.
    let console = wf.console_text();
    assert!(!console.contains("bob@example.com"), "{console}");
    for (key, text) in wf.all_artifacts().await {
        assert!(!text.contains("bob@example.com"), "{key}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn structured_step_refuses_two_same_name_buttons() {
    refuses_two_same_name_buttons(Wf::start().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn structured_step_refuses_two_same_name_buttons_on_playwright_mcp() {
    refuses_two_same_name_buttons(Wf::start_playwright_mcp().await).await;
}

async fn refuses_two_same_name_buttons(wf: Wf) {
    let text = "click: button \"Add to cart\"\nclick: button \"Close\"";
    let (result, lease) = wf.run("twins", "/app/item?id=1", text, None).await;
    assert_eq!(result.status, RunStatus::Failed);
    assert_eq!(result.error.as_ref().unwrap().kind, ErrorKind::StepFailed);
    assert_eq!(result.steps[0].attempts, 3);
    assert!(
        result.steps[0]
            .reasons
            .iter()
            .all(|r| r.starts_with("PRECHECK_NOT_UNIQUE") && r.contains("matched 2 elements")),
        "{:?}",
        result.steps[0].reasons
    );
    assert_eq!(result.steps[1].status, RunStatus::Skipped);
    // Nothing was clicked.
    assert_eq!(
        page_text(lease.as_ref(), "document.getElementById('added').open").await,
        false
    );
    let lines = wf.jsonl("twins", "steps.jsonl").await;
    assert!(lines.iter().all(|l| l["precheckCount"] == 2));
    assert!(result.steps[0].screenshot.is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_structured_input_is_a_typed_error() {
    let wf = Wf::start().await;
    let lease = wf.page().await;
    let err =
        oxwright_workflow::Workflow::parse("click: button \"Sign in\"\nfill: textbox \"Name\"").unwrap_err();
    assert!(err.to_string().contains("line 2"), "{err}");
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    // A placeholder with no secret behind it fails the run with a typed error, naming only the name.
    let workflow = oxwright_workflow::Workflow::parse("fill: textbox \"Username\" = {{NOBODY}}").unwrap();
    let result = oxwright_workflow::run_workflow(
        lease.as_ref(),
        &workflow,
        wf.deps(None, wf.secrets()),
        wf.options("nosecret", "/app/login"),
    )
    .await
    .unwrap();
    let err = result.error.expect("an error");
    assert_eq!(err.kind, ErrorKind::InvalidInput);
    assert!(err.message.contains("{{NOBODY}}"), "{}", err.message);
    // Plain language with no LLM configured is refused before anything runs.
    let plain = oxwright_workflow::Workflow::parse("Log in").unwrap();
    let err = oxwright_workflow::run_workflow(
        lease.as_ref(),
        &plain,
        wf.deps(None, wf.secrets()),
        wf.options("nollm", "/app/login"),
    )
    .await
    .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
}

/// Every verb and assertion of the structured grammar, no LLM.
const EVERY_CONTROL: &str = include_str!("wf/every_control.steps");

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_structured_verb_and_assertion_runs_on_chromium() {
    let wf = Wf::start().await;
    let (result, lease) = wf.run("controls", "/app/controls", EVERY_CONTROL, None).await;
    assert_eq!(
        result.status,
        RunStatus::Completed,
        "{result:#?}\n{}",
        wf.console_text()
    );
    assert_eq!(result.totals.steps_ok, 37);
    // The multi-select's earlier choice was replaced, not added to.
    assert_eq!(
        page_text(
            lease.as_ref(),
            "[...document.getElementById('colours').selectedOptions].map(o => o.text).join('+')"
        )
        .await,
        "Red+Blue"
    );
    // A date input is one fillable textbox in the snapshot, not three spin buttons.
    let snap = lease
        .snapshot(&oxwright_engine::SnapshotOptions::default())
        .await
        .unwrap();
    assert!(snap.text.contains("textbox \"Delivery date\""), "{}", snap.text);
    assert!(!snap.text.contains("spinbutton"), "{}", snap.text);
    let lines = wf.jsonl("controls", "steps.jsonl").await;
    // The absent target was skipped, and says so.
    assert_eq!(lines[0]["completed"], true);
    assert_eq!(lines[0]["precheckCount"], 0);
    assert!(
        lines[0]["reason"]
            .as_str()
            .is_some_and(|r| r.starts_with("skipped:")),
        "{}",
        lines[0]
    );
    assert_eq!(lines[1]["precheckCount"], 1);
    assert_eq!(lines[1]["currentStepMeta"]["ifPresent"], true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_action_without_its_effect_and_a_false_assertion_fail_typed() {
    let wf = Wf::start().await;
    // The coupon field keeps only four characters: the fill did not take.
    let (result, lease) = wf
        .run(
            "refused",
            "/app/controls",
            "fill: textbox \"Coupon code\" = SPRING2026",
            None,
        )
        .await;
    assert_eq!(result.status, RunStatus::Failed, "{result:#?}");
    let reasons = &result.steps[0].reasons;
    assert_eq!(reasons.len(), 3, "{reasons:?}");
    assert!(
        reasons
            .iter()
            .all(|r| r.starts_with("ACTION_FAILED: ") && r.contains("did not keep the text")),
        "{reasons:?}"
    );
    // A date in the wrong format is refused, not typed into the picker.
    drop(lease);
    let (result, _lease) = wf
        .run(
            "baddate",
            "/app/controls",
            "fill: label \"Delivery date\" = 24/12/2026",
            None,
        )
        .await;
    assert_eq!(result.status, RunStatus::Failed, "{result:#?}");
    assert!(
        result.steps[0].reasons[0].contains("YYYY-MM-DD"),
        "{:?}",
        result.steps[0].reasons
    );
    let text = "fill: textbox \"Nickname\" = Ada\npress: textbox \"Nickname\" = Enter\nexpect: text status = \"Goodbye\"";
    let (result, _lease) = wf.run("falsehood", "/app/controls", text, None).await;
    assert_eq!(result.status, RunStatus::Failed, "{result:#?}");
    assert_eq!(result.totals.steps_ok, 2);
    let reasons = &result.steps[2].reasons;
    assert!(
        reasons[0].starts_with("ASSERTION_FAILED: expect text: its text is \"Hello, Ada\""),
        "{reasons:?}"
    );
    let artefact = wf.only_error_artefact("falsehood").await;
    assert_eq!(artefact["errorType"], "ASSERTION_FAILED");
    let hint = artefact["hint"].as_str().unwrap_or_default();
    assert!(
        hint.starts_with("The check did not hold") && hint.contains("Hello, Ada"),
        "{hint}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropdown_that_opens_on_focus_is_picked_from() {
    let wf = Wf::start().await;
    // Its first click's mousedown opens it and the click closes it again:
    // the pick needs a second click, as a person would give it.
    let (result, lease) = wf
        .run(
            "colour",
            "/app/controls",
            "select: combobox \"Colour\" = Blue\nexpect: text combobox \"Colour\" = \"Blue\"",
            None,
        )
        .await;
    assert_eq!(result.status, RunStatus::Completed, "{result:#?}");
    assert_eq!(result.steps[0].attempts, 1, "{result:#?}");
    assert_eq!(
        page_text(lease.as_ref(), "document.getElementById('colours').hidden").await,
        true
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropdown_that_ignores_the_pick_and_a_canvas_target_fail_typed() {
    let wf = Wf::start().await;
    // A custom dropdown is opened and the choice clicked, but it keeps showing "Light".
    let (result, _lease) = wf
        .run(
            "theme",
            "/app/controls",
            "select: combobox \"Theme\" = Dark",
            None,
        )
        .await;
    assert_eq!(result.status, RunStatus::Failed, "{result:#?}");
    assert!(
        result.steps[0]
            .reasons
            .iter()
            .all(|r| r
                .starts_with("ACTION_FAILED: custom dropdown: after picking \"Dark\" it does not show it")),
        "{:?}",
        result.steps[0].reasons
    );
    // A target drawn on a canvas is refused at once: one attempt, CANVAS_UNSUPPORTED.
    let (result, _lease) = wf
        .run("arcade", "/app/canvas", "click: button \"Play\"", None)
        .await;
    assert_eq!(result.status, RunStatus::Failed, "{result:#?}");
    assert_eq!(result.steps[0].attempts, 1, "{result:#?}");
    assert!(
        result.steps[0].reasons[0].starts_with("CANVAS_UNSUPPORTED: "),
        "{:?}",
        result.steps[0].reasons
    );
    let artefact = wf.only_error_artefact("arcade").await;
    assert_eq!(artefact["errorType"], "CANVAS_UNSUPPORTED");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn structured_steps_reach_a_shadow_root() {
    let wf = Wf::start().await;
    let text = r#"fill: textbox "Display name" = Ada
click: button "Save"
expect: text status = "Saved Ada"
"#;
    let (result, _page) = wf.run("deep", "/app/shadow", text, None).await;
    assert_eq!(result.status, RunStatus::Completed, "{result:#?}");
    assert_eq!(result.totals.steps_ok, 3);
}

/// A form in a frame of another site (`localhost` in a page of
/// `127.0.0.1`: with site isolation on, a renderer of its own) and in a
/// frame of another origin of the same site (a second loopback port),
/// filled and submitted by structured steps.
async fn forms_in_frames_of_another_site_and_another_port(playwright_mcp: bool) {
    let mut wf = Wf::start_on(playwright_mcp).await;
    let second = wf.second_origin().await;
    let text = format!(
        r#"fill: textbox "Email address" = ada@example.com
click: button "Subscribe"
expect: text "Subscribed ada@example.com"
goto: /app/xframe?host=127.0.0.1&port={}
fill: textbox "Email address" = bob@example.com
click: button "Subscribe"
expect: text "Subscribed bob@example.com"
"#,
        second.addr().port()
    );
    let (result, page) = wf.run("frames", "/app/xframe", &text, None).await;
    assert_eq!(
        result.status,
        RunStatus::Completed,
        "{result:#?}\n{}",
        wf.console_text()
    );
    assert_eq!(result.totals.steps_ok, 7);
    // Each form came from where it should.
    let hosts: Vec<String> = wf
        .site
        .requests()
        .iter()
        .chain(second.requests().iter())
        .filter(|r| r.path == "/app/frame/inner")
        .flat_map(|r| {
            r.headers
                .iter()
                .filter(|(k, _)| k == "host")
                .map(|(_, v)| v.clone())
        })
        .collect();
    assert!(hosts.iter().any(|h| h.starts_with("localhost:")), "{hosts:?}");
    assert!(
        hosts.contains(&second.addr().to_string()),
        "the second form did not come from the second port: {hosts:?}"
    );
    if !playwright_mcp {
        // Site isolation is on: the frame of another site rendered in a
        // process of its own (a target of its own, out of the page's).
        use chromiumoxide::cdp::browser_protocol::target::GetTargetsParams;
        let chromium = page
            .as_any()
            .downcast_ref::<oxwright_browser::ChromiumPage>()
            .expect("a Chromium page");
        page.goto(
            &format!("http://{}/app/xframe", wf.site.addr()).parse().unwrap(),
            &oxwright_engine::GotoOptions::load(std::time::Duration::from_secs(15)),
        )
        .await
        .expect("goto");
        page.wait_for(
            &oxwright_engine::WaitCondition::Text("Subscribe".into()),
            std::time::Duration::from_secs(10),
        )
        .await
        .expect("the frame's form shows");
        let targets = chromium
            .lease()
            .expect("a lease")
            .call(GetTargetsParams::default())
            .await
            .expect("targets");
        assert!(
            targets.target_infos.iter().any(|t| t.r#type == "iframe"
                && t.url
                    .contains(&format!("localhost:{}/app/frame/inner", wf.site.addr().port()))),
            "the frame of another site is not out of process: {:?}",
            targets
                .target_infos
                .iter()
                .map(|t| (&t.r#type, &t.url))
                .collect::<Vec<_>>()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forms_in_frames_of_another_site_and_another_port_are_filled_and_submitted() {
    forms_in_frames_of_another_site_and_another_port(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forms_in_frames_of_another_site_and_another_port_on_playwright_mcp() {
    forms_in_frames_of_another_site_and_another_port(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_row_far_down_a_10000_row_virtual_list_is_found_and_clicked() {
    let wf = Wf::start().await;
    let text = "click: button \"Open order 7321\" exact\nexpect: text status = \"Opened order 7321\"";
    let workflow = oxwright_workflow::Workflow::parse(text).unwrap();
    // Some 540 screens to read: a longer action timeout than the other
    // tests' 5 s, so a loaded machine reading them slower does not fail it:
    // what is tested is that the row is found, not how fast.
    let mut opts = wf.options("orders", "/app/orders");
    opts.action_timeout = std::time::Duration::from_secs(30);
    let page = wf.page().await;
    let result = oxwright_workflow::run_workflow(page.as_ref(), &workflow, wf.deps(None, wf.secrets()), opts)
        .await
        .expect("the workflow runs");
    assert_eq!(
        result.status,
        RunStatus::Completed,
        "{result:#?}\n{}",
        wf.console_text()
    );
    // Found by scrolling the list (from where it stood, wrapping to the
    // top), not by a row that was drawn all along.
    assert_eq!(result.steps[0].status, RunStatus::Completed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_link_and_a_button_that_open_new_tabs_are_followed() {
    let wf = Wf::start().await;
    let text = r#"click: link "Shipping rates"
expect: url includes /app/help/article?id=7
click: button "Yes"
expect: text status = "Thanks for your feedback"
goto: /app/help
click: button "Contact us"
fill: textbox "Your message" = Where is my parcel?
click: button "Send"
expect: text status = "Message sent"
"#;
    let (result, page) = wf.run("tabs", "/app/help", text, None).await;
    assert_eq!(
        result.status,
        RunStatus::Completed,
        "{result:#?}\n{}",
        wf.console_text()
    );
    assert_eq!(result.totals.steps_ok, 9);
    let console = wf.console_text();
    assert_eq!(console.matches("opened a new tab").count(), 2, "{console}");
    assert!(result.final_url.unwrap().ends_with("/app/help/contact"));
    // The run's own page stayed where the second tab was opened from.
    assert!(page.url().await.unwrap().ends_with("/app/help"));
    // The new tabs' requests went through the same policy and server.
    assert_eq!(wf.site.hits("/app/help/article"), 1);
    let lines = wf.jsonl("tabs", "steps.jsonl").await;
    assert!(
        lines[0]["urlAfter"]
            .as_str()
            .unwrap()
            .contains("/app/help/article?id=7"),
        "{}",
        lines[0]
    );
}
