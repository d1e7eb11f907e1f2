//! What every command builds from its flags: configuration, policy, store,
//! the browser pool, and the shutdown signal.

use std::collections::BTreeMap;
use std::sync::Arc;

use anyhow::Context as _;
use oxwright_artifacts::{ArtifactStore, FsStore, S3Config, S3Store};
use oxwright_browser::BrowserPool;
use oxwright_policy::UrlPolicy;
use oxwright_queue::{AmqpOptions, AmqpQueue};
use oxwright_worker::HandlerContext;
use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::options::CommonArgs;

/// The resolved configuration of one invocation.
#[derive(Debug)]
pub struct Setup {
    /// The merged configuration.
    pub config: Config,
    /// The URL policy.
    pub policy: Arc<UrlPolicy>,
    /// The process environment, read once.
    pub env: BTreeMap<String, String>,
}

impl Setup {
    /// Merges file, environment and flags.
    pub fn new(common: &CommonArgs) -> anyhow::Result<Self> {
        let env: BTreeMap<String, String> = std::env::vars().collect();
        let mut config = Config::load(common.config.as_deref(), &env)?;
        if let Some(out) = &common.out {
            config.out_dir = out.clone();
        }
        if let Some(n) = common.browsers {
            config.browser.browsers = n;
        }
        if let Some(n) = common.pages_per_browser {
            config.browser.pages_per_browser = n;
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
        Ok(Self { config, policy, env })
    }

    /// Returns the S3 store when one is configured, else the file store
    /// under `out_dir`.
    pub async fn store(&self) -> anyhow::Result<Arc<dyn ArtifactStore>> {
        let Some(location) = &self.config.store.s3 else {
            return Ok(Arc::new(FsStore::new(self.config.out_dir.clone())));
        };
        let (bucket, prefix) = parse_s3_location(location)?;
        let mut s3 = S3Config::new(bucket);
        s3.prefix = prefix;
        s3.endpoint = self.config.store.s3_endpoint.clone();
        s3.region = self.config.store.s3_region.clone();
        let store = S3Store::new(s3)
            .await
            .with_context(|| format!("configuring the S3 store {location}"))?;
        Ok(Arc::new(store))
    }

    /// Connects to the configured RabbitMQ, declaring the topology.
    pub async fn queue(&self) -> anyhow::Result<AmqpQueue> {
        let url =
            self.config.queue.amqp_url.as_deref().context(
                "no RabbitMQ configured: pass --amqp URL, set OXWRIGHT_AMQP_URL, or [queue] amqp_url",
            )?;
        let options = AmqpOptions {
            prefix: self.config.queue.prefix.clone(),
            ..AmqpOptions::default()
        };
        AmqpQueue::connect(url, options)
            .await
            .context("connecting to RabbitMQ")
    }

    /// Starts the warm browser pool.
    pub async fn pool(&self) -> anyhow::Result<BrowserPool> {
        let cfg = self.config.pool(&self.env);
        BrowserPool::start(cfg.clone())
            .await
            .with_context(|| format!("starting Chromium ({})", cfg.chrome_path.display()))
    }

    /// Returns a handler context over `pool`.
    pub async fn handler(&self, pool: BrowserPool) -> anyhow::Result<HandlerContext> {
        Ok(HandlerContext::new(
            pool,
            self.policy.clone(),
            self.store().await?,
        ))
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

/// Returns a token cancelled on the first SIGINT or SIGTERM; a second
/// signal exits at once (the browsers die with the process).
pub fn shutdown_on_signals() -> CancellationToken {
    let token = CancellationToken::new();
    let trigger = token.clone();
    tokio::spawn(async move {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
        next_signal(&mut term).await;
        tracing::info!("shutting down: finishing in-flight pages (signal again to stop now)");
        trigger.cancel();
        next_signal(&mut term).await;
        std::process::exit(130);
    });
    token
}

async fn next_signal(term: &mut Option<tokio::signal::unix::Signal>) {
    match term.as_mut() {
        Some(t) => tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = t.recv() => {}
        },
        None => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
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
