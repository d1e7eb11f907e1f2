//! `oxwright fetch URL…`: fetch pages now and print their Markdown (or
//! their `FetchResult` JSON), optionally keeping artefacts.

use oxwright_telemetry::printable;
use std::io::Write;

use clap::Args;
use futures::StreamExt;
use oxwright_fetch::{fetch_cached, fresh_from_cache};
use oxwright_jobs::{FetchSpec, Job, JobError, JobReport, JobSpec, ReportStatus};
use oxwright_scheduler::batch::{BatchLine, parse_url_entry, shorten};
use oxwright_worker::run_job;

use crate::options::FetchArgs;
use oxwright_worker::Setup;

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
    // Where the pages go: a file (created before any browser starts, so a
    // bad path fails at once) or standard output.
    let mut sink: Box<dyn Write> = match &cmd.output {
        Some(path) => Box::new(std::io::BufWriter::new(
            std::fs::File::create(path)
                .map_err(|e| crate::exit::usage(format!("cannot write {}: {e}", path.display())))?,
        )),
        None => Box::new(std::io::stdout()),
    };
    // A screenshot or the HTML exist only as artefacts: never drop them.
    let keep = cmd.keep || cmd.fetch.screenshot || cmd.fetch.include_html;
    // Pages the cache answers fresh need no browser; when it answers
    // every page, none starts.
    let mut hits: Vec<Option<oxwright_jobs::FetchResult>> = inputs.iter().map(|_| None).collect();
    if !keep
        && inputs
            .iter()
            .any(|i| matches!(i, Input::Page(s) if s.max_age_ms > 0))
    {
        let store = setup.store().await?;
        for (hit, input) in hits.iter_mut().zip(&inputs) {
            if let Input::Page(spec) = input {
                *hit = fresh_from_cache(&setup.policy, store.as_ref(), spec)
                    .await
                    .map(|o| o.result);
            }
        }
    }
    let answered = inputs
        .iter()
        .zip(&hits)
        .all(|(i, hit)| hit.is_some() || matches!(i, Input::Refused { .. }));
    let (pool, ctx) = if answered {
        (None, None)
    } else {
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
        (Some(pool), Some(ctx))
    };
    if let Some(ctx) = ctx.as_ref().filter(|_| keep && !cmd.keep) {
        eprintln!(
            "keeping artefacts (--screenshot/--include-html): {}",
            ctx.store.describe()
        );
    }
    let concurrency = pool.as_ref().map_or(1, |p| p.capacity());
    let mut results = futures::stream::iter(inputs.into_iter().zip(hits).map(|(input, hit)| {
        let ctx = ctx.clone();
        async move {
            let spec = match input {
                Input::Page(spec) => *spec,
                Input::Refused { text, error } => return anyhow::Ok(Outcome::Refused(text, error)),
            };
            if let Some(result) = hit {
                return anyhow::Ok(Outcome::Ran(Box::new((spec, Ok(result), None::<JobReport>))));
            }
            let ctx = ctx.expect("a page the cache did not answer has a browser");
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
                anyhow::Ok(Outcome::Ran(Box::new((spec, result, Some(report)))))
            } else {
                let store = Some(ctx.store.as_ref());
                let result = fetch_cached(&ctx.pool, &ctx.policy, store, &spec)
                    .await
                    .map(|o| o.result);
                anyhow::Ok(Outcome::Ran(Box::new((spec, result, None::<JobReport>))))
            }
        }
    }))
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
        match result {
            Ok(r) => {
                if cmd.json {
                    serde_json::to_writer(&mut *out, &r)?;
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
                failures += 1;
                misconfigured += usize::from(err.kind == oxwright_jobs::ErrorKind::BrowserMisconfigured);
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
