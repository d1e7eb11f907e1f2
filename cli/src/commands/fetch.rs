//! `oxwright fetch URL…`: fetch pages now and print their Markdown (or
//! their `FetchResult` JSON), optionally keeping artefacts.

use oxwright_telemetry::printable;
use std::io::Write;

use clap::Args;
use futures::StreamExt;
use oxwright_fetch::fresh_from_cache;
use oxwright_jobs::{FetchSpec, Job, JobError, JobReport, JobSpec, ReportStatus};
use oxwright_scheduler::batch::{BatchLine, parse_url_entry, shorten};
use oxwright_worker::run_job;

use crate::fetch_flags::FetchArgs;
use oxwright_config::Setup;
use oxwright_worker::BrowserSetup;

/// Arguments of `oxwright fetch`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  oxwright fetch example.com                      # https://example.com/ as Markdown on stdout
  oxwright fetch --json --content full https://example.com/a https://example.com/b
  oxwright fetch https://example.com/post -o post.md
  oxwright --allow-host 127.0.0.1:8765 fetch http://127.0.0.1:8765/articles/http-caching.html --keep")]
pub struct FetchCmd {
    /// Pages to fetch: URLs, or bare hosts (`example.com/a` means
    /// https://example.com/a; `127.0.0.1:8765` and `localhost` get http://).
    #[arg(required = true)]
    pub urls: Vec<String>,
    /// Print the FetchResult JSON (one line per page) instead of Markdown.
    #[arg(long)]
    pub json: bool,
    /// Keep artefacts (page.md, result.json, …) in the artefact directory;
    /// implied by --screenshot and --include-html, whose output only
    /// artefacts hold.
    #[arg(long)]
    pub keep: bool,
    /// Write the Markdown (the JSON lines with --json) to this file instead
    /// of standard output.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub fetch: FetchArgs,
}

/// What one argument of the command becomes: a page to fetch, or the
/// typed refusal of an input the URL policy does not accept (the same
/// refusal a `batch` line gets).
enum Input {
    Page(Box<FetchSpec>),
    Refused { text: String, error: JobError },
}

/// Runs the command; returns the process exit code.
pub async fn run(setup: Setup, cmd: FetchCmd) -> anyhow::Result<i32> {
    let inputs: Vec<Input> = cmd
        .urls
        .iter()
        .map(|raw| match parse_url_entry(raw, &setup.policy) {
            BatchLine::Url(url) => Input::Page(Box::new(cmd.fetch.spec_with(url, &setup.config.fetch))),
            BatchLine::Invalid { text, error } => Input::Refused {
                text: shorten(&text),
                error,
            },
        })
        .collect();
    let refused = inputs
        .iter()
        .filter(|i| matches!(i, Input::Refused { .. }))
        .count();
    if refused == inputs.len() {
        // Nothing to run: report every refusal, start no browser, exit 2.
        let mut out = std::io::stdout().lock();
        for input in &inputs {
            if let Input::Refused { text, error } = input {
                report_refusal(&mut out, cmd.json, text, error)?;
            }
        }
        return Ok(crate::exit::USAGE);
    }
    for input in &inputs {
        if let Input::Page(spec) = input {
            super::batch::model_for(&setup, spec)?;
        }
    }
    // Where the pages go: a file (created before any browser starts, so a
    // bad path fails at once) or standard output.
    let mut sink = output(&cmd)?;
    // A screenshot or the HTML exist only as artefacts: never drop them.
    let keep = cmd.keep
        || inputs
            .iter()
            .any(|i| matches!(i, Input::Page(spec) if spec.screenshot || spec.include_html));
    // Pages the cache answers fresh need no browser; when it answers
    // every page, none starts.
    let hits = cache_hits(&setup, &inputs, keep).await?;
    let answered = inputs
        .iter()
        .zip(&hits)
        .all(|(i, hit)| hit.is_some() || matches!(i, Input::Refused { .. }));
    let (pool, ctx) = if answered {
        (None, None)
    } else {
        let (pool, ctx) = start_browser(&setup, &inputs).await?;
        (Some(pool), Some(ctx))
    };
    if let Some(ctx) = ctx.as_ref().filter(|_| keep && !cmd.keep) {
        eprintln!(
            "keeping artefacts (--screenshot/--include-html): {}",
            ctx.store.describe()
        );
    }
    let concurrency = pool.as_ref().map_or(1, |p| p.capacity());
    let mut results = futures::stream::iter(
        inputs
            .into_iter()
            .zip(hits)
            .map(|(input, hit)| fetch_one(ctx.clone(), input, hit, keep)),
    )
    .buffered(concurrency);
    let (mut failures, mut misconfigured) = (0, 0);
    while let Some(item) = results.next().await {
        let out = &mut sink;
        let (spec, result, report) = match item? {
            Outcome::Ran(ran) => *ran,
            Outcome::Refused(text, error) => {
                failures += 1;
                report_refusal(out, cmd.json, &text, &error)?;
                continue;
            }
        };
        if let Err(err) = &result {
            failures += 1;
            misconfigured += usize::from(err.kind == oxwright_jobs::ErrorKind::BrowserMisconfigured);
        }
        print_outcome(out, &cmd, &spec, &result)?;
        if let Some(report) = report {
            eprintln!("artefacts: {}", report.artifacts.join(", "));
        }
    }
    drop(results);
    sink.flush()?;
    drop(sink);
    if let Some(path) = &cmd.output {
        eprintln!("wrote {}", path.display());
    }
    if let Some(pool) = pool {
        pool.shutdown().await;
    }
    // No page ran because the browser cannot start as asked (`--headed`
    // without a display): a setup error, like a bad flag.
    if failures > 0 && misconfigured == failures {
        return Ok(crate::exit::USAGE);
    }
    Ok(crate::exit::of_outcome(failures, false))
}

/// Where the pages go: a file (created before any browser starts, so a
/// bad path fails at once) or standard output.
fn output(cmd: &FetchCmd) -> anyhow::Result<Box<dyn Write>> {
    Ok(match &cmd.output {
        Some(path) => Box::new(std::io::BufWriter::new(
            std::fs::File::create(path)
                .map_err(|e| crate::exit::usage(format!("cannot write {}: {e}", path.display())))?,
        )),
        None => Box::new(std::io::stdout()),
    })
}

/// The pages the cache answers fresh (they need no browser).
async fn cache_hits(
    setup: &Setup,
    inputs: &[Input],
    keep: bool,
) -> anyhow::Result<Vec<Option<oxwright_jobs::FetchResult>>> {
    let mut hits: Vec<Option<oxwright_jobs::FetchResult>> = inputs.iter().map(|_| None).collect();
    let cached = inputs
        .iter()
        .any(|i| matches!(i, Input::Page(s) if s.max_age_ms > 0));
    if keep || !cached {
        return Ok(hits);
    }
    let store = setup.store().await?;
    for (hit, input) in hits.iter_mut().zip(inputs) {
        // A model's extraction is not cached: that page goes the whole way.
        if let Input::Page(spec) = input
            && spec.extract.is_none()
        {
            *hit = fresh_from_cache(&setup.policy, store.as_ref(), spec)
                .await
                .map(|o| o.result);
        }
    }
    Ok(hits)
}

/// The browsers: warm when a page must render, else started when one must.
async fn start_browser(
    setup: &Setup,
    inputs: &[Input],
) -> anyhow::Result<(oxwright_browser::BrowserPool, oxwright_worker::HandlerContext)> {
    // Pages read without a browser launch none until one must render.
    let warm = inputs
        .iter()
        .any(|i| matches!(i, Input::Page(spec) if spec.render == oxwright_jobs::Render::Always));
    let pool = if warm {
        setup.pool().await?
    } else {
        setup.pool_cold().await?
    };
    let ctx = setup.handler(pool.clone()).await?;
    Ok((pool, ctx))
}

/// Fetches one argument: its refusal, its cached result, or the page
/// (as a job with artefacts under `--keep`).
async fn fetch_one(
    ctx: Option<oxwright_worker::HandlerContext>,
    input: Input,
    hit: Option<oxwright_jobs::FetchResult>,
    keep: bool,
) -> anyhow::Result<Outcome> {
    let spec = match input {
        Input::Page(spec) => *spec,
        Input::Refused { text, error } => return Ok(Outcome::Refused(text, error)),
    };
    if let Some(result) = hit {
        return Ok(Outcome::Ran(Box::new((spec, Ok(result), None))));
    }
    let ctx = ctx.expect("a page the cache did not answer has a browser");
    if !keep {
        let result = oxwright_worker::handlers::fetch_page(&ctx, &spec)
            .await
            .map(|o| o.result);
        return Ok(Outcome::Ran(Box::new((spec, result, None))));
    }
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
    Ok(Outcome::Ran(Box::new((spec, result, Some(report)))))
}

/// Writes a page's Markdown (or JSON) and its warnings, or its error.
fn print_outcome(
    out: &mut dyn Write,
    cmd: &FetchCmd,
    spec: &FetchSpec,
    result: &Result<oxwright_jobs::FetchResult, JobError>,
) -> anyhow::Result<()> {
    match result {
        Ok(r) => {
            if cmd.json {
                serde_json::to_writer(&mut *out, r)?;
                writeln!(out)?;
            } else if let Some(records) = &r.extract {
                // Asked for records, the page's records are the output.
                serde_json::to_writer_pretty(&mut *out, records)?;
                writeln!(out)?;
            } else {
                if cmd.urls.len() > 1 {
                    writeln!(out, "<!-- {} -->", r.final_url)?;
                }
                writeln!(out, "{}", r.markdown)?;
            }
            for w in &r.warnings {
                eprintln!("warning: {}: {}", printable(spec.url.as_str()), printable(w));
            }
        }
        Err(err) => {
            if cmd.json {
                serde_json::to_writer(&mut *out, &serde_json::json!({"url": spec.url, "error": err}))?;
                writeln!(out)?;
            }
            // Most messages already name the URL (or the redirect hop that failed).
            let text = err.to_string();
            if text.contains(spec.url.as_str()) {
                eprintln!("error: {}", printable(&text));
            } else {
                eprintln!("error: {}: {}", printable(spec.url.as_str()), printable(&text));
            }
        }
    }
    Ok(())
}

/// A page that ran: its spec, its result or failure, its job report (`--keep`).
type Ran = (
    FetchSpec,
    Result<oxwright_jobs::FetchResult, JobError>,
    Option<JobReport>,
);

/// The result of one argument: the page's fetch, or its refusal.
enum Outcome {
    Ran(Box<Ran>),
    Refused(String, JobError),
}

/// Reports an input the policy refused: `error: INPUT: kind: message` on
/// stderr and, with `--json`, `{"url": INPUT, "error": {…}}` on stdout.
fn report_refusal(out: &mut impl Write, json: bool, text: &str, error: &JobError) -> anyhow::Result<()> {
    if json {
        serde_json::to_writer(&mut *out, &serde_json::json!({"url": text, "error": error}))?;
        writeln!(out)?;
    }
    eprintln!("error: {}: {}", printable(text), printable(&error.to_string()));
    Ok(())
}
