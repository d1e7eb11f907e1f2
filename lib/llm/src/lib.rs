//! A client for any OpenAI-compatible chat-completions endpoint (OpenAI,
//! Ollama, vLLM, llama.cpp server, the scripted test server): one call per
//! prompt, a deadline per request, retries with backoff on 429 and 5xx,
//! usage recorded per call, and JSON parsing that tolerates code fences and
//! prose around the answer.

mod client;
mod config;
mod error;
mod json;
mod section;

pub use client::{ChatModel, Completion, LlmClient, Message, Usage};
pub use config::{LlmConfig, ModelConfig};
pub use error::LlmError;
pub use json::{extract_json, extract_json_array, extract_json_object};
pub use section::{DEFAULT_API_KEY_ENV, LlmSection};
