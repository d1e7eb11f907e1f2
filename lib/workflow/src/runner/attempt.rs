//! One attempt's bookkeeping: its JSONL line (decision, precheck count,
//! result, tokens, durations) and the small helpers that describe actions
//! and decisions for it.

use std::time::Duration;

use chrono::Utc;

use oxwright_llm::Usage;
use serde_json::{Value, json};

use crate::decision::{Action, ActionValue};
use crate::steps::{StepAction, StructuredStep};
use crate::{AttemptError, Locator};

pub(super) fn precheck_count<T>(r: &Result<T, AttemptError>) -> usize {
    match r {
        Err(AttemptError::NotUnique { count, .. }) => *count,
        Ok(_) => 1,
        Err(_) => 0,
    }
}

pub(super) fn act_json(locator: &Locator, action: Action, value: Option<&ActionValue>) -> Value {
    json!({ "locator": locator, "action": action, "value": value })
}

pub(super) fn structured_meta(step: &StructuredStep, number: u32) -> (Vec<String>, Value) {
    let mut meta =
        json!({ "id": format!("step_{number}_1"), "originalInstruction": step.text, "attempt": 1 });
    let mut keys = vec!["intent".to_string()];
    match &step.action {
        StepAction::Act {
            locator,
            action,
            value,
        } => {
            meta["intent"] = json!(action.as_str());
            meta["target"] = serde_json::to_value(locator).unwrap_or(Value::Null);
            keys.push("target".into());
            if let Some(v) = value {
                meta["value"] = json!(v.text());
                keys.push("value".into());
            }
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
        StepAction::Expect(locator) => {
            meta["intent"] = json!("assert");
            meta["target"] = serde_json::to_value(locator).unwrap_or(Value::Null);
            keys.push("target".into());
        }
    }
    (keys, meta)
}

pub(super) fn describe_decision(d: &Value) -> String {
    if d.is_null() {
        return "no decision".into();
    }
    if let Some(loc) = d.get("locator") {
        let loc: Option<Locator> = serde_json::from_value(loc.clone()).ok();
        return format!(
            "{} {}",
            loc.map(|l| l.to_string()).unwrap_or_default(),
            d["action"].as_str().unwrap_or("")
        );
    }
    let dec: Option<crate::ActionDecision> = serde_json::from_value(d.clone()).ok();
    match dec.and_then(|dec| dec.locator().ok().map(|l| (l, dec.action))) {
        Some((l, a)) => format!("{l} {}", a.as_str()),
        None => "decision".into(),
    }
}

pub(super) fn ms(d: Duration) -> f64 {
    (d.as_secs_f64() * 1000.0 * 100.0).round() / 100.0
}

#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Durations {
    pub(super) snapshot: f64,
    pub(super) decision: f64,
    pub(super) precheck: f64,
    pub(super) action: f64,
    pub(super) settle: f64,
    pub(super) judge: f64,
    pub(super) total: f64,
}

/// One `steps.jsonl` line being built.
pub(super) struct AttemptLine {
    pub(super) step_number: u32,
    pub(super) attempt: u32,
    pub(super) instruction: String,
    pub(super) meta: Value,
    pub(super) hint_keys: Vec<String>,
    pub(super) decision: Value,
    pub(super) precheck: Value,
    pub(super) result: Value,
    pub(super) completed: bool,
    pub(super) reason: Option<String>,
    pub(super) prompt_tokens: u64,
    pub(super) completion_tokens: u64,
    pub(super) snapshot_bytes: usize,
    pub(super) url: String,
    pub(super) durations: Durations,
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
            decision: Value::Null,
            precheck: Value::Null,
            result: Value::Null,
            completed: false,
            reason: None,
            prompt_tokens: 0,
            completion_tokens: 0,
            snapshot_bytes,
            url: url.to_string(),
            durations: Durations::default(),
        }
    }

    pub(super) fn tokens(&mut self, usage: &Usage) {
        self.prompt_tokens += usage.prompt_tokens;
        self.completion_tokens += usage.completion_tokens;
    }

    pub(super) fn fail(&mut self, err: &AttemptError) {
        self.result = json!({ "success": false, "error": err.code() });
        self.reason = Some(err.to_string());
        if matches!(err, AttemptError::Unusable(_)) {
            tracing::warn!(step = self.step_number, attempt = self.attempt, reason = %err, "LLM_FALLBACK_DISABLED");
        }
    }

    pub(super) fn to_json(&self, session: &str) -> Value {
        let d = &self.durations;
        json!({
            "sessionId": session,
            "stepNumber": self.step_number,
            "stepId": self.meta["id"],
            "attempt": self.attempt,
            "originalInstruction": self.instruction,
            "currentStepMeta": self.meta,
            "metadataPresent": !self.hint_keys.is_empty(),
            "metadataMissing": self.hint_keys.is_empty(),
            "metadataKeys": self.hint_keys,
            "decision": self.decision,
            "precheckCount": self.precheck,
            "result": self.result,
            "completed": self.completed,
            "reason": self.reason,
            "tokens": { "prompt": self.prompt_tokens, "completion": self.completion_tokens },
            "durations": { "snapshotMs": d.snapshot, "decisionMs": d.decision, "precheckMs": d.precheck,
                           "actionMs": d.action, "settleMs": d.settle, "judgeMs": d.judge, "totalMs": d.total },
            "snapshotBytes": self.snapshot_bytes,
            "url": self.url,
            "timestamp": Utc::now().to_rfc3339(),
        })
    }
}
