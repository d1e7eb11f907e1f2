//! A failed step's `ExecutionError` artefact (seed 001): its `errorType`,
//! the selectors tried with their durations and messages, the snapshot
//! trimmed at 50 KB, a screenshot with secret fields blacked out by the
//! engine, the page's console entries and a hint a person can act on.
//! Written under `sessions/<id>/errors/` and `screenshots/`, through the
//! run's sanitiser like every artefact.

use chrono::Utc;
use oxwright_engine::{ConsoleMessage, SnapshotOptions};
use serde_json::{Value, json};

use super::Run;
use crate::{ErrorType, Locator, WorkflowError};
use oxwright_steps::AttemptError;

/// Largest snapshot kept in an error artefact (seed: 50 KB).
pub(super) const ERROR_SNAPSHOT_BYTES: usize = 50_000;
/// Characters asked of the engine for the artefact's snapshot: more than
/// fits, so the cut is the seed's plain truncation, not the prompt's pruning.
const ERROR_SNAPSHOT_CHARS: usize = 4 * ERROR_SNAPSHOT_BYTES;
/// Console entries kept (the latest).
const CONSOLE_ENTRIES: usize = 50;

/// What kind of step failed; some error types follow from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum StepKind {
    /// A plain-language step decided by the LLM.
    Llm,
    /// A structured action (`click:`, `fill:` …).
    Act,
    /// A structured `goto:`.
    Goto,
    /// A structured `expect:` (an assertion).
    Expect,
    /// A structured `sleep:`.
    Sleep,
}

/// One attempt as the artefact tells it.
#[derive(Debug, Clone)]
pub(super) struct Tried {
    pub(super) attempt: u32,
    /// The failure code (`PRECHECK_NOT_UNIQUE` …), none when the attempt succeeded.
    pub(super) code: Option<String>,
    pub(super) precheck: Option<usize>,
    pub(super) locator: Option<Locator>,
    pub(super) action: String,
    pub(super) success: bool,
    /// Precheck, action and settle.
    pub(super) duration_ms: f64,
    pub(super) message: Option<String>,
}

impl Tried {
    fn not_found(&self) -> bool {
        match self.code.as_deref() {
            Some("TARGET_NOT_FOUND" | "PRECHECK_NO_MATCH") => true,
            Some("PRECHECK_NOT_UNIQUE") => self.precheck == Some(0),
            _ => false,
        }
    }

    /// The seed's `AttemptedSelector`, with the attempt's number and action.
    fn json(&self) -> Value {
        let (method, selector) = match &self.locator {
            None => (Value::Null, json!({})),
            Some(l @ (Locator::Css { .. } | Locator::XPath { .. })) => {
                (json!("locator"), json!({ "locator": l.to_string() }))
            }
            Some(l) => {
                let mut v = serde_json::to_value(l).unwrap_or(Value::Null);
                let method = v
                    .as_object_mut()
                    .and_then(|o| o.remove("method"))
                    .unwrap_or(Value::Null);
                (method, v)
            }
        };
        let mut out = json!({
            "attempt": self.attempt,
            "method": method,
            "selector": selector,
            "action": self.action,
            "success": self.success,
            "durationMs": self.duration_ms,
        });
        if let Some(n) = self.precheck {
            out["precheckCount"] = json!(n);
        }
        if let Some(m) = &self.message {
            out["errorMessage"] = json!(m);
        }
        out
    }
}

/// Chooses the step's `errorType` from its kind and its attempts.
pub(super) fn classify(kind: StepKind, tried: &[Tried]) -> ErrorType {
    let codes: Vec<&str> = tried.iter().filter_map(|t| t.code.as_deref()).collect();
    if codes.contains(&"CANVAS_UNSUPPORTED") {
        return ErrorType::CanvasUnsupported;
    }
    if kind == StepKind::Expect {
        return ErrorType::AssertionFailed;
    }
    if !tried.is_empty() && tried.iter().all(Tried::not_found) {
        return ErrorType::ElementNotFound;
    }
    if !codes.is_empty() && codes.iter().all(|c| *c == "LLM_FALLBACK_DISABLED") {
        return ErrorType::LlmFallbackDisabled;
    }
    let last = tried.last();
    match last.and_then(|t| t.code.as_deref()) {
        Some("NAVIGATION_FAILED") => ErrorType::NavigationFailed,
        Some("TIMEOUT") => ErrorType::Timeout,
        Some("PRECHECK_NOT_UNIQUE") if last.and_then(|t| t.precheck).unwrap_or(0) > 1 => {
            ErrorType::PrecheckNotUnique
        }
        Some("PRECHECK_NOT_UNIQUE" | "TARGET_NOT_FOUND" | "PRECHECK_NO_MATCH") => ErrorType::ElementNotFound,
        Some("ACTION_FAILED") => ErrorType::ActionFailed,
        Some("LLM_ERROR") => ErrorType::LlmError,
        Some("LLM_FALLBACK_DISABLED") => ErrorType::LlmFallbackDisabled,
        // A reading that did not hold (a model's answer that never fitted).
        Some("ASSERTION_FAILED") => ErrorType::AssertionFailed,
        _ => ErrorType::StepNotCompleted,
    }
}

/// Names of the snapshot's elements with `role` (up to five), for hints.
fn names_with_role(snapshot: &str, role: &str) -> Vec<String> {
    let prefix = format!("- {role} \"");
    let mut out = Vec::new();
    for line in snapshot.lines() {
        let line = line.trim_start();
        if let Some(rest) = line.strip_prefix(&prefix)
            && let Some(end) = rest.find('"')
        {
            let name = format!("\"{}\"", &rest[..end]);
            if !out.contains(&name) {
                out.push(name);
            }
        }
        if out.len() == 5 {
            break;
        }
    }
    out
}

/// A sentence a person can act on.
pub(super) fn hint(ty: ErrorType, tried: &[Tried], snapshot: &str, url: &str) -> String {
    let last = tried.last();
    let locator = last
        .and_then(|t| t.locator.as_ref())
        .map(|l| l.to_string())
        .unwrap_or_else(|| "the step's target".into());
    let message = last.and_then(|t| t.message.clone()).unwrap_or_default();
    match ty {
        ErrorType::ElementNotFound => {
            let seen = match last.and_then(|t| t.locator.as_ref()) {
                Some(Locator::Role { role, .. }) => {
                    let names = names_with_role(snapshot, role);
                    if names.is_empty() {
                        format!(" The page shows no {role} at all.")
                    } else {
                        format!(" The page's {role} elements: {}.", names.join(", "))
                    }
                }
                _ => String::new(),
            };
            format!(
                "Nothing on {url} matches {locator}.{seen} If the label changed, reword the step; \
                 if the page is not the one the step expects, check the step before it."
            )
        }
        ErrorType::PrecheckNotUnique => format!(
            "{locator} matches {} elements on {url}; name the one meant more precisely \
             (the exact name, a label, a test id or nth).",
            last.and_then(|t| t.precheck).unwrap_or(0)
        ),
        ErrorType::Timeout => format!(
            "A wait ran out on {url} ({message}). The element may never appear, or the page is \
             slower than the action timeout: check the page, or raise the timeout."
        ),
        ErrorType::NavigationFailed => format!(
            "Loading the page failed ({message}). Check the address, that the site is up, and \
             that the URL policy allows its host."
        ),
        ErrorType::AssertionFailed => match last.and_then(|t| t.precheck) {
            Some(n) if n > 1 => format!(
                "Expected exactly one {locator} on {url}, and {n} match: name the one meant more \
                 precisely (`exact`, a role, `nth N`)."
            ),
            _ if last.and_then(|t| t.code.as_deref()) == Some("ASSERTION_FAILED") => format!(
                "The check did not hold on {url} ({message}). Look at the screenshot: an earlier \
                 step may not have done what was meant, or the expected value changed."
            ),
            _ => format!(
                "Expected {locator} on {url}, and it is not there. Look at the screenshot: an earlier \
                 step may not have done what was meant, or the expected text changed."
            ),
        },
        ErrorType::CanvasUnsupported => "The target is drawn inside a canvas, which has no \
             elements to act on; do this step another way (keyboard, an API) or leave it out."
            .into(),
        ErrorType::LlmFallbackDisabled => format!(
            "The model's answers were not usable decisions ({message}); there is no heuristic \
             fallback. Use a model that follows the JSON format, or write the step in structured form."
        ),
        ErrorType::ActionFailed => format!(
            "{locator} was found but the action failed ({message}); it may be hidden, disabled or \
             covered by another element at that moment."
        ),
        ErrorType::StepNotCompleted => "The actions ran but the completion judge found the step \
             not done. Look at the screenshot; say in the step what the page shows when it is done."
            .into(),
        ErrorType::LlmError => {
            format!("The LLM endpoint failed ({message}); check its address, key and that it is up.")
        }
    }
}

/// Cuts `text` at [`ERROR_SNAPSHOT_BYTES`] (on a character boundary) and marks the cut.
pub(super) fn trim_snapshot(text: &str) -> String {
    if text.len() <= ERROR_SNAPSHOT_BYTES {
        return text.to_string();
    }
    let mut cut = ERROR_SNAPSHOT_BYTES;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}...<truncated>", &text[..cut])
}

/// The seed's `ConsoleEntry`s (type log, info, warn or error), the latest kept.
fn console_entries(messages: Vec<ConsoleMessage>) -> Vec<Value> {
    let skip = messages.len().saturating_sub(CONSOLE_ENTRIES);
    messages
        .into_iter()
        .skip(skip)
        .map(|m| {
            let ty = match m.level.as_str() {
                "warning" | "warn" => "warn",
                "error" | "pageerror" | "assert" => "error",
                "info" => "info",
                _ => "log",
            };
            let mut v = json!({ "type": ty, "text": m.text });
            if let Some(url) = m.url {
                v["url"] = json!(url);
            }
            if let Some(at) = m.timestamp_ms.and_then(chrono::DateTime::from_timestamp_millis) {
                v["timestamp"] = json!(at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true));
            }
            v
        })
        .collect()
}

/// What [`Run::write_failure`] wrote.
pub(super) struct Written {
    pub(super) error_type: ErrorType,
    pub(super) screenshot: Option<String>,
}

impl Run<'_> {
    /// Writes the failed step's screenshot and `ExecutionError`.
    pub(super) async fn write_failure(
        &mut self,
        number: u32,
        intent: &str,
        reasons: &[String],
        last_snapshot: &str,
    ) -> Result<Written, WorkflowError> {
        let ts = Utc::now().format("%Y%m%dT%H%M%S%.3fZ").to_string();
        let (screenshot, screenshot_error) = match self.exec.screenshot().await {
            Ok(png) => (
                self.log
                    .put_bytes(&format!("screenshots/step-{number}-{ts}.png"), png, "image/png")
                    .await
                    .ok(),
                None,
            ),
            Err(e) => {
                // A page that cannot black out a secret field gives no picture at all.
                tracing::warn!(error = %self.sanitizer.clean(&e.to_string()), "failure screenshot not taken");
                (None, Some(self.sanitizer.clean(&e.to_string())))
            }
        };
        let (snapshot, page_url) = match self
            .exec
            .snapshot_with(&SnapshotOptions {
                max_chars: ERROR_SNAPSHOT_CHARS,
            })
            .await
        {
            Ok(s) => (s.text, s.url),
            Err(_) => (last_snapshot.to_string(), String::new()),
        };
        let console = console_entries(self.exec.page().console().await);
        let error_type = classify(self.kind, &self.tried);
        let hint = hint(error_type, &self.tried, &snapshot, &page_url);
        let mut details = json!({
            "attempted": self.tried.iter().map(Tried::json).collect::<Vec<_>>(),
            "reasons": reasons,
            "ariaSnapshot": trim_snapshot(&snapshot),
            "screenshotPath": screenshot,
            "console": console,
        });
        if let Some(e) = screenshot_error {
            details["screenshotError"] = json!(e);
        }
        let error = json!({
            "sessionId": self.opts.session_id,
            "step": number,
            "intent": intent,
            "errorType": error_type,
            "pageUrl": page_url,
            "timestamp": Utc::now().to_rfc3339(),
            "details": details,
            "hint": hint,
        });
        self.log
            .put_json(&format!("errors/step-{number}-{ts}.json"), &error)
            .await?;
        self.log.say(&format!("  {}: {hint}", error_type.as_str()));
        Ok(Written {
            error_type,
            screenshot,
        })
    }
}

impl Run<'_> {
    /// Writes the artefact of a start page that did not load (step 0).
    pub(super) async fn start_failed(
        &mut self,
        start: &url::Url,
        e: &oxwright_engine::EngineError,
    ) -> Result<(), WorkflowError> {
        let err = AttemptError::from_engine(e, self.sanitizer.clean(&e.to_string()));
        self.kind = StepKind::Goto;
        self.tried = vec![Tried {
            attempt: 1,
            code: Some(err.code().to_string()),
            precheck: None,
            locator: None,
            action: "goto".into(),
            success: false,
            duration_ms: 0.0,
            message: Some(err.to_string()),
        }];
        self.write_failure(0, &format!("goto: {start}"), &[err.to_string()], "")
            .await
            .map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tried(code: Option<&str>, precheck: Option<usize>) -> Tried {
        Tried {
            attempt: 1,
            code: code.map(str::to_owned),
            precheck,
            locator: Some(Locator::Role {
                role: "button".into(),
                name: Some("Go".into()),
                exact: false,
            }),
            action: "click".into(),
            success: code.is_none(),
            duration_ms: 1.0,
            message: None,
        }
    }

    #[test]
    fn error_types_follow_the_attempts() {
        let nf = tried(Some("PRECHECK_NOT_UNIQUE"), Some(0));
        let twins = tried(Some("PRECHECK_NOT_UNIQUE"), Some(2));
        assert_eq!(
            classify(StepKind::Act, &[nf.clone(), nf.clone()]),
            ErrorType::ElementNotFound
        );
        assert_eq!(
            classify(StepKind::Act, &[nf.clone(), twins.clone()]),
            ErrorType::PrecheckNotUnique
        );
        assert_eq!(
            classify(StepKind::Expect, std::slice::from_ref(&nf)),
            ErrorType::AssertionFailed
        );
        assert_eq!(
            classify(StepKind::Llm, &[tried(Some("LLM_FALLBACK_DISABLED"), None)]),
            ErrorType::LlmFallbackDisabled
        );
        assert_eq!(
            classify(StepKind::Goto, &[tried(Some("NAVIGATION_FAILED"), None)]),
            ErrorType::NavigationFailed
        );
        assert_eq!(
            classify(StepKind::Llm, &[twins, tried(Some("TIMEOUT"), None)]),
            ErrorType::Timeout
        );
        assert_eq!(
            classify(StepKind::Llm, &[tried(Some("NOT_COMPLETED"), Some(1))]),
            ErrorType::StepNotCompleted
        );
        assert_eq!(
            classify(StepKind::Llm, &[nf, tried(Some("CANVAS_UNSUPPORTED"), Some(1))]),
            ErrorType::CanvasUnsupported
        );
    }

    #[test]
    fn snapshots_are_cut_at_50_kb_with_a_mark() {
        let long = "é".repeat(ERROR_SNAPSHOT_BYTES);
        let cut = trim_snapshot(&long);
        assert!(cut.ends_with("...<truncated>"));
        assert!(cut.len() <= ERROR_SNAPSHOT_BYTES + "...<truncated>".len());
        assert_eq!(trim_snapshot("short"), "short");
    }

    #[test]
    fn hints_name_what_the_page_has() {
        let snap = "- heading \"Sign in\"\n- button \"Log in\" [ref=e3]\n- button \"Help\" [ref=e4]";
        let h = hint(
            ErrorType::ElementNotFound,
            &[tried(Some("PRECHECK_NOT_UNIQUE"), Some(0))],
            snap,
            "http://app.test/login",
        );
        assert!(h.contains("\"Log in\", \"Help\""), "{h}");
        assert!(h.contains("button \"Go\"") || h.contains("Go"), "{h}");
    }
}
