//! `oxwright codegen` end to end: the spec generated from each fixture
//! flow (the LLM login → search → select, and every structured control
//! with its assertions) is run with `@playwright/test` from `infra/node`
//! and Debian Chromium against the fixture app, and passes; a spec whose
//! expectation no longer holds is kept as `failed.spec.ts`, not published.

mod wf;

use bytes::Bytes;
use oxwright_artifacts::ArtifactStore;
use oxwright_fixtures::APP_PASSWORD;
use oxwright_fixtures::llm::ScriptedLlm;
use oxwright_jobs::RunStatus;
use oxwright_secrets::Sanitizer;
use oxwright_workflow::codegen::{
    FAILED_SPEC_TS, FAILURE_TXT, Published, SPEC_TS, VerifyOptions, codegen_session,
};
use wf::{LOGIN_ID, Wf, script_login_search_open, script_login_search_select};

fn verify_options() -> VerifyOptions {
    let node = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../infra/node");
    assert!(
        node.join("node_modules/@playwright/test/cli.js").exists(),
        "@playwright/test is not installed in {} (run bash infra/install.sh)",
        node.display()
    );
    let mut opts = VerifyOptions::new(node);
    opts.env = vec![
        ("LOGIN_ID".into(), LOGIN_ID.into()),
        ("PASSWORD".into(), APP_PASSWORD.into()),
    ];
    opts
}

async fn text(wf: &Wf, key: &str) -> Option<String> {
    wf.store
        .get(key)
        .await
        .ok()
        .map(|b| String::from_utf8_lossy(&b).into_owned())
}

/// Generates and runs the session's spec; it must pass and be published.
async fn spec_passes(wf: &Wf, session: &str) -> String {
    let published = codegen_session(&wf.store, session, &Sanitizer::new(), Some(&verify_options()))
        .await
        .expect("codegen runs");
    let Published::Spec { key, spec, verified } = published else {
        panic!("the spec failed: {published:#?}");
    };
    assert!(verified);
    assert_eq!(key, format!("sessions/{session}/{SPEC_TS}"));
    assert_eq!(text(wf, &key).await.as_deref(), Some(spec.code.as_str()));
    assert!(!spec.code.contains(APP_PASSWORD), "{}", spec.code);
    spec.code
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spec_of_the_llm_login_flow_passes_in_playwright() {
    let wf = Wf::start().await;
    let llm = ScriptedLlm::start().await.expect("scripted llm starts");
    script_login_search_select(&llm);
    let (result, _page) = wf
        .run(
            "login",
            "/app/login",
            "Log in, find Rust in Action, ship it to Japan",
            Some(&llm),
        )
        .await;
    assert_eq!(result.status, RunStatus::Completed, "{result:#?}");
    let code = spec_passes(&wf, "login").await;
    assert!(code.contains("fill(env('PASSWORD'))"), "{code}");
    assert!(code.contains("fill(env('LOGIN_ID'))"), "{code}");
    assert!(
        code.contains("await expect(page).toHaveURL("),
        "a navigation is checked: {code}"
    );
    assert!(
        code.contains(
            "await choose(page, page.getByRole('combobox', { name: 'Shipping country' }), 'Japan');"
        ),
        "{code}"
    );
}

/// A flow whose last step navigates (an LLM-decided click) ends with a
/// check of the URL it reached: the spec proves the step did something.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spec_checks_the_url_a_navigating_last_step_reached() {
    let wf = Wf::start().await;
    let llm = ScriptedLlm::start().await.expect("scripted llm starts");
    script_login_search_open(&llm);
    let (result, _page) = wf
        .run(
            "open",
            "/app/login",
            "Log in, find Rust in Action and open it",
            Some(&llm),
        )
        .await;
    assert_eq!(result.status, RunStatus::Completed, "{result:#?}");
    let code = spec_passes(&wf, "open").await;
    let last_step = code.rfind("// step 6:").expect("step 6 is in the spec");
    assert!(
        code[last_step..].contains("await expect(page).toHaveURL("),
        "the last step's navigation is not checked: {code}"
    );
}

const CONTROLS: &str = include_str!("wf/every_control.steps");

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spec_of_the_structured_controls_flow_passes_and_a_broken_one_is_kept_aside() {
    let wf = Wf::start().await;
    let (result, _page) = wf.run("controls", "/app/controls", CONTROLS, None).await;
    assert_eq!(
        result.status,
        RunStatus::Completed,
        "{result:#?}\n{}",
        wf.console_text()
    );
    let code = spec_passes(&wf, "controls").await;
    for call in [
        ".toBeChecked()",
        ".not.toBeChecked()",
        ".toHaveValue('2026-12-24')",
        "toContainText('hello, ada', { ignoreCase: true })",
        ".toHaveCount(3)",
        ".nth(1).click()",
        "await expect(page).toHaveURL(/\\/app\\/controls/);",
    ] {
        assert!(code.contains(call), "{call} missing from:\n{code}");
    }

    // The page "changed": the recorded expectation no longer holds.
    let steps_key = "sessions/controls/steps.jsonl";
    let steps = text(&wf, steps_key).await.expect("steps.jsonl");
    let changed = steps.replace("hello, ada", "goodbye, ada");
    assert_ne!(changed, steps);
    wf.store
        .put(steps_key, Bytes::from(changed), "application/x-ndjson")
        .await
        .unwrap();
    wf.store
        .put("sessions/controls/codegen/spec.ts", Bytes::new(), "text/plain")
        .await
        .unwrap();
    let published = codegen_session(&wf.store, "controls", &Sanitizer::new(), Some(&verify_options()))
        .await
        .expect("codegen runs");
    let Published::Failed {
        key,
        output_key,
        output,
    } = published
    else {
        panic!("a spec expecting text the page does not show passed: {published:#?}");
    };
    assert_eq!(key, format!("sessions/controls/{FAILED_SPEC_TS}"));
    assert_eq!(output_key, format!("sessions/controls/{FAILURE_TXT}"));
    assert!(output.contains("goodbye, ada"), "{output}");
    assert!(text(&wf, &key).await.unwrap().contains("goodbye, ada"));
    assert_eq!(text(&wf, &output_key).await.as_deref(), Some(output.as_str()));
    assert_eq!(
        text(&wf, "sessions/controls/codegen/spec.ts").await.as_deref(),
        Some(""),
        "a failing spec is not published"
    );
}

/// The last match (`nth -1`), every match (`each`), a step with an `else`
/// and `if present then stop`: the run completes on Chromium, the steps
/// after the stop are not run, and the spec does the same in Playwright.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_last_every_else_and_stop_run_and_their_spec_passes() {
    let wf = Wf::start().await;
    let text = r#"check: each checkbox "Done"
expect: text status = "3 of 3 done"
click: button "Delete" nth -1
expect: text status = "Deleted Task 3"
expect: count listitem = 2
fill: textbox "Coupon" = SAVE10 else click: button "Cancel"
expect: text status = "Coupon cancelled"
click: tab "Shipping" if present then stop
click: button "Never on the page"
"#;
    let (result, page) = wf.run("tasks", "/app/tasks", text, None).await;
    assert_eq!(
        result.status,
        RunStatus::Completed,
        "{result:#?}\n{}",
        wf.console_text()
    );
    assert_eq!(result.totals.steps_ok, 8, "{result:#?}");
    assert_eq!(
        result.steps[8].status,
        RunStatus::Skipped,
        "the step after the stop ran: {result:#?}"
    );
    assert_eq!(
        wf::page_text(page.as_ref(), "document.getElementById('tab').textContent").await,
        "Shipping"
    );
    let lines = wf.jsonl("tasks", "steps.jsonl").await;
    let coupon = lines.iter().find(|l| l["stepNumber"] == 6).expect("step 6");
    assert!(
        coupon["reason"]
            .as_str()
            .is_some_and(|r| r.contains("`else` step ran")),
        "{coupon:#}"
    );
    let code = spec_passes(&wf, "tasks").await;
    for call in [
        "for (const el of await page.getByRole('checkbox', { name: 'Done' }).all()) await el.check();",
        ".nth(-1).click()",
        "try {",
        "} catch {",
        "return; }",
    ] {
        assert!(code.contains(call), "{call} missing from:\n{code}");
    }
    assert!(!code.contains("Never on the page"), "{code}");
}
