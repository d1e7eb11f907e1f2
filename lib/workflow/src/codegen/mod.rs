//! `oxwright codegen`: a `@playwright/test` spec from a session's completed
//! step records. Structured steps are re-read from their recorded line (it
//! keeps `nth`, `if present` and the assertion); LLM steps from their
//! decision. Placeholders become `env('NAME')` reads of `process.env`; a
//! spec holding anything the sanitiser would mask is refused. [`verify`]
//! runs a spec headless before it is published.

mod publish;
mod ts;
mod verify;

use std::fmt::Write as _;

use oxwright_jobs::{StepRecord, StepValue};
use serde_json::Value;

use crate::steps::{Assertion, StepAction, WorkflowBody};
use crate::{Sanitizer, Workflow};

pub use publish::{FAILED_SPEC_TS, FAILURE_TXT, PublishError, Published, SPEC_TS, codegen_session};
pub use verify::{Verified, VerifyOptions, verify};

/// Why no spec could be written.
#[derive(Debug, thiserror::Error)]
pub enum CodegenError {
    /// The session cannot be turned into a spec.
    #[error("{0}")]
    Unusable(String),
    /// A recorded value would put a secret into the file.
    #[error("refusing to write a secret into the spec: {0}")]
    Secret(String),
}

/// A generated spec.
#[derive(Debug, Clone)]
pub struct Spec {
    /// The TypeScript.
    pub code: String,
    /// The placeholders it reads from `process.env`.
    pub env: Vec<String>,
}

/// Control names whose literal values are secrets (a password typed as
/// text instead of `{{NAME}}`).
const SECRET_FIELDS: &[&str] = &[
    "password", "passcode", "passwort", "secret", "token", "pin", "otp", "cvv", "cvc",
];

/// The spec's helper for `select`: `selectOption` on a native select, else
/// open the combobox and click the option (as the run does).
const CHOOSE: &str = "\
async function choose(page: Page, target: Locator, value: string): Promise<void> {
  if (await target.evaluate((e) => e instanceof HTMLSelectElement)) {
    await target.selectOption(value);
    return;
  }
  await target.click();
  await page.getByRole('option', { name: value }).click();
}

";

struct Gen {
    lines: Vec<String>,
    env: Vec<String>,
}

impl Gen {
    fn push(&mut self, line: String) {
        self.lines.push(format!("  {line}"));
    }
}

/// Writes the spec for a session from its `result.json` (as stored) and
/// its step records. Only a completed run makes a spec.
pub fn generate(result: &Value, records: &[StepRecord], sanitizer: &Sanitizer) -> Result<Spec, CodegenError> {
    let status = result.get("status").and_then(Value::as_str).unwrap_or("unknown");
    if status != "completed" {
        return Err(CodegenError::Unusable(format!(
            "the session's run is {status}; only a completed run makes a spec"
        )));
    }
    let start = result
        .get("start_url")
        .and_then(Value::as_str)
        .ok_or_else(|| CodegenError::Unusable("result.json has no start_url".into()))?;
    let structured = result.get("mode").and_then(Value::as_str) == Some("structured");
    // Steps a `then stop` left unrun have no record and no line.
    let ran: Vec<u32> = result
        .get("steps")
        .and_then(Value::as_array)
        .map(|steps| {
            steps
                .iter()
                .enumerate()
                .filter(|(_, s)| s.get("status").and_then(Value::as_str) != Some("skipped"))
                .map(|(i, _)| i as u32 + 1)
                .collect()
        })
        .unwrap_or_default();
    let completed: Vec<&StepRecord> = ran
        .into_iter()
        .map(|n| {
            records
                .iter()
                .rfind(|r| r.step_number == n && r.completed)
                .ok_or_else(|| {
                    CodegenError::Unusable(format!("step {n} has no completed record in steps.jsonl"))
                })
        })
        .collect::<Result<_, _>>()?;
    let mut g = Gen {
        lines: Vec::new(),
        env: Vec::new(),
    };
    g.push(format!("await page.goto({});", ts::string(start)));
    for (i, rec) in completed.iter().enumerate() {
        g.lines.push(String::new());
        g.push(format!(
            "// step {}: {}",
            rec.step_number,
            comment(&rec.original_instruction)
        ));
        let parsed = if structured {
            structured_step(&rec.original_instruction)
        } else {
            None
        };
        match parsed {
            Some(action) => step_from_line(&mut g, &action, rec, start)?,
            None => step_from_decision(&mut g, rec)?,
        }
        // A verified effect: the page the next step started on.
        let navigated = rec.result.navigated == Some(true);
        let after = rec
            .url_after
            .clone()
            .or_else(|| completed.get(i + 1).map(|n| n.url.clone()))
            .filter(|u| !u.is_empty() && *u != rec.url);
        if navigated && let Some(url) = after {
            g.push(format!("await expect(page).toHaveURL({});", ts::string(&url)));
        }
    }
    let name = result
        .get("name")
        .and_then(Value::as_str)
        .or_else(|| result.get("session_id").and_then(Value::as_str))
        .unwrap_or("workflow");
    let session = result
        .get("session_id")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let mut code = String::new();
    let _ = writeln!(
        code,
        "// Generated by `oxwright codegen` from session {}.",
        comment(session)
    );
    let _ = writeln!(
        code,
        "// Placeholders are read from the environment: {}.",
        if g.env.is_empty() {
            "none".to_string()
        } else {
            g.env.join(", ")
        }
    );
    code.push_str("import { test, expect, type Locator, type Page } from '@playwright/test';\n\n");
    code.push_str(
        "function env(name: string): string {\n  const value = process.env[name];\n  \
         if (value === undefined) throw new Error(`set ${name} in the environment`);\n  return value;\n}\n\n",
    );
    if g.lines.iter().any(|l| l.contains("await choose(")) {
        code.push_str(CHOOSE);
    }
    let _ = writeln!(code, "test({}, async ({{ page }}) => {{", ts::string(name));
    for l in &g.lines {
        let _ = writeln!(code, "{}", l.trim_end());
    }
    code.push_str("});\n");
    refuse_masked(&code, sanitizer)?;
    Ok(Spec { code, env: g.env })
}

/// One line of text for a `//` comment.
fn comment(text: &str) -> String {
    text.replace(['\n', '\r', '\u{2028}', '\u{2029}'], " ")
}

fn structured_step(line: &str) -> Option<StepAction> {
    match Workflow::parse(line).ok()?.body {
        WorkflowBody::Structured(mut steps) if steps.len() == 1 => Some(steps.remove(0).action),
        _ => None,
    }
}

/// Fails when the sanitiser would change a line: a registered secret's
/// value (or data it masks) made it into the spec.
fn refuse_masked(code: &str, sanitizer: &Sanitizer) -> Result<(), CodegenError> {
    for (i, line) in code.lines().enumerate() {
        if sanitizer.clean(line) != line {
            return Err(CodegenError::Secret(format!(
                "line {} holds a value the sanitiser masks: {}",
                i + 1,
                sanitizer.clean(line)
            )));
        }
    }
    Ok(())
}

fn check_secret_field(
    locator: Option<&crate::Locator>,
    value: Option<&StepValue>,
) -> Result<(), CodegenError> {
    let (Some(locator), Some(StepValue::Literal(_))) = (locator, value) else {
        return Ok(());
    };
    let name = match locator {
        crate::Locator::Role { name, .. } => name.clone().unwrap_or_default(),
        crate::Locator::Label { text, .. } | crate::Locator::Placeholder { text, .. } => text.clone(),
        crate::Locator::TestId { test_id } => test_id.clone(),
        crate::Locator::Css { selector } => selector.clone(),
        _ => String::new(),
    }
    .to_lowercase();
    match SECRET_FIELDS
        .iter()
        .find(|f| name.split(|c: char| !c.is_alphanumeric()).any(|w| w == **f))
    {
        Some(_) => Err(CodegenError::Secret(format!(
            "{locator} was given a literal value, not a {{{{NAME}}}} placeholder"
        ))),
        None => Ok(()),
    }
}

fn act(g: &mut Gen, target: &str, action: &str, value: Option<&str>) -> Result<String, CodegenError> {
    let v = |g: &mut Gen| -> Result<String, CodegenError> {
        let text =
            value.ok_or_else(|| CodegenError::Unusable(format!("{action} recorded without a value")))?;
        Ok(ts::value(text, &mut g.env))
    };
    Ok(match action {
        "click" => format!("await {target}.click();"),
        "dblclick" => format!("await {target}.dblclick();"),
        "fill" => format!("await {target}.fill({});", v(g)?),
        // A native <select>, or an ARIA combobox whose option is clicked.
        "select" => format!("await choose(page, {target}, {});", v(g)?),
        "press" => format!("await {target}.press({});", v(g)?),
        "check" => format!("await {target}.check();"),
        "uncheck" => format!("await {target}.uncheck();"),
        "hover" => format!("await {target}.hover();"),
        "wait" => format!("await {target}.waitFor();"),
        "scroll" => format!("await {target}.scrollIntoViewIfNeeded();"),
        other => {
            return Err(CodegenError::Unusable(format!(
                "no Playwright call for action {other:?}"
            )));
        }
    })
}

fn step_from_decision(g: &mut Gen, rec: &StepRecord) -> Result<(), CodegenError> {
    let d = rec
        .decision
        .as_ref()
        .ok_or_else(|| CodegenError::Unusable(format!("step {} has no decision", rec.step_number)))?;
    check_secret_field(d.locator.as_ref(), d.value.as_ref())?;
    let value = d.value.as_ref().map(StepValue::text);
    match (&d.locator, d.action.as_str()) {
        (None, "goto") => {
            let url = d.url.as_deref().unwrap_or(&rec.url);
            let url = ts::value(url, &mut g.env);
            g.push(format!("await page.goto({url});"));
        }
        (None, "press") => {
            let key = ts::value(value.unwrap_or_default(), &mut g.env);
            g.push(format!("await page.keyboard.press({key});"));
        }
        (None, "sleep") | (None, "dialog") | (None, "scroll") => {
            return Err(CodegenError::Unusable(format!(
                "step {}: {} is only read from a structured line",
                rec.step_number, d.action
            )));
        }
        (Some(locator), "expect") => {
            let target = ts::locator(locator, None, &mut g.env);
            g.push(format!("await expect({target}).toBeVisible();"));
        }
        (Some(locator), action) => {
            let target = ts::locator(locator, None, &mut g.env);
            let line = act(g, &target, action, value)?;
            g.push(line);
        }
        (None, other) => {
            return Err(CodegenError::Unusable(format!(
                "step {}: {other} without a target",
                rec.step_number
            )));
        }
    }
    Ok(())
}

fn step_from_line(
    g: &mut Gen,
    action: &StepAction,
    rec: &StepRecord,
    start: &str,
) -> Result<(), CodegenError> {
    match action {
        StepAction::Goto(raw) => {
            let url = rec
                .decision
                .as_ref()
                .and_then(|d| d.url.clone())
                .or_else(|| {
                    url::Url::parse(start)
                        .ok()
                        .and_then(|s| s.join(raw).ok())
                        .map(String::from)
                })
                .unwrap_or_else(|| raw.clone());
            let url = ts::value(&url, &mut g.env);
            g.push(format!("await page.goto({url});"));
        }
        StepAction::Sleep(d) => g.push(format!("await page.waitForTimeout({});", d.as_millis())),
        StepAction::PressKey(key) => {
            let key = ts::value(key, &mut g.env);
            g.push(format!("await page.keyboard.press({key});"));
        }
        StepAction::Dialog { accept, text } => {
            let how = match (accept, text) {
                (true, Some(t)) => format!("dialog.accept({})", ts::value(t, &mut g.env)),
                (true, None) => "dialog.accept()".into(),
                (false, _) => "dialog.dismiss()".into(),
            };
            // Like the run: this answer replaces the previous one.
            g.push("page.removeAllListeners('dialog');".into());
            g.push(format!("page.on('dialog', (dialog) => {how});"));
        }
        StepAction::ScrollPage(to) => g.push(format!("await page.evaluate({});", ts::string(to.script()))),
        StepAction::Act {
            locator,
            nth,
            action,
            value,
            if_present,
            each,
            then_stop,
        } => {
            let recorded = value.as_ref().map(StepValue::from);
            check_secret_field(Some(locator), recorded.as_ref())?;
            let target = ts::locator(locator, *nth, &mut g.env);
            // `each`: the action on every match, one after the other.
            let acted = if *each { "el" } else { target.as_str() };
            let line = match recorded.as_ref().and_then(|v| several(locator, v.text())) {
                Some(options) if *action == crate::Action::Select => {
                    format!("await {acted}.selectOption({});", ts::array(&options))
                }
                _ => act(g, acted, action.as_str(), recorded.as_ref().map(StepValue::text))?,
            };
            let line = if *each {
                format!("for (const el of await {target}.all()) {line}")
            } else {
                line
            };
            match (*if_present, *then_stop) {
                (true, true) => g.push(format!("if ((await {target}.count()) > 0) {{ {line} return; }}")),
                (true, false) => g.push(format!("if ((await {target}.count()) > 0) {line}")),
                _ => g.push(line),
            }
        }
        StepAction::Else { first, otherwise } => {
            // The first step in a `try`, the `else` step in its `catch`.
            let at = g.lines.len();
            step_from_line(g, first, rec, start)?;
            // A fill failed in the run when the field did not keep the
            // text; Playwright's fill does not check that, so the spec does.
            if let StepAction::Act {
                locator,
                nth,
                action: crate::Action::Fill,
                value: Some(value),
                each: false,
                ..
            } = &**first
            {
                let target = ts::locator(locator, *nth, &mut g.env);
                let text = ts::value(value.text(), &mut g.env);
                g.push(format!(
                    "await expect({target}).toHaveValue({text}, {{ timeout: 1000 }});"
                ));
            }
            let tried: Vec<String> = g.lines.drain(at..).collect();
            step_from_line(g, otherwise, rec, start)?;
            let fallback: Vec<String> = g.lines.drain(at..).collect();
            g.push("try {".into());
            g.lines.extend(tried.into_iter().map(|l| format!("  {l}")));
            g.push("} catch {".into());
            g.lines.extend(fallback.into_iter().map(|l| format!("  {l}")));
            g.push("}".into());
        }
        StepAction::Expect(a) => {
            let line = assertion(g, a)?;
            g.push(line);
        }
    }
    Ok(())
}

/// `Red, Blue` for a multiple select (a listbox) is two options, as the
/// run reads it.
fn several(locator: &crate::Locator, text: &str) -> Option<Vec<String>> {
    let listbox = matches!(locator, crate::Locator::Role { role, .. } if role == "listbox");
    (listbox && text.contains(',') && !text.contains("{{"))
        .then(|| text.split(',').map(|p| p.trim().to_string()).collect())
}

fn assertion(g: &mut Gen, a: &Assertion) -> Result<String, CodegenError> {
    Ok(match a {
        Assertion::Visible { locator, nth } => {
            format!(
                "await expect({}).toBeVisible();",
                ts::locator(locator, *nth, &mut g.env)
            )
        }
        Assertion::Hidden(locator) => format!(
            "await expect({}.filter({{ visible: true }})).toHaveCount(0);",
            ts::locator(locator, None, &mut g.env)
        ),
        Assertion::Text {
            locator,
            nth,
            expected,
        } => format!(
            "await expect({}).toContainText({}, {{ ignoreCase: true }});",
            ts::locator(locator, *nth, &mut g.env),
            ts::value(expected, &mut g.env)
        ),
        Assertion::Value {
            locator,
            nth,
            expected,
        } => {
            check_secret_field(Some(locator), Some(&StepValue::from(expected)))?;
            let target = ts::locator(locator, *nth, &mut g.env);
            match several(locator, expected.text()) {
                Some(options) => format!("await expect({target}).toHaveValues({});", ts::array(&options)),
                None => format!(
                    "await expect({target}).toHaveValue({});",
                    ts::value(expected.text(), &mut g.env)
                ),
            }
        }
        Assertion::Checked {
            locator,
            nth,
            checked,
        } => format!(
            "await expect({}).{}toBeChecked();",
            ts::locator(locator, *nth, &mut g.env),
            if *checked { "" } else { "not." }
        ),
        Assertion::Count { locator, expected } => format!(
            "await expect({}.filter({{ visible: true }})).toHaveCount({expected});",
            ts::locator(locator, None, &mut g.env)
        ),
        Assertion::UrlIncludes(text) => {
            format!("await expect(page).toHaveURL(/{}/);", ts::regex_literal(text))
        }
    })
}

#[cfg(test)]
mod tests;
