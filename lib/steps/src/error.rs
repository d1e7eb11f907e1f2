//! Why a step failed: one attempt's typed reason ([`AttemptError`], the
//! next attempt decides again), a step line that does not parse
//! ([`ParseError`]), and what ends a list of steps ([`StepError`]).

use oxwright_engine::EngineError;
use oxwright_jobs::{ErrorKind, JobError};
use oxwright_secrets::ResolveError;

/// A step line that does not parse, or a `goto:` whose URL does not join.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct ParseError {
    /// 1-based line (or item) number.
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

/// What ends a list of steps, as opposed to one attempt: the engine failed
/// for good, a secret has no value, a `goto:` cannot be resolved.
#[derive(Debug, Clone, thiserror::Error)]
pub enum StepError {
    /// The step cannot be run as written.
    #[error(transparent)]
    Parse(#[from] ParseError),
    /// A `{{NAME}}` placeholder could not be resolved.
    #[error(transparent)]
    Secret(#[from] ResolveError),
    /// The browser engine failed (crash, navigation refused …).
    #[error(transparent)]
    Engine(#[from] EngineError),
}

impl From<StepError> for JobError {
    fn from(err: StepError) -> JobError {
        match err {
            StepError::Engine(e) => JobError::from(e),
            other => JobError::new(ErrorKind::InvalidInput, other.to_string()),
        }
    }
}

/// Why one attempt at a step failed. The code names appear in `steps.jsonl`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AttemptError {
    /// The LLM's decision was not usable; there is no heuristic fallback.
    #[error("LLM_FALLBACK_DISABLED: {0}")]
    Unusable(String),
    /// The LLM said the step's target is not on the page.
    #[error("TARGET_NOT_FOUND: the LLM found no target for the step")]
    TargetNotFound,
    /// The locator matched nothing; `closest` lists the page's accessible
    /// names nearest to what it asked for (`button "Sign in"` …).
    #[error("PRECHECK_NO_MATCH: {locator} matched 0 elements; {}", closest_text(closest))]
    NoMatch {
        /// The locator, as text.
        locator: String,
        /// The nearest `role "name"` pairs on the page, best first.
        closest: Vec<String>,
    },
    /// The locator matched more than one element.
    #[error("PRECHECK_NOT_UNIQUE: {locator} matched {count} elements")]
    NotUnique {
        /// The locator, as text.
        locator: String,
        /// Matches found.
        count: usize,
    },
    /// The action failed in the page.
    #[error("ACTION_FAILED: {0}")]
    Action(String),
    /// A wait ran out (a `wait` decision whose element never came, an engine deadline).
    #[error("TIMEOUT: {0}")]
    Timeout(String),
    /// Loading a page failed (network, DNS, HTTP status, the URL policy).
    #[error("NAVIGATION_FAILED: {0}")]
    Navigation(String),
    /// The action ran but the judge says the step is not complete.
    #[error("NOT_COMPLETED: the completion judge answered false")]
    NotCompleted,
    /// The LLM call itself failed.
    #[error("LLM_ERROR: {0}")]
    Llm(String),
    /// An `expect:` step's condition did not hold by its deadline.
    #[error("ASSERTION_FAILED: {0}")]
    Assertion(String),
    /// Nothing matches and the page is drawn on a canvas: what the step
    /// wants is pixels, not elements (the seed's ADR: not supported).
    #[error("CANVAS_UNSUPPORTED: {0}")]
    Canvas(String),
    /// A cached action does not fit the page any more (replay): it matched
    /// no or several elements, another element than the recorded one, or
    /// its effect was not the recorded one. The step goes to the LLM.
    #[error("CACHE_REFUSED: {0}")]
    CacheRefused(String),
}

impl AttemptError {
    /// Returns the code at the start of the message.
    pub fn code(&self) -> &'static str {
        match self {
            AttemptError::Unusable(_) => "LLM_FALLBACK_DISABLED",
            AttemptError::TargetNotFound => "TARGET_NOT_FOUND",
            AttemptError::NoMatch { .. } => "PRECHECK_NO_MATCH",
            AttemptError::NotUnique { .. } => "PRECHECK_NOT_UNIQUE",
            AttemptError::Action(_) => "ACTION_FAILED",
            AttemptError::Timeout(_) => "TIMEOUT",
            AttemptError::Navigation(_) => "NAVIGATION_FAILED",
            AttemptError::NotCompleted => "NOT_COMPLETED",
            AttemptError::Llm(_) => "LLM_ERROR",
            AttemptError::Assertion(_) => "ASSERTION_FAILED",
            AttemptError::Canvas(_) => "CANVAS_UNSUPPORTED",
            AttemptError::CacheRefused(_) => "CACHE_REFUSED",
        }
    }
}

fn closest_text(closest: &[String]) -> String {
    if closest.is_empty() {
        "the page has no named elements".into()
    } else {
        format!("closest names on the page: {}", closest.join(", "))
    }
}

impl AttemptError {
    /// Types a page error that does not end the run (fatal ones are the caller's).
    pub fn from_engine(err: &oxwright_engine::EngineError, message: String) -> Self {
        use oxwright_engine::EngineErrorKind as K;
        match err.kind {
            K::Timeout | K::WaitForTimeout => AttemptError::Timeout(message),
            K::Navigation | K::Dns | K::HttpStatus | K::NonHtml | K::PolicyDenied => {
                AttemptError::Navigation(message)
            }
            _ => AttemptError::Action(message),
        }
    }
}
