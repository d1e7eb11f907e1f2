//! The `oxwright` command line: parses flags, sets up telemetry, and hands
//! each subcommand to its module.

mod commands;
mod exit;
mod fetch_flags;
mod options;
mod signals;

use clap::{Parser, Subcommand};

use crate::options::CommonArgs;
use oxwright_config::Setup;

/// Web pages into LLM-ready Markdown, in real Chromium, at scale.
#[derive(Debug, Parser)]
#[command(
    name = "oxwright",
    version = concat!(env!("CARGO_PKG_VERSION"), " (", env!("OXWRIGHT_COMMIT"), ")"),
    about = "oxwright: web pages into LLM-ready Markdown, sitemaps, and UI workflows, in real Chromium.\n\
             Runs embedded on one machine, as workers behind RabbitMQ and S3, or as an MCP server for agents.",
    after_help = "Examples:\n  \
                  oxwright fetch example.com\n  \
                  oxwright batch urls.txt\n  \
                  oxwright crawl docs.example.com --limit 200\n  \
                  oxwright run login.steps --url https://shop.example/login --secrets secrets.env\n  \
                  oxwright check run checks/ --junit checks.xml\n  \
                  oxwright help batch"
)]
struct Cli {
    #[command(flatten)]
    common: CommonArgs,
    #[command(subcommand)]
    command: Command,
}

// One value, parsed once a process: the size of its largest variant costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
enum Command {
    /// Fetch pages now and print their Markdown.
    #[cfg(feature = "browser")]
    Fetch(commands::fetch::FetchCmd),
    /// Fetch a list of URLs through the in-process queue, with a manifest.
    #[cfg(feature = "browser")]
    Batch(commands::batch::BatchCmd),
    /// Follow a site's links from start URLs, within a depth and a page limit, obeying robots.txt.
    #[cfg(feature = "browser")]
    Crawl(commands::crawl::CrawlCmd),
    /// List a site's URLs from its sitemaps and its pages' links, without fetching their content.
    #[cfg(feature = "browser")]
    Map(commands::map::MapCmd),
    /// Discover and load a site's sitemaps.
    Sitemap(commands::sitemap::SitemapCmd),
    /// Run a worker of the distributed mode: jobs from RabbitMQ, artefacts to S3.
    #[cfg(feature = "browser")]
    Worker(commands::worker::WorkerCmd),
    /// Submit a batch of jobs to RabbitMQ and print its id.
    Submit(commands::submit::SubmitCmd),
    /// Run the scheduler daemon: manifests, HTTP API, schedules, webhooks.
    Scheduler(commands::scheduler::SchedulerCmd),
    /// Serve the dashboard over the artefact store alone (batches, jobs, sessions), to look at.
    Dashboard(commands::dashboard::DashboardCmd),
    /// Run a workflow (plain language with an LLM, or structured steps).
    #[cfg(feature = "browser")]
    Run(commands::run::RunCmd),
    /// Re-run a recorded workflow from its action cache (no LLM call for trusted steps).
    #[cfg(feature = "browser")]
    Replay(commands::replay::ReplayCmd),
    /// Run UI checks (`NAME.check.toml`) once, with retries, records and a JUnit report.
    #[cfg(feature = "browser")]
    Check(commands::check::CheckCmd),
    /// Write a session's report.html again from its artefacts.
    Report(commands::report::ReportCmd),
    /// Write a @playwright/test spec from a session's steps, verified headless.
    #[cfg(feature = "browser")]
    Codegen(commands::codegen::CodegenCmd),
    /// Serve the browser to coding agents over MCP (stdio, or HTTP with --listen).
    #[cfg(feature = "browser")]
    Mcp(commands::mcp::McpCmd),
    /// Serve the bundled sample site on loopback (for demos).
    SampleSite(commands::sample_site::SampleSiteCmd),
    /// Show the configuration in effect (`config show`).
    Config(commands::config::ConfigCmd),
}

impl Command {
    /// Whether this command is a service, which logs its routine.
    fn is_service(&self) -> bool {
        match self {
            #[cfg(feature = "browser")]
            Command::Worker(_) => true,
            Command::Scheduler(_) => true,
            _ => false,
        }
    }
}

/// Where each global flag applies: the help of a subcommand shows only those.
fn applies(subcommand: &str, flag: &str) -> bool {
    const BROWSER: &[&str] = &["browsers", "pages_per_browser", "max_pages_per_browser"];
    const QUEUE: &[&str] = &["amqp", "queue_prefix"];
    const STORE: &[&str] = &["s3", "s3_endpoint"];
    match subcommand {
        "sample-site" => false,
        "config" => true,
        "worker" => true,
        "submit" | "scheduler" => !BROWSER.contains(&flag),
        "fetch" | "batch" | "crawl" | "run" | "replay" | "check" => !QUEUE.contains(&flag),
        "sitemap" => {
            !QUEUE.contains(&flag) && !STORE.contains(&flag) && !BROWSER.contains(&flag) && flag != "out"
        }
        "report" | "codegen" => !QUEUE.contains(&flag) && !BROWSER.contains(&flag),
        "mcp" => !QUEUE.contains(&flag) && !STORE.contains(&flag),
        _ => true,
    }
}

/// The command line, with each subcommand's help showing only the global
/// flags that apply to it (they are still accepted everywhere): a
/// subcommand gets a hidden copy of a flag that does not apply, which
/// clap's propagation of the global one then leaves in place.
fn command() -> clap::Command {
    use clap::CommandFactory;
    let mut cmd = Cli::command();
    let globals: Vec<clap::Arg> = cmd
        .get_arguments()
        .filter(|a| a.is_global_set())
        .cloned()
        .collect();
    for sub in cmd.get_subcommands_mut() {
        let name = sub.get_name().to_string();
        for flag in &globals {
            if !applies(&name, flag.get_id().as_str()) {
                *sub = std::mem::take(sub).arg(flag.clone().hide(true));
            }
        }
    }
    cmd
}

#[global_allocator]
static ALLOCATOR: oxwright_config::heap::Allocator = oxwright_config::heap::Allocator;

/// jemalloc's options (see `oxwright_config::heap`).
#[unsafe(export_name = "_rjem_malloc_conf")]
static MALLOC_CONF: &[u8] = oxwright_config::heap::MALLOC_CONF;

fn main() {
    use clap::FromArgMatches;
    let matches = command().get_matches();
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(err) => err.exit(),
    };
    let runtime = oxwright_config::heap::runtime().expect("tokio runtime starts");
    let code = runtime.block_on(async {
        // Services log their routine; commands a person runs print warnings,
        // errors and their results, unless asked for more (`-v`, RUST_LOG).
        let person = !cli.command.is_service();
        let _telemetry = match oxwright_telemetry::init(
            "oxwright",
            oxwright_telemetry::TelemetryOptions {
                person,
                verbose: cli.common.verbose,
                format: cli.common.log_format(),
                ..oxwright_telemetry::TelemetryOptions::from_process_env()
            },
        ) {
            Ok(guard) => Some(guard),
            Err(err) => {
                eprintln!(
                    "warning: telemetry disabled: {}",
                    oxwright_telemetry::printable(&format!("{err:#}"))
                );
                None
            }
        };
        match run(cli).await {
            Ok(code) => code,
            Err(err) => {
                eprintln!("error: {}", oxwright_telemetry::printable(&format!("{err:#}")));
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
        #[cfg(feature = "browser")]
        Command::Fetch(cmd) => commands::fetch::run(setup()?, cmd).await,
        #[cfg(feature = "browser")]
        Command::Batch(cmd) => commands::batch::run(setup()?, cmd).await,
        #[cfg(feature = "browser")]
        Command::Crawl(cmd) => commands::crawl::run(setup()?, cmd).await,
        #[cfg(feature = "browser")]
        Command::Map(cmd) => commands::map::run(setup()?, cmd).await,
        Command::Sitemap(cmd) => commands::sitemap::run(setup()?, cmd).await,
        #[cfg(feature = "browser")]
        Command::Worker(cmd) => commands::worker::run(setup()?, cmd).await,
        Command::Submit(cmd) => commands::submit::run(setup()?, cmd).await,
        Command::Scheduler(cmd) => commands::scheduler::run(setup()?, cmd).await,
        Command::Dashboard(cmd) => commands::dashboard::run(setup()?, cmd).await,
        #[cfg(feature = "browser")]
        Command::Run(cmd) => commands::run::run(setup()?, cmd).await,
        #[cfg(feature = "browser")]
        Command::Replay(cmd) => commands::replay::run(setup()?, cmd).await,
        #[cfg(feature = "browser")]
        Command::Check(cmd) => commands::check::run(setup()?, cmd).await,
        Command::Report(cmd) => commands::report::run(setup()?, cmd).await,
        #[cfg(feature = "browser")]
        Command::Codegen(cmd) => commands::codegen::run(setup()?, cmd).await,
        #[cfg(feature = "browser")]
        Command::Mcp(cmd) => commands::mcp::run(setup()?, cmd).await,
        Command::Config(cmd) => commands::config::run(setup()?, cmd).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::FromArgMatches;

    fn parse(args: &[&str]) -> Cli {
        Cli::from_arg_matches(&command().try_get_matches_from(args).expect("parses")).expect("fits")
    }

    #[test]
    fn a_global_flag_hidden_from_a_subcommand_is_still_read_there() {
        let cli = parse(&[
            "oxwright",
            "sitemap",
            "--browsers",
            "3",
            "--amqp",
            "amqp://h/",
            "example.com",
        ]);
        assert_eq!(cli.common.browsers, Some(3));
        assert_eq!(cli.common.amqp.as_deref(), Some("amqp://h/"));
        let cli = parse(&["oxwright", "--browsers", "2", "fetch", "example.com"]);
        assert_eq!(cli.common.browsers, Some(2));
    }

    #[test]
    fn each_help_shows_only_the_flags_that_apply_and_has_examples() {
        let mut cmd = command();
        // Built, as parsing builds it: the global flags reach the subcommands.
        cmd.build();
        let help = |cmd: &mut clap::Command, sub: &str| {
            cmd.find_subcommand_mut(sub)
                .expect("subcommand")
                .render_long_help()
                .to_string()
        };
        let fetch = help(&mut cmd, "fetch");
        assert!(
            !fetch.contains("--amqp") && !fetch.contains("--queue-prefix"),
            "{fetch}"
        );
        assert!(
            fetch.contains("--s3") && fetch.contains("[default: 30000]"),
            "{fetch}"
        );
        let worker = help(&mut cmd, "worker");
        assert!(
            worker.contains("--amqp") && worker.contains("--browsers"),
            "{worker}"
        );
        let site = help(&mut cmd, "sample-site");
        assert!(
            !site.contains("--allow-host") && !site.contains("--browsers"),
            "{site}"
        );
        for sub in cmd
            .get_subcommands()
            .map(|s| s.get_name().to_string())
            .collect::<Vec<_>>()
        {
            if sub == "help" {
                continue;
            }
            assert!(
                help(&mut cmd, &sub).contains("Examples:"),
                "{sub} --help has no examples"
            );
        }
        let top = command().render_long_help().to_string();
        assert!(top.contains("LLM-ready Markdown"), "{top}");
    }

    /// Every option of a fetch job, read from the job's generated schema
    /// (so a new field of `FetchSpec` is in this list without anyone adding
    /// it), is a flag of `fetch`, `batch` and `submit fetch`, a key of the
    /// config's `[fetch]` and an argument of MCP's `fetch_markdown` — or is
    /// named with the reason it is not (the lists the config and MCP tell a
    /// refused key's reason from).
    #[test]
    fn every_fetch_option_reaches_each_surface_or_says_why_not() {
        let options = oxwright_jobs::schema::fetch_options_schema();
        let options: Vec<&String> = options["properties"].as_object().unwrap().keys().collect();
        assert!(options.len() > 25, "{options:?}");
        // The command line: one flag per option, by its own name unless it has another.
        let flag = |option: &str| {
            oxwright_jobs::options::fetch_options()
                .into_iter()
                .find(|o| o.name == option)
                .map(|o| o.long())
                .unwrap_or_default()
        };
        let mut cmd = command();
        cmd.build();
        let flags_of = |cmd: &clap::Command| -> Vec<String> {
            cmd.get_arguments()
                .filter_map(|a| a.get_long().map(str::to_string))
                .collect()
        };
        let fetch = flags_of(cmd.find_subcommand("fetch").unwrap());
        let batch = flags_of(cmd.find_subcommand("batch").unwrap());
        let submit = flags_of(
            cmd.find_subcommand("submit")
                .and_then(|s| s.find_subcommand("fetch"))
                .unwrap(),
        );
        // MCP: Playwright MCP's camelCase; what an agent may not pass, and why.
        let not_in_mcp = oxwright_mcp::FETCH_NOT_IN_MCP;
        let mcp = oxwright_mcp::catalogue()
            .into_iter()
            .find(|t| t.name == "fetch_markdown")
            .unwrap();
        let mcp: Vec<&String> = mcp.input_schema["properties"]
            .as_object()
            .unwrap()
            .keys()
            .collect();
        let camel = oxwright_mcp::camel;
        // The config's `[fetch]`: defaults of every request; what belongs to one request only.
        let not_in_config = oxwright_jobs::NOT_IN_CONFIG;
        let config = oxwright_jobs::schema::schema_of::<oxwright_jobs::FetchDefaults>();
        let config: Vec<&String> = config["properties"].as_object().unwrap().keys().collect();
        let mut missing = Vec::new();
        for option in &options {
            let option = option.as_str();
            for (surface, flags) in [("fetch", &fetch), ("batch", &batch), ("submit fetch", &submit)] {
                if !flags.contains(&flag(option)) {
                    missing.push(format!("{option}: no --{} on {surface}", flag(option)));
                }
            }
            let excused = |list: &[(&str, &str)]| list.iter().any(|(o, _)| *o == option);
            if !mcp.iter().any(|m| **m == camel(option)) && !excused(not_in_mcp) {
                missing.push(format!(
                    "{option}: not an argument of fetch_markdown ({})",
                    camel(option)
                ));
            }
            if !config.iter().any(|c| c.as_str() == option) && !excused(not_in_config) {
                missing.push(format!("{option}: not a key of [fetch]"));
            }
        }
        // An excuse for an option that is there (or gone) is stale.
        for (option, _) in not_in_mcp.iter().chain(not_in_config) {
            assert!(
                options.iter().any(|o| o == option),
                "{option} is no option any more"
            );
        }
        for (option, _) in not_in_mcp {
            assert!(
                !mcp.iter().any(|m| **m == camel(option)),
                "{option} is in MCP after all"
            );
        }
        for (option, _) in not_in_config {
            assert!(
                !config.iter().any(|c| c == option),
                "{option} is in [fetch] after all"
            );
        }
        assert!(missing.is_empty(), "{missing:#?}");
    }

    /// Every option of a workflow job, read from the job's generated
    /// schema (a new field of `WorkflowSpec` fails this test until each
    /// surface takes it or says why not), is given to `oxwright run` or
    /// `replay` and is an argument of MCP's `run_workflow`.
    #[test]
    fn every_workflow_option_reaches_run_and_mcp_or_says_why_not() {
        let options = oxwright_jobs::schema::schema_of::<oxwright_jobs::WorkflowSpec>();
        let options: Vec<&String> = options["properties"].as_object().unwrap().keys().collect();
        // How `oxwright run` or `replay` is given each option: an argument
        // of the command, or why it is not one.
        // (option, Ok((subcommand, argument id)) or Err(why not)).
        type Given<'a> = Result<(&'a str, &'a str), &'a str>;
        let cli: &[(&str, Given)] = &[
            ("workflow", Ok(("run", "workflow"))),
            ("name", Err("the workflow file's name")),
            ("start_url", Ok(("run", "url"))),
            ("session_id", Ok(("run", "session"))),
            ("llm", Ok(("run", "model"))),
            ("headless", Ok(("run", "headed"))),
            ("action_timeout_ms", Ok(("run", "action_timeout_ms"))),
            ("workflow_id", Ok(("run", "workflow_id"))),
            ("replay", Err("the `replay` command")),
            ("trust_after", Ok(("replay", "trust_after"))),
            ("sites", Ok(("run", "sites"))),
            ("sitemap_hints", Ok(("run", "sitemap_hints"))),
            // The file itself: a run on this machine needs no seal.
            ("sealed_storage_state", Ok(("run", "storage_state"))),
            (
                "schemas",
                Err("the files the extract: steps name, read beside the workflow"),
            ),
        ];
        // MCP's `run_workflow`: the argument each option is, or why there is none.
        let mcp: &[(&str, Result<&str, &str>)] = &[
            ("workflow", Ok("workflow")),
            ("name", Ok("name")),
            ("start_url", Ok("url")),
            ("session_id", Err("the MCP session's own")),
            (
                "llm",
                Err("the server's: an agent does not pick the endpoint or its key"),
            ),
            ("headless", Err("the server's browser")),
            ("action_timeout_ms", Err("the server's `--action-timeout-ms`")),
            ("workflow_id", Ok("workflow_id")),
            ("replay", Ok("replay")),
            ("trust_after", Ok("trust_after")),
            ("sites", Ok("sites")),
            ("sitemap_hints", Ok("sitemap_hints")),
            (
                "sealed_storage_state",
                Err("the server's `--storage-state`: an agent does not hand over logins"),
            ),
            (
                "schemas",
                Err("not taken: an agent reads a page into a schema with fetch's extract"),
            ),
        ];
        let mut cmd = command();
        cmd.build();
        let ids = |sub: &str| -> Vec<String> {
            cmd.find_subcommand(sub)
                .unwrap()
                .get_arguments()
                .map(|a| a.get_id().to_string())
                .collect()
        };
        let (run, replay) = (ids("run"), ids("replay"));
        let tool = oxwright_mcp::catalogue()
            .into_iter()
            .find(|t| t.name == "run_workflow")
            .unwrap();
        let arguments: Vec<&String> = tool.input_schema["properties"]
            .as_object()
            .unwrap()
            .keys()
            .collect();
        let mut missing = Vec::new();
        for option in &options {
            match cli.iter().find(|(o, _)| o == option) {
                Some((_, Ok((sub, id)))) => {
                    let ids = if *sub == "run" { &run } else { &replay };
                    if !ids.iter().any(|i| i == id) {
                        missing.push(format!("{option}: `{sub}` has no {id}"));
                    }
                }
                Some((_, Err(_))) => {}
                None => missing.push(format!("{option}: neither given to `run` nor excused")),
            }
            match mcp.iter().find(|(o, _)| o == option) {
                Some((_, Ok(name))) if !arguments.iter().any(|a| a == name) => {
                    missing.push(format!("{option}: run_workflow has no {name}"))
                }
                Some((_, Err(_))) if arguments.iter().any(|a| a == option) => {
                    missing.push(format!("{option}: excused from run_workflow, but there"))
                }
                Some(_) => {}
                None => missing.push(format!(
                    "{option}: neither an argument of run_workflow nor excused"
                )),
            }
        }
        for (option, _) in cli
            .iter()
            .map(|(o, r)| (o, r.is_ok()))
            .chain(mcp.iter().map(|(o, r)| (o, r.is_ok())))
        {
            assert!(
                options.iter().any(|o| o == option),
                "{option} is no option any more"
            );
        }
        assert!(missing.is_empty(), "{missing:#?}");
    }
}
