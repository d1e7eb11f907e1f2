//! Typed LLM failures.

/// A failed LLM call.
#[derive(Debug, Clone, thiserror::Error)]
pub enum LlmError {
    /// The configuration cannot work (bad URL, missing API key variable …).
    #[error("llm configuration: {0}")]
    Config(String),
    /// The endpoint could not be reached.
    #[error("llm endpoint unreachable: {0}")]
    Transport(String),
    /// No answer within the deadline.
    #[error("llm call timed out after {ms} ms")]
    Timeout {
        /// The deadline.
        ms: u64,
    },
    /// The endpoint answered with an HTTP error.
    #[error("llm endpoint answered HTTP {status}: {body}")]
    Status {
        /// The status.
        status: u16,
        /// The start of the body.
        body: String,
    },
    /// The answer is not a chat completion, or holds no usable JSON.
    #[error("unusable llm answer: {0}")]
    BadAnswer(String),
}

impl LlmError {
    /// Says whether repeating the same request may help: timeouts, transport
    /// errors, 408, 429 and 5xx.
    pub fn is_retryable(&self) -> bool {
        match self {
            LlmError::Transport(_) | LlmError::Timeout { .. } => true,
            LlmError::Status { status, .. } => matches!(status, 408 | 429 | 500..=599),
            LlmError::Config(_) | LlmError::BadAnswer(_) => false,
        }
    }
}
