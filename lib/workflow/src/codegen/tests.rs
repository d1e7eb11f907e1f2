use serde_json::{Value, json};

use super::*;

fn record(n: u32, instruction: &str, decision: Value, navigated: bool, url: &str) -> StepRecord {
    serde_json::from_value(json!({
        "sessionId": "s", "stepNumber": n, "stepId": format!("step_{n}_1"), "attempt": 1,
        "originalInstruction": instruction, "currentStepMeta": {}, "metadataPresent": false,
        "metadataMissing": true, "metadataKeys": [], "decision": decision, "precheckCount": 1,
        "result": {"success": true, "navigated": navigated}, "completed": true, "reason": null,
        "tokens": {"prompt": 0, "completion": 0}, "durations": {"snapshotMs": 0.0, "decisionMs": 0.0,
        "precheckMs": 0.0, "actionMs": 0.0, "settleMs": 0.0, "judgeMs": 0.0, "totalMs": 0.0},
        "snapshotBytes": 0, "url": url, "timestamp": "2026-01-01T00:00:00Z"
    }))
    .unwrap()
}

fn result(mode: &str, steps: usize) -> Value {
    json!({"session_id": "s", "name": "it's a flow", "mode": mode, "status": "completed",
           "start_url": "http://127.0.0.1:9/app/login", "steps": vec![json!({}); steps]})
}

#[test]
fn llm_steps_become_locator_calls_with_env_placeholders_and_url_effects() {
    let records = vec![
        record(
            1,
            "Type {{PASSWORD}} into Password",
            json!({"locator": {"method": "getByRole", "role": "textbox",
            "name": "Password"}, "action": "fill", "value": {"kind": "placeholder", "value": "{{PASSWORD}}"}}),
            false,
            "http://127.0.0.1:9/app/login",
        ),
        record(
            2,
            "Click Sign in",
            json!({"locator": {"method": "getByRole", "role": "button", "name": "Sign in"},
            "action": "click"}),
            true,
            "http://127.0.0.1:9/app/login",
        ),
        record(
            3,
            "Open it",
            json!({"locator": {"method": "getByText", "text": "Rust 'in' Action", "exact": true},
            "action": "click"}),
            false,
            "http://127.0.0.1:9/app/search",
        ),
    ];
    let spec = generate(&result("llm", 3), &records, &Sanitizer::new()).unwrap();
    let c = &spec.code;
    assert!(
        c.contains("await page.goto('http://127.0.0.1:9/app/login');"),
        "{c}"
    );
    assert!(
        c.contains("await page.getByRole('textbox', { name: 'Password' }).fill(env('PASSWORD'));"),
        "{c}"
    );
    assert!(
        c.contains("await expect(page).toHaveURL('http://127.0.0.1:9/app/search');"),
        "{c}"
    );
    assert!(
        c.contains("page.getByText('Rust \\'in\\' Action', { exact: true }).click();"),
        "{c}"
    );
    assert!(c.contains("test('it\\'s a flow'"), "{c}");
    assert_eq!(spec.env, ["PASSWORD"]);
}

#[test]
fn structured_lines_keep_nth_if_present_and_assertions() {
    let lines = [
        "click: button \"Accept cookies\" if present",
        "click: button \"Add\" nth 1",
        "expect: checked checkbox \"News\"",
        "expect: count listitem = 3",
        "expect: text status = \"hello, {{LOGIN_ID}}\"",
        "expect: url includes /app/a.b",
    ];
    let records: Vec<StepRecord> = lines
        .iter()
        .enumerate()
        .map(|(i, l)| record(i as u32 + 1, l, json!({"action": "click"}), false, ""))
        .collect();
    let spec = generate(&result("structured", lines.len()), &records, &Sanitizer::new()).unwrap();
    let c = &spec.code;
    let cookie = "page.getByRole('button', { name: 'Accept cookies' })";
    assert!(
        c.contains(&format!(
            "if ((await {cookie}.count()) > 0) await {cookie}.click();"
        )),
        "{c}"
    );
    assert!(
        c.contains("page.getByRole('button', { name: 'Add' }).nth(1).click();"),
        "{c}"
    );
    assert!(
        c.contains("await expect(page.getByRole('checkbox', { name: 'News' })).toBeChecked();"),
        "{c}"
    );
    assert!(
        c.contains("getByRole('listitem').filter({ visible: true })).toHaveCount(3);"),
        "{c}"
    );
    assert!(
        c.contains("toContainText('hello, ' + env('LOGIN_ID'), { ignoreCase: true });"),
        "{c}"
    );
    assert!(
        c.contains("await expect(page).toHaveURL(/\\/app\\/a\\.b/);"),
        "{c}"
    );
}

#[test]
fn secrets_are_refused() {
    let literal_password = vec![record(
        1,
        "Type the password",
        json!({"locator": {"method": "getByLabel",
        "text": "Password"}, "action": "fill", "value": {"kind": "literal", "value": "x"}}),
        false,
        "",
    )];
    let err = generate(&result("llm", 1), &literal_password, &Sanitizer::new()).unwrap_err();
    assert!(matches!(err, CodegenError::Secret(_)), "{err}");
    let sanitizer = Sanitizer::new();
    sanitizer.register("TOKEN", "s3cr3t-value");
    let leaked = vec![record(
        1,
        "Search",
        json!({"locator": {"method": "getByRole", "role": "searchbox",
        "name": "Search"}, "action": "fill", "value": {"kind": "literal", "value": "s3cr3t-value"}}),
        false,
        "",
    )];
    let err = generate(&result("llm", 1), &leaked, &sanitizer).unwrap_err();
    assert!(
        err.to_string().contains("{{TOKEN}}") && !err.to_string().contains("s3cr3t-value"),
        "{err}"
    );
}

#[test]
fn a_failed_run_makes_no_spec() {
    let mut r = result("llm", 1);
    r["status"] = json!("failed");
    assert!(matches!(
        generate(&r, &[], &Sanitizer::new()),
        Err(CodegenError::Unusable(_))
    ));
}
