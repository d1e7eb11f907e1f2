//! `extract:` steps: a workflow reads a heading, a table with a header, a
//! table without one, every item of a list and a field's value into its
//! result's `outputs`, and `expect: output` steps check them; a password
//! field's value is never read; the spec codegen writes reads the same
//! values, checks them in Playwright and passes.

mod wf;

use oxwright_jobs::{ErrorKind, RunStatus};
use oxwright_secrets::Sanitizer;
use oxwright_workflow::codegen::{Published, VerifyOptions, codegen_session};
use serde_json::json;
use wf::Wf;

const READS: &str = r#"extract: text heading "Account of" as title
extract: table "Invoices" as invoices
extract: table "Plan" as plan
extract: text each listitem as tickets
extract: value textbox "Company" as company
expect: text "Open tickets"
expect: output title includes "ada lovelace"
expect: output invoices count = 3
expect: output invoices[-1].Total = "30.25  EUR"
expect: output plan[1][1] >= 3
expect: output tickets
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn extract_steps_read_texts_tables_lists_and_values_into_the_outputs() {
    let wf = Wf::start().await;
    let (result, _page) = wf.run("account", "/app/invoices", READS, None).await;
    assert_eq!(
        result.status,
        RunStatus::Completed,
        "{result:#?}\n{}",
        wf.console_text()
    );
    assert_eq!(result.totals.llm_calls, 0);
    let o = &result.outputs;
    assert_eq!(o["title"], json!("Account of Ada Lovelace"));
    assert_eq!(
        o["invoices"],
        json!([
            {"Number": "INV-1", "Date": "2026-01-05", "Total": "12.50 EUR"},
            {"Number": "INV-2", "Date": "2026-02-05", "Total": "7.00 EUR"},
            {"Number": "INV-3", "Date": "2026-03-05", "Total": "30.25 EUR"},
        ])
    );
    assert_eq!(o["plan"], json!([["Plan", "Pro"], ["Seats", "3"]]));
    assert_eq!(o["tickets"], json!(["Printer on fire", "Lost password"]));
    assert_eq!(o["company"], json!("Analytical Engines Ltd"));
    assert_eq!(o.len(), 5, "{o:#?}");
    // Each read is in its step's outcome and in the stored result.
    assert_eq!(
        result.steps[1].output.as_ref().map(|x| x.name.as_str()),
        Some("invoices")
    );
    let stored = wf.jsonl("account", "steps.jsonl").await;
    assert!(
        stored.iter().any(|l| l["currentStepMeta"]["output"] == "tickets"),
        "{stored:#?}"
    );

    // The spec reads the same elements and passes in Playwright.
    let node = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../infra/node");
    let published = codegen_session(
        &wf.store,
        "account",
        &Sanitizer::new(),
        Some(&VerifyOptions::new(node)),
    )
    .await
    .expect("codegen runs");
    let Published::Spec { spec, verified, .. } = published else {
        panic!("the spec failed: {published:#?}");
    };
    assert!(verified);
    for line in [
        "const outputs: Record<string, unknown> = {};",
        "outputs['invoices'] = await page.getByRole('table', { name: 'Invoices' }).evaluate(",
        "outputs['tickets'] = (await page.getByRole('listitem').allInnerTexts())",
        "outputs['company'] = await page.getByRole('textbox', { name: 'Company' }).inputValue();",
        "expect(Object.keys((outputs['invoices'] as any) ?? {}).length).toBe(3);",
        "expect(String((outputs['invoices'] as any)?.at(-1)?.['Total'] ?? '')",
    ] {
        assert!(spec.code.contains(line), "{line}\n{}", spec.code);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expect_on_an_output_fails_the_run_naming_what_was_read() {
    let wf = Wf::start().await;
    let text = "extract: table \"Invoices\" as invoices\nexpect: output invoices[0].Total = \"99.00 EUR\"\nexpect: output invoices count = 3\n";
    let (result, _page) = wf.run("wrong", "/app/invoices", text, None).await;
    assert_eq!(result.status, RunStatus::Failed, "{result:#?}");
    let err = result.error.as_ref().expect("an error");
    assert_eq!(err.kind, ErrorKind::StepFailed, "{err}");
    assert_eq!(result.steps[1].status, RunStatus::Failed);
    step_says(&result, 1, "output invoices[0].Total is \"12.50 EUR\"");
    assert_eq!(result.steps[2].status, RunStatus::Skipped);
    // What was read before the failure is still in the result.
    assert_eq!(result.outputs["invoices"].as_array().map(Vec::len), Some(3));

    // An output no step read says which were.
    let text = "extract: text heading \"Account of\" as title\nexpect: output titel = \"x\"\n";
    let (result, _page) = wf.run("typo", "/app/invoices", text, None).await;
    assert_eq!(result.status, RunStatus::Failed, "{result:#?}");
    step_says(&result, 1, "no output titel (the outputs are title)");
}

/// Step `index` (0-based) failed for a reason that says `text`.
fn step_says(result: &oxwright_jobs::WorkflowResult, index: usize, text: &str) {
    let reasons = &result.steps[index].reasons;
    assert!(reasons.iter().any(|r| r.contains(text)), "{reasons:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_password_fields_value_is_never_extracted() {
    let wf = Wf::start().await;
    let text = "extract: value css \"#pw\" as pw\n";
    let (result, _page) = wf.run("pw", "/app/invoices", text, None).await;
    assert_eq!(result.status, RunStatus::Failed, "{result:#?}");
    assert!(result.outputs.is_empty(), "{:#?}", result.outputs);
    let err = result.error.as_ref().expect("an error");
    assert_eq!(err.kind, ErrorKind::StepFailed, "{err}");
    assert!(
        result.steps[0]
            .reasons
            .iter()
            .all(|r| r.contains("password field")),
        "{:#?}",
        result.steps[0].reasons
    );
    for (key, body) in wf.all_artifacts().await {
        assert!(!body.contains("hunter2"), "{key} holds the password");
    }
}
