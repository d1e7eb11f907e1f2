//! Conversions between lapin's types and the queue's: headers, message
//! properties, deliveries and errors.

use std::future::Future;
use std::time::Duration;

use bytes::Bytes;
use lapin::BasicProperties;
use lapin::types::{AMQPValue, FieldTable};
use oxwright_jobs::JobKind;

use crate::{Headers, Message, QueueError};

/// Persistent delivery mode: messages survive a broker restart.
const PERSISTENT: u8 = 2;

/// Header prefixes the broker adds when it dead-letters a message (our
/// retry queues do, on expiry); they are bookkeeping, not message headers.
const BROKER_HEADER_PREFIXES: [&str; 3] = ["x-death", "x-first-death-", "x-last-death-"];

/// Wraps a lapin error as a retryable [`QueueError::Broker`].
pub(super) fn broker_error(what: &str, error: lapin::Error) -> QueueError {
    QueueError::Broker {
        message: format!("{what}: {error}"),
        retryable: true,
        source: Some(Box::new(error)),
    }
}

/// Creates a [`QueueError::Broker`] without an underlying error.
pub(super) fn broker_message(message: impl Into<String>, retryable: bool) -> QueueError {
    QueueError::Broker {
        message: message.into(),
        retryable,
        source: None,
    }
}

/// Runs one broker operation with a deadline: on expiry it fails as a
/// retryable [`QueueError::Broker`] saying what timed out.
pub(super) async fn within<T>(
    what: &str,
    limit: Duration,
    operation: impl Future<Output = Result<T, QueueError>>,
) -> Result<T, QueueError> {
    tokio::time::timeout(limit, operation)
        .await
        .unwrap_or_else(|_| Err(broker_message(format!("{what} timed out after {limit:?}"), true)))
}

/// Converts string headers to an AMQP field table.
pub(super) fn to_field_table(headers: &Headers) -> FieldTable {
    let mut table = FieldTable::default();
    for (name, value) in headers {
        table.insert(name.as_str().into(), AMQPValue::LongString(value.as_str().into()));
    }
    table
}

/// Keeps the string-valued headers of a field table, dropping the
/// broker's dead-lettering bookkeeping.
pub(super) fn from_field_table(table: Option<&FieldTable>) -> Headers {
    let Some(table) = table else {
        return Headers::new();
    };
    table
        .inner()
        .iter()
        .filter(|(name, _)| {
            !BROKER_HEADER_PREFIXES
                .iter()
                .any(|prefix| name.as_str().starts_with(prefix))
        })
        .filter_map(|(name, value)| {
            let text = match value {
                AMQPValue::LongString(s) => String::from_utf8_lossy(s.as_bytes()).into_owned(),
                AMQPValue::ShortString(s) => s.as_str().to_owned(),
                _ => return None,
            };
            Some((name.as_str().to_owned(), text))
        })
        .collect()
}

/// Returns the properties of a persistent message with `message_id` and
/// `headers`.
pub(super) fn properties(message_id: Option<&str>, headers: &Headers) -> BasicProperties {
    let mut props = BasicProperties::default()
        .with_delivery_mode(PERSISTENT)
        .with_content_type("application/json".into())
        .with_headers(to_field_table(headers));
    if let Some(id) = message_id {
        props = props.with_message_id(id.into());
    }
    props
}

/// Converts a lapin delivery taken from `kind`'s queue to a [`Message`].
pub(super) fn message_of(kind: JobKind, delivery: &lapin::message::Delivery) -> Message {
    Message {
        kind,
        message_id: delivery
            .properties
            .message_id()
            .as_ref()
            .map(|id| id.as_str().to_owned()),
        headers: from_field_table(delivery.properties.headers().as_ref()),
        body: Bytes::copy_from_slice(&delivery.data),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_round_trip_and_broker_headers_are_dropped() {
        let headers = Headers::from([("traceparent".to_owned(), "00-abc".to_owned())]);
        let mut table = to_field_table(&headers);
        table.insert("x-death".into(), AMQPValue::LongLongInt(1));
        table.insert("x-first-death-queue".into(), AMQPValue::LongString("q".into()));
        table.insert("count".into(), AMQPValue::LongLongInt(1));
        assert_eq!(from_field_table(Some(&table)), headers);
        assert_eq!(from_field_table(None), Headers::new());
    }
}
