//! Record vs replay: the login → search → select flow run once with the
//! (scripted) LLM, which records its actions, then replayed from the action
//! cache with no LLM call; interleaved rounds, wall time of each run.

use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use oxwright_artifacts::MemoryStore;
use oxwright_browser::BrowserPool;
use oxwright_engine::{BrowserEngine, OpenOptions};
use oxwright_fixtures::FixtureServer;
use oxwright_fixtures::llm::ScriptedLlm;
use oxwright_jobs::{RunStatus, WorkflowResult};
use oxwright_llm::{LlmClient, LlmConfig};
use oxwright_secrets::{MemorySecrets, Sanitizer};
use oxwright_workflow::{ReplayOptions, RunDeps, Workflow, WorkflowOptions, run_workflow};
use serde::Serialize;

use crate::fetch::policy_for;
use crate::modes::pool_config;
use crate::stats::{median, ms, percentile};

/// Options of the `replay` subcommand.
#[derive(Debug, Clone, clap::Args)]
pub struct ReplayArgs {
    /// Rounds (each: one recorded run, one replay).
    #[arg(long, default_value_t = 10)]
    pub runs: usize,
    /// Keep no per-step screenshots (to see what they cost).
    #[arg(long)]
    pub no_screenshots: bool,
    /// Model an LLM served elsewhere: milliseconds to the first token.
    #[arg(long, default_value_t = 0)]
    pub llm_first_token_ms: u64,
    /// ... and per completion token.
    #[arg(long, default_value_t = 0)]
    pub llm_per_token_ms: u64,
}

/// The `replay` results.
#[derive(Debug, Clone, Serialize)]
pub struct ReplayReport {
    pub runs: usize,
    pub steps: usize,
    pub record_ms: Vec<f64>,
    pub replay_ms: Vec<f64>,
    pub record_llm_calls: u32,
    pub replay_llm_calls: u32,
    pub llm_first_token_ms: u64,
    pub llm_per_token_ms: u64,
    pub step_screenshots: bool,
}

const FLOW: &str = "Log in, search for rust, open Rust in Action, ship to Japan";

/// Runs the benchmark.
pub async fn run(args: &ReplayArgs) -> Result<ReplayReport> {
    let site = FixtureServer::start().await?;
    let policy = policy_for(&site);
    let pool = BrowserPool::start(pool_config(1, 1))
        .await
        .context("starting Chromium")?;
    let store = MemoryStore::new();
    let llm = ScriptedLlm::start().await?;
    llm.set_latency(
        std::time::Duration::from_millis(args.llm_first_token_ms),
        std::time::Duration::from_millis(args.llm_per_token_ms),
    );
    let client = LlmClient::new(LlmConfig::new(llm.base_url(), "scripted"), &Default::default())?;
    let client = Arc::new(client) as Arc<dyn oxwright_llm::ChatModel>;
    let mut report = ReplayReport {
        runs: args.runs,
        steps: 0,
        record_ms: Vec::new(),
        replay_ms: Vec::new(),
        record_llm_calls: 0,
        replay_llm_calls: 0,
        llm_first_token_ms: args.llm_first_token_ms,
        llm_per_token_ms: args.llm_per_token_ms,
        step_screenshots: !args.no_screenshots,
    };
    let no_screenshots = args.no_screenshots;
    let once = |session: String, id: String, replay: bool| {
        let (pool, policy, store, client) = (pool.clone(), policy.clone(), store.clone(), client.clone());
        let start: url::Url = site.url("/app/login").parse().expect("url");
        async move {
            let deps = RunDeps {
                llm: Some(client),
                secrets: Arc::new(MemorySecrets::new([
                    ("LOGIN_ID", "alice"),
                    ("PASSWORD", oxwright_fixtures::APP_PASSWORD),
                ])),
                store: Arc::new(store),
                sanitizer: Sanitizer::new(),
            };
            let mut opts = WorkflowOptions::new(session, start);
            opts.workflow_id = Some(id.clone());
            opts.step_screenshots = !no_screenshots;
            let workflow = if replay {
                let cache = oxwright_workflow::ActionCache::load(&deps.store, &id).await?;
                opts.replay = Some(ReplayOptions {
                    checklist: cache.checklist.clone(),
                    trust_after: 1,
                });
                Workflow::parse(&cache.checklist.join("\n").replace("[] ", ""))?
            } else {
                Workflow::parse(FLOW)?
            };
            let page = pool.open(&OpenOptions::new(policy)).await?;
            let t = Instant::now();
            let result = run_workflow(page.as_ref(), &workflow, deps, opts).await?;
            let wall = ms(t.elapsed());
            anyhow::Ok((result, wall))
        }
    };
    let check = |r: &WorkflowResult| -> Result<()> {
        if r.status != RunStatus::Completed {
            bail!("benchmark run failed: {:?}", r.error);
        }
        Ok(())
    };
    for round in 0..args.runs {
        crate::workflow::script(&llm);
        let id = format!("bench-{round}");
        let (rec, wall) = once(format!("rec-{round}"), id.clone(), false).await?;
        check(&rec)?;
        report.record_ms.push(wall);
        report.record_llm_calls += rec.totals.llm_calls;
        report.steps = rec.steps.len();
        let (rep, wall) = once(format!("rep-{round}"), id, true).await?;
        check(&rep)?;
        if rep.totals.cache_hits as usize != rep.steps.len() {
            bail!("the replay missed the cache: {:?}", rep.totals);
        }
        report.replay_ms.push(wall);
        report.replay_llm_calls += rep.totals.llm_calls;
    }
    pool.shutdown().await;
    Ok(report)
}

/// Renders the report as a Markdown table.
pub fn markdown(r: &ReplayReport) -> String {
    let (rec, rep) = (median(&r.record_ms), median(&r.replay_ms));
    format!(
        "Record vs replay ({} interleaved rounds of the {}-step login → search → select flow, \
         scripted LLM over loopback answering after {} ms + {} ms per completion token; \
         step screenshots {}):\n\n\
         | run | p50 ms | p95 ms | LLM calls (all rounds) |\n|---|---:|---:|---:|\n\
         | recorded (LLM) | {rec:.0} | {:.0} | {} |\n| replayed (cache) | {rep:.0} | {:.0} | {} |\n\n\
         replay / record wall time: {:.2}\n",
        r.runs,
        r.steps,
        r.llm_first_token_ms,
        r.llm_per_token_ms,
        if r.step_screenshots { "on" } else { "off" },
        percentile(&r.record_ms, 0.95),
        r.record_llm_calls,
        percentile(&r.replay_ms, 0.95),
        r.replay_llm_calls,
        rep / rec
    )
}
