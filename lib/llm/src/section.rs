//! `[llm]`, the LLM's section of the configuration file.

use serde::{Deserialize, Serialize};

/// `[llm]`: an OpenAI-compatible chat-completions endpoint. Flags
/// (`--llm-base-url`, `--model`, `--large-model`, `--api-key-env`) and
/// their `OXWRIGHT_LLM_*` variables override it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LlmSection {
    /// Base URL, e.g. `http://127.0.0.1:11434/v1`; with `model`, enables
    /// plain-language workflows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// Model name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Larger model on the same endpoint for emergency mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub large_model: Option<String>,
    /// The environment variable holding the API key. Unset: `OPENAI_API_KEY`
    /// when it is set, else no key (local servers). The key itself is never
    /// in the file, a log or `config show`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    /// Deadline of one request, in milliseconds.
    #[serde(default = "default_llm_timeout_ms")]
    pub timeout_ms: u64,
}

impl Default for LlmSection {
    fn default() -> Self {
        Self {
            base_url: None,
            model: None,
            large_model: None,
            api_key_env: None,
            timeout_ms: default_llm_timeout_ms(),
        }
    }
}

fn default_llm_timeout_ms() -> u64 {
    30_000
}

/// The variable an API key is read from when none is named.
pub const DEFAULT_API_KEY_ENV: &str = "OPENAI_API_KEY";
