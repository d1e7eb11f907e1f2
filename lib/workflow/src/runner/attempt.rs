//! One attempt's bookkeeping: its [`StepRecord`] (decision, precheck count,
//! result, tokens, durations) and the small helpers that describe actions
//! and decisions for it.

use std::collections::BTreeMap;

use chrono::Utc;
use oxwright_jobs::{StepAttemptResult, StepDecision, StepDurations, StepEmergency, StepRecord, StepTokens};
use oxwright_llm::Usage;
use serde_json::{Value, json};

use super::Run;
use crate::decision::ActionDecision;
use crate::{Locator, WorkflowError};
use oxwright_engine::Target;
use oxwright_steps::{Action, AttemptError, StepAction, StructuredStep};
pub(super) use oxwright_steps::{act_decision, ms, precheck_count};

/// The record of an LLM decision.
pub(super) fn llm_decision(d: &ActionDecision, locator: &Locator) -> StepDecision {
    StepDecision {
        confidence: d.confidence,
        rationale: d.rationale.clone(),
        ..act_decision(locator, d.action, d.value.as_ref())
    }
}

pub(super) fn structured_meta(step: &StructuredStep, number: u32) -> (Vec<String>, Value) {
    if let StepAction::Else { first, .. } = &step.action {
        // Recorded as the step tried first, marked as having a fallback.
        let tried = StructuredStep {
            action: (**first).clone(),
            ..step.clone()
        };
        let (mut keys, mut meta) = structured_meta(&tried, number);
        meta["originalInstruction"] = json!(step.text);
        meta["else"] = json!(true);
        keys.push("else".into());
        return (keys, meta);
    }
    let mut meta =
        json!({ "id": format!("step_{number}_1"), "originalInstruction": step.text, "attempt": 1 });
    let mut keys = vec!["intent".to_string()];
    match &step.action {
        StepAction::Act {
            locator,
            nth,
            action,
            value,
            if_present,
            each,
            then_stop,
        } => {
            meta["intent"] = json!(action.as_str());
            meta["target"] = serde_json::to_value(locator).unwrap_or(Value::Null);
            keys.push("target".into());
            if let Some(n) = nth {
                meta["nth"] = json!(n);
                keys.push("nth".into());
            }
            if *if_present {
                meta["ifPresent"] = json!(true);
                keys.push("ifPresent".into());
            }
            if *each {
                meta["each"] = json!(true);
                keys.push("each".into());
            }
            if *then_stop {
                meta["thenStop"] = json!(true);
                keys.push("thenStop".into());
            }
            if let Some(v) = value {
                meta["value"] = json!(v.text());
                keys.push("value".into());
            }
        }
        StepAction::PressKey(key) => {
            meta["intent"] = json!("press");
            meta["value"] = json!(key);
            keys.push("value".into());
        }
        StepAction::Goto(url) => {
            meta["intent"] = json!("navigate");
            meta["target"] = json!({ "url": url });
            keys.push("target".into());
        }
        StepAction::Sleep(d) => {
            meta["intent"] = json!("wait");
            meta["timeoutMs"] = json!(d.as_millis() as u64);
            keys.push("timeoutMs".into());
        }
        StepAction::Expect(assertion) => {
            meta["intent"] = json!("assert");
            meta["assertion"] = json!(assertion.name());
            meta["target"] = assertion_target(assertion);
            keys.extend(["assertion".into(), "target".into()]);
        }
        StepAction::Dialog { accept, .. } => {
            meta["intent"] = json!("dialog");
            meta["value"] = json!(if *accept { "accept" } else { "dismiss" });
            keys.push("value".into());
        }
        StepAction::ScrollPage(to) => {
            meta["intent"] = json!("scroll");
            meta["value"] = json!(format!("{to:?}").to_lowercase());
            keys.push("value".into());
        }
        StepAction::Extract(e) => {
            meta["intent"] = json!("extract");
            meta["target"] = serde_json::to_value(&e.locator).unwrap_or(Value::Null);
            meta["value"] = json!(e.kind.as_str());
            meta["output"] = json!(e.name);
            keys.extend(["target".into(), "value".into(), "output".into()]);
        }
        StepAction::ExtractSchema(e) => {
            meta["intent"] = json!("extract");
            meta["value"] = json!("schema");
            meta["schema"] = json!(e.schema);
            meta["output"] = json!(e.name);
            keys.extend(["value".into(), "schema".into(), "output".into()]);
        }
        StepAction::Else { .. } => {}
    }
    (keys, meta)
}

/// What an `expect:` step is about: its element, the URL or an output.
fn assertion_target(assertion: &oxwright_steps::Assertion) -> Value {
    match (assertion.locator(), assertion) {
        (Some(locator), _) => serde_json::to_value(locator).unwrap_or(Value::Null),
        (None, oxwright_steps::Assertion::UrlIncludes(text)) => json!({ "urlIncludes": text }),
        (None, oxwright_steps::Assertion::Output(output)) => json!({ "output": output.path.to_string() }),
        (None, _) => Value::Null,
    }
}

pub(super) fn describe_decision(d: Option<&StepDecision>) -> String {
    match d {
        None => "no decision".into(),
        Some(d) => match &d.locator {
            Some(l) => format!("{l} {}", d.action),
            None => match &d.url {
                Some(u) => format!("{} {u}", d.action),
                None => d.action.clone(),
            },
        },
    }
}

/// One `steps.jsonl` line being built.
pub(super) struct AttemptLine {
    pub(super) step_number: u32,
    pub(super) attempt: u32,
    pub(super) instruction: String,
    pub(super) meta: Value,
    pub(super) hint_keys: Vec<String>,
    pub(super) decision: Option<StepDecision>,
    pub(super) precheck: Option<usize>,
    pub(super) result: Option<StepAttemptResult>,
    pub(super) completed: bool,
    pub(super) reason: Option<String>,
    pub(super) tokens: StepTokens,
    pub(super) snapshot_bytes: usize,
    pub(super) url: String,
    pub(super) url_after: Option<String>,
    pub(super) durations: StepDurations,
    pub(super) emergency: Option<StepEmergency>,
}

impl AttemptLine {
    pub(super) fn new(
        step_number: u32,
        attempt: u32,
        instruction: &str,
        meta: &Value,
        hint_keys: &[&str],
        snapshot_bytes: usize,
        url: &str,
    ) -> Self {
        Self {
            step_number,
            attempt,
            instruction: instruction.to_string(),
            meta: meta.clone(),
            hint_keys: hint_keys.iter().map(|s| s.to_string()).collect(),
            decision: None,
            precheck: None,
            result: None,
            completed: false,
            reason: None,
            tokens: StepTokens::default(),
            snapshot_bytes,
            url: url.to_string(),
            url_after: None,
            durations: StepDurations::default(),
            emergency: None,
        }
    }

    pub(super) fn tokens(&mut self, usage: &Usage) {
        self.tokens.prompt += usage.prompt_tokens;
        self.tokens.completion += usage.completion_tokens;
    }

    pub(super) fn succeeded(&mut self, navigated: Option<bool>) {
        self.result = Some(StepAttemptResult {
            success: true,
            error: None,
            navigated,
        });
    }

    pub(super) fn fail(&mut self, err: &AttemptError) {
        self.result = Some(StepAttemptResult {
            success: false,
            error: Some(err.code().to_string()),
            navigated: None,
        });
        self.reason = Some(err.to_string());
        if matches!(err, AttemptError::Unusable(_)) {
            tracing::warn!(step = self.step_number, attempt = self.attempt, reason = %err, "LLM_FALLBACK_DISABLED");
        }
    }

    pub(super) fn record(&self, session: &str) -> StepRecord {
        StepRecord {
            session_id: session.to_string(),
            step_number: self.step_number,
            step_id: self.meta["id"].as_str().unwrap_or_default().to_string(),
            attempt: self.attempt,
            original_instruction: self.instruction.clone(),
            current_step_meta: self.meta.clone(),
            metadata_present: !self.hint_keys.is_empty(),
            metadata_missing: self.hint_keys.is_empty(),
            metadata_keys: self.hint_keys.clone(),
            decision: self.decision.clone(),
            precheck_count: self.precheck,
            result: self.result.clone().unwrap_or_default(),
            completed: self.completed,
            reason: self.reason.clone(),
            tokens: self.tokens,
            durations: self.durations,
            snapshot_bytes: self.snapshot_bytes,
            url: self.url.clone(),
            url_after: self.url_after.clone(),
            emergency: self.emergency.clone(),
            artifacts: BTreeMap::new(),
            timestamp: Utc::now(),
        }
    }
}

impl Run<'_> {
    /// The precheck of an LLM decision: exactly one match now (a `wait`
    /// polls until the deadline and then is a timeout).
    pub(super) async fn llm_target(
        &self,
        locator: &Locator,
        action: Action,
    ) -> Result<Result<(Target, usize), AttemptError>, WorkflowError> {
        if action == Action::Wait {
            let limit = self.exec.timeout();
            return Ok(self
                .exec
                .wait_for_one(locator, limit)
                .await
                .map(|t| (Target::Element(t), 1))
                .map_err(|e| match e {
                    AttemptError::NotUnique { locator, count } => AttemptError::Timeout(format!(
                        "waited {} ms for {locator}; it matched {count} elements",
                        limit.as_millis()
                    )),
                    e @ AttemptError::NoMatch { .. } => {
                        AttemptError::Timeout(format!("waited {} ms: {e}", limit.as_millis()))
                    }
                    other => other,
                }));
        }
        Ok(match self.exec.locate(locator).await {
            Ok(found) if found.len() == 1 => Ok((Target::Element(found[0].clone()), 1)),
            Ok(found) if found.is_empty() => Err(self.exec.no_match(locator).await),
            Ok(found) => Err(AttemptError::NotUnique {
                locator: locator.to_string(),
                count: found.len(),
            }),
            Err(e) if e.is_fatal() => return Err(e.into()),
            Err(e) => Err(AttemptError::from_engine(
                &e,
                self.sanitizer.clean(&e.to_string()),
            )),
        })
    }
}
