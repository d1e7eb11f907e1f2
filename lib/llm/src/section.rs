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

impl LlmSection {
    /// The section with the `OXWRIGHT_LLM_BASE_URL`, `OXWRIGHT_LLM_MODEL`,
    /// `OXWRIGHT_LLM_LARGE_MODEL` and `OXWRIGHT_LLM_API_KEY_ENV` of `env`
    /// (the variables of the `--llm-*` flags) on top.
    pub fn with_env(mut self, env: &std::collections::BTreeMap<String, String>) -> Self {
        let var = |name: &str| env.get(name).filter(|v| !v.is_empty()).cloned();
        self.base_url = var("OXWRIGHT_LLM_BASE_URL").or(self.base_url);
        self.model = var("OXWRIGHT_LLM_MODEL").or(self.model);
        self.large_model = var("OXWRIGHT_LLM_LARGE_MODEL").or(self.large_model);
        self.api_key_env = var("OXWRIGHT_LLM_API_KEY_ENV").or(self.api_key_env);
        self
    }

    /// The client this section names, none when it names no endpoint;
    /// an error names what is missing (a base URL without a model, a
    /// named key variable that is not set). The key is read from `env`:
    /// the variable `api_key_env` names, else `OPENAI_API_KEY` when set.
    pub fn client(
        &self,
        env: &std::collections::BTreeMap<String, String>,
    ) -> Result<Option<crate::LlmClient>, String> {
        match (&self.base_url, &self.model) {
            (Some(base), Some(model)) => {
                let mut cfg = crate::LlmConfig::new(base.clone(), model.clone());
                // A named variable must be set; the default one only when it is.
                cfg.model.api_key_env = self.api_key_env.clone().or_else(|| {
                    env.get(DEFAULT_API_KEY_ENV)
                        .is_some_and(|v| !v.is_empty())
                        .then(|| DEFAULT_API_KEY_ENV.to_string())
                });
                cfg.timeout_ms = self.timeout_ms;
                let cfg = cfg.with_large_model(self.large_model.clone());
                crate::LlmClient::new(cfg, env)
                    .map(Some)
                    .map_err(|e| e.to_string())
            }
            (None, None) => Ok(None),
            (Some(_), None) => Err(
                "an LLM base URL needs a model too: --model NAME (or [llm] model, OXWRIGHT_LLM_MODEL)".into(),
            ),
            (None, Some(_)) => Err(
                "an LLM model needs a base URL too: --llm-base-url URL (or [llm] base_url, OXWRIGHT_LLM_BASE_URL)"
                    .into(),
            ),
        }
    }
}

/// The variable an API key is read from when none is named.
pub const DEFAULT_API_KEY_ENV: &str = "OPENAI_API_KEY";
