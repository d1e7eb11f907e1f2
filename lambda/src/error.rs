//! The function's errors as the Lambda service sees them: an `errorType`
//! that says whether another attempt may succeed (`Retryable.<kind>`) or
//! not (`Permanent.<kind>`), so a retry policy can match on it.

use oxwright_jobs::JobError;

/// Why an invocation failed.
#[derive(Debug, thiserror::Error)]
pub enum FunctionError {
    /// The event is neither a RabbitMQ event, an SQS event nor a job.
    #[error("the event is not a RabbitMQ event, an SQS event or a job: {0}")]
    BadEvent(String),
    /// The job failed; its report's error says how.
    #[error("job {job_id} failed: {error}")]
    Job {
        /// The job.
        job_id: String,
        /// The typed failure (boxed: it is the largest variant by far).
        error: Box<JobError>,
    },
    /// The broker could not take a report, a retry or a dead letter.
    #[error("broker: {0}")]
    Broker(String),
    /// The invocation's time ran out before its work finished.
    #[error("the invocation's deadline came before {0} finished")]
    Deadline(String),
    /// Chromium could not be started.
    #[error("the browser pool did not start: {0}")]
    Browser(String),
    /// Messages of the batch need another attempt and nothing else can
    /// give them one (no broker configured for retries).
    #[error("{0} message(s) of the batch need another attempt")]
    BatchRetry(usize),
    /// The function's configuration is not usable (a malformed key).
    #[error("configuration: {0}")]
    Config(String),
}

impl FunctionError {
    /// Says whether the same event may succeed when invoked again.
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::BadEvent(_) | Self::Config(_) => false,
            Self::Job { error, .. } => error.is_retryable(),
            Self::Broker(_) | Self::Deadline(_) | Self::BatchRetry(_) | Self::Browser(_) => true,
        }
    }

    /// Returns the snake_case name of the failure, without its class.
    pub fn kind(&self) -> String {
        match self {
            Self::BadEvent(_) => "bad_event".into(),
            Self::Job { error, .. } => error.kind.to_string(),
            Self::Broker(_) => "broker".into(),
            Self::Deadline(_) => "deadline".into(),
            Self::BatchRetry(_) => "batch".into(),
            Self::Browser(_) => "browser_unavailable".into(),
            Self::Config(_) => "config".into(),
        }
    }
}

/// Returns the `errorType` of `err`: `Retryable.<kind>` or `Permanent.<kind>`.
pub fn error_type(err: &FunctionError) -> String {
    let class = if err.is_retryable() {
        "Retryable"
    } else {
        "Permanent"
    };
    format!("{class}.{}", err.kind())
}

#[cfg(feature = "lambda")]
impl From<FunctionError> for lambda_runtime::Diagnostic {
    fn from(err: FunctionError) -> Self {
        lambda_runtime::Diagnostic {
            error_type: error_type(&err),
            error_message: err.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxwright_jobs::ErrorKind;

    #[test]
    fn error_types_name_the_class_and_the_kind() {
        let job = |kind| FunctionError::Job {
            job_id: "j".into(),
            error: Box::new(JobError::new(kind, "x")),
        };
        assert_eq!(error_type(&job(ErrorKind::NonHtml)), "Permanent.non_html");
        assert_eq!(error_type(&job(ErrorKind::Timeout)), "Retryable.timeout");
        assert_eq!(
            error_type(&FunctionError::BadEvent("x".into())),
            "Permanent.bad_event"
        );
        assert_eq!(error_type(&FunctionError::Broker("x".into())), "Retryable.broker");
    }
}
