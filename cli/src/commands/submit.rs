//! `oxwright submit`: puts a batch of jobs on RabbitMQ for the workers and
//! prints its batch id. The batch record goes to the store first, so the
//! scheduler daemon (which writes the manifest) knows what to expect.
//! `--wait` polls the store until the scheduler has written the summary
//! (`submit_wait`).

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Subcommand};
use oxwright_jobs::{HostLimits, JobKind};
use oxwright_scheduler::batch::submit_for_release;
use oxwright_scheduler::{
    ExpandTemplate, JobTemplate, fetch_jobs, new_batch_id, parse_url_list, submit_batch,
};

use crate::fetch_flags::FetchArgs;
use oxwright_config::Setup;

/// Arguments of `oxwright submit`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  oxwright --amqp amqp://127.0.0.1:5672/%2f --s3 s3://bucket/oxwright submit fetch --file urls.txt --wait
  oxwright --amqp amqp://127.0.0.1:5672/%2f submit sitemap example.com --json
  oxwright submit fetch --file urls.txt --per-host-concurrency 2 --respect-robots --wait")]
pub struct SubmitCmd {
    #[command(subcommand)]
    pub what: SubmitWhat,
    /// Print the receipt (and with --wait, the summary) as JSON.
    #[arg(long, global = true)]
    pub json: bool,
    /// Wait until the scheduler daemon has written the batch summary,
    /// showing progress (done/total, failed by kind) on stderr.
    #[arg(long, global = true)]
    pub wait: bool,
    /// With --wait, stop waiting after this many seconds (exit 3, saying
    /// how far the batch got); the batch itself goes on.
    #[arg(long, global = true, default_value_t = 3600, value_name = "SECONDS")]
    pub wait_timeout_s: u64,
    /// Jobs no worker has started within this many seconds of submission
    /// are not run: they end `expired`, with their manifest line and
    /// `error.json` (the same for a retry due after it).
    #[arg(long, global = true, value_name = "SECONDS",
        value_parser = clap::value_parser!(u64).range(1..=MAX_DEADLINE_S))]
    pub deadline_s: Option<u64>,
    /// Page loads in flight at once to one host (host and port): the
    /// scheduler daemon releases the jobs host by host when this, the delay
    /// or --respect-robots is given (it must be running to start them).
    #[arg(long, global = true, value_name = "N",
        value_parser = clap::value_parser!(u64).range(1..))]
    pub per_host_concurrency: Option<u64>,
    /// Least time between two page loads' starts at one host, in ms.
    #[arg(long, global = true, value_name = "MS")]
    pub per_host_delay_ms: Option<u64>,
    /// Fail the pages robots.txt disallows (`policy_denied`) and honour its
    /// `Crawl-delay`.
    #[arg(long, global = true)]
    pub respect_robots: bool,
}

impl SubmitCmd {
    /// The per-host limits asked for, if any.
    fn host_limits(&self) -> Option<HostLimits> {
        (self.per_host_concurrency.is_some() || self.per_host_delay_ms.is_some() || self.respect_robots).then(
            || HostLimits {
                concurrency: self
                    .per_host_concurrency
                    .map_or(usize::MAX, |n| usize::try_from(n).unwrap_or(usize::MAX)),
                delay_ms: self.per_host_delay_ms.unwrap_or(0),
                respect_robots: self.respect_robots,
            },
        )
    }
}

/// The longest `--deadline-s`: 30 days.
pub const MAX_DEADLINE_S: u64 = 30 * 24 * 3600;

/// What to submit.
// Parsed once per process: the fetch flags' size costs nothing worth a box.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum SubmitWhat {
    /// Page fetches: URLs, a URL file, or a site's sitemaps.
    Fetch(SubmitFetch),
    /// Sitemap loads of domains or URLs.
    Sitemap(SubmitSitemap),
}

/// Arguments of `oxwright submit fetch`.
#[derive(Debug, Args)]
pub struct SubmitFetch {
    /// URLs to fetch.
    #[arg(conflicts_with_all = ["file", "sitemap"])]
    pub urls: Vec<String>,
    /// File of URLs, one a line (`-` for standard input).
    #[arg(long, conflicts_with = "sitemap")]
    pub file: Option<PathBuf>,
    /// Fetch every URL of this site's sitemaps (expanded here, before submitting).
    #[arg(long)]
    pub sitemap: Option<String>,
    #[command(flatten)]
    pub fetch: FetchArgs,
}

/// Arguments of `oxwright submit sitemap`.
#[derive(Debug, Args)]
pub struct SubmitSitemap {
    /// Domains, site URLs or sitemap URLs.
    #[arg(required = true)]
    pub targets: Vec<String>,
}

/// Runs the command; returns the process exit code.
pub async fn run(setup: Setup, cmd: SubmitCmd) -> anyhow::Result<i32> {
    let batch_id = new_batch_id();
    let (jobs, refused) = match &cmd.what {
        SubmitWhat::Fetch(args) => {
            let text = if args.urls.is_empty() {
                super::read_url_list(&setup, args.sitemap.as_deref(), args.file.as_ref()).await?
            } else {
                args.urls.join("\n")
            };
            let lines = parse_url_list(&text, &setup.policy);
            let template = args.fetch.spec_with(
                "http://template.invalid/".parse().expect("valid url"),
                &setup.config.fetch,
            );
            fetch_jobs(&batch_id, lines, &template)
        }
        SubmitWhat::Sitemap(args) => JobTemplate {
            kind: JobKind::Sitemap,
            urls: args.targets.clone(),
            options: serde_json::Map::new(),
        }
        .jobs(&batch_id, &setup.policy)
        .map_err(crate::exit::usage)?,
    };
    let mut jobs = jobs;
    if let Some(secs) = cmd.deadline_s {
        // In range: clap bounds it to 30 days.
        let deadline = chrono::Utc::now() + chrono::Duration::seconds(secs as i64);
        for job in &mut jobs {
            job.deadline = Some(deadline);
        }
    }
    let store = setup.store().await?;
    let queue = setup.queue().await?;
    let limits = cmd.host_limits();
    let receipt = match limits {
        Some(limits) => {
            submit_for_release(&queue, store.as_ref(), &batch_id, jobs, refused, "cli", limits).await
        }
        None => submit_batch(&queue, store.as_ref(), &batch_id, jobs, refused, "cli").await,
    };
    queue.close().await;
    let receipt = receipt?;
    if cmd.json && !cmd.wait {
        println!("{}", serde_json::to_string_pretty(&receipt)?);
    } else if !cmd.json {
        println!("{}", receipt.batch_id);
        let how = if limits.is_some() {
            "listed for the scheduler daemon to release host by host"
        } else {
            "submitted"
        };
        eprintln!(
            "{how}: {} jobs ({} refused) to {}; manifest: {}",
            receipt.published,
            receipt.refused,
            store.describe(),
            receipt.manifest
        );
    }
    if !cmd.wait {
        return Ok(crate::exit::OK);
    }
    let summary = super::submit_wait::wait_for_summary(
        store.as_ref(),
        &batch_id,
        receipt.total,
        Duration::from_secs(cmd.wait_timeout_s),
    )
    .await?;
    if cmd.json {
        println!("{}", serde_json::to_string_pretty(&summary)?);
    } else {
        println!(
            "batch {}: {} jobs, {} ok, {} failed",
            summary.batch_id, summary.total, summary.ok, summary.failed
        );
        for (kind, n) in &summary.failed_by_kind {
            println!("  {kind}: {n}");
        }
    }
    Ok(crate::exit::of_outcome(summary.failed, false))
}
