//! `[queue]`, the broker's section of the configuration file.

use serde::{Deserialize, Serialize};

/// `[queue]`: RabbitMQ.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueueSection {
    /// AMQP URL; `OXWRIGHT_AMQP_URL` or `--amqp` override.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub amqp_url: Option<String>,
    /// Prefix of every exchange and queue name; `OXWRIGHT_QUEUE_PREFIX`
    /// or `--queue-prefix` override.
    #[serde(default = "default_queue_prefix")]
    pub prefix: String,
    /// Deliveries of a job before a transient failure is final.
    #[serde(default = "default_max_attempts")]
    pub max_attempts: u32,
    /// Delay before the first queue-level retry (doubled each time), ms.
    #[serde(default = "default_retry_delay_ms")]
    pub retry_delay_ms: u64,
}

impl Default for QueueSection {
    fn default() -> Self {
        Self {
            amqp_url: None,
            prefix: default_queue_prefix(),
            max_attempts: default_max_attempts(),
            retry_delay_ms: default_retry_delay_ms(),
        }
    }
}

fn default_queue_prefix() -> String {
    "oxwright".to_owned()
}
fn default_max_attempts() -> u32 {
    3
}
fn default_retry_delay_ms() -> u64 {
    5_000
}
