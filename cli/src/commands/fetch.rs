//! `oxwright fetch URL…`: fetch pages now and print their Markdown (or
//! their `FetchResult` JSON), optionally keeping artefacts.

use std::io::Write;

use clap::Args;
use futures::StreamExt;
use oxwright_fetch::fetch_page;
use oxwright_jobs::{Job, JobReport, JobSpec, ReportStatus};
use oxwright_worker::run_job;

use crate::options::FetchArgs;
use oxwright_worker::Setup;

/// Arguments of `oxwright fetch`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  oxwright fetch example.com                      # https://example.com/ as Markdown on stdout
  oxwright fetch --json --content full https://example.com/a https://example.com/b
  oxwright --allow-host 127.0.0.1:8765 fetch http://127.0.0.1:8765/articles/http-caching.html --keep")]
pub struct FetchCmd {
    /// Pages to fetch: URLs, or bare hosts (`example.com/a` means
    /// https://example.com/a; `127.0.0.1:8765` and `localhost` get http://).
    #[arg(required = true)]
    pub urls: Vec<String>,
    /// Print the FetchResult JSON (one line per page) instead of Markdown.
    #[arg(long)]
    pub json: bool,
    /// Keep artefacts (page.md, result.json, …) in the artefact directory.
    #[arg(long)]
    pub keep: bool,
    #[command(flatten)]
    pub fetch: FetchArgs,
}

/// Runs the command; returns the process exit code.
pub async fn run(setup: Setup, cmd: FetchCmd) -> anyhow::Result<i32> {
    let mut specs = Vec::new();
    for raw in &cmd.urls {
        let url = setup
            .policy
            .parse_input(raw)
            .map_err(|e| crate::exit::usage(format!("{raw}: {e}")))?;
        specs.push(cmd.fetch.spec(url));
    }
    let pool = setup.pool().await?;
    let ctx = setup.handler(pool.clone()).await?;
    let keep = cmd.keep;
    let concurrency = pool.capacity();
    let mut results = futures::stream::iter(specs.into_iter().map(|spec| {
        let ctx = ctx.clone();
        async move {
            if keep {
                let job = Job::new(JobSpec::Fetch(spec.clone()), None);
                let report = run_job(&ctx, &job).await;
                let result = match report.status {
                    ReportStatus::Ok => {
                        let key = oxwright_jobs::keys::job_result(job.kind(), job.id);
                        let body = ctx.store.get(&key).await?;
                        Ok(serde_json::from_slice::<oxwright_jobs::FetchResult>(&body)?)
                    }
                    ReportStatus::Failed => Err(report.error.clone().expect("failed reports carry an error")),
                };
                anyhow::Ok((spec, result, Some(report)))
            } else {
                let result = fetch_page(&ctx.pool, &ctx.policy, &spec).await.map(|o| o.result);
                anyhow::Ok((spec, result, None::<JobReport>))
            }
        }
    }))
    .buffered(concurrency);
    let (mut failures, mut misconfigured) = (0, 0);
    let stdout = std::io::stdout();
    while let Some(item) = results.next().await {
        let (spec, result, report) = item?;
        let mut out = stdout.lock();
        match result {
            Ok(r) => {
                if cmd.json {
                    serde_json::to_writer(&mut out, &r)?;
                    writeln!(out)?;
                } else {
                    if cmd.urls.len() > 1 {
                        writeln!(out, "<!-- {} -->", r.final_url)?;
                    }
                    writeln!(out, "{}", r.markdown)?;
                }
                for w in &r.warnings {
                    eprintln!("warning: {}: {w}", spec.url);
                }
            }
            Err(err) => {
                failures += 1;
                misconfigured += usize::from(err.kind == oxwright_jobs::ErrorKind::BrowserMisconfigured);
                if cmd.json {
                    serde_json::to_writer(&mut out, &serde_json::json!({"url": spec.url, "error": err}))?;
                    writeln!(out)?;
                }
                // Most messages already name the URL (or the redirect hop that failed).
                let text = err.to_string();
                if text.contains(spec.url.as_str()) {
                    eprintln!("error: {text}");
                } else {
                    eprintln!("error: {}: {text}", spec.url);
                }
            }
        }
        if let Some(report) = report {
            eprintln!("artefacts: {}", report.artifacts.join(", "));
        }
    }
    drop(results);
    pool.shutdown().await;
    // No page ran because the browser cannot start as asked (`--headed`
    // without a display): a setup error, like a bad flag.
    if failures > 0 && misconfigured == failures {
        return Ok(crate::exit::USAGE);
    }
    Ok(crate::exit::of_outcome(failures, false))
}
