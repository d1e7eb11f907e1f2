//! The connection to the broker, shared by every publisher and consumer of
//! one [`crate::AmqpQueue`]: (re)connecting with backoff, declaring the
//! topology on each new connection, the confirm-mode publisher channel,
//! and the channel closes and nacks that `Drop` impls hand off.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use lapin::options::{BasicPublishOptions, ConfirmSelectOptions};
use lapin::{BasicProperties, Channel, Connection, ConnectionProperties};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use super::backoff::{self, Backoff, Report};
use super::options::AmqpOptions;
use super::topology::{self, Names};
use super::wire::{broker_error, broker_message, within};
use crate::QueueError;

/// How long one connection attempt may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The shared connection state of one queue handle and its clones.
#[derive(Debug)]
pub(super) struct Link {
    url: String,
    pub(super) options: AmqpOptions,
    pub(super) names: Names,
    connection: tokio::sync::Mutex<Option<Arc<Connection>>>,
    publisher: tokio::sync::Mutex<Option<Channel>>,
    /// Channel closes and nacks spawned from `Drop`; every operation
    /// awaits them first so that, e.g., a dropped consumer no longer takes
    /// messages when the next publish happens.
    deferred: Mutex<Vec<JoinHandle<()>>>,
    pub(super) closed: CancellationToken,
}

impl Link {
    /// Connects once (no retry, so a wrong URL or a missing broker fails
    /// at once) and declares the topology.
    pub(super) async fn connect(url: &str, options: AmqpOptions) -> Result<Arc<Self>, QueueError> {
        let link = Self::new(url, options)?;
        link.connection().await?;
        Ok(link)
    }

    /// Connects like [`Link::connect`], but while the broker cannot be
    /// reached (refused, reset, timed out, its name not resolving yet)
    /// tries again with capped exponential backoff and jitter until it
    /// answers or `stop` is cancelled ([`QueueError::Closed`]). Says so
    /// once, reminds every [`backoff::REMIND_EVERY`], and says when it got
    /// through. A malformed URL, refused credentials or a topology the
    /// broker rejects fail at once.
    pub(super) async fn connect_patiently(
        url: &str,
        options: AmqpOptions,
        stop: &CancellationToken,
    ) -> Result<Arc<Self>, QueueError> {
        let link = Self::new(url, options)?;
        let mut backoff = Backoff::new(backoff::SUBSCRIBE_MAX);
        loop {
            let err = match link.connection().await {
                Ok(_) => {
                    if let Some((down, failures)) = backoff.succeeded(tokio::time::Instant::now()) {
                        info!(
                            broker = %redact(url), waited_s = down.as_secs(), failures,
                            "reached the broker"
                        );
                    }
                    return Ok(link);
                }
                Err(err) if unreachable(&err) => err,
                Err(err) => return Err(err),
            };
            let now = tokio::time::Instant::now();
            let (pause, report) = backoff.failed(now, backoff::jitter());
            match report {
                Report::Warn => warn!(
                    broker = %redact(url), error = %err, max_pause = ?backoff::SUBSCRIBE_MAX,
                    remind_every = ?backoff::REMIND_EVERY,
                    "cannot reach the broker; trying again with backoff until it answers"
                ),
                Report::Remind => warn!(
                    broker = %redact(url), error = %err, down_s = backoff.down_for(now).as_secs(),
                    failures = backoff.failures(), "still cannot reach the broker"
                ),
                Report::Quiet => {
                    debug!(broker = %redact(url), error = %err, ?pause, "cannot reach the broker")
                }
            }
            tokio::select! {
                () = stop.cancelled() => return Err(QueueError::Closed),
                () = tokio::time::sleep(pause) => {}
            }
        }
    }

    /// A link not connected yet; refuses bad options and a malformed URL.
    fn new(url: &str, options: AmqpOptions) -> Result<Arc<Self>, QueueError> {
        if options.retry_delays.is_empty() {
            return Err(QueueError::InvalidArgument("retry_delays is empty".to_owned()));
        }
        if options.prefix.is_empty() {
            return Err(QueueError::InvalidArgument("prefix is empty".to_owned()));
        }
        if let Err(err) = url.parse::<lapin::uri::AMQPUri>() {
            return Err(QueueError::InvalidArgument(format!(
                "AMQP URL {}: {err}",
                redact(url)
            )));
        }
        Ok(Arc::new(Self {
            url: url.to_owned(),
            names: Names::new(&options.prefix),
            options,
            connection: tokio::sync::Mutex::new(None),
            publisher: tokio::sync::Mutex::new(None),
            deferred: Mutex::new(Vec::new()),
            closed: CancellationToken::new(),
        }))
    }

    /// Opens a connection and declares the topology on it.
    async fn open(&self) -> Result<Arc<Connection>, QueueError> {
        let connect = Connection::connect(&self.url, ConnectionProperties::default());
        let connection = tokio::time::timeout(CONNECT_TIMEOUT, connect)
            .await
            .map_err(|_| {
                broker_message(
                    format!(
                        "connecting to {} timed out after {CONNECT_TIMEOUT:?}",
                        redact(&self.url)
                    ),
                    true,
                )
            })?
            .map_err(|e| broker_error(&format!("cannot connect to {}", redact(&self.url)), e))?;
        within("declaring the topology", self.options.round_trip_timeout, async {
            let channel = connection
                .create_channel()
                .await
                .map_err(|e| broker_error("create channel", e))?;
            topology::declare(&channel, &self.names, &self.options.retry_delays).await?;
            let _ = channel.close(200, "OK".into()).await;
            Ok(())
        })
        .await?;
        debug!(prefix = %self.options.prefix, "connected to the broker");
        Ok(Arc::new(connection))
    }

    /// Returns the live connection, opening a new one when it dropped.
    pub(super) async fn connection(&self) -> Result<Arc<Connection>, QueueError> {
        if self.closed.is_cancelled() {
            return Err(QueueError::Closed);
        }
        let mut guard = self.connection.lock().await;
        if let Some(connection) = guard.as_ref()
            && connection.status().connected()
        {
            return Ok(Arc::clone(connection));
        }
        if guard.take().is_some() {
            warn!(prefix = %self.options.prefix, "broker connection lost, reconnecting");
        }
        let connection = self.open().await?;
        *guard = Some(Arc::clone(&connection));
        Ok(connection)
    }

    /// Opens a channel on the live connection.
    pub(super) async fn channel(&self) -> Result<Channel, QueueError> {
        let connection = self.connection().await?;
        within("create channel", self.options.round_trip_timeout, async {
            connection
                .create_channel()
                .await
                .map_err(|e| broker_error("create channel", e))
        })
        .await
    }

    /// Runs `op` until it succeeds, fails for good, or retryable failures
    /// (a dropped connection) have lasted `reconnect_timeout`.
    pub(super) async fn with_retry<T, F, Fut>(&self, what: &str, mut op: F) -> Result<T, QueueError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, QueueError>>,
    {
        self.await_deferred().await;
        let start = Instant::now();
        let mut retry = Backoff::new(backoff::OPERATION_MAX);
        loop {
            if self.closed.is_cancelled() {
                return Err(QueueError::Closed);
            }
            match op().await {
                Ok(value) => {
                    if let Some((down, failures)) = retry.succeeded(tokio::time::Instant::now()) {
                        debug!(
                            operation = what,
                            down_ms = down.as_millis() as u64,
                            failures,
                            "broker operation recovered"
                        );
                    }
                    return Ok(value);
                }
                Err(err) if err.is_retryable() && start.elapsed() < self.options.reconnect_timeout => {
                    let (pause, report) = retry.failed(tokio::time::Instant::now(), backoff::jitter());
                    match report {
                        Report::Warn => {
                            warn!(operation = what, error = %err, "broker operation failed, retrying with backoff")
                        }
                        Report::Remind => warn!(
                            operation = what, error = %err, failures = retry.failures(),
                            "broker operation still failing"
                        ),
                        Report::Quiet => {
                            debug!(operation = what, error = %err, ?pause, "broker operation failed")
                        }
                    }
                    tokio::time::sleep(pause).await;
                }
                Err(err) => return Err(err),
            }
        }
    }

    /// Publishes `body` and waits for the broker's confirm, reconnecting
    /// and repeating on connection loss (at-least-once: a publish whose
    /// confirm was lost may arrive twice).
    pub(super) async fn publish(
        &self,
        exchange: &str,
        routing_key: &str,
        body: &[u8],
        properties: BasicProperties,
    ) -> Result<(), QueueError> {
        self.with_retry("publish", || {
            self.publish_once(exchange, routing_key, body, properties.clone())
        })
        .await
    }

    async fn publish_once(
        &self,
        exchange: &str,
        routing_key: &str,
        body: &[u8],
        properties: BasicProperties,
    ) -> Result<(), QueueError> {
        let channel = self.publisher_channel().await?;
        let options = BasicPublishOptions {
            // An unroutable message comes back instead of vanishing.
            mandatory: true,
            ..BasicPublishOptions::default()
        };
        // The deadline covers handing the message over as well as the
        // confirm: either may wait on a connection that no longer moves.
        let result = within("publish", self.options.confirm_timeout, async {
            let confirm = channel
                .basic_publish(exchange.into(), routing_key.into(), options, body, properties)
                .await
                .map_err(|e| broker_error("publish", e))?;
            confirm.await.map_err(|e| broker_error("publish confirm", e))
        })
        .await;
        let confirmation = match result {
            Ok(confirmation) => confirmation,
            Err(err) => {
                self.forget_publisher(&channel).await;
                return Err(err);
            }
        };
        if confirmation.is_nack() {
            return Err(broker_message("the broker nacked the publish", true));
        }
        if let Some(returned) = confirmation.take_message() {
            return Err(broker_message(
                format!(
                    "message to exchange {exchange:?} with routing key {routing_key:?} was returned: {}",
                    returned.reply_text
                ),
                false,
            ));
        }
        Ok(())
    }

    /// Returns the confirm-mode channel all publishes share.
    async fn publisher_channel(&self) -> Result<Channel, QueueError> {
        let mut guard = self.publisher.lock().await;
        if let Some(channel) = guard.as_ref()
            && channel.status().connected()
        {
            return Ok(channel.clone());
        }
        let channel = self.channel().await?;
        within(
            "enable publisher confirms",
            self.options.round_trip_timeout,
            async {
                channel
                    .confirm_select(ConfirmSelectOptions::default())
                    .await
                    .map_err(|e| broker_error("enable publisher confirms", e))
            },
        )
        .await?;
        *guard = Some(channel.clone());
        Ok(channel)
    }

    async fn forget_publisher(&self, failed: &Channel) {
        let mut guard = self.publisher.lock().await;
        if guard.as_ref().is_some_and(|c| c.id() == failed.id()) {
            *guard = None;
        }
    }

    /// Runs `task` (a close or nack a `Drop` impl cannot await) and makes
    /// the next operation wait for it, for at most the round-trip timeout:
    /// a close the broker never answers must not hold every later
    /// operation.
    pub(super) fn defer<F>(&self, task: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            // No runtime: lapin closes dropped channels itself.
            return;
        };
        let limit = self.options.round_trip_timeout;
        let handle = runtime.spawn(async move {
            if tokio::time::timeout(limit, task).await.is_err() {
                warn!("a channel close or nack got no answer from the broker; going on without it");
            }
        });
        let mut deferred = self.deferred.lock().unwrap_or_else(|e| e.into_inner());
        deferred.retain(|h| !h.is_finished());
        deferred.push(handle);
    }

    /// Waits for the tasks handed to [`Link::defer`] so far.
    pub(super) async fn await_deferred(&self) {
        let handles: Vec<JoinHandle<()>> =
            std::mem::take(&mut *self.deferred.lock().unwrap_or_else(|e| e.into_inner()));
        for handle in handles {
            let _ = handle.await;
        }
    }

    /// Stops consumers and refuses further operations, then closes the
    /// connection.
    pub(super) async fn close(&self) {
        self.closed.cancel();
        self.await_deferred().await;
        if let Some(connection) = self.connection.lock().await.take() {
            let _ = connection.close(200, "OK".into()).await;
        }
    }
}

/// Says whether a failed connection attempt means the broker is not
/// reachable (yet): an I/O failure (refused, reset, a name that does not
/// resolve) or a timeout, as opposed to the broker answering no (refused
/// credentials, an unknown vhost, a conflicting topology).
fn unreachable(err: &QueueError) -> bool {
    let QueueError::Broker {
        retryable: true,
        source,
        ..
    } = err
    else {
        return false;
    };
    match source.as_deref().and_then(|s| s.downcast_ref::<lapin::Error>()) {
        Some(lapin) => lapin.is_io_error() || matches!(lapin.kind(), lapin::ErrorKind::MissingHeartbeatError),
        // The connect timeout carries no lapin error.
        None => source.is_none(),
    }
}

/// Returns `url` without its password, for messages.
fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme_end), Some(at)) if at > scheme_end => {
            let userinfo = &url[scheme_end + 3..at];
            let user = userinfo.split(':').next().unwrap_or_default();
            format!("{}{user}:***{}", &url[..scheme_end + 3], &url[at..])
        }
        _ => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_redacted() {
        assert_eq!(
            redact("amqp://guest:secret@127.0.0.1:5672/%2f"),
            "amqp://guest:***@127.0.0.1:5672/%2f"
        );
        assert_eq!(redact("amqp://127.0.0.1"), "amqp://127.0.0.1");
    }
}
