//! Fetch throughput of the distributed mode on this machine: an in-process
//! scheduler, `oxwright worker` processes (the release binary), RabbitMQ
//! and the S3 server; pages/s with 1 and 2 workers over the same corpus.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::Args;
use oxwright_artifacts::{ArtifactStore, S3Config, S3Credentials, S3Store};
use oxwright_fixtures::{ARTICLE_PATHS, FixtureServer};
use oxwright_jobs::{FetchSpec, keys};
use oxwright_policy::{HostRule, UrlPolicy};
use oxwright_queue::{AmqpOptions, AmqpQueue};
use oxwright_scheduler::{SchedulerOptions, fetch_jobs, parse_url_list, run_scheduler, submit_batch};
use serde::Serialize;
use tokio_util::sync::CancellationToken;

/// Arguments of `distributed`.
#[derive(Debug, Args)]
pub struct DistributedArgs {
    /// Pages per timed batch (the fixture articles, repeated).
    #[arg(long, default_value_t = 240)]
    pub pages: usize,
    /// Worker counts to measure, in order.
    #[arg(long, value_delimiter = ',', default_value = "1,2")]
    pub workers: Vec<usize>,
    /// Pages each worker's browser serves at once.
    #[arg(long, default_value_t = 4)]
    pub pages_per_browser: usize,
    /// The `oxwright` binary (default: next to this one).
    #[arg(long)]
    pub oxwright: Option<PathBuf>,
    /// RabbitMQ URL.
    #[arg(long, default_value = "amqp://guest:guest@127.0.0.1:5672/%2f")]
    pub amqp: String,
    /// S3 endpoint.
    #[arg(long, default_value = "http://127.0.0.1:9000")]
    pub s3_endpoint: String,
}

/// One worker count's figures.
#[derive(Debug, Serialize)]
pub struct DistributedRow {
    pub workers: usize,
    pub pages: usize,
    pub ok: usize,
    pub seconds: f64,
    pub pages_per_s: f64,
}

/// Runs every worker count.
pub async fn run(args: &DistributedArgs) -> Result<Vec<DistributedRow>> {
    let binary = oxwright_binary(args.oxwright.as_ref())?;
    let site = FixtureServer::start().await?;
    let mut rows = Vec::new();
    for &workers in &args.workers {
        rows.push(measure(args, &binary, &site, workers).await?);
    }
    Ok(rows)
}

/// The `oxwright` binary: `given`, or the one beside this bench binary.
pub fn oxwright_binary(given: Option<&PathBuf>) -> Result<PathBuf> {
    let binary = match given {
        Some(path) => path.clone(),
        None => std::env::current_exe()?
            .parent()
            .context("bench binary has a directory")?
            .join("oxwright"),
    };
    if !binary.exists() {
        bail!(
            "{} not found: build it first (`cargo build -p oxwright`, with --release for a release bench)",
            binary.display()
        );
    }
    Ok(binary)
}

struct Workers(Vec<Child>);

impl Drop for Workers {
    fn drop(&mut self) {
        for child in &mut self.0 {
            // SAFETY: plain syscall on our own child.
            unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        }
        for child in &mut self.0 {
            let _ = child.wait();
        }
    }
}

async fn measure(
    args: &DistributedArgs,
    binary: &PathBuf,
    site: &FixtureServer,
    workers: usize,
) -> Result<DistributedRow> {
    let id = uuid::Uuid::new_v4().simple().to_string()[..10].to_owned();
    let prefix = format!("oxwright-bench-{id}");
    let mut s3 = S3Config::new(&prefix);
    s3.endpoint = Some(args.s3_endpoint.clone());
    s3.region = Some("us-east-1".into());
    s3.credentials = Some(S3Credentials {
        access_key_id: "oxwright".into(),
        secret_access_key: "oxwright-secret".into(),
    });
    let store = Arc::new(S3Store::new(s3).await?);
    store
        .create_bucket()
        .await
        .context("S3 server (run `infra/services.sh start`)")?;
    let queue = Arc::new(
        AmqpQueue::connect(
            &args.amqp,
            AmqpOptions {
                prefix: prefix.clone(),
                ..AmqpOptions::default()
            },
        )
        .await?,
    );
    let policy = Arc::new(UrlPolicy {
        allow_hosts: vec![site.addr().to_string().parse::<HostRule>()?],
        ..UrlPolicy::default()
    });
    let shutdown = CancellationToken::new();
    let scheduler = tokio::spawn({
        let (queue, store, shutdown, policy) =
            (queue.clone(), store.clone(), shutdown.clone(), policy.clone());
        async move {
            let opts = SchedulerOptions {
                flush_interval: Duration::from_millis(100),
                ..SchedulerOptions::new(policy)
            };
            run_scheduler(queue, store, opts, None, shutdown).await
        }
    });
    let mut children = Workers(Vec::new());
    for _ in 0..workers {
        children.0.push(
            Command::new(binary)
                .args(["--amqp", &args.amqp, "--queue-prefix", &prefix])
                .args([
                    "--s3",
                    &format!("s3://{prefix}"),
                    "--s3-endpoint",
                    &args.s3_endpoint,
                ])
                .args(["--allow-host", &site.addr().to_string()])
                .args([
                    "--browsers",
                    "1",
                    "--pages-per-browser",
                    &args.pages_per_browser.to_string(),
                ])
                .args(["worker", "--kinds", "fetch"])
                .env("AWS_ACCESS_KEY_ID", "oxwright")
                .env("AWS_SECRET_ACCESS_KEY", "oxwright-secret")
                .env("AWS_REGION", "us-east-1")
                .env("RUST_LOG", "warn")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()?,
        );
    }
    // Warm-up: every browser up and through a few pages.
    run_batch(
        &queue,
        &store,
        site,
        &policy,
        workers * args.pages_per_browser * 2,
    )
    .await?;
    let started = Instant::now();
    let ok = run_batch(&queue, &store, site, &policy, args.pages).await?;
    let seconds = started.elapsed().as_secs_f64();
    drop(children);
    shutdown.cancel();
    scheduler.await??;
    queue.delete_topology().await?;
    queue.close().await;
    Ok(DistributedRow {
        workers,
        pages: args.pages,
        ok,
        seconds,
        pages_per_s: args.pages as f64 / seconds,
    })
}

/// Submits `pages` article fetches and waits for the summary; returns the
/// ok count.
async fn run_batch(
    queue: &AmqpQueue,
    store: &Arc<S3Store>,
    site: &FixtureServer,
    policy: &UrlPolicy,
    pages: usize,
) -> Result<usize> {
    let batch_id = oxwright_scheduler::new_batch_id();
    let text: String = (0..pages)
        .map(|i| format!("{}\n", site.url(ARTICLE_PATHS[i % ARTICLE_PATHS.len()])))
        .collect();
    let template = FetchSpec::new("http://template.invalid/".parse()?);
    let (jobs, refused) = fetch_jobs(&batch_id, parse_url_list(&text, policy), &template);
    submit_batch(queue, store.as_ref(), &batch_id, jobs, refused, "bench").await?;
    let key = keys::batch_summary(&batch_id);
    let started = Instant::now();
    loop {
        if let Ok(body) = store.get(&key).await {
            let summary: oxwright_scheduler::BatchSummary = serde_json::from_slice(&body)?;
            return Ok(summary.ok);
        }
        if started.elapsed() > Duration::from_secs(1800) {
            bail!("batch {batch_id} did not finish in 30 min");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Renders the rows as a Markdown table.
pub fn markdown(rows: &[DistributedRow]) -> String {
    let mut out = String::from("| workers | pages | ok | seconds | pages/s |\n|---:|---:|---:|---:|---:|\n");
    for r in rows {
        out.push_str(&format!(
            "| {} | {} | {} | {:.1} | **{:.2}** |\n",
            r.workers, r.pages, r.ok, r.seconds, r.pages_per_s
        ));
    }
    out
}
