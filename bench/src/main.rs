//! Benchmark harness: fetch throughput (warm pool, cold browser, bare CDP),
//! conversion CPU and token reduction, browser memory, queue overhead and
//! distributed fetch throughput. Prints Markdown
//! tables and writes JSON to `bench/results/<name>.json`.

mod chaos;
mod chaos_crawl;
mod convert;
mod dashboard;
mod distributed;
mod extract;
mod fetch;
mod frontier;
mod memory;
mod modes;
mod quality;
mod queue;
mod replay;
mod snapshot_sources;
mod stats;
mod workflow;

use std::path::PathBuf;

use anyhow::Result;
use clap::{Parser, Subcommand};
use serde::Serialize;

#[derive(Debug, Parser)]
#[command(name = "oxwright-bench", about = "oxwright benchmarks")]
struct Cli {
    /// Name of the JSON file under bench/results/ (defaults to the subcommand).
    #[arg(long, global = true)]
    name: Option<String>,
    /// Directory for the JSON results.
    #[arg(long, global = true, default_value = concat!(env!("CARGO_MANIFEST_DIR"), "/results"))]
    out_dir: PathBuf,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Fetch throughput: warm pool vs cold browser per page vs bare chromiumoxide.
    Fetch(fetch::FetchArgs),
    /// html_to_markdown and count_tokens CPU per article, and token reduction.
    Convert(convert::ConvertArgs),
    /// PSS of the warm pool's Chromium tree, idle and with pages in flight.
    Memory(memory::MemoryArgs),
    /// RabbitMQ overhead per job and confirmed-publish throughput.
    Queue(queue::QueueArgs),
    /// Distributed fetch pages/s with 1 and 2 `oxwright worker` processes.
    Distributed(distributed::DistributedArgs),
    /// Main-content quality: word and snippet P/R/F1 per extractor on public corpora.
    Quality(quality::QualityArgs),
    /// Scores a directory of `<page id>.md` files against the quality corpus's truth.
    ScoreMd(quality::ScoreMdArgs),
    /// Workflow: snapshot extraction time and size, per-step overhead without the LLM.
    Workflow(workflow::WorkflowArgs),
    /// Workflow record (LLM) vs replay (action cache): wall time and LLM calls.
    Replay(replay::ReplayArgs),
    /// Page snapshots from the DOM reader vs Chromium's accessibility tree:
    /// time, refs and agreement per page.
    SnapshotSources(snapshot_sources::SnapshotSourcesArgs),
    /// The dashboard: a large batch's pages, and the live view's CPU while a batch runs.
    Dashboard(dashboard::DashboardArgs),
    /// The crawl frontier at scale with a fake fetcher: offers and
    /// releases per second, memory per URL.
    Frontier(frontier::FrontierArgs),
    /// Structured extraction: records/s and tokens/page by CSS schema, by
    /// the model, and by learned schemas, on the same pages.
    Extract(extract::ExtractArgs),
    /// Distributed mode under chaos: workers, broker, S3 and scheduler
    /// killed and restarted during a batch; checks nothing is lost.
    Chaos(chaos::ChaosArgs),
}

/// Where and when a result was measured.
#[derive(Debug, Serialize)]
struct Machine {
    date: String,
    /// The commit the bench was built from (`-modified`: with changes to it).
    commit: &'static str,
    command: String,
    cores: usize,
    os: String,
    chromium: String,
    /// `/proc/loadavg` when the run started: other work on the machine skews results.
    loadavg_at_start: String,
}

impl Machine {
    fn read() -> Self {
        let chromium = std::process::Command::new("/usr/bin/chromium")
            .arg("--version")
            .stderr(std::process::Stdio::null())
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_default();
        let os = std::fs::read_to_string("/etc/os-release")
            .ok()
            .and_then(|t| {
                t.lines()
                    .find_map(|l| l.strip_prefix("PRETTY_NAME="))
                    .map(|v| v.trim_matches('"').to_string())
            })
            .unwrap_or_default();
        let args: Vec<String> = std::env::args().skip(1).collect();
        Self {
            date: chrono::Utc::now().format("%Y-%m-%d %H:%M UTC").to_string(),
            commit: env!("OXWRIGHT_COMMIT"),
            command: format!("cargo run --release -p oxwright-bench -- {}", args.join(" ")),
            cores: std::thread::available_parallelism().map_or(0, |n| n.get()),
            os,
            chromium,
            loadavg_at_start: std::fs::read_to_string("/proc/loadavg")
                .unwrap_or_default()
                .trim()
                .to_string(),
        }
    }
}

#[derive(Debug, Serialize)]
struct Output<'a, T: Serialize> {
    machine: &'a Machine,
    results: &'a T,
}

fn write_json<T: Serialize>(cli: &Cli, default: &str, machine: &Machine, results: &T) -> Result<()> {
    std::fs::create_dir_all(&cli.out_dir)?;
    let name = cli.name.as_deref().unwrap_or(default);
    let path = cli.out_dir.join(format!("{name}.json"));
    let body = serde_json::to_string_pretty(&Output { machine, results })?;
    std::fs::write(&path, body + "\n")?;
    eprintln!("wrote {}", path.display());
    Ok(())
}

#[tokio::main]
async fn main() -> Result<()> {
    let cli = Cli::parse();
    let machine = Machine::read();
    println!(
        "{} · {} cores · {} · {} · loadavg {}\n",
        machine.date, machine.cores, machine.os, machine.chromium, machine.loadavg_at_start
    );
    match &cli.command {
        Command::Fetch(args) => {
            let report = fetch::run(args).await?;
            println!("{}", fetch::markdown(&report));
            write_json(&cli, "fetch", &machine, &report)?;
        }
        Command::Convert(args) => {
            let report = convert::run(args).await?;
            println!("{}", convert::markdown(&report));
            write_json(&cli, "convert", &machine, &report)?;
        }
        Command::Memory(args) => {
            let report = memory::run(args).await?;
            println!("{}", memory::markdown(&report));
            write_json(&cli, "memory", &machine, &report)?;
        }
        Command::Queue(args) => {
            let report = queue::run(args).await?;
            println!("{}", queue::markdown(&report));
            write_json(&cli, "queue", &machine, &report)?;
        }
        Command::Distributed(args) => {
            let report = distributed::run(args).await?;
            println!("{}", distributed::markdown(&report));
            write_json(&cli, "distributed", &machine, &report)?;
        }
        Command::Quality(args) => {
            let report = quality::run(args).await?;
            println!("{}", quality::markdown(&report));
            write_json(&cli, "quality", &machine, &report)?;
        }
        Command::ScoreMd(args) => {
            let report = quality::score_md(args)?;
            println!("{}", quality::score_md_markdown(&report));
            write_json(&cli, "score-md", &machine, &report)?;
        }
        Command::Workflow(args) => {
            let report = workflow::run(args).await?;
            println!("{}", workflow::markdown(&report));
            write_json(&cli, "workflow", &machine, &report)?;
        }
        Command::Replay(args) => {
            let report = replay::run(args).await?;
            println!("{}", replay::markdown(&report));
            write_json(&cli, "replay", &machine, &report)?;
        }
        Command::SnapshotSources(args) => {
            let report = snapshot_sources::run(args).await?;
            write_json(&cli, "snapshot-sources", &machine, &report)?;
        }
        Command::Dashboard(args) => {
            let report = dashboard::run(args).await?;
            println!("{}", dashboard::markdown(&report));
            write_json(&cli, "dashboard", &machine, &report)?;
        }
        Command::Extract(args) => {
            let report = extract::run(args).await?;
            println!("{}", extract::markdown(&report));
            write_json(&cli, "extract", &machine, &report)?;
        }
        Command::Frontier(args) => {
            let report = frontier::run(args).await?;
            println!("{}", frontier::markdown(&report));
            write_json(&cli, "frontier", &machine, &report)?;
        }
        Command::Chaos(args) => {
            let report = chaos::run(args).await?;
            println!("{}", chaos::markdown(&report));
            write_json(&cli, "chaos", &machine, &report)?;
            if !report.passed {
                anyhow::bail!("the chaos run lost or left something: {:?}", report.problems);
            }
        }
    }
    Ok(())
}
