//! LLM endpoint configuration: the small model every step uses and an
//! optional larger one for later phases (emergency mode).

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::LlmError;

/// One model on one endpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelConfig {
    /// Base URL of the API, e.g. `https://api.openai.com/v1`; `/chat/completions` is appended.
    pub base_url: String,
    /// Model name sent with each request.
    pub model: String,
    /// Environment variable holding the API key; none sends no `Authorization`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
}

/// How the client talks to the endpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LlmConfig {
    /// The small model used for checklists, decisions and judgements.
    pub model: ModelConfig,
    /// The larger model emergency mode switches a failing step to (the
    /// small one when none is configured).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub large_model: Option<ModelConfig>,
    /// Deadline of one HTTP request, in milliseconds.
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: u64,
    /// Retries after a 429, 5xx, timeout or transport error.
    #[serde(default = "default_retries")]
    pub retries: u32,
    /// First backoff delay in milliseconds; doubles each retry.
    #[serde(default = "default_backoff_ms")]
    pub backoff_ms: u64,
    /// Sampling temperature.
    #[serde(default)]
    pub temperature: f32,
}

fn default_timeout_ms() -> u64 {
    30_000
}

fn default_retries() -> u32 {
    2
}

fn default_backoff_ms() -> u64 {
    500
}

impl LlmConfig {
    /// Names `model` on the small model's endpoint and key as the larger model.
    pub fn with_large_model(mut self, model: Option<String>) -> Self {
        self.large_model = model.map(|m| ModelConfig {
            model: m,
            ..self.model.clone()
        });
        self
    }

    /// Creates a configuration for `model` at `base_url` with default limits.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            model: ModelConfig {
                base_url: base_url.into(),
                model: model.into(),
                api_key_env: None,
            },
            large_model: None,
            timeout_ms: default_timeout_ms(),
            retries: default_retries(),
            backoff_ms: default_backoff_ms(),
            temperature: 0.0,
        }
    }

    /// Returns the request deadline.
    pub fn timeout(&self) -> Duration {
        Duration::from_millis(self.timeout_ms)
    }
}

impl ModelConfig {
    /// Returns the chat-completions URL.
    pub fn endpoint(&self) -> Result<reqwest::Url, LlmError> {
        let base = self.base_url.trim_end_matches('/');
        let url = format!("{base}/chat/completions");
        let parsed =
            reqwest::Url::parse(&url).map_err(|e| LlmError::Config(format!("base_url {base:?}: {e}")))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(LlmError::Config(format!("base_url {base:?}: not http(s)")));
        }
        Ok(parsed)
    }

    /// Reads the API key from `env` when a variable is named; a named but
    /// missing or empty variable is an error.
    pub fn api_key(&self, env: &BTreeMap<String, String>) -> Result<Option<String>, LlmError> {
        match &self.api_key_env {
            None => Ok(None),
            Some(name) => match env.get(name).filter(|v| !v.is_empty()) {
                Some(v) => Ok(Some(v.clone())),
                None => Err(LlmError::Config(format!(
                    "environment variable {name} (API key) is not set"
                ))),
            },
        }
    }
}
