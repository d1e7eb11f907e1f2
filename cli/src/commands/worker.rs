//! `oxwright worker`: the long-lived worker of the distributed mode. It
//! consumes jobs from RabbitMQ with a warm browser pool, writes artefacts
//! to S3 (or the file store), publishes each report, and only then acks.
//! SIGTERM stops consuming, lets in-flight jobs finish within the drain
//! limit, and returns everything else to the queue. The loop itself is
//! `oxwright_worker::run_worker`, shared with other entrypoints.

use std::time::Duration;

use clap::Args;
use oxwright_config::Setup;
use oxwright_jobs::JobKind;
use oxwright_worker::{WorkerOptions, run_worker};

use crate::signals::shutdown_on_signals;

/// Arguments of `oxwright worker`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  oxwright --amqp amqp://127.0.0.1:5672/%2f --s3 s3://bucket/oxwright --s3-endpoint http://127.0.0.1:9000 worker
  oxwright --amqp amqp://broker/%2f worker --kinds fetch,sitemap")]
pub struct WorkerCmd {
    /// Job kinds to consume (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "fetch,sitemap,workflow")]
    pub kinds: Vec<KindArg>,
    /// Deliveries of a job before a transient failure is final (overrides
    /// `[queue] max_attempts`).
    #[arg(long)]
    pub max_attempts: Option<u32>,
    /// Delay before the first queue-level retry in ms, doubled each time
    /// (overrides `[queue] retry_delay_ms`).
    #[arg(long, value_parser = clap::value_parser!(u64).range(
        0..=oxwright_jobs::limits::MAX_QUEUE_RETRY_DELAY_MS))]
    pub retry_delay_ms: Option<u64>,
    /// How long in-flight jobs may run on after SIGTERM, in seconds (at most an hour).
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u64).range(0..=3_600))]
    pub drain_timeout_s: u64,
    /// Sitemap jobs run at once (they use no browser).
    #[arg(long, default_value_t = 4)]
    pub sitemap_concurrency: usize,
}

/// Job kinds as typed on the command line.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum KindArg {
    /// Page fetches.
    Fetch,
    /// Sitemap loads.
    Sitemap,
    /// Workflow runs.
    Workflow,
}

impl From<KindArg> for JobKind {
    fn from(k: KindArg) -> JobKind {
        match k {
            KindArg::Fetch => JobKind::Fetch,
            KindArg::Sitemap => JobKind::Sitemap,
            KindArg::Workflow => JobKind::Workflow,
        }
    }
}

/// Runs the worker until SIGTERM / Ctrl-C; returns the exit code.
pub async fn run(setup: Setup, cmd: WorkerCmd) -> anyhow::Result<i32> {
    let shutdown = shutdown_on_signals();
    let opts = WorkerOptions {
        kinds: cmd.kinds.iter().map(|k| JobKind::from(*k)).collect(),
        max_attempts: cmd.max_attempts,
        retry_delay_ms: cmd.retry_delay_ms,
        drain_timeout: Duration::from_secs(cmd.drain_timeout_s),
        sitemap_concurrency: cmd.sitemap_concurrency,
    };
    run_worker(&setup, opts, shutdown).await?;
    Ok(crate::exit::OK)
}
