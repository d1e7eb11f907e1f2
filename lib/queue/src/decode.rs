//! The wire format of jobs (serde_json of `oxwright_jobs::Job`) and the
//! rules a consumer applies before trusting a message.

use bytes::Bytes;
use oxwright_jobs::{Job, JobKind, SCHEMA_VERSION};
use serde_json::Value;

use crate::{DeadLetterReason, QueueError};

/// Largest message body consumers accept by default (1 MiB).
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 1024 * 1024;

/// Why a message body is not a usable job.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// The body is larger than the configured limit.
    #[error("message of {size} bytes exceeds the {max}-byte limit")]
    Oversized {
        /// Body size.
        size: usize,
        /// The configured limit.
        max: usize,
    },
    /// The body is not a JSON object.
    #[error("message is not a JSON object: {message}")]
    BadJson {
        /// The parser's complaint.
        message: String,
    },
    /// The schema version is missing or not the one this build speaks.
    #[error("schema version {found:?} is not the supported {expected}")]
    SchemaVersion {
        /// The version in the message, if it had a numeric one.
        found: Option<u64>,
        /// [`SCHEMA_VERSION`].
        expected: u32,
    },
    /// The job kind is missing or unknown to this build.
    #[error("unknown job kind {kind:?}")]
    UnknownKind {
        /// The kind named in the message (empty when missing).
        kind: String,
    },
    /// The job arrived on another kind's queue.
    #[error("a {found} job arrived on the {expected} queue")]
    KindMismatch {
        /// The queue's kind.
        expected: JobKind,
        /// The job's kind.
        found: JobKind,
    },
    /// The JSON does not match the job schema (missing or unknown fields,
    /// wrong types, bad URL, …).
    #[error("message does not match the job schema: {message}")]
    InvalidJob {
        /// The deserialiser's complaint.
        message: String,
    },
}

impl DecodeError {
    /// Returns a snake_case name of this error, used as the dead-letter
    /// error kind (`decode_<name>`).
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Oversized { .. } => "oversized",
            Self::BadJson { .. } => "bad_json",
            Self::SchemaVersion { .. } => "schema_version",
            Self::UnknownKind { .. } => "unknown_kind",
            Self::KindMismatch { .. } => "kind_mismatch",
            Self::InvalidJob { .. } => "invalid_job",
        }
    }

    /// Returns the reason to dead-letter an undecodable message with.
    pub fn dead_letter_reason(&self) -> DeadLetterReason {
        DeadLetterReason {
            kind: format!("decode_{}", self.as_str()),
            message: self.to_string(),
        }
    }
}

/// Serialises `job` for the wire, refusing bodies over `max_bytes`.
pub fn encode_job(job: &Job, max_bytes: usize) -> Result<Bytes, QueueError> {
    let body = serde_json::to_vec(job).map_err(QueueError::Encode)?;
    if body.len() > max_bytes {
        return Err(QueueError::TooLarge {
            size: body.len(),
            max: max_bytes,
        });
    }
    Ok(Bytes::from(body))
}

/// Decodes a body taken from the `queue_kind` queue, checking size,
/// JSON, schema version, kind and schema in that order so the error names
/// the first thing wrong.
pub fn decode_job(body: &[u8], queue_kind: JobKind, max_bytes: usize) -> Result<Job, DecodeError> {
    if body.len() > max_bytes {
        return Err(DecodeError::Oversized {
            size: body.len(),
            max: max_bytes,
        });
    }
    let value: Value = serde_json::from_slice(body).map_err(|e| DecodeError::BadJson {
        message: e.to_string(),
    })?;
    let Value::Object(fields) = &value else {
        return Err(DecodeError::BadJson {
            message: "top-level value is not an object".to_owned(),
        });
    };
    let found = fields.get("schema_version").and_then(Value::as_u64);
    if found != Some(u64::from(SCHEMA_VERSION)) {
        return Err(DecodeError::SchemaVersion {
            found,
            expected: SCHEMA_VERSION,
        });
    }
    let kind_name = fields.get("kind").and_then(Value::as_str).unwrap_or_default();
    let kind: JobKind = serde_json::from_value(Value::String(kind_name.to_owned())).map_err(|_| {
        DecodeError::UnknownKind {
            kind: kind_name.to_owned(),
        }
    })?;
    if kind != queue_kind {
        return Err(DecodeError::KindMismatch {
            expected: queue_kind,
            found: kind,
        });
    }
    serde_json::from_value(value).map_err(|e| DecodeError::InvalidJob {
        message: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use oxwright_jobs::{FetchSpec, JobSpec};

    use super::*;

    fn job() -> Job {
        Job::new(
            JobSpec::Fetch(FetchSpec::new("https://example.com/".parse().unwrap())),
            None,
        )
    }

    #[test]
    fn round_trip() {
        let job = job();
        let body = encode_job(&job, DEFAULT_MAX_MESSAGE_BYTES).unwrap();
        assert_eq!(
            decode_job(&body, JobKind::Fetch, DEFAULT_MAX_MESSAGE_BYTES),
            Ok(job)
        );
    }

    #[test]
    fn typed_failures() {
        let max = DEFAULT_MAX_MESSAGE_BYTES;
        let decode = |body: &str| decode_job(body.as_bytes(), JobKind::Fetch, max).unwrap_err();
        assert_eq!(decode("{").as_str(), "bad_json");
        assert_eq!(decode("[1]").as_str(), "bad_json");
        assert_eq!(
            decode(r#"{"kind":"fetch"}"#),
            DecodeError::SchemaVersion {
                found: None,
                expected: SCHEMA_VERSION
            }
        );
        assert_eq!(
            decode(r#"{"schema_version":1,"kind":"teleport"}"#),
            DecodeError::UnknownKind {
                kind: "teleport".into()
            }
        );
        assert_eq!(
            decode(r#"{"schema_version":1,"kind":"fetch"}"#).as_str(),
            "invalid_job"
        );
        let big = decode_job(&[b' '; 11], JobKind::Fetch, 10).unwrap_err();
        assert_eq!(big, DecodeError::Oversized { size: 11, max: 10 });
        assert_eq!(big.dead_letter_reason().kind, "decode_oversized");
    }

    #[test]
    fn encode_refuses_oversized_jobs() {
        assert!(matches!(
            encode_job(&job(), 10),
            Err(QueueError::TooLarge { max: 10, .. })
        ));
    }
}
