//! The `oxwright` command line: parses flags, sets up telemetry, and hands
//! each subcommand to its module.

mod commands;
mod exit;
mod options;
mod signals;

use clap::{Parser, Subcommand};

use crate::options::CommonArgs;
use oxwright_worker::Setup;

/// Web pages into LLM-ready Markdown, in real Chromium, at scale.
#[derive(Debug, Parser)]
#[command(name = "oxwright", version, about)]
struct Cli {
    #[command(flatten)]
    common: CommonArgs,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Fetch pages now and print their Markdown.
    Fetch(commands::fetch::FetchCmd),
    /// Fetch a list of URLs through the in-process queue, with a manifest.
    Batch(commands::batch::BatchCmd),
    /// Discover and load a site's sitemaps.
    Sitemap(commands::sitemap::SitemapCmd),
    /// Run a worker of the distributed mode: jobs from RabbitMQ, artefacts to S3.
    Worker(commands::worker::WorkerCmd),
    /// Submit a batch of jobs to RabbitMQ and print its id.
    Submit(commands::submit::SubmitCmd),
    /// Run the scheduler daemon: manifests, HTTP API, schedules, webhooks.
    Scheduler(commands::scheduler::SchedulerCmd),
    /// Run a workflow (plain language with an LLM, or structured steps).
    Run(commands::run::RunCmd),
    /// Serve the browser to coding agents over MCP (stdio, or HTTP with --listen).
    Mcp(commands::mcp::McpCmd),
    /// Serve the bundled sample site on loopback (for demos).
    SampleSite(commands::sample_site::SampleSiteCmd),
    /// Show the configuration in effect (`config show`).
    Config(commands::config::ConfigCmd),
}

fn main() {
    let cli = Cli::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime starts");
    let code = runtime.block_on(async {
        // Services log their routine; commands a person runs stay quiet on a terminal.
        let person = !matches!(cli.command, Command::Worker(_) | Command::Scheduler(_));
        let _telemetry = match oxwright_telemetry::init(
            "oxwright",
            oxwright_telemetry::TelemetryOptions {
                person,
                ..oxwright_telemetry::TelemetryOptions::from_process_env()
            },
        ) {
            Ok(guard) => Some(guard),
            Err(err) => {
                eprintln!("warning: telemetry disabled: {err:#}");
                None
            }
        };
        match run(cli).await {
            Ok(code) => code,
            Err(err) => {
                eprintln!("error: {err:#}");
                exit::of_error(&err)
            }
        }
    });
    runtime.shutdown_timeout(std::time::Duration::from_secs(2));
    std::process::exit(code);
}

async fn run(cli: Cli) -> anyhow::Result<i32> {
    // The process environment is read here, once, and handed down.
    let env: std::collections::BTreeMap<String, String> = std::env::vars().collect();
    // Setup marks a bad configuration as a usage error (exit 2) itself.
    let setup = || Setup::new(&cli.common.overrides(), env.clone());
    match cli.command {
        Command::SampleSite(cmd) => commands::sample_site::run(cmd).await,
        Command::Fetch(cmd) => commands::fetch::run(setup()?, cmd).await,
        Command::Batch(cmd) => commands::batch::run(setup()?, cmd).await,
        Command::Sitemap(cmd) => commands::sitemap::run(setup()?, cmd).await,
        Command::Worker(cmd) => commands::worker::run(setup()?, cmd).await,
        Command::Submit(cmd) => commands::submit::run(setup()?, cmd).await,
        Command::Scheduler(cmd) => commands::scheduler::run(setup()?, cmd).await,
        Command::Run(cmd) => commands::run::run(setup()?, cmd).await,
        Command::Mcp(cmd) => commands::mcp::run(setup()?, cmd).await,
        Command::Config(cmd) => commands::config::run(setup()?, cmd).await,
    }
}
