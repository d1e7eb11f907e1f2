//! The session's outputs, every one through the sanitiser: `steps.jsonl`
//! (one line per attempt), `llm.jsonl` (each LLM request and answer), the
//! console sink, and other artefacts under `sessions/<id>/`.

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use oxwright_artifacts::ArtifactStore;
use oxwright_jobs::keys;
use oxwright_llm::{Message, Usage};
use serde_json::{Value, json};

use crate::{ConsoleSink, Sanitizer, WorkflowError};

/// Writes a session's artefacts and console lines.
pub(crate) struct SessionLog {
    store: Arc<dyn ArtifactStore>,
    session: String,
    sanitizer: Sanitizer,
    console: Option<ConsoleSink>,
    written: Mutex<Vec<String>>,
}

impl SessionLog {
    pub(crate) fn new(
        store: Arc<dyn ArtifactStore>,
        session: String,
        sanitizer: Sanitizer,
        console: Option<ConsoleSink>,
    ) -> Self {
        Self {
            store,
            session,
            sanitizer,
            console,
            written: Mutex::new(Vec::new()),
        }
    }

    fn note(&self, key: &str) {
        let mut w = self.written.lock().unwrap_or_else(|e| e.into_inner());
        if !w.iter().any(|k| k == key) {
            w.push(key.to_string());
        }
    }

    /// Returns the store the session's artefacts go to.
    pub(crate) fn store(&self) -> Arc<dyn ArtifactStore> {
        self.store.clone()
    }

    /// Counts `keys` as written (by the run's earlier part, before a resume).
    pub(crate) fn noted(&self, keys: &[String]) {
        for k in keys {
            self.note(k);
        }
    }

    /// Returns the keys written so far.
    pub(crate) fn written(&self) -> Vec<String> {
        self.written.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Prints one console line (sanitised) and mirrors it as an event.
    pub(crate) fn say(&self, line: &str) {
        let line = self.sanitizer.clean(line);
        tracing::info!(session_id = %self.session, "{line}");
        if let Some(sink) = &self.console {
            sink(&line);
        }
    }

    /// Appends one attempt to `steps.jsonl`.
    pub(crate) async fn step(&self, line: &Value) -> Result<(), WorkflowError> {
        let key = keys::session_steps(&self.session);
        self.append(&key, line).await
    }

    /// Appends one LLM exchange to `llm.jsonl`.
    pub(crate) async fn llm(
        &self,
        kind: &str,
        step: Option<u32>,
        request: &[Message],
        answer: Result<&str, &str>,
        usage: Option<&Usage>,
    ) -> Result<(), WorkflowError> {
        let (response, error) = match answer {
            Ok(text) => (Some(text), None),
            Err(e) => (None, Some(e)),
        };
        let line = json!({
            "sessionId": self.session,
            "kind": kind,
            "stepNumber": step,
            "request": request,
            "response": response,
            "error": error,
            "usage": usage,
            "timestamp": chrono::Utc::now().to_rfc3339(),
        });
        tracing::debug!(
            kind,
            request_chars = request.iter().map(|m| m.content.len()).sum::<usize>(),
            response = %self.sanitizer.clean(response.or(error).unwrap_or_default()),
            "llm exchange"
        );
        let key = keys::session_artifact(&self.session, "llm.jsonl");
        self.append(&key, &line).await
    }

    async fn append(&self, key: &str, line: &Value) -> Result<(), WorkflowError> {
        let text = self.sanitizer.json_line(line);
        self.store
            .append(key, Bytes::from(text))
            .await
            .map_err(|e| WorkflowError::store(&e))?;
        self.note(key);
        Ok(())
    }

    /// Stores a JSON artefact (sanitised) under `sessions/<id>/<name>`.
    pub(crate) async fn put_json(&self, name: &str, value: &Value) -> Result<String, WorkflowError> {
        let key = keys::session_artifact(&self.session, name);
        let cleaned = self.sanitizer.clean_json(value);
        let body = serde_json::to_vec_pretty(&cleaned).map_err(|e| WorkflowError::Store(e.to_string()))?;
        self.store
            .put(&key, Bytes::from(body), "application/json")
            .await
            .map_err(|e| WorkflowError::store(&e))?;
        self.note(&key);
        Ok(key)
    }

    /// Stores text (sanitised) under `sessions/<id>/<name>`.
    pub(crate) async fn put_text(
        &self,
        name: &str,
        text: &str,
        content_type: &str,
    ) -> Result<String, WorkflowError> {
        let cleaned = self.sanitizer.clean(text);
        self.put_bytes(name, cleaned.into_bytes(), content_type).await
    }

    /// Stores bytes under `sessions/<id>/<name>`.
    pub(crate) async fn put_bytes(
        &self,
        name: &str,
        body: Vec<u8>,
        content_type: &str,
    ) -> Result<String, WorkflowError> {
        let key = keys::session_artifact(&self.session, name);
        self.store
            .put(&key, Bytes::from(body), content_type)
            .await
            .map_err(|e| WorkflowError::store(&e))?;
        self.note(&key);
        Ok(key)
    }
}
