//! Workflow overheads: accessibility snapshot extraction time and size
//! (bytes, cl100k tokens) per fixture app page, and the per-step overhead of
//! a workflow run excluding the LLM — structured steps (no LLM at all) and
//! plain-language steps against the scripted LLM server with the LLM's own
//! time (decision and judgement calls) subtracted.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use oxwright_artifacts::{ArtifactStore, MemoryStore};
use oxwright_browser::BrowserPool;
use oxwright_engine::{BrowserEngine, GotoOptions, OpenOptions, SnapshotOptions};
use oxwright_fixtures::FixtureServer;
use oxwright_fixtures::llm::{Reply, ScriptedLlm};
use oxwright_jobs::RunStatus;
use oxwright_llm::{LlmClient, LlmConfig};
use oxwright_markdown::count_tokens;
use oxwright_secrets::{MemorySecrets, Sanitizer};
use oxwright_workflow::{RunDeps, Workflow, WorkflowOptions, run_workflow};
use serde::Serialize;
use serde_json::Value;

use crate::fetch::policy_for;
use crate::modes::pool_config;
use crate::stats::{median, ms, percentile};

/// Options of the `workflow` subcommand.
#[derive(Debug, Clone, clap::Args)]
pub struct WorkflowArgs {
    /// Timed snapshots per page.
    #[arg(long, default_value_t = 50)]
    pub snapshots: usize,
    /// Workflow runs per path (each run is 7–8 steps).
    #[arg(long, default_value_t = 10)]
    pub runs: usize,
    /// Also measure steps/s with this many workflow jobs in flight at once
    /// (comma list, e.g. `1,4,8`): one browser with that many pages, each
    /// job the structured flow on a page of its own, with checkpoints.
    #[arg(long, value_delimiter = ',')]
    pub concurrency: Vec<usize>,
    /// Jobs run at each concurrency level.
    #[arg(long, default_value_t = 24)]
    pub jobs_per_level: usize,
}

/// Throughput with several workflow jobs in flight.
#[derive(Debug, Clone, Serialize)]
pub struct ConcurrencyRow {
    /// Jobs in flight at once (and pages in the browser).
    pub in_flight: usize,
    pub jobs: usize,
    pub steps: usize,
    pub wall_s: f64,
    pub steps_per_s: f64,
    /// A job's wall time over its steps, median and p95, ms.
    pub step_wall_p50_ms: f64,
    pub step_wall_p95_ms: f64,
    /// Browser contexts created for the level's jobs (warm-up included),
    /// and leases served by a reset, reused one.
    pub contexts: u64,
    pub reused: u64,
}

/// One page's snapshot figures.
#[derive(Debug, Clone, Serialize)]
pub struct PageSnapshot {
    pub path: String,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub bytes: usize,
    pub tokens: usize,
    pub lines: usize,
    pub elements: usize,
}

/// Per-step overhead of one path, ms.
#[derive(Debug, Clone, Serialize)]
pub struct StepOverhead {
    pub path: String,
    pub steps: usize,
    pub p50_ms: f64,
    pub p95_ms: f64,
    /// Medians of the parts, ms.
    pub snapshot_p50_ms: f64,
    pub precheck_p50_ms: f64,
    pub action_p50_ms: f64,
    pub settle_p50_ms: f64,
}

/// The `workflow` results.
#[derive(Debug, Clone, Serialize)]
pub struct WorkflowReport {
    pub snapshots_per_page: usize,
    pub runs: usize,
    pub pages: Vec<PageSnapshot>,
    pub steps: Vec<StepOverhead>,
    /// cl100k tokens of each decision prompt the plain-language runs sent
    /// (system and user messages), median and p95.
    pub decision_prompt_tokens_p50: f64,
    pub decision_prompt_tokens_p95: f64,
    /// Steps/s at each `--concurrency` level.
    pub concurrency: Vec<ConcurrencyRow>,
}

const STRUCTURED: &str = "fill: textbox \"Username\" = {{LOGIN_ID}}\nfill: textbox \"Password\" = {{PASSWORD}}\n\
click: button \"Sign in\"\nfill: searchbox \"Search products\" = rust\nclick: button \"Search\"\n\
click: link \"Rust in Action\"\nselect: combobox \"Shipping country\" = Japan\nexpect: text \"Ships to Japan\"\n";

pub(crate) fn script(llm: &ScriptedLlm) {
    let items = [
        "Type {{LOGIN_ID}} into Username",
        "Type {{PASSWORD}} into Password",
        "Click Sign in",
        "Type rust into the search box",
        "Click Search",
        "Open Rust in Action",
        "Choose Japan as the shipping country",
    ];
    llm.push(Reply::text(serde_json::to_string(&items).unwrap_or_default()));
    let d = |role: &str, name: &str, action: &str, value: Option<(&str, &str)>| {
        let mut v = serde_json::json!({"method": "getByRole", "selector": {"role": role, "name": name}, "action": action});
        if let Some((kind, val)) = value {
            v["value"] = serde_json::json!({"kind": kind, "value": val});
        }
        Reply::json(v)
    };
    for decision in [
        d(
            "textbox",
            "Username",
            "fill",
            Some(("placeholder", "{{LOGIN_ID}}")),
        ),
        d(
            "textbox",
            "Password",
            "fill",
            Some(("placeholder", "{{PASSWORD}}")),
        ),
        d("button", "Sign in", "click", None),
        d("searchbox", "Search products", "fill", Some(("literal", "rust"))),
        d("button", "Search", "click", None),
        d("link", "Rust in Action", "click", None),
        d(
            "combobox",
            "Shipping country",
            "select",
            Some(("literal", "Japan")),
        ),
    ] {
        llm.push(decision);
        llm.push(Reply::text("true"));
    }
}

/// Runs the benchmark.
pub async fn run(args: &WorkflowArgs) -> Result<WorkflowReport> {
    let site = FixtureServer::start().await?;
    let policy = policy_for(&site);
    let pool = BrowserPool::start(pool_config(1, 1))
        .await
        .context("starting Chromium")?;
    let pages = snapshot_pages(&pool, &site, &policy, args).await?;
    let (mut steps, prompt_tokens) = step_overheads(&pool, &site, &policy, args).await?;
    let key = oxwright_workflow::CheckpointKey::parse(&"5a".repeat(32)).map_err(anyhow::Error::msg)?;
    steps.extend(checkpoint_wall(&pool, &site, &policy, args, &key).await?);
    pool.shutdown().await;
    let mut concurrency = Vec::new();
    for &level in &args.concurrency {
        concurrency.push(jobs_in_flight(&site, level.max(1), args.jobs_per_level, &key).await?);
    }
    Ok(WorkflowReport {
        snapshots_per_page: args.snapshots,
        runs: args.runs,
        pages,
        steps,
        decision_prompt_tokens_p50: percentile(&prompt_tokens, 0.5),
        decision_prompt_tokens_p95: percentile(&prompt_tokens, 0.95),
        concurrency,
    })
}

/// Snapshot time and size on each page of the sample app.
async fn snapshot_pages(
    pool: &BrowserPool,
    site: &FixtureServer,
    policy: &Arc<oxwright_policy::UrlPolicy>,
    args: &WorkflowArgs,
) -> Result<Vec<PageSnapshot>> {
    let mut pages = Vec::new();
    {
        let page = pool.open(&OpenOptions::new(policy.clone())).await?;
        let sanitizer = Sanitizer::new();
        let snap_opts = SnapshotOptions::default();
        for path in oxwright_fixtures::APP_PAGES {
            let url: url::Url = site.url(path).parse()?;
            page.goto(&url, &GotoOptions::load(Duration::from_secs(30)))
                .await?;
            // The late button and the iframe need a moment to be there.
            tokio::time::sleep(Duration::from_millis(1_000)).await;
            for _ in 0..3 {
                page.snapshot(&snap_opts).await?;
            }
            let mut times = Vec::new();
            let mut last = None;
            for _ in 0..args.snapshots {
                let t = Instant::now();
                // The run sanitises every snapshot it reads: so does the bench.
                let mut s = page.snapshot(&snap_opts).await?;
                s.text = sanitizer.clean(&s.text);
                times.push(ms(t.elapsed()));
                last = Some(s);
            }
            let s = last.context("no snapshot")?;
            pages.push(PageSnapshot {
                path: path.to_string(),
                p50_ms: percentile(&times, 0.5),
                p95_ms: percentile(&times, 0.95),
                bytes: s.text.len(),
                tokens: count_tokens(&s.text),
                lines: s.text.lines().count(),
                elements: s.elements.len(),
            });
        }
    }
    Ok(pages)
}

/// A step's overhead on the structured and the plain-language path (the
/// LLM's own time excluded), and the decision prompts' token counts.
async fn step_overheads(
    pool: &BrowserPool,
    site: &FixtureServer,
    policy: &Arc<oxwright_policy::UrlPolicy>,
    args: &WorkflowArgs,
) -> Result<(Vec<StepOverhead>, Vec<f64>)> {
    let mut steps = Vec::new();
    let mut prompt_tokens = Vec::new();
    for llm_path in [false, true] {
        let mut per_step = Vec::new();
        let (mut snap, mut pre, mut act, mut settle) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for run_no in 0..args.runs {
            let llm = ScriptedLlm::start().await?;
            let store = MemoryStore::new();
            let (text, client) = if llm_path {
                script(&llm);
                let client = LlmClient::new(LlmConfig::new(llm.base_url(), "scripted"), &Default::default())?;
                (
                    "Log in, search for rust, open Rust in Action, ship to Japan",
                    Some(Arc::new(client) as Arc<dyn oxwright_llm::ChatModel>),
                )
            } else {
                (STRUCTURED, None)
            };
            let deps = RunDeps {
                llm: client,
                secrets: Arc::new(MemorySecrets::new([
                    ("LOGIN_ID", "alice"),
                    ("PASSWORD", oxwright_fixtures::APP_PASSWORD),
                ])),
                store: Arc::new(store.clone()),
                sanitizer: Sanitizer::new(),
            };
            let session = format!("bench-{run_no}");
            let opts = WorkflowOptions::new(session.clone(), site.url("/app/login").parse()?);
            let page = pool.open(&OpenOptions::new(policy.clone())).await?;
            let result = run_workflow(page.as_ref(), &Workflow::parse(text)?, deps, opts).await?;
            drop(page);
            if result.status != RunStatus::Completed {
                bail!("benchmark workflow failed: {:?}", result.error);
            }
            for call in llm.received() {
                let prompt = call.prompt();
                // The decision calls (not the checklist's or the judge's).
                if prompt.contains("Decide the next action") {
                    prompt_tokens.push(count_tokens(&prompt) as f64);
                }
            }
            let body = store.get(&format!("sessions/{session}/steps.jsonl")).await?;
            for line in String::from_utf8_lossy(&body).lines() {
                let v: Value = serde_json::from_str(line)?;
                let d = &v["durations"];
                let f = |k: &str| d[k].as_f64().unwrap_or(0.0);
                // The LLM's own time (the scripted server over loopback) is excluded.
                per_step.push(f("totalMs") - f("decisionMs") - f("judgeMs"));
                snap.push(f("snapshotMs"));
                pre.push(f("precheckMs"));
                act.push(f("actionMs"));
                settle.push(f("settleMs"));
            }
        }
        steps.push(StepOverhead {
            path: if llm_path {
                "plain language (LLM time excluded)"
            } else {
                "structured (no LLM)"
            }
            .to_string(),
            steps: per_step.len(),
            p50_ms: percentile(&per_step, 0.5),
            p95_ms: percentile(&per_step, 0.95),
            snapshot_p50_ms: median(&snap),
            precheck_p50_ms: median(&pre),
            action_p50_ms: median(&act),
            settle_p50_ms: median(&settle),
        });
    }
    Ok((steps, prompt_tokens))
}

/// The structured flow's run wall time per step without and with
/// checkpoints.
async fn checkpoint_wall(
    pool: &BrowserPool,
    site: &FixtureServer,
    policy: &Arc<oxwright_policy::UrlPolicy>,
    args: &WorkflowArgs,
    key: &oxwright_workflow::CheckpointKey,
) -> Result<Vec<StepOverhead>> {
    let mut steps = Vec::new();
    // What checkpoints cost: the structured flow's wall time per step,
    // runs without and with checkpoints (sealed, as workers write them)
    // interleaved. The step records above time the attempts only; a
    // checkpoint is written between steps.
    let mut wall: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
    let workflow = Workflow::parse(STRUCTURED)?;
    let steps_in_flow = STRUCTURED.lines().count() as f64;
    for run_no in 0..args.runs {
        for (i, with) in [false, true].into_iter().enumerate() {
            let store = MemoryStore::new();
            let deps = RunDeps {
                llm: None,
                secrets: Arc::new(MemorySecrets::new([
                    ("LOGIN_ID", "alice"),
                    ("PASSWORD", oxwright_fixtures::APP_PASSWORD),
                ])),
                store: Arc::new(store),
                sanitizer: Sanitizer::new(),
            };
            let mut opts =
                WorkflowOptions::new(format!("wall-{run_no}-{i}"), site.url("/app/login").parse()?);
            opts.step_screenshots = false;
            if with {
                opts.checkpoints = Some(oxwright_workflow::Checkpoints::new(Some(key.clone()), "bench"));
            }
            let page = pool.open(&OpenOptions::new(policy.clone())).await?;
            // From the first step's start: the start page is open.
            page.goto(
                &site.url("/app/login").parse()?,
                &GotoOptions::load(Duration::from_secs(30)),
            )
            .await?;
            let t = Instant::now();
            let result = run_workflow(page.as_ref(), &workflow, deps, opts).await?;
            let elapsed = ms(t.elapsed());
            drop(page);
            if result.status != RunStatus::Completed {
                bail!("benchmark workflow failed: {:?}", result.error);
            }
            wall[i].push(elapsed / steps_in_flow);
        }
    }
    for (i, label) in [
        "structured, run wall time per step, no checkpoints",
        "structured, run wall time per step, checkpoints (sealed)",
    ]
    .into_iter()
    .enumerate()
    {
        steps.push(StepOverhead {
            path: label.to_string(),
            steps: wall[i].len(),
            p50_ms: percentile(&wall[i], 0.5),
            p95_ms: percentile(&wall[i], 0.95),
            snapshot_p50_ms: 0.0,
            precheck_p50_ms: 0.0,
            action_p50_ms: 0.0,
            settle_p50_ms: 0.0,
        });
    }
    Ok(steps)
}

/// Runs `jobs` structured flows, `level` at a time, on one browser with
/// `level` pages; each job opens its page, runs with sealed checkpoints
/// and gives the page back, as a worker does.
async fn jobs_in_flight(
    site: &FixtureServer,
    level: usize,
    jobs: usize,
    key: &oxwright_workflow::CheckpointKey,
) -> Result<ConcurrencyRow> {
    use futures::StreamExt as _;
    let policy = policy_for(site);
    let pool = BrowserPool::start(pool_config(1, level))
        .await
        .context("starting Chromium")?;
    let workflow = Workflow::parse(STRUCTURED)?;
    let steps_in_flow = STRUCTURED.lines().count();
    let start: url::Url = site.url("/app/login").parse()?;
    // One warm-up job so the browser's first page is not timed.
    let run_one = |n: usize| {
        let (pool, policy, workflow, start, key) =
            (&pool, policy.clone(), &workflow, start.clone(), key.clone());
        async move {
            let deps = RunDeps {
                llm: None,
                secrets: Arc::new(MemorySecrets::new([
                    ("LOGIN_ID", "alice"),
                    ("PASSWORD", oxwright_fixtures::APP_PASSWORD),
                ])),
                store: Arc::new(MemoryStore::new()),
                sanitizer: Sanitizer::new(),
            };
            let mut opts = WorkflowOptions::new(format!("c{level}-{n}"), start);
            opts.checkpoints = Some(oxwright_workflow::Checkpoints::new(Some(key), "bench"));
            let t = Instant::now();
            let page = pool.open(&OpenOptions::new(policy)).await?;
            let result = run_workflow(page.as_ref(), workflow, deps, opts).await?;
            drop(page);
            if result.status != RunStatus::Completed {
                bail!("benchmark workflow failed: {:?}", result.error);
            }
            Ok::<f64, anyhow::Error>(ms(t.elapsed()))
        }
    };
    run_one(usize::MAX).await?;
    let t = Instant::now();
    let walls: Vec<f64> = futures::stream::iter(0..jobs)
        .map(run_one)
        .buffer_unordered(level)
        .collect::<Vec<_>>()
        .await
        .into_iter()
        .collect::<Result<_>>()?;
    let wall_s = t.elapsed().as_secs_f64();
    let stats = pool.stats();
    pool.shutdown().await;
    let per_step: Vec<f64> = walls.iter().map(|w| w / steps_in_flow as f64).collect();
    Ok(ConcurrencyRow {
        in_flight: level,
        jobs,
        steps: jobs * steps_in_flow,
        wall_s,
        steps_per_s: (jobs * steps_in_flow) as f64 / wall_s,
        step_wall_p50_ms: percentile(&per_step, 0.5),
        step_wall_p95_ms: percentile(&per_step, 0.95),
        contexts: stats.contexts,
        reused: stats.reused,
    })
}

/// Renders the report as Markdown tables.
pub fn markdown(r: &WorkflowReport) -> String {
    let mut out = format!(
        "Snapshot extraction ({} timed captures per page after 3 warm-up):\n\n\
         | page | p50 ms | p95 ms | bytes | tokens (cl100k) | lines | elements |\n|---|---:|---:|---:|---:|---:|---:|\n",
        r.snapshots_per_page
    );
    for p in &r.pages {
        out.push_str(&format!(
            "| `{}` | {:.2} | {:.2} | {} | {} | {} | {} |\n",
            p.path, p.p50_ms, p.p95_ms, p.bytes, p.tokens, p.lines, p.elements
        ));
    }
    out.push_str(&format!(
        "\nPer-step overhead excluding the LLM ({} runs of the login → search → select flow per path):\n\n\
         | path | steps | p50 ms | p95 ms | snapshot p50 | precheck p50 | action p50 | settle p50 |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|\n",
        r.runs
    ));
    for s in &r.steps {
        out.push_str(&format!(
            "| {} | {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} |\n",
            s.path,
            s.steps,
            s.p50_ms,
            s.p95_ms,
            s.snapshot_p50_ms,
            s.precheck_p50_ms,
            s.action_p50_ms,
            s.settle_p50_ms
        ));
    }
    out.push_str(&format!(
        "\nDecision prompt tokens (cl100k, system + user): p50 {:.0}, p95 {:.0}\n",
        r.decision_prompt_tokens_p50, r.decision_prompt_tokens_p95
    ));
    if !r.concurrency.is_empty() {
        out.push_str(
            "\nWorkflow jobs in flight (structured flow, checkpoints on, one browser):\n\n\
             | in flight | jobs | steps | wall s | steps/s | step wall p50 ms | p95 ms | contexts | reused |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
        );
        for c in &r.concurrency {
            out.push_str(&format!(
                "| {} | {} | {} | {:.1} | {:.1} | {:.1} | {:.1} | {} | {} |\n",
                c.in_flight,
                c.jobs,
                c.steps,
                c.wall_s,
                c.steps_per_s,
                c.step_wall_p50_ms,
                c.step_wall_p95_ms,
                c.contexts,
                c.reused
            ));
        }
    }
    out
}
