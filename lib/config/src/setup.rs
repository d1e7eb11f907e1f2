//! What every binary builds before it runs anything: the merged
//! configuration, the URL policy, the store and the queue (the worker adds
//! the browser pool). The process environment is read once by the binary
//! and handed down as a map.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context as _;
use oxwright_artifacts::{ArtifactStore, FsStore, S3Config, S3Store};
use oxwright_policy::{HostRule, UrlPolicy};
use oxwright_queue::{AmqpOptions, AmqpQueue, QueueError};
use tokio_util::sync::CancellationToken;

use crate::Config;

/// An invocation that cannot run as given: a configuration file that does
/// not read or parse, a missing or malformed setting, an unusable argument.
/// Binaries find it in an error's chain and exit 2 (nothing ran).
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

impl UsageError {
    /// Wraps `err` (its whole chain, on one line) as a usage error.
    pub fn from_any(err: impl std::fmt::Display) -> anyhow::Error {
        anyhow::Error::new(UsageError(format!("{err:#}")))
    }

    /// Says whether `err` is, or was caused by, a usage error.
    pub fn is_in(err: &anyhow::Error) -> bool {
        err.chain().any(|e| e.is::<UsageError>())
    }
}

/// What a binary's flags override, applied after the file and the environment.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// The configuration file.
    pub config: Option<PathBuf>,
    /// The artefact directory.
    pub out: Option<PathBuf>,
    /// Extra private hosts let through the URL policy.
    pub allow_hosts: Vec<HostRule>,
    /// Let every private address through.
    pub allow_private: bool,
    /// Warm browsers.
    pub browsers: Option<usize>,
    /// Pages per browser.
    pub pages_per_browser: Option<usize>,
    /// The most pages per browser at once (adaptive admission's ceiling).
    pub max_pages_per_browser: Option<usize>,
    /// RabbitMQ URL.
    pub amqp: Option<String>,
    /// Queue name prefix.
    pub queue_prefix: Option<String>,
    /// `s3://bucket/prefix`.
    pub s3: Option<String>,
    /// A custom S3 endpoint.
    pub s3_endpoint: Option<String>,
}

/// The resolved configuration of one invocation.
#[derive(Debug)]
pub struct Setup {
    /// The merged configuration.
    pub config: Config,
    /// The URL policy.
    pub policy: Arc<UrlPolicy>,
    /// The process environment, read once.
    pub env: BTreeMap<String, String>,
    /// The configuration file read: the one named by `--config`, else the
    /// one found ([`crate::discover_config`]); `None` means defaults.
    pub config_file: Option<PathBuf>,
}

impl Setup {
    /// Merges file, environment (`env`, read once by the binary) and
    /// overrides. Without `common.config` the file is looked for from the
    /// current directory ([`crate::discover_config`]).
    pub fn new(common: &Overrides, env: BTreeMap<String, String>) -> anyhow::Result<Self> {
        let config_file = common.config.clone().or_else(|| {
            let cwd = std::env::current_dir().unwrap_or_default();
            crate::discover_config(&cwd, &env)
        });
        let mut config = Config::load(config_file.as_deref(), &env).map_err(UsageError::from_any)?;
        if let Some(out) = &common.out {
            config.out_dir = out.clone();
        }
        if let Some(n) = common.browsers {
            config.browser.browsers = n;
        }
        if let Some(n) = common.pages_per_browser {
            config.browser.pages_per_browser = n;
        }
        if let Some(n) = common.max_pages_per_browser {
            config.browser.max_pages_per_browser = Some(n);
        }
        if let Some(url) = &common.amqp {
            config.queue.amqp_url = Some(url.clone());
        }
        if let Some(prefix) = &common.queue_prefix {
            config.queue.prefix = prefix.clone();
        }
        if let Some(s3) = &common.s3 {
            config.store.s3 = Some(s3.clone());
        }
        if let Some(endpoint) = &common.s3_endpoint {
            config.store.s3_endpoint = Some(endpoint.clone());
        }
        config.policy.allow_private |= common.allow_private;
        config
            .policy
            .allow_hosts
            .extend(common.allow_hosts.iter().cloned());
        let policy = Arc::new(config.policy.clone());
        Ok(Self {
            config,
            policy,
            env,
            config_file,
        })
    }

    /// Returns the S3 store when one is configured, else the file store
    /// under `out_dir`.
    pub async fn store(&self) -> anyhow::Result<Arc<dyn ArtifactStore>> {
        let Some(location) = &self.config.store.s3 else {
            return Ok(Arc::new(FsStore::new(self.config.out_dir.clone())));
        };
        let (bucket, prefix) = parse_s3_location(location).map_err(UsageError::from_any)?;
        let mut s3 = S3Config::new(bucket);
        s3.prefix = prefix;
        s3.endpoint = self.config.store.s3_endpoint.clone();
        s3.region = self.config.store.s3_region.clone();
        let store = S3Store::new(s3)
            .await
            .with_context(|| format!("configuring the S3 store {location}"))?;
        Ok(Arc::new(store))
    }

    /// Connects to the configured RabbitMQ, declaring the topology; a
    /// broker that cannot be reached fails at once (commands a person
    /// waits on).
    pub async fn queue(&self) -> anyhow::Result<AmqpQueue> {
        let (url, options) = self.amqp()?;
        AmqpQueue::connect(url, options)
            .await
            .context("connecting to RabbitMQ")
    }

    /// Connects to the configured RabbitMQ like [`Self::queue`], but waits
    /// for a broker that cannot be reached yet (a daemon started before
    /// it, or while it restarts), trying again with capped backoff and
    /// saying so once ([`AmqpQueue::connect_patiently`]). `None` when
    /// `stop` fires first.
    pub async fn queue_patiently(&self, stop: &CancellationToken) -> anyhow::Result<Option<AmqpQueue>> {
        let (url, options) = self.amqp()?;
        match AmqpQueue::connect_patiently(url, options, stop).await {
            Ok(queue) => Ok(Some(queue)),
            Err(QueueError::Closed) if stop.is_cancelled() => Ok(None),
            Err(err @ QueueError::InvalidArgument(_)) => Err(UsageError::from_any(err)),
            Err(err) => Err(anyhow::Error::new(err).context("connecting to RabbitMQ")),
        }
    }

    fn amqp(&self) -> anyhow::Result<(&str, AmqpOptions)> {
        let url = self.config.queue.amqp_url.as_deref().ok_or_else(|| {
            UsageError::from_any(
                "no RabbitMQ configured: pass --amqp URL, set OXWRIGHT_AMQP_URL, or [queue] amqp_url",
            )
        })?;
        let options = AmqpOptions {
            prefix: self.config.queue.prefix.clone(),
            ..AmqpOptions::default()
        };
        Ok((url, options))
    }
}

/// Splits `s3://bucket/prefix` into the bucket and the prefix.
pub fn parse_s3_location(location: &str) -> anyhow::Result<(String, String)> {
    let rest = location
        .strip_prefix("s3://")
        .with_context(|| format!("{location:?} is not an s3://bucket/prefix location"))?;
    let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
    anyhow::ensure!(!bucket.is_empty(), "{location:?} names no bucket");
    Ok((bucket.to_owned(), prefix.trim_matches('/').to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn s3_locations() {
        assert_eq!(
            parse_s3_location("s3://bucket/a/b/").unwrap(),
            ("bucket".into(), "a/b".into())
        );
        assert_eq!(
            parse_s3_location("s3://bucket").unwrap(),
            ("bucket".into(), String::new())
        );
        assert!(parse_s3_location("bucket/a").is_err());
        assert!(parse_s3_location("s3:///a").is_err());
    }
}
