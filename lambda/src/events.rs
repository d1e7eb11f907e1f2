//! What a worker function is invoked with, turned into the queue's own
//! [`Message`]s so each goes through the consumer's path: Amazon MQ for
//! RabbitMQ events (`rmqMessagesByQueue`, keys `queue::vhost`, base64
//! `data`, header values as byte arrays), SQS events (body = the job,
//! `traceparent` as a string message attribute) and a bare `Job`; and
//! the cloud events that start checks (S3 notifications, EventBridge
//! events, scheduled ones included), kept as they came for the check
//! routes to match.

use base64::Engine as _;
use bytes::Bytes;
use oxwright_jobs::{Job, JobKind};
use oxwright_queue::{AmqpNames, HEADER_TRACEPARENT, Headers, Message};
use serde_json::Value;

use crate::FunctionError;

/// One message of an event, with where it came from.
#[derive(Debug, Clone)]
pub struct EventMessage {
    /// The message as the consumer would have received it.
    pub message: Message,
    /// Whether the source delivered it before.
    pub redelivered: bool,
    /// The SQS message id (the batch item identifier); `None` otherwise.
    pub item_id: Option<String>,
}

/// A parsed invocation.
#[derive(Debug)]
pub enum Invocation {
    /// An Amazon MQ for RabbitMQ event.
    RabbitMq(Vec<EventMessage>),
    /// An SQS event.
    Sqs(Vec<EventMessage>),
    /// A job invoked directly.
    Job(Box<Job>),
    /// An S3 notification: its records.
    S3(Vec<aws_lambda_events::event::s3::S3EventRecord>),
    /// An EventBridge event (a scheduled one, or any other source's).
    EventBridge(Box<aws_lambda_events::event::eventbridge::EventBridgeEvent>),
    /// A check invoked by name (`{"check": NAME, "url"?, "metadata"?}`).
    Check(CheckCall),
}

/// A check invoked by name, as `POST /v1/checks/{name}/runs` starts one:
/// the deployment URL whose origin replaces the start URL's, and metadata
/// to record (a commit sha).
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckCall {
    /// The check's name.
    pub check: String,
    /// The deployment URL.
    #[serde(default)]
    pub url: Option<String>,
    /// What the run records.
    #[serde(default)]
    pub metadata: std::collections::BTreeMap<String, String>,
}

/// Says which invocation `event` is, by its shape.
pub fn parse(event: Value, names: &AmqpNames) -> Result<Invocation, FunctionError> {
    let bad = |e: serde_json::Error| FunctionError::BadEvent(e.to_string());
    if event.get("rmqMessagesByQueue").is_some() {
        let parsed: aws_lambda_events::event::rabbitmq::RabbitMqEvent =
            serde_json::from_value(event).map_err(bad)?;
        return rabbitmq_messages(parsed, names).map(Invocation::RabbitMq);
    }
    if is_s3(&event) {
        let parsed: aws_lambda_events::event::s3::S3Event = serde_json::from_value(event).map_err(bad)?;
        return Ok(Invocation::S3(parsed.records));
    }
    if event.get("detail-type").is_some() && event.get("source").is_some() {
        let parsed: aws_lambda_events::event::eventbridge::EventBridgeEvent =
            serde_json::from_value(event).map_err(bad)?;
        return Ok(Invocation::EventBridge(Box::new(parsed)));
    }
    if event.get("Records").is_some() {
        let parsed: aws_lambda_events::event::sqs::SqsEvent = serde_json::from_value(event).map_err(bad)?;
        return Ok(Invocation::Sqs(sqs_messages(parsed)));
    }
    if event.get("check").is_some() {
        let call: CheckCall = serde_json::from_value(event).map_err(bad)?;
        return Ok(Invocation::Check(call));
    }
    if event.get("schema_version").is_some() {
        let job: Job = serde_json::from_value(event).map_err(bad)?;
        return Ok(Invocation::Job(Box::new(job)));
    }
    Err(FunctionError::BadEvent(
        "expected rmqMessagesByQueue, Records, an EventBridge event, a check or a job's schema_version"
            .into(),
    ))
}

/// Whether `event` is an S3 notification: records whose source is `aws:s3`.
fn is_s3(event: &Value) -> bool {
    event
        .get("Records")
        .and_then(Value::as_array)
        .and_then(|records| records.first())
        .and_then(|record| record.get("eventSource"))
        .and_then(Value::as_str)
        == Some("aws:s3")
}

fn rabbitmq_messages(
    event: aws_lambda_events::event::rabbitmq::RabbitMqEvent,
    names: &AmqpNames,
) -> Result<Vec<EventMessage>, FunctionError> {
    let mut out = Vec::new();
    // Sorted so that a batch runs in the same order every time.
    let mut queues: Vec<_> = event.messages_by_queue.into_iter().collect();
    queues.sort_by(|a, b| a.0.cmp(&b.0));
    for (key, messages) in queues {
        let queue = key.split_once("::").map_or(key.as_str(), |(q, _vhost)| q);
        for m in messages {
            let body = match m.data.as_deref() {
                Some(data) => base64::engine::general_purpose::STANDARD
                    .decode(data.trim())
                    .map_err(|e| {
                        FunctionError::BadEvent(format!("message data of {key} is not base64: {e}"))
                    })?,
                None => Vec::new(),
            };
            let headers: Headers = m
                .basic_properties
                .headers
                .iter()
                .filter_map(|(k, v)| header_text(v).map(|t| (k.clone(), t)))
                .collect();
            let kind = kind_of(queue, names, &body);
            out.push(EventMessage {
                message: Message {
                    kind,
                    message_id: m.basic_properties.message_id.clone(),
                    headers,
                    body: Bytes::from(body),
                },
                redelivered: m.redelivered,
                item_id: None,
            });
        }
    }
    Ok(out)
}

fn sqs_messages(event: aws_lambda_events::event::sqs::SqsEvent) -> Vec<EventMessage> {
    event
        .records
        .into_iter()
        .map(|r| {
            let body = r.body.unwrap_or_default().into_bytes();
            let mut headers = Headers::new();
            if let Some(tp) = r
                .message_attributes
                .get(HEADER_TRACEPARENT)
                .and_then(|a| a.string_value.clone())
            {
                headers.insert(HEADER_TRACEPARENT.to_owned(), tp);
            }
            let receives: u32 = r
                .attributes
                .get("ApproximateReceiveCount")
                .and_then(|n| n.parse().ok())
                .unwrap_or(1);
            EventMessage {
                message: Message {
                    kind: kind_in_body(&body).unwrap_or(JobKind::Fetch),
                    message_id: r.message_id.clone(),
                    headers,
                    body: Bytes::from(body),
                },
                redelivered: receives > 1,
                item_id: r.message_id,
            }
        })
        .collect()
}

/// Returns the text of a RabbitMQ header value as Amazon MQ sends it:
/// strings as `{"bytes": [..]}`, other values as JSON.
fn header_text(value: &Value) -> Option<String> {
    match value {
        Value::Object(o) => {
            let bytes: Vec<u8> = o
                .get("bytes")?
                .as_array()?
                .iter()
                .map(|b| b.as_u64().and_then(|b| u8::try_from(b).ok()))
                .collect::<Option<_>>()?;
            String::from_utf8(bytes).ok()
        }
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

/// The kind queue a message came from: `<prefix>.<kind>` when the queue
/// is one of ours, else the kind the body names (a mismatch or an unknown
/// kind is then reported by the decoder, as the consumer would).
fn kind_of(queue: &str, names: &AmqpNames, body: &[u8]) -> JobKind {
    [JobKind::Fetch, JobKind::Workflow, JobKind::Sitemap]
        .into_iter()
        .find(|k| names.kind_queue(*k) == queue)
        .or_else(|| kind_in_body(body))
        .unwrap_or(JobKind::Fetch)
}

fn kind_in_body(body: &[u8]) -> Option<JobKind> {
    let value: Value = serde_json::from_slice(body).ok()?;
    serde_json::from_value(value.get("kind")?.clone()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amazon_mq_headers_arrive_as_byte_arrays() {
        let v: Value = serde_json::json!({"bytes": [118, 97, 108]});
        assert_eq!(header_text(&v).as_deref(), Some("val"));
        assert_eq!(header_text(&serde_json::json!(10)).as_deref(), Some("10"));
        assert_eq!(header_text(&Value::Null), None);
    }

    #[test]
    fn the_queue_name_gives_the_kind() {
        let names = AmqpNames::new("ox");
        assert_eq!(kind_of("ox.sitemap", &names, b"{}"), JobKind::Sitemap);
        assert_eq!(
            kind_of("other", &names, br#"{"kind":"workflow"}"#),
            JobKind::Workflow
        );
    }

    #[test]
    fn unknown_shapes_are_bad_events() {
        let names = AmqpNames::new("ox");
        let err = parse(serde_json::json!({"hello": 1}), &names).unwrap_err();
        assert!(matches!(err, FunctionError::BadEvent(_)));
        let err = parse(
            serde_json::json!({"rmqMessagesByQueue": {"q::/": [{"data": "%%%"}]}}),
            &names,
        );
        assert!(matches!(err, Err(FunctionError::BadEvent(_))), "{err:?}");
    }
}
