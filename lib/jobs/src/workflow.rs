//! The workflow-run job: its spec (a workflow text and a start URL) and the
//! `WorkflowResult` a run produces.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use url::Url;

use crate::JobError;

/// Which LLM endpoint a workflow job talks to. The API key is never in the
/// message: `api_key_env` names the worker's environment variable holding it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LlmSpec {
    /// Base URL of an OpenAI-compatible API, e.g. `http://127.0.0.1:11434/v1`.
    pub base_url: String,
    /// Model name, e.g. `gpt-4o-mini`.
    pub model: String,
    /// Environment variable holding the API key, if the endpoint needs one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    /// The larger model on the same endpoint that emergency mode switches a
    /// failing step to; the small model when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub large_model: Option<String>,
}

/// A workflow-run request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WorkflowSpec {
    /// The workflow file's text: plain-language instructions, or structured
    /// steps (`click: button "Sign in"` …). Secrets appear only as `{{NAME}}`.
    pub workflow: String,
    /// A name for reports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The page the run starts on.
    #[schemars(with = "String")]
    pub start_url: Url,
    /// Session id for `sessions/<id>/`; the job id when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The LLM endpoint; structured workflows need none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llm: Option<LlmSpec>,
    /// Runs the browser headless; `false` needs a display.
    #[serde(default = "default_headless")]
    pub headless: bool,
    /// Deadline of one action (auto-wait, input, settle), in milliseconds.
    #[serde(default = "default_action_timeout_ms")]
    pub action_timeout_ms: u64,
    /// The workflow's id in the action cache (`workflows/<id>/`, shared by
    /// every worker); default: the name, else a hash of the start URL and
    /// the text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow_id: Option<String>,
    /// Replays the workflow's cached actions (a replay job): its checklist
    /// comes from the cache, so `workflow` may be empty; trusted steps make
    /// no LLM call and the LLM, when given, heals the others.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub replay: bool,
    /// Verified successes before a cached action replays with no LLM call
    /// (default 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trust_after: Option<u32>,
    /// Site profiles for the decision prompt (as `sites.yaml` holds them):
    /// the profile whose `url` the page is under is added to each step.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sites: Vec<crate::SiteProfile>,
    /// Adds the site's sitemap URLs (robots.txt, then `/sitemap.xml`,
    /// under the job's URL policy) to the decision prompt.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub sitemap_hints: bool,
    /// A saved login state the run starts with: a Playwright
    /// `storageState` file sealed with the fleet's checkpoint key
    /// (base64, bound to [`STORAGE_STATE_BOUND`]), as the scheduler seals a
    /// check's `storage_state`. A worker without the key refuses the job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sealed_storage_state: Option<String>,
    /// The JSON Schemas the workflow's `extract: FILE.json as NAME` steps
    /// read the page into (through `llm`), by the file name as the steps
    /// write it. Each is checked as a schema when the job is read.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub schemas: std::collections::BTreeMap<String, crate::JsonSchema>,
}

/// The associated data a sealed login state is bound to, so that no other
/// sealed record (a checkpoint) opens as one.
pub const STORAGE_STATE_BOUND: &[u8] = b"oxwright-storage-state/1\n";

fn default_headless() -> bool {
    true
}

fn default_action_timeout_ms() -> u64 {
    10_000
}

impl WorkflowSpec {
    /// Creates a spec with defaults for `workflow` starting at `start_url`.
    pub fn new(workflow: impl Into<String>, start_url: Url) -> Self {
        Self {
            workflow: workflow.into(),
            name: None,
            start_url,
            session_id: None,
            llm: None,
            headless: default_headless(),
            action_timeout_ms: default_action_timeout_ms(),
            workflow_id: None,
            replay: false,
            trust_after: None,
            sites: Vec::new(),
            sitemap_hints: false,
            sealed_storage_state: None,
            schemas: std::collections::BTreeMap::new(),
        }
    }
}

/// How a workflow was driven.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkflowMode {
    /// Plain-language steps, decided and judged by the LLM.
    Llm,
    /// Explicit steps, no LLM.
    Structured,
}

/// How a workflow or one of its steps ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Done.
    Completed,
    /// Gave up.
    Failed,
    /// Not reached because an earlier step failed.
    Skipped,
}

/// A checklist item's step as written: the item without its `[] ` mark
/// (`[] click: button "Save"` → `click: button "Save"`).
pub fn step_text(item: &str) -> &str {
    item.trim_start_matches("[]").trim()
}

/// The outcome of one checklist step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepOutcome {
    /// 1-based position in the checklist.
    pub step_number: u32,
    /// The step as written (placeholders, never values).
    pub instruction: String,
    /// Completed, failed or skipped.
    pub status: RunStatus,
    /// Attempts made (at most 3).
    pub attempts: u32,
    /// Why attempts failed, one reason per failed attempt.
    #[serde(default)]
    pub reasons: Vec<String>,
    /// LLM prompt tokens spent on the step.
    pub prompt_tokens: u64,
    /// LLM completion tokens spent on the step.
    pub completion_tokens: u64,
    /// Wall time of the step.
    pub duration_ms: f64,
    /// Screenshot artefact key when the step failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub screenshot: Option<String>,
    /// Where the step's action came from (absent on skipped steps).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<StepSource>,
    /// Why the step's `else` step ran: the failure of the step before
    /// `else`, in words (absent when no `else` step ran).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub else_reason: Option<String>,
    /// What an `extract:` step read, under the name it gave.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<StepOutput>,
}

/// A value an `extract:` step read from the page.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepOutput {
    /// The name it goes under in the run's `outputs`.
    pub name: String,
    /// What was read: a text, a control's value, a list of texts, or a
    /// table's rows.
    pub value: serde_json::Value,
}

/// Where a step's action came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StepSource {
    /// Decided by the LLM (no cached action for it).
    Llm,
    /// Replayed from the action cache.
    Cache,
    /// The cached action was refused; the LLM decided again.
    Healed,
    /// A structured step (no LLM).
    Structured,
}

/// Totals over a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WorkflowTotals {
    /// Checklist steps.
    pub steps: u32,
    /// Steps completed.
    pub steps_ok: u32,
    /// Attempts over all steps.
    pub attempts: u32,
    /// LLM calls (checklist, decisions, judgements).
    pub llm_calls: u32,
    /// Prompt tokens over all calls.
    pub prompt_tokens: u64,
    /// Completion tokens over all calls.
    pub completion_tokens: u64,
    /// Prompt plus completion tokens.
    pub total_tokens: u64,
    /// Wall time of the run.
    pub duration_ms: f64,
    /// Steps replayed from the action cache.
    #[serde(default)]
    pub cache_hits: u32,
    /// Steps whose cached action was refused and the LLM decided again.
    #[serde(default)]
    pub healed: u32,
}

/// What a workflow run produced. Holds placeholders, never secret values.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkflowResult {
    /// The session (`sessions/<id>/`).
    pub session_id: String,
    /// The workflow's name, if given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The workflow's id in the action cache (`workflows/<id>/`), when
    /// the run recorded or replayed actions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow_id: Option<String>,
    /// LLM-driven or structured.
    pub mode: WorkflowMode,
    /// Completed when every step completed.
    pub status: RunStatus,
    /// Where the run started.
    pub start_url: String,
    /// The page the run ended on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub final_url: Option<String>,
    /// The checklist, `[] ` prefixed.
    pub checklist: Vec<String>,
    /// One outcome per checklist step.
    pub steps: Vec<StepOutcome>,
    /// Totals.
    pub totals: WorkflowTotals,
    /// Why the run failed, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<JobError>,
    /// Artefact keys written for the session.
    #[serde(default)]
    pub artifacts: Vec<String>,
    /// When the run started.
    pub started_at: DateTime<Utc>,
    /// When it ended.
    pub finished_at: DateTime<Utc>,
    /// Each time the run continued from its checkpoint (on another worker,
    /// in another invocation, or by hand), in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resumed: Vec<ResumeMark>,
    /// What the run's `extract:` steps read, by name (a later step of one
    /// name wins).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub outputs: std::collections::BTreeMap<String, serde_json::Value>,
}

impl WorkflowResult {
    /// The outputs of `steps`' `extract:` steps that completed, by name.
    pub fn outputs_of(steps: &[StepOutcome]) -> std::collections::BTreeMap<String, serde_json::Value> {
        steps
            .iter()
            .filter(|s| s.status == RunStatus::Completed)
            .filter_map(|s| s.output.as_ref())
            .map(|o| (o.name.clone(), o.value.clone()))
            .collect()
    }
}

/// Where and why a run continued from its checkpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResumeMark {
    /// The step (1-based) the run continued at.
    pub at_step: u32,
    /// Why: `redelivered` (the worker running it stopped), `handed_over`
    /// (an invocation's deadline came), `by_hand` (`run --resume`).
    pub reason: String,
    /// The worker that continued it.
    pub worker: String,
    /// What became of the step that may have been in flight, when one was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_flight: Option<String>,
    /// Whether the browser state (cookies, storage) was carried over.
    pub state_restored: bool,
    /// When.
    pub at: DateTime<Utc>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_defaults_and_refuses_unknown_fields() {
        let spec: WorkflowSpec =
            serde_json::from_str(r#"{"workflow":"click: button \"Go\"","start_url":"http://a.test/"}"#)
                .unwrap();
        assert!(spec.headless);
        assert_eq!(spec.action_timeout_ms, 10_000);
        assert!(
            serde_json::from_str::<WorkflowSpec>(r#"{"workflow":"x","start_url":"http://a.test/","pw":"1"}"#)
                .is_err()
        );
    }
}
