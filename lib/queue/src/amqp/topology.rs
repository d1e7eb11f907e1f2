//! Exchange and queue names under a prefix, and their idempotent
//! declaration: the jobs exchange, one durable queue per kind, the
//! per-kind retry queues, the dead-letter queue and the results
//! exchange with its queue.

use std::time::Duration;

use lapin::options::{ExchangeDeclareOptions, QueueBindOptions, QueueDeclareOptions, QueueDeleteOptions};
use lapin::types::{AMQPValue, FieldTable};
use lapin::{Channel, ExchangeKind};
use oxwright_jobs::JobKind;

use super::wire::broker_error;
use crate::QueueError;

/// Routing key of reports on the results exchange.
pub(super) const REPORT_ROUTING_KEY: &str = "report";

/// Returns every job kind, each with its own queue.
pub(super) fn kinds() -> &'static [JobKind] {
    // The match stops the build when a kind is added and not listed below.
    match JobKind::Fetch {
        JobKind::Fetch | JobKind::Sitemap | JobKind::Workflow => {}
    }
    &[JobKind::Fetch, JobKind::Sitemap, JobKind::Workflow]
}

/// The exchange and queue names of one deployment (one prefix).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Names {
    prefix: String,
}

impl Names {
    /// Creates the names under `prefix`.
    pub fn new(prefix: &str) -> Self {
        Self {
            prefix: prefix.to_owned(),
        }
    }

    /// Returns the direct jobs exchange, `<prefix>.jobs`; the routing key
    /// is the kind.
    pub fn jobs_exchange(&self) -> String {
        format!("{}.jobs", self.prefix)
    }

    /// Returns the durable queue of `kind`, `<prefix>.<kind>`.
    pub fn kind_queue(&self, kind: JobKind) -> String {
        format!("{}.{}", self.prefix, kind.as_str())
    }

    /// Returns the `level`-th (1-based) retry queue of `kind`,
    /// `<prefix>.<kind>.retry.<level>`.
    pub fn retry_queue(&self, kind: JobKind, level: usize) -> String {
        format!("{}.{}.retry.{level}", self.prefix, kind.as_str())
    }

    /// Returns the dead-letter queue, `<prefix>.dead-letter`.
    pub fn dead_letter_queue(&self) -> String {
        format!("{}.dead-letter", self.prefix)
    }

    /// Returns the direct results exchange, `<prefix>.results`.
    pub fn results_exchange(&self) -> String {
        format!("{}.results", self.prefix)
    }

    /// Returns the durable results queue, `<prefix>.results`.
    pub fn results_queue(&self) -> String {
        format!("{}.results", self.prefix)
    }
}

/// Returns the 1-based level of the retry queue a retry after `delay`
/// waits in: the shortest whose TTL is at least `delay`, else the longest.
pub(super) fn retry_level(delays: &[Duration], delay: Duration) -> usize {
    delays
        .iter()
        .position(|ttl| *ttl >= delay)
        .unwrap_or(delays.len().saturating_sub(1))
        + 1
}

fn durable() -> QueueDeclareOptions {
    QueueDeclareOptions {
        durable: true,
        ..QueueDeclareOptions::default()
    }
}

fn millis(d: Duration) -> AMQPValue {
    AMQPValue::LongLongInt(i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// Declares the whole topology on `channel`; declaring what exists with
/// the same arguments is a no-op, so both scheduler and workers call it.
pub(super) async fn declare(
    channel: &Channel,
    names: &Names,
    retry_delays: &[Duration],
) -> Result<(), QueueError> {
    let exchange_options = ExchangeDeclareOptions {
        durable: true,
        ..ExchangeDeclareOptions::default()
    };
    let jobs = names.jobs_exchange();
    channel
        .exchange_declare(
            jobs.as_str().into(),
            ExchangeKind::Direct,
            exchange_options,
            FieldTable::default(),
        )
        .await
        .map_err(|e| broker_error("declare jobs exchange", e))?;
    for &kind in kinds() {
        let queue = names.kind_queue(kind);
        channel
            .queue_declare(queue.as_str().into(), durable(), FieldTable::default())
            .await
            .map_err(|e| broker_error("declare kind queue", e))?;
        channel
            .queue_bind(
                queue.as_str().into(),
                jobs.as_str().into(),
                kind.as_str().into(),
                QueueBindOptions::default(),
                FieldTable::default(),
            )
            .await
            .map_err(|e| broker_error("bind kind queue", e))?;
        for (index, ttl) in retry_delays.iter().enumerate() {
            let mut args = FieldTable::default();
            args.insert("x-message-ttl".into(), millis(*ttl));
            args.insert(
                "x-dead-letter-exchange".into(),
                AMQPValue::LongString(jobs.as_str().into()),
            );
            args.insert(
                "x-dead-letter-routing-key".into(),
                AMQPValue::LongString(kind.as_str().into()),
            );
            channel
                .queue_declare(
                    names.retry_queue(kind, index + 1).as_str().into(),
                    durable(),
                    args,
                )
                .await
                .map_err(|e| broker_error("declare retry queue", e))?;
        }
    }
    channel
        .queue_declare(
            names.dead_letter_queue().as_str().into(),
            durable(),
            FieldTable::default(),
        )
        .await
        .map_err(|e| broker_error("declare dead-letter queue", e))?;
    let results = names.results_exchange();
    channel
        .exchange_declare(
            results.as_str().into(),
            ExchangeKind::Direct,
            exchange_options,
            FieldTable::default(),
        )
        .await
        .map_err(|e| broker_error("declare results exchange", e))?;
    channel
        .queue_declare(
            names.results_queue().as_str().into(),
            durable(),
            FieldTable::default(),
        )
        .await
        .map_err(|e| broker_error("declare results queue", e))?;
    channel
        .queue_bind(
            names.results_queue().as_str().into(),
            results.as_str().into(),
            REPORT_ROUTING_KEY.into(),
            QueueBindOptions::default(),
            FieldTable::default(),
        )
        .await
        .map_err(|e| broker_error("bind results queue", e))?;
    Ok(())
}

/// Deletes every queue and exchange of the topology (tests and tools).
pub(super) async fn delete(channel: &Channel, names: &Names, retry_levels: usize) -> Result<(), QueueError> {
    let mut queues = vec![names.dead_letter_queue(), names.results_queue()];
    for &kind in kinds() {
        queues.push(names.kind_queue(kind));
        queues.extend((1..=retry_levels).map(|level| names.retry_queue(kind, level)));
    }
    for queue in queues {
        channel
            .queue_delete(queue.as_str().into(), QueueDeleteOptions::default())
            .await
            .map_err(|e| broker_error("delete queue", e))?;
    }
    for exchange in [names.jobs_exchange(), names.results_exchange()] {
        channel
            .exchange_delete(exchange.as_str().into(), Default::default())
            .await
            .map_err(|e| broker_error("delete exchange", e))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_prefix() {
        let names = Names::new("t1");
        assert_eq!(names.jobs_exchange(), "t1.jobs");
        assert_eq!(names.kind_queue(JobKind::Fetch), "t1.fetch");
        assert_eq!(names.retry_queue(JobKind::Fetch, 2), "t1.fetch.retry.2");
        assert_eq!(names.dead_letter_queue(), "t1.dead-letter");
        assert_eq!(names.results_queue(), "t1.results");
    }

    #[test]
    fn retry_level_rounds_up_and_caps() {
        let delays: Vec<Duration> = [1, 5, 30].into_iter().map(Duration::from_secs).collect();
        assert_eq!(retry_level(&delays, Duration::ZERO), 1);
        assert_eq!(retry_level(&delays, Duration::from_millis(300)), 1);
        assert_eq!(retry_level(&delays, Duration::from_secs(1)), 1);
        assert_eq!(retry_level(&delays, Duration::from_secs(2)), 2);
        assert_eq!(retry_level(&delays, Duration::from_secs(3600)), 3);
    }
}
