//! The RabbitMQ backend of [`crate::JobQueue`], the only code that talks to
//! lapin: topology declaration, the confirming publisher, the
//! prefetch-bounded consumers and their settlement, and connection
//! recovery. See `lib/queue/design.md` for the topology and the rules.

mod backoff;
mod consumer;
mod link;
mod options;
mod queue;
mod reports;
mod settle;
mod topology;
mod wire;

pub use options::AmqpOptions;
pub use queue::AmqpQueue;
pub use topology::Names;
