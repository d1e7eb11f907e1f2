//! How jobs travel from the scheduler to the workers and how their reports
//! travel back: the [`JobQueue`] trait with AMQP semantics (confirmed
//! publishes, prefetch-bounded consumers, ack / requeue / retry /
//! dead-letter), the message decoding rules, the RabbitMQ [`AmqpQueue`], the
//! in-memory [`MemoryQueue`], and the one test suite every implementation
//! must pass.

mod amqp;
mod decode;
mod delivery;
mod error;
mod memory;
mod queue;
mod section;
pub mod test_suite;

pub use amqp::{AmqpOptions, AmqpQueue, Names as AmqpNames};
pub use decode::{DEFAULT_MAX_MESSAGE_BYTES, DecodeError, decode_job, encode_job};
pub use delivery::{DeadLetter, DeadLetterReason, Delivery, Headers, Message, Settlement, Settler};
pub use error::QueueError;
pub use memory::{DEFAULT_MAX_DEAD_LETTERS, MemoryQueue, MemoryQueueOptions};
pub use queue::{Consumer, JobQueue, ReportAck, ReportAcker, ReportStream};
pub use section::QueueSection;

/// Header carrying the W3C trace context of the publisher.
pub const HEADER_TRACEPARENT: &str = "traceparent";
/// Header a dead-lettered message carries: the reason's kind.
pub const HEADER_ERROR_KIND: &str = "x-oxwright-error-kind";
/// Header a dead-lettered message carries: the reason's message.
pub const HEADER_ERROR_MESSAGE: &str = "x-oxwright-error-message";
