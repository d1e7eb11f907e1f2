//! Settings of an [`crate::AmqpQueue`].

use std::time::Duration;

use crate::DEFAULT_MAX_MESSAGE_BYTES;

/// Settings of an [`crate::AmqpQueue`].
#[derive(Debug, Clone)]
pub struct AmqpOptions {
    /// Prefix of every exchange and queue name (`<prefix>.jobs`,
    /// `<prefix>.fetch`, …), so several deployments or tests can share one
    /// broker.
    pub prefix: String,
    /// Largest body consumers decode; larger ones are `Oversized`.
    pub max_message_bytes: usize,
    /// The TTLs of the per-kind retry queues, shortest first. A retry
    /// waits in the shortest queue whose TTL is at least its delay (the
    /// longest when none is), with a per-message expiration equal to the
    /// delay, so it comes back after its delay and at most after that
    /// queue's TTL.
    pub retry_delays: Vec<Duration>,
    /// How long publishers and consumers keep trying to reconnect after
    /// the connection drops before an operation fails (consumers keep
    /// trying for as long as they live).
    pub reconnect_timeout: Duration,
    /// How long a single publish waits for the broker's confirm.
    pub confirm_timeout: Duration,
    /// How long any other request to the broker (opening a channel,
    /// declaring, subscribing, an ack, a channel close) may wait for it.
    /// lapin resolves a request only when the broker answers or the
    /// connection is seen to fail; the deadline keeps a connection that
    /// stopped moving from holding a caller forever.
    pub round_trip_timeout: Duration,
}

impl Default for AmqpOptions {
    fn default() -> Self {
        Self {
            prefix: default_prefix(),
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
            retry_delays: default_retry_delays(),
            reconnect_timeout: Duration::from_secs(30),
            confirm_timeout: Duration::from_secs(30),
            round_trip_timeout: Duration::from_secs(30),
        }
    }
}

/// Returns the default name prefix, `oxwright`.
pub fn default_prefix() -> String {
    "oxwright".to_owned()
}

/// Returns the default retry queue TTLs: 1 s, 5 s, 30 s, 2 min, 10 min,
/// 1 h.
pub fn default_retry_delays() -> Vec<Duration> {
    [1, 5, 30, 120, 600, 3600]
        .into_iter()
        .map(Duration::from_secs)
        .collect()
}
