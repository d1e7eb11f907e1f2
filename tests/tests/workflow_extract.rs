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

/// Runs `workflow` from the invoices page in a page of its own, with
/// `schemas` and the scripted model when given.
async fn run_with(
    wf: &Wf,
    session: &str,
    workflow: &oxwright_workflow::Workflow,
    schemas: std::collections::BTreeMap<String, oxwright_jobs::JsonSchema>,
    llm: Option<&oxwright_fixtures::llm::ScriptedLlm>,
) -> Result<oxwright_jobs::WorkflowResult, oxwright_workflow::WorkflowError> {
    let page = wf.page().await;
    let mut opts = wf.options(session, "/app/invoices");
    opts.schemas = schemas;
    oxwright_workflow::run_workflow(page.as_ref(), workflow, wf.deps(llm, wf.secrets()), opts).await
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

/// `extract: FILE.json as NAME`: the page's Markdown goes to the model
/// with the schema read beside the workflow; an answer that breaks the
/// schema is sent back once with what is wrong; the valid one is the
/// output, and `expect: output` checks it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_extract_step_reads_the_page_into_a_json_schema_through_the_llm() {
    let wf = Wf::start().await;
    let llm = oxwright_fixtures::llm::ScriptedLlm::start()
        .await
        .expect("scripted llm starts");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("account.json"),
        r#"{"type": "object", "required": ["customer", "invoices"],
            "properties": {"customer": {"type": "string"},
                           "invoices": {"type": "array", "items": {"type": "object", "required": ["number", "total"],
                               "properties": {"number": {"type": "string"}, "total": {"type": "number"}}}}}}"#,
    )
    .unwrap();
    let text = "extract: account.json as account\nexpect: output account.invoices count = 3\nexpect: output account.invoices[-1].total > 30\n";
    let workflow = oxwright_workflow::Workflow::parse(text).unwrap();
    let schemas = workflow.read_schemas(dir.path()).expect("the schema reads");
    let answer = json!({"customer": "Ada Lovelace", "invoices": [
        {"number": "INV-1", "total": 12.5}, {"number": "INV-2", "total": 7}, {"number": "INV-3", "total": 30.25}]});
    llm.push(oxwright_fixtures::llm::Reply::text(
        r#"{"customer": "Ada Lovelace"}"#,
    ));
    llm.push(oxwright_fixtures::llm::Reply::text(answer.to_string()));

    let result = run_with(&wf, "schema", &workflow, schemas.clone(), Some(&llm))
        .await
        .expect("the workflow runs");
    assert_eq!(result.status, RunStatus::Completed, "{result:#?}");
    assert_eq!(result.outputs["account"], answer);
    assert_eq!(result.totals.llm_calls, 2);
    assert!(result.steps[0].prompt_tokens > 0, "{:#?}", result.steps[0]);
    let calls = llm.received();
    assert_eq!(calls.len(), 2);
    let first = calls[0].prompt();
    assert!(
        first.contains("INV-3") && first.contains("Ada Lovelace"),
        "{first}"
    );
    assert!(
        calls[1].prompt().contains("invoices"),
        "the repair says what was missing"
    );

    // An answer that never fits fails the step after 3 calls, not more.
    for _ in 0..3 {
        llm.push(oxwright_fixtures::llm::Reply::text(r#"{"customer": 7}"#));
    }
    let result = run_with(&wf, "unfit", &workflow, schemas.clone(), Some(&llm))
        .await
        .expect("the workflow runs");
    assert_eq!(result.status, RunStatus::Failed, "{result:#?}");
    assert_eq!((result.totals.llm_calls, llm.received().len()), (3, 5));
    step_says(
        &result,
        0,
        "extract: account.json: the model's answer did not fit the schema after 3 calls",
    );
    assert_eq!(
        wf.only_error_artefact("unfit").await["errorType"],
        "ASSERTION_FAILED"
    );
    assert!(result.outputs.is_empty(), "{:#?}", result.outputs);

    // Without the schema, or without a model, nothing runs.
    for (schemas, with_llm, says) in [
        (Default::default(), true, "carries no schema of that name"),
        (schemas, false, "reads the page through an LLM"),
    ] {
        let err = run_with(&wf, "refused", &workflow, schemas, with_llm.then_some(&llm))
            .await
            .expect_err("refused");
        assert!(err.to_string().contains(says), "{err}");
    }
    assert_eq!(llm.received().len(), 5);
}
