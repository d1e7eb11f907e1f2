//! Fetch throughput over a fixed local corpus: every mode runs the same URLs
//! at the same concurrency, in interleaved rounds, warm-up pages excluded.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use anyhow::{Result, bail};
use oxwright_browser::{PoolConfig, UrlPolicy};
use serde::Serialize;

use crate::modes::{Mode, Runner, Sample, pool_config};
use crate::stats::{CpuMark, RendererSpawns, mean, median, percentile};

/// Options of the `fetch` subcommand.
#[derive(Debug, Clone, clap::Args)]
pub struct FetchArgs {
    /// Pages in the measured corpus (the 6 fixture articles repeated).
    #[arg(long, default_value_t = 120)]
    pub pages: usize,
    /// Pages in flight at once, in every mode.
    #[arg(long, default_value_t = 4)]
    pub concurrency: usize,
    /// Browsers in the warm pool.
    #[arg(long, default_value_t = 1)]
    pub browsers: usize,
    /// Pages per browser in the warm pool.
    #[arg(long, default_value_t = 4)]
    pub pages_per_browser: usize,
    /// Rounds per mode; figures are the median over rounds.
    #[arg(long, default_value_t = 3)]
    pub rounds: usize,
    /// Warm-up pages per round and mode, not measured.
    #[arg(long, default_value_t = 8)]
    pub warmup: usize,
    /// Modes to run, interleaved within each round.
    #[arg(long, value_delimiter = ',', default_value = "warm,cold,bare")]
    pub modes: Vec<Mode>,
    /// Adds the diagnostic modes (warm-fresh, bare-page, bare-contexts, bare-ctx, bare-fetch, pool-nav, pool-extract).
    #[arg(long)]
    pub diag: bool,
}

/// Pages fetched by one round of one mode.
#[derive(Debug, Clone, Serialize)]
pub struct Round {
    pub mode: Mode,
    pub round: usize,
    pub pages: usize,
    pub errors: usize,
    pub first_error: Option<String>,
    pub elapsed_s: f64,
    pub pages_per_s: f64,
    pub p50_ms: f64,
    pub p95_ms: f64,
    /// Mean time per phase, ms.
    pub phases_ms: BTreeMap<String, f64>,
    /// CPU of the bench process (fixture server, client, conversion) per page, ms.
    pub bench_cpu_ms_per_page: f64,
    /// CPU of the Chromium processes per page, ms.
    pub chromium_cpu_ms_per_page: f64,
    /// Chromium renderer processes started per page.
    pub renderers_per_page: f64,
    /// One-minute load average when the round ended.
    pub loadavg_1m: f64,
}

/// Returns the one-minute load average.
fn loadavg_1m() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|t| t.split_whitespace().next()?.parse().ok())
        .unwrap_or(f64::NAN)
}

/// The median over rounds of one mode.
#[derive(Debug, Clone, Serialize)]
pub struct ModeSummary {
    pub mode: Mode,
    pub pages_per_s: f64,
    pub pages_per_s_rounds: Vec<f64>,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub phases_ms: BTreeMap<String, f64>,
    pub bench_cpu_ms_per_page: f64,
    pub chromium_cpu_ms_per_page: f64,
    pub renderers_per_page: f64,
    pub errors: usize,
}

/// The `fetch` results.
#[derive(Debug, Clone, Serialize)]
pub struct FetchReport {
    pub pages: usize,
    pub concurrency: usize,
    pub browsers: usize,
    pub pages_per_browser: usize,
    pub rounds: usize,
    pub warmup: usize,
    pub summary: Vec<ModeSummary>,
    pub warm_over_cold: Option<f64>,
    pub warm_over_bare: Option<f64>,
    pub round_results: Vec<Round>,
}

/// The corpus: the article URLs of `site`, cycled to `pages`.
pub fn corpus(site: &oxwright_fixtures::FixtureServer, pages: usize) -> Vec<url::Url> {
    oxwright_fixtures::ARTICLE_PATHS
        .iter()
        .cycle()
        .take(pages)
        .map(|p| url::Url::parse(&site.url(p)).expect("fixture URL parses"))
        .collect()
}

/// A policy that lets the browser reach the fixture server and nothing private else.
pub fn policy_for(site: &oxwright_fixtures::FixtureServer) -> Arc<UrlPolicy> {
    Arc::new(UrlPolicy::allowing([site
        .addr()
        .to_string()
        .parse()
        .expect("host:port parses")]))
}

/// Fetches `urls` with `concurrency` workers; returns the samples and the errors.
pub async fn drive(
    runner: &Arc<Runner>,
    urls: &Arc<Vec<url::Url>>,
    concurrency: usize,
    policy: &Arc<UrlPolicy>,
) -> (Vec<Sample>, Vec<String>) {
    let next = Arc::new(AtomicUsize::new(0));
    let workers = (0..concurrency.max(1)).map(|worker| {
        let (runner, urls, next, policy) = (runner.clone(), urls.clone(), next.clone(), policy.clone());
        tokio::spawn(async move {
            let mut samples = Vec::new();
            let mut errors = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(url) = urls.get(i) else { break };
                match runner.one(worker, url, &policy).await {
                    // Every fixture article yields kilobytes of HTML and Markdown.
                    Ok(s) if s.output_bytes < 1000 => {
                        errors.push(format!("{url}: only {} bytes of output", s.output_bytes))
                    }
                    Ok(s) => samples.push(s),
                    Err(e) => errors.push(format!("{e:#}")),
                }
            }
            (samples, errors)
        })
    });
    let mut samples = Vec::new();
    let mut errors = Vec::new();
    for joined in futures::future::join_all(workers).await {
        match joined {
            Ok((s, e)) => {
                samples.extend(s);
                errors.extend(e);
            }
            Err(e) => errors.push(format!("worker panicked: {e}")),
        }
    }
    (samples, errors)
}

/// Runs one round of `mode`: start, warm up, measure, shut down.
async fn round(
    mode: Mode,
    n: usize,
    cfg: &PoolConfig,
    args: &FetchArgs,
    urls: &Arc<Vec<url::Url>>,
    policy: &Arc<UrlPolicy>,
) -> Result<Round> {
    let runner = Arc::new(Runner::start(mode, cfg, args.concurrency).await?);
    let warm: Arc<Vec<url::Url>> = Arc::new(urls.iter().cycle().take(args.warmup).cloned().collect());
    let (_, warm_errors) = drive(&runner, &warm, args.concurrency, policy).await;
    if let Some(e) = warm_errors.first() {
        eprintln!("  {} warm-up error: {e}", mode.name());
    }
    let spawns = RendererSpawns::start();
    let cpu0 = CpuMark::now();
    let started = Instant::now();
    let (samples, errors) = drive(&runner, urls, args.concurrency, policy).await;
    let elapsed = started.elapsed().as_secs_f64();
    let (own, browsers) = CpuMark::now().since(&cpu0);
    let renderers = spawns.finish();
    if let Some(pool) = runner.pool() {
        eprintln!("    pool: {:?}", pool.stats());
    }
    if let Ok(runner) = Arc::try_unwrap(runner) {
        runner.shutdown().await;
    }
    let latencies: Vec<f64> = samples.iter().map(|s| s.latency_ms).collect();
    let mut phases: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for s in &samples {
        for (name, v) in &s.phases {
            phases.entry((*name).to_string()).or_default().push(*v);
        }
    }
    let done = samples.len().max(1) as f64;
    let r = Round {
        mode,
        round: n,
        pages: samples.len(),
        errors: errors.len(),
        first_error: errors.first().cloned(),
        elapsed_s: elapsed,
        pages_per_s: samples.len() as f64 / elapsed,
        p50_ms: percentile(&latencies, 0.50),
        p95_ms: percentile(&latencies, 0.95),
        phases_ms: phases.into_iter().map(|(k, v)| (k, mean(&v))).collect(),
        bench_cpu_ms_per_page: own * 1000.0 / done,
        chromium_cpu_ms_per_page: browsers * 1000.0 / done,
        renderers_per_page: renderers as f64 / done,
        loadavg_1m: loadavg_1m(),
    };
    eprintln!(
        "  round {n} {:<12} {:>6.2} pages/s  p50 {:>6.1} ms  p95 {:>6.1} ms  chromium cpu {:>6.1} ms/page  renderers {:.2}/page  errors {}  load {:.2}",
        mode.name(),
        r.pages_per_s,
        r.p50_ms,
        r.p95_ms,
        r.chromium_cpu_ms_per_page,
        r.renderers_per_page,
        r.errors,
        r.loadavg_1m
    );
    if let Some(e) = &r.first_error {
        eprintln!("    first error: {e}");
    }
    Ok(r)
}

fn summarise(mode: Mode, rounds: &[Round]) -> ModeSummary {
    let pick = |f: fn(&Round) -> f64| median(&rounds.iter().map(f).collect::<Vec<_>>());
    let mut phases: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for r in rounds {
        for (k, v) in &r.phases_ms {
            phases.entry(k.clone()).or_default().push(*v);
        }
    }
    ModeSummary {
        mode,
        pages_per_s: pick(|r| r.pages_per_s),
        pages_per_s_rounds: rounds.iter().map(|r| r.pages_per_s).collect(),
        p50_ms: pick(|r| r.p50_ms),
        p95_ms: pick(|r| r.p95_ms),
        phases_ms: phases.into_iter().map(|(k, v)| (k, median(&v))).collect(),
        bench_cpu_ms_per_page: pick(|r| r.bench_cpu_ms_per_page),
        chromium_cpu_ms_per_page: pick(|r| r.chromium_cpu_ms_per_page),
        renderers_per_page: pick(|r| r.renderers_per_page),
        errors: rounds.iter().map(|r| r.errors).sum(),
    }
}

/// Runs the throughput benchmark.
pub async fn run(args: &FetchArgs) -> Result<FetchReport> {
    let mut modes = args.modes.clone();
    if args.diag {
        for m in [
            Mode::WarmFresh,
            Mode::BarePage,
            Mode::BareContexts,
            Mode::BareCtx,
            Mode::BareFetch,
            Mode::PoolNav,
            Mode::PoolExtract,
        ] {
            if !modes.contains(&m) {
                modes.push(m);
            }
        }
    }
    let site = oxwright_fixtures::FixtureServer::start().await?;
    let urls = Arc::new(corpus(&site, args.pages));
    let policy = policy_for(&site);
    let cfg = pool_config(args.browsers, args.pages_per_browser);
    let mut all = Vec::new();
    for n in 1..=args.rounds.max(1) {
        // Rotate the order each round so no mode always runs first or last.
        let k = (n - 1) % modes.len();
        for mode in modes[k..].iter().chain(&modes[..k]) {
            all.push(round(*mode, n, &cfg, args, &urls, &policy).await?);
        }
    }
    site.shutdown().await;
    let summary: Vec<ModeSummary> = modes
        .iter()
        .map(|m| {
            let rs: Vec<Round> = all.iter().filter(|r| r.mode == *m).cloned().collect();
            summarise(*m, &rs)
        })
        .collect();
    let rate = |m: Mode| summary.iter().find(|s| s.mode == m).map(|s| s.pages_per_s);
    let ratio = |a: Option<f64>, b: Option<f64>| Some(a? / b?).filter(|r| r.is_finite());
    let report = FetchReport {
        pages: args.pages,
        concurrency: args.concurrency,
        browsers: args.browsers,
        pages_per_browser: args.pages_per_browser,
        rounds: args.rounds,
        warmup: args.warmup,
        warm_over_cold: ratio(rate(Mode::Warm), rate(Mode::Cold)),
        warm_over_bare: ratio(rate(Mode::Warm), rate(Mode::Bare)),
        summary,
        round_results: all,
    };
    if report.summary.iter().any(|s| s.pages_per_s == 0.0) {
        bail!("a mode fetched no page; see the errors above");
    }
    Ok(report)
}

/// Renders the report as Markdown.
pub fn markdown(r: &FetchReport) -> String {
    let mut out = format!(
        "Fetch throughput: {} pages, concurrency {}, pool {}×{}, median of {} rounds ({} warm-up pages each)\n\n",
        r.pages, r.concurrency, r.browsers, r.pages_per_browser, r.rounds, r.warmup
    );
    out.push_str("| mode | pages/s | rounds | p50 ms | p95 ms | bench CPU ms/page | Chromium CPU ms/page | renderers/page | mean phases (ms) | errors |\n");
    out.push_str("|---|---:|---|---:|---:|---:|---:|---:|---|---:|\n");
    for s in &r.summary {
        let rounds: Vec<String> = s.pages_per_s_rounds.iter().map(|v| format!("{v:.2}")).collect();
        let phases: Vec<String> = s.phases_ms.iter().map(|(k, v)| format!("{k} {v:.1}")).collect();
        out.push_str(&format!(
            "| {} | {:.2} | {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.2} | {} | {} |\n",
            s.mode.name(),
            s.pages_per_s,
            rounds.join(" / "),
            s.p50_ms,
            s.p95_ms,
            s.bench_cpu_ms_per_page,
            s.chromium_cpu_ms_per_page,
            s.renderers_per_page,
            phases.join(", "),
            s.errors
        ));
    }
    out.push('\n');
    if let Some(x) = r.warm_over_cold {
        out.push_str(&format!("warm / cold = {x:.2}× (target ≥ 3×)\n"));
    }
    if let Some(x) = r.warm_over_bare {
        out.push_str(&format!("warm / bare = {x:.2}× (target ≥ 0.8×)\n"));
    }
    let rate = |m: Mode| r.summary.iter().find(|s| s.mode == m).map(|s| s.pages_per_s);
    if let (Some(shared), Some(cold), Some(bare)) =
        (rate(Mode::WarmShared), rate(Mode::Cold), rate(Mode::Bare))
    {
        out.push_str(&format!(
            "warm-shared / cold = {:.2}×, warm-shared / bare = {:.2}×\n",
            shared / cold,
            shared / bare
        ));
    }
    out
}
