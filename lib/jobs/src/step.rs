//! The step record: one line of `sessions/<id>/steps.jsonl` per attempt at a
//! workflow step. Replay, code generation and reports read these lines, so
//! they are typed here rather than assembled ad hoc. Field names are the
//! seed's camelCase; every text in a record has passed the run's sanitiser.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::Locator;

/// A value to type or select as recorded: a `{{NAME}}` placeholder (never
/// its value) or a literal (sanitised).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "value", rename_all = "lowercase")]
pub enum StepValue {
    /// `{{NAME}}`, resolved from the secret store only when typed.
    Placeholder(String),
    /// A literal.
    Literal(String),
}

impl StepValue {
    /// Returns the text as written (placeholders unresolved).
    pub fn text(&self) -> &str {
        match self {
            StepValue::Placeholder(t) | StepValue::Literal(t) => t,
        }
    }
}

/// What an attempt decided to do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StepDecision {
    /// The element the action targets; `None` for steps without one (goto, sleep).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub locator: Option<Locator>,
    /// `click`, `fill`, `select`, `wait`, `expect`, `goto`, `sleep` …
    pub action: String,
    /// The value typed or selected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<StepValue>,
    /// The LLM's confidence, 0 to 1 (LLM path).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f64>,
    /// The LLM's one line of reasoning (LLM path).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rationale: Option<String>,
    /// Where a `goto` went.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

/// How the action went.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StepAttemptResult {
    /// The action ran.
    pub success: bool,
    /// The attempt error's code (`PRECHECK_NOT_UNIQUE` …) when it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The action started a navigation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub navigated: Option<bool>,
}

/// Tokens an attempt spent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepTokens {
    /// Prompt tokens.
    pub prompt: u64,
    /// Completion tokens.
    pub completion: u64,
}

/// Where an attempt's time went, in milliseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StepDurations {
    /// Reading the page's snapshot(s).
    pub snapshot_ms: f64,
    /// The LLM's decision.
    pub decision_ms: f64,
    /// Locating the target (and auto-waiting for it).
    pub precheck_ms: f64,
    /// The action itself.
    pub action_ms: f64,
    /// Waiting for the page to settle.
    pub settle_ms: f64,
    /// The LLM's completion judgement.
    pub judge_ms: f64,
    /// The whole attempt.
    pub total_ms: f64,
}

/// Why an attempt was decided in emergency mode (seed 001): by the larger
/// model, from the light DOM, with the wider selector set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StepEmergency {
    /// What switched it on: `failures`, `stall` or `low_confidence`.
    pub trigger: String,
    /// The reason, as logged.
    pub reason: String,
    /// The model the decision went to.
    pub model: String,
}

/// One attempt at one step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StepRecord {
    /// The session.
    pub session_id: String,
    /// 1-based step number.
    pub step_number: u32,
    /// `step_<n>_<attempt>`.
    pub step_id: String,
    /// 1-based attempt.
    pub attempt: u32,
    /// The step as written (placeholders only).
    pub original_instruction: String,
    /// The step's meta as the prompt saw it.
    pub current_step_meta: Value,
    /// Hints were derived for this step.
    pub metadata_present: bool,
    /// No hints: the decision came from the text alone.
    pub metadata_missing: bool,
    /// Which hints.
    pub metadata_keys: Vec<String>,
    /// What was decided; `None` when no usable decision came.
    pub decision: Option<StepDecision>,
    /// How many elements the locator matched at the precheck.
    pub precheck_count: Option<usize>,
    /// How the action went.
    pub result: StepAttemptResult,
    /// The step completed with this attempt.
    pub completed: bool,
    /// Why not, when it did not.
    pub reason: Option<String>,
    /// Tokens spent.
    pub tokens: StepTokens,
    /// Where the time went.
    pub durations: StepDurations,
    /// Size of the snapshot the decision saw.
    pub snapshot_bytes: usize,
    /// The page's URL before the attempt.
    pub url: String,
    /// The page's URL after the attempt, when it was read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url_after: Option<String>,
    /// Set when the attempt was decided in emergency mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub emergency: Option<StepEmergency>,
    /// Artefact keys this attempt wrote (`screenshot`, `error` …).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub artifacts: BTreeMap<String, String>,
    /// When the attempt ended.
    pub timestamp: DateTime<Utc>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_with_seed_names() {
        let r = StepRecord {
            session_id: "s".into(),
            step_number: 2,
            step_id: "step_2_1".into(),
            attempt: 1,
            original_instruction: "Type the password".into(),
            current_step_meta: serde_json::json!({ "id": "step_2_1" }),
            metadata_present: false,
            metadata_missing: true,
            metadata_keys: Vec::new(),
            decision: Some(StepDecision {
                locator: Some(Locator::role("textbox", Some("Password"))),
                action: "fill".into(),
                value: Some(StepValue::Placeholder("{{PASSWORD}}".into())),
                confidence: Some(0.9),
                rationale: None,
                url: None,
            }),
            precheck_count: Some(1),
            result: StepAttemptResult {
                success: true,
                error: None,
                navigated: Some(false),
            },
            completed: true,
            reason: None,
            tokens: StepTokens::default(),
            durations: StepDurations::default(),
            snapshot_bytes: 10,
            url: "http://a/".into(),
            url_after: None,
            emergency: None,
            artifacts: BTreeMap::new(),
            timestamp: Utc::now(),
        };
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["stepNumber"], 2);
        assert_eq!(v["precheckCount"], 1);
        assert_eq!(v["decision"]["value"]["kind"], "placeholder");
        assert_eq!(v["decision"]["locator"]["method"], "getByRole");
        assert_eq!(v["durations"]["totalMs"], 0.0);
        let back: StepRecord = serde_json::from_value(v).unwrap();
        assert_eq!(back, r);
    }
}
