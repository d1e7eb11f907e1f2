//! Typed workflow failures: the fatal ones that end a run, and the reasons a
//! single attempt fails (logged, then the next attempt re-decides).

use oxwright_artifacts::ArtifactError;
use oxwright_engine::EngineError;
use oxwright_jobs::{ErrorKind, JobError};
use oxwright_llm::LlmError;

/// A failure that ends the run.
#[derive(Debug, Clone, thiserror::Error)]
pub enum WorkflowError {
    /// The workflow text is not usable (a structured line that does not parse …).
    #[error("workflow line {line}: {message}")]
    Parse {
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// The workflow cannot run as configured (plain-language steps and no LLM …).
    #[error("workflow cannot run: {0}")]
    Config(String),
    /// A `{{NAME}}` placeholder has no value in the secret store.
    #[error("secret {{{{{0}}}}} is not in the secret store")]
    MissingSecret(String),
    /// The secret store failed.
    #[error("secret store: {0}")]
    Secrets(String),
    /// The LLM failed where no retry by attempt is possible (checklist).
    #[error(transparent)]
    Llm(#[from] LlmError),
    /// The browser engine failed (crash, navigation refused …).
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// Writing an artefact failed for good (or could not be encoded).
    #[error("artefact store: {0}")]
    Store(String),
    /// The artefact store failed transiently; another attempt may succeed.
    #[error("artefact store unavailable: {0}")]
    StoreUnavailable(String),
    /// A step did not complete within its attempts.
    #[error("step {step} ({instruction}) failed after {attempts} attempts: {reason}")]
    StepFailed {
        /// 1-based step number.
        step: u32,
        /// The step (placeholders only).
        instruction: String,
        /// Attempts made.
        attempts: u32,
        /// The last attempt's reason.
        reason: String,
    },
    /// A resumed run met a step that may already have acted and whose
    /// effect the page does not show: it was not run again.
    #[error("step {step} ({instruction}) may already have run before the run moved on: {reason}")]
    ResumeUncertain {
        /// 1-based step number.
        step: u32,
        /// The step (placeholders only).
        instruction: String,
        /// Why its effect could not be established.
        reason: String,
    },
    /// The run stopped before step `next` because the time it may take
    /// ran out; its checkpoint is kept for the invocation that goes on.
    #[error("handed over before step {next}: the invocation's deadline is near")]
    HandedOver {
        /// 1-based: the step the next invocation runs first.
        next: u32,
    },
    /// A checkpoint could not be used (another workflow's, sealed with
    /// another key, edited after it was written): nothing ran, and the
    /// checkpoint is kept.
    #[error("checkpoint: {0}")]
    Checkpoint(String),
}

impl From<oxwright_secrets::ResolveError> for WorkflowError {
    fn from(err: oxwright_secrets::ResolveError) -> Self {
        match err {
            oxwright_secrets::ResolveError::Missing(name) => WorkflowError::MissingSecret(name),
            oxwright_secrets::ResolveError::Store(e) => WorkflowError::Secrets(e.to_string()),
            oxwright_secrets::ResolveError::Totp(e) => WorkflowError::Secrets(e.to_string()),
        }
    }
}

impl From<oxwright_steps::ParseError> for WorkflowError {
    fn from(err: oxwright_steps::ParseError) -> Self {
        WorkflowError::Parse {
            line: err.line,
            message: err.message,
        }
    }
}

impl From<oxwright_steps::StepError> for WorkflowError {
    fn from(err: oxwright_steps::StepError) -> Self {
        match err {
            oxwright_steps::StepError::Parse(e) => e.into(),
            oxwright_steps::StepError::Secret(e) => e.into(),
            oxwright_steps::StepError::Engine(e) => WorkflowError::Engine(e),
        }
    }
}

impl WorkflowError {
    /// Wraps a failed store operation, keeping whether it is transient.
    pub fn store(err: &ArtifactError) -> Self {
        if err.is_retryable() {
            WorkflowError::StoreUnavailable(err.to_string())
        } else {
            WorkflowError::Store(err.to_string())
        }
    }

    /// Returns the job error kind of this failure.
    pub fn kind(&self) -> ErrorKind {
        match self {
            WorkflowError::Parse { .. }
            | WorkflowError::Config(_)
            | WorkflowError::MissingSecret(_)
            | WorkflowError::Secrets(_) => ErrorKind::InvalidInput,
            WorkflowError::Llm(e) => match e {
                LlmError::Config(_) => ErrorKind::InvalidInput,
                _ => ErrorKind::Llm,
            },
            WorkflowError::Engine(e) => e.kind.job_kind(),
            WorkflowError::Store(_) => ErrorKind::Internal,
            WorkflowError::StoreUnavailable(_) => ErrorKind::Storage,
            WorkflowError::StepFailed { .. } => ErrorKind::StepFailed,
            WorkflowError::ResumeUncertain { .. } => ErrorKind::ResumeUncertain,
            WorkflowError::Checkpoint(_) => ErrorKind::InvalidInput,
            WorkflowError::HandedOver { .. } => ErrorKind::HandedOver,
        }
    }
}

impl From<WorkflowError> for JobError {
    fn from(err: WorkflowError) -> JobError {
        match err {
            WorkflowError::Engine(e) => JobError::from(e),
            other => JobError::new(other.kind(), other.to_string()),
        }
    }
}

/// The `errorType` of a failed step's artefact (the seed's `ExecutionError`
/// model, plus the codes phase 1 already reports per attempt).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ErrorType {
    /// No attempt's locator matched anything (or the LLM found no target).
    ElementNotFound,
    /// The last locator matched several elements.
    PrecheckNotUnique,
    /// A wait or a deadline ran out.
    Timeout,
    /// Loading a page failed.
    NavigationFailed,
    /// An `expect:` step's element is not on the page.
    AssertionFailed,
    /// The only target is inside a canvas, which has no elements to act on.
    CanvasUnsupported,
    /// The LLM's answers were not usable decisions; there is no heuristic fallback.
    LlmFallbackDisabled,
    /// The element was found but the action on it failed.
    ActionFailed,
    /// The actions ran but the completion judge said the step is not done.
    StepNotCompleted,
    /// The LLM endpoint itself failed.
    LlmError,
}

impl ErrorType {
    /// Returns the name written in artefacts.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorType::ElementNotFound => "ELEMENT_NOT_FOUND",
            ErrorType::PrecheckNotUnique => "PRECHECK_NOT_UNIQUE",
            ErrorType::Timeout => "TIMEOUT",
            ErrorType::NavigationFailed => "NAVIGATION_FAILED",
            ErrorType::AssertionFailed => "ASSERTION_FAILED",
            ErrorType::CanvasUnsupported => "CANVAS_UNSUPPORTED",
            ErrorType::LlmFallbackDisabled => "LLM_FALLBACK_DISABLED",
            ErrorType::ActionFailed => "ACTION_FAILED",
            ErrorType::StepNotCompleted => "STEP_NOT_COMPLETED",
            ErrorType::LlmError => "LLM_ERROR",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn backend(retryable: bool) -> ArtifactError {
        ArtifactError::Backend {
            key: "sessions/s/steps.jsonl".into(),
            message: "connection refused".into(),
            retryable,
            source: None,
        }
    }

    #[test]
    fn store_failures_keep_their_class() {
        let transient = JobError::from(WorkflowError::store(&backend(true)));
        assert_eq!(transient.kind, ErrorKind::Storage);
        assert!(transient.is_retryable(), "{transient}");
        let permanent = JobError::from(WorkflowError::store(&backend(false)));
        assert_eq!(permanent.kind, ErrorKind::Internal);
        assert!(!permanent.is_retryable());
    }
}
