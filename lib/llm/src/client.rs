//! The chat-completions call: one POST per attempt under a deadline,
//! retries with exponential backoff, usage and latency per call.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::{LlmConfig, LlmError, ModelConfig};

/// Longest `Retry-After` honoured, so a hostile header cannot stall a run.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(10);

/// One chat message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    /// `system`, `user` or `assistant`.
    pub role: String,
    /// The text.
    pub content: String,
}

impl Message {
    /// Creates a system message.
    pub fn system(content: impl Into<String>) -> Self {
        Self {
            role: "system".into(),
            content: content.into(),
        }
    }

    /// Creates a user message.
    pub fn user(content: impl Into<String>) -> Self {
        Self {
            role: "user".into(),
            content: content.into(),
        }
    }
}

/// What one call cost.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    /// Prompt tokens as reported by the endpoint (estimated when it reports none).
    pub prompt_tokens: u64,
    /// Completion tokens, likewise.
    pub completion_tokens: u64,
    /// Wall time of the call, retries included.
    pub latency_ms: f64,
    /// HTTP attempts made.
    pub attempts: u32,
    /// True when the endpoint reported no usage and the counts are estimates.
    pub estimated: bool,
}

/// The answer of one call.
#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    /// The assistant message's text.
    pub text: String,
    /// What it cost.
    pub usage: Usage,
}

/// A client for one configuration; cheap to clone.
#[derive(Debug, Clone)]
pub struct LlmClient {
    http: reqwest::Client,
    cfg: LlmConfig,
    endpoint: reqwest::Url,
    api_key: Option<String>,
    large: Option<(ModelConfig, reqwest::Url, Option<String>)>,
    /// Set once the endpoint refused a `response_format`: later calls ask
    /// for JSON in the prompt alone.
    no_structured_output: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

#[derive(Serialize)]
struct Request<'a> {
    model: &'a str,
    messages: &'a [Message],
    max_tokens: u32,
    temperature: f32,
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_format: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct Response {
    #[serde(default)]
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<ReportedUsage>,
}

#[derive(Deserialize)]
struct Choice {
    message: ChoiceMessage,
}

#[derive(Deserialize)]
struct ChoiceMessage {
    #[serde(default)]
    content: Option<String>,
}

#[derive(Deserialize)]
struct ReportedUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
}

impl LlmClient {
    /// Builds a client; API keys are read from `env` (an injected map, so
    /// tests never touch the process environment).
    pub fn new(cfg: LlmConfig, env: &BTreeMap<String, String>) -> Result<Self, LlmError> {
        // The ring provider backs rustls; a provider installed earlier by the process wins.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .timeout(cfg.timeout())
            .build()
            .map_err(|e| LlmError::Config(format!("http client: {e}")))?;
        let endpoint = cfg.model.endpoint()?;
        let api_key = cfg.model.api_key(env)?;
        let large = match &cfg.large_model {
            Some(m) => Some((m.clone(), m.endpoint()?, m.api_key(env)?)),
            None => None,
        };
        Ok(Self {
            http,
            cfg,
            endpoint,
            api_key,
            large,
            no_structured_output: std::sync::Arc::default(),
        })
    }

    /// Returns the configuration.
    pub fn config(&self) -> &LlmConfig {
        &self.cfg
    }

    /// Sends `messages` to the small model and returns its answer.
    pub async fn chat(&self, messages: &[Message], max_tokens: u32) -> Result<Completion, LlmError> {
        self.chat_with(
            &self.cfg.model.model,
            &self.endpoint,
            self.api_key.as_deref(),
            messages,
            max_tokens,
        )
        .await
    }

    /// Sends `messages` to the small model asking for one JSON value
    /// under `schema` as the endpoint's structured output (`response_format`
    /// of type `json_schema`, not strict). An endpoint that refuses it with
    /// 400 is asked again without it, and never with it again.
    pub async fn chat_json(
        &self,
        messages: &[Message],
        max_tokens: u32,
        schema: &serde_json::Value,
    ) -> Result<Completion, LlmError> {
        use std::sync::atomic::Ordering;
        if !self.no_structured_output.load(Ordering::Relaxed) {
            let format = serde_json::json!({
                "type": "json_schema",
                "json_schema": { "name": "extract", "schema": schema, "strict": false },
            });
            let model = &self.cfg.model.model;
            let key = self.api_key.as_deref();
            match self
                .send(model, &self.endpoint, key, messages, max_tokens, Some(format))
                .await
            {
                Err(LlmError::Status { status: 400, body }) => {
                    tracing::debug!(%body, "the endpoint refused response_format; asking without it");
                    self.no_structured_output.store(true, Ordering::Relaxed);
                }
                other => return other,
            }
        }
        self.chat(messages, max_tokens).await
    }

    /// Sends `messages` to the large model (the small one when none is configured).
    pub async fn chat_large(&self, messages: &[Message], max_tokens: u32) -> Result<Completion, LlmError> {
        match &self.large {
            Some((m, url, key)) => {
                self.chat_with(&m.model, url, key.as_deref(), messages, max_tokens)
                    .await
            }
            None => self.chat(messages, max_tokens).await,
        }
    }

    async fn chat_with(
        &self,
        model: &str,
        url: &reqwest::Url,
        key: Option<&str>,
        messages: &[Message],
        max_tokens: u32,
    ) -> Result<Completion, LlmError> {
        self.send(model, url, key, messages, max_tokens, None).await
    }

    async fn send(
        &self,
        model: &str,
        url: &reqwest::Url,
        key: Option<&str>,
        messages: &[Message],
        max_tokens: u32,
        response_format: Option<serde_json::Value>,
    ) -> Result<Completion, LlmError> {
        let started = Instant::now();
        let body = serde_json::to_vec(&Request {
            model,
            messages,
            max_tokens,
            temperature: self.cfg.temperature,
            stream: false,
            response_format,
        })
        .map_err(|e| LlmError::Config(format!("request encoding: {e}")))?;
        let mut attempt = 0u32;
        loop {
            attempt += 1;
            let outcome = self.post(url, key, body.clone()).await;
            match outcome {
                Ok(resp) => {
                    let mut completion = parse_response(&resp, messages)?;
                    completion.usage.latency_ms = started.elapsed().as_secs_f64() * 1000.0;
                    completion.usage.attempts = attempt;
                    return Ok(completion);
                }
                Err((err, retry_after)) => {
                    if !err.is_retryable() || attempt > self.cfg.retries {
                        return Err(err);
                    }
                    let backoff =
                        Duration::from_millis(self.cfg.backoff_ms.saturating_mul(1 << (attempt - 1)));
                    let wait = retry_after.map_or(backoff, |r| r.min(MAX_RETRY_AFTER));
                    tracing::debug!(attempt, error = %err, wait_ms = wait.as_millis() as u64, "llm call failed, retrying");
                    tokio::time::sleep(wait).await;
                }
            }
        }
    }

    async fn post(
        &self,
        url: &reqwest::Url,
        key: Option<&str>,
        body: Vec<u8>,
    ) -> Result<Vec<u8>, (LlmError, Option<Duration>)> {
        let mut req = self
            .http
            .post(url.clone())
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body);
        if let Some(key) = key {
            req = req.bearer_auth(key);
        }
        let resp = req.send().await.map_err(|e| (self.transport(&e), None))?;
        let status = resp.status();
        let retry_after = resp
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(Duration::from_secs);
        let bytes = resp.bytes().await.map_err(|e| (self.transport(&e), None))?;
        if !status.is_success() {
            let text = String::from_utf8_lossy(&bytes);
            let body: String = text.chars().take(300).collect();
            return Err((
                LlmError::Status {
                    status: status.as_u16(),
                    body,
                },
                retry_after,
            ));
        }
        Ok(bytes.to_vec())
    }

    fn transport(&self, err: &reqwest::Error) -> LlmError {
        if err.is_timeout() {
            LlmError::Timeout {
                ms: self.cfg.timeout_ms,
            }
        } else {
            // The error text names the URL, never the key or the body.
            LlmError::Transport(err.to_string())
        }
    }
}

fn parse_response(bytes: &[u8], messages: &[Message]) -> Result<Completion, LlmError> {
    let resp: Response = serde_json::from_slice(bytes)
        .map_err(|e| LlmError::BadAnswer(format!("not a chat completion: {e}")))?;
    let text = resp
        .choices
        .into_iter()
        .next()
        .and_then(|c| c.message.content)
        .ok_or_else(|| LlmError::BadAnswer("no choices[0].message.content".into()))?;
    let usage = match resp.usage {
        Some(u) => Usage {
            prompt_tokens: u.prompt_tokens,
            completion_tokens: u.completion_tokens,
            ..Usage::default()
        },
        None => Usage {
            // Roughly four characters a token for English text.
            prompt_tokens: messages.iter().map(|m| m.content.len() as u64 / 4 + 4).sum(),
            completion_tokens: text.len() as u64 / 4 + 1,
            estimated: true,
            ..Usage::default()
        },
    };
    Ok(Completion { text, usage })
}

/// A chat model the workflow runner talks to: the HTTP client in
/// production; tests of the runner script answers in memory.
#[async_trait::async_trait]
pub trait ChatModel: Send + Sync {
    /// Sends `messages` to the small model.
    async fn chat(&self, messages: &[Message], max_tokens: u32) -> Result<Completion, LlmError>;

    /// Sends `messages` to the larger model (the small one when none is configured).
    async fn chat_large(&self, messages: &[Message], max_tokens: u32) -> Result<Completion, LlmError> {
        self.chat(messages, max_tokens).await
    }

    /// Sends `messages` to the small model asking for one JSON value
    /// under `schema`, as the endpoint's structured output where it has
    /// one (the prompt must ask for it too).
    async fn chat_json(
        &self,
        messages: &[Message],
        max_tokens: u32,
        schema: &serde_json::Value,
    ) -> Result<Completion, LlmError> {
        let _ = schema;
        self.chat(messages, max_tokens).await
    }

    /// Names the model [`ChatModel::chat`] (or, with `large`, [`ChatModel::chat_large`]) talks to.
    fn model_name(&self, large: bool) -> String {
        if large { "large" } else { "small" }.to_string()
    }
}

#[async_trait::async_trait]
impl ChatModel for LlmClient {
    async fn chat(&self, messages: &[Message], max_tokens: u32) -> Result<Completion, LlmError> {
        LlmClient::chat(self, messages, max_tokens).await
    }

    async fn chat_large(&self, messages: &[Message], max_tokens: u32) -> Result<Completion, LlmError> {
        LlmClient::chat_large(self, messages, max_tokens).await
    }

    async fn chat_json(
        &self,
        messages: &[Message],
        max_tokens: u32,
        schema: &serde_json::Value,
    ) -> Result<Completion, LlmError> {
        LlmClient::chat_json(self, messages, max_tokens, schema).await
    }

    fn model_name(&self, large: bool) -> String {
        match (&self.large, large) {
            (Some((m, _, _)), true) => m.model.clone(),
            _ => self.cfg.model.model.clone(),
        }
    }
}
