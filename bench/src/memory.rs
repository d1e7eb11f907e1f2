//! Memory of a warm browser: PSS summed over the Chromium process tree, idle
//! after warm-up, while the throughput run keeps pages in flight, and after it.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context, Result};
use serde::Serialize;

use crate::fetch::{corpus, drive, policy_for};
use crate::modes::{BareBrowser, Mode, Runner, pool_config};
use crate::stats::{TreePss, median, tree_pss};

/// Options of the `memory` subcommand.
#[derive(Debug, Clone, clap::Args)]
pub struct MemoryArgs {
    /// Pages in the throughput run.
    #[arg(long, default_value_t = 120)]
    pub pages: usize,
    /// Pages in flight (and pool pages per browser).
    #[arg(long, default_value_t = 4)]
    pub concurrency: usize,
    /// Warm-up pages before the idle reading.
    #[arg(long, default_value_t = 8)]
    pub warmup: usize,
    /// Seconds to let the browser settle before an idle reading.
    #[arg(long, default_value_t = 2)]
    pub settle: u64,
}

/// The `memory` results, MiB of PSS over the browser's process tree.
#[derive(Debug, Clone, Serialize)]
pub struct MemoryReport {
    pub concurrency: usize,
    /// Bare Chromium (pool flags) with one `about:blank` tab, for reference.
    pub bare_one_blank_tab: TreePss,
    /// The warm pool's browser right after start, no page open.
    pub pool_started: TreePss,
    /// After warm-up, all leases returned.
    pub idle_after_warmup: TreePss,
    /// Sampled every 100 ms during the throughput run.
    pub in_flight_median_mib: f64,
    pub in_flight_peak_mib: f64,
    pub in_flight_peak_processes: usize,
    /// After the run, all leases returned.
    pub idle_after_run: TreePss,
    pub pages_fetched: usize,
    pub errors: usize,
}

/// Runs the memory benchmark.
pub async fn run(args: &MemoryArgs) -> Result<MemoryReport> {
    let settle = Duration::from_secs(args.settle);
    let cfg = pool_config(1, args.concurrency);

    let bare = BareBrowser::launch(&cfg).await?;
    let _tab = bare.browser.new_page("about:blank").await?;
    tokio::time::sleep(settle).await;
    let bare_one_blank_tab = tree_pss(bare.process.pid());
    drop(_tab);
    bare.shutdown();

    let site = oxwright_fixtures::FixtureServer::start().await?;
    let policy = policy_for(&site);
    let runner = Arc::new(Runner::start(Mode::Warm, &cfg, args.concurrency).await?);
    let pool = runner.pool().context("warm runner has a pool")?.clone();
    let pid = *pool.pids().await.first().context("pool has a browser")?;
    tokio::time::sleep(settle).await;
    let pool_started = tree_pss(pid);

    let warm = Arc::new(corpus(&site, args.warmup));
    let (_, warm_errors) = drive(&runner, &warm, args.concurrency, &policy).await;
    tokio::time::sleep(settle).await;
    let idle_after_warmup = tree_pss(pid);

    let running = Arc::new(AtomicBool::new(true));
    let sampler = {
        let running = running.clone();
        tokio::spawn(async move {
            let mut samples = Vec::new();
            while running.load(Ordering::Relaxed) {
                samples.push(tokio::task::spawn_blocking(move || tree_pss(pid)).await.ok());
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            samples.into_iter().flatten().collect::<Vec<TreePss>>()
        })
    };
    let urls = Arc::new(corpus(&site, args.pages));
    let (samples, errors) = drive(&runner, &urls, args.concurrency, &policy).await;
    running.store(false, Ordering::Relaxed);
    let during = sampler.await?;
    tokio::time::sleep(settle).await;
    let idle_after_run = tree_pss(pid);
    if let Ok(runner) = Arc::try_unwrap(runner) {
        runner.shutdown().await;
    }
    site.shutdown().await;

    let mibs: Vec<f64> = during.iter().map(|p| p.mib).collect();
    let peak = during
        .iter()
        .copied()
        .max_by(|a, b| a.mib.total_cmp(&b.mib))
        .unwrap_or(idle_after_run);
    Ok(MemoryReport {
        concurrency: args.concurrency,
        bare_one_blank_tab,
        pool_started,
        idle_after_warmup,
        in_flight_median_mib: median(&mibs),
        in_flight_peak_mib: peak.mib,
        in_flight_peak_processes: peak.processes,
        idle_after_run,
        pages_fetched: samples.len(),
        errors: errors.len() + warm_errors.len(),
    })
}

/// Renders the report as Markdown.
pub fn markdown(r: &MemoryReport) -> String {
    let row = |name: &str, p: &TreePss| format!("| {name} | {:.0} | {} |\n", p.mib, p.processes);
    let mut out = String::from("Browser memory (PSS summed over the Chromium process tree)\n\n");
    out.push_str("| state | PSS MiB | processes |\n|---|---:|---:|\n");
    out.push_str(&row(
        "bare Chromium, 1 blank tab (reference)",
        &r.bare_one_blank_tab,
    ));
    out.push_str(&row("warm pool browser, just started (no page)", &r.pool_started));
    out.push_str(&row("warm pool, idle after warm-up", &r.idle_after_warmup));
    out.push_str(&format!(
        "| warm pool, {} pages in flight (median of samples) | {:.0} | |\n",
        r.concurrency, r.in_flight_median_mib
    ));
    out.push_str(&format!(
        "| warm pool, {} pages in flight (peak) | {:.0} | {} |\n",
        r.concurrency, r.in_flight_peak_mib, r.in_flight_peak_processes
    ));
    out.push_str(&row("warm pool, idle after the run", &r.idle_after_run));
    out.push_str(&format!(
        "\n{} pages fetched, {} errors\n",
        r.pages_fetched, r.errors
    ));
    out
}
