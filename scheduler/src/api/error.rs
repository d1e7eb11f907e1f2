//! The API's errors: a status and `{"error": kind, "message": …}`.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use oxwright_jobs::{ErrorKind, JobError};

/// An API error: a status and a typed body.
pub(crate) struct ApiError {
    pub(crate) status: StatusCode,
    pub(crate) kind: String,
    pub(crate) message: String,
}

impl ApiError {
    /// The error of a body that could not be read: 413 when too large, 415
    /// without a JSON content type, 400 otherwise (axum's 422 included).
    pub(crate) fn from_rejection(err: axum::extract::rejection::JsonRejection) -> Self {
        let (status, kind) = match err.status() {
            StatusCode::PAYLOAD_TOO_LARGE => (StatusCode::PAYLOAD_TOO_LARGE, "too_large"),
            StatusCode::UNSUPPORTED_MEDIA_TYPE => {
                (StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type")
            }
            _ => (StatusCode::BAD_REQUEST, "invalid_input"),
        };
        Self::new(status, kind, err.body_text())
    }

    pub(crate) fn new(status: StatusCode, kind: &str, message: impl Into<String>) -> Self {
        Self {
            status,
            kind: kind.to_owned(),
            message: message.into(),
        }
    }
}

impl From<JobError> for ApiError {
    fn from(err: JobError) -> Self {
        let status = match err.kind {
            ErrorKind::InvalidInput | ErrorKind::PolicyDenied => StatusCode::BAD_REQUEST,
            _ => StatusCode::SERVICE_UNAVAILABLE,
        };
        Self::new(status, err.kind.as_str(), err.message)
    }
}

impl From<crate::batch::BatchFault> for ApiError {
    fn from(fault: crate::batch::BatchFault) -> Self {
        use crate::batch::BatchFault;
        match fault {
            BatchFault::BadId => invalid(fault.to_string()),
            BatchFault::Unknown(_) => not_found(fault.to_string()),
            BatchFault::Complete(_) => conflict(fault.to_string()),
            BatchFault::Unavailable(message) => unavailable(message),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = serde_json::json!({ "error": self.kind, "message": self.message });
        (self.status, Json(body)).into_response()
    }
}

/// 400 `invalid_input`.
pub(crate) fn invalid(message: impl Into<String>) -> ApiError {
    ApiError::new(StatusCode::BAD_REQUEST, "invalid_input", message)
}

/// 503 `unavailable`: the queue or the store failed.
pub(crate) fn unavailable(err: impl std::fmt::Display) -> ApiError {
    ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "unavailable", err.to_string())
}

/// 404 `not_found`.
pub(crate) fn not_found(message: impl Into<String>) -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, "not_found", message)
}

/// 409 `conflict`: the thing asked for is not possible in this state.
pub(crate) fn conflict(message: impl Into<String>) -> ApiError {
    ApiError::new(StatusCode::CONFLICT, "conflict", message)
}
