//! `oxwright mcp`: the MCP server for coding agents, on stdio (the default)
//! or streamable HTTP (`--listen ADDR`, at `/mcp`).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use oxwright_engine::BrowserEngine;
use oxwright_mcp::{HttpOptions, McpConfig, McpServices, Shared};
use oxwright_secrets::{EnvSecrets, FileSecrets, MemorySecrets, SecretStore};

use crate::exit::{self, usage};
use oxwright_config::Setup;
use oxwright_worker::handlers::ExtractModel;
use oxwright_worker::{BrowserSetup, HandlerContext};

mod crawl;

/// Arguments of `oxwright mcp`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  oxwright mcp                                    # stdio: register it as a command in the MCP client
  OXWRIGHT_MCP_TOKEN=s3cret oxwright mcp --listen 0.0.0.0:8931   # streamable HTTP, bearer token")]
pub struct McpCmd {
    /// Serve streamable HTTP at http://ADDR/mcp instead of stdio (e.g.
    /// 127.0.0.1:8931). A non-loopback address needs a bearer token.
    #[arg(long)]
    pub listen: Option<SocketAddr>,
    /// Environment variable holding the bearer token HTTP clients must send.
    #[arg(long, default_value = "OXWRIGHT_MCP_TOKEN")]
    pub token_env: String,
    /// Where screenshots are written (default: <out>/mcp-screenshots).
    #[arg(long)]
    pub screenshot_dir: Option<PathBuf>,
    /// Largest screenshot kept, in bytes.
    #[arg(long, default_value_t = 10 * 1024 * 1024)]
    pub max_screenshot_bytes: usize,
    /// Screenshots kept; the oldest are removed.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub max_screenshots: u64,
    /// Directory files may be uploaded from (uploads are refused without it).
    #[arg(long)]
    pub upload_dir: Option<PathBuf>,
    /// File of NAME=value secrets: `{{NAME}}` in typed text stands for the
    /// value, and values are redacted from every result and log line.
    #[arg(long)]
    pub secrets: Option<PathBuf>,
    /// All clients share one set of tabs and cookies (default: each MCP
    /// session gets its own isolated pages).
    #[arg(long)]
    pub shared_context: bool,
    /// Start signed in: each tab's first navigation starts from this saved
    /// login, a Playwright `storageState` JSON file (cookies and each
    /// origin's localStorage), as Playwright MCP's `--storage-state` does.
    /// Its cookie values are redacted from every result like secrets.
    #[arg(long, value_name = "FILE")]
    pub storage_state: Option<PathBuf>,
    /// Deadline of one action (auto-wait, input, settle), in milliseconds.
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(
        oxwright_jobs::limits::MIN_ACTION_TIMEOUT_MS..=oxwright_jobs::limits::MAX_ACTION_TIMEOUT_MS))]
    pub action_timeout_ms: u64,
    /// Deadline of one navigation or wait, in milliseconds.
    #[arg(long, default_value_t = 30_000, value_parser = clap::value_parser!(u64).range(100..=600_000))]
    pub navigation_timeout_ms: u64,
    /// Cap on snapshot text, in characters.
    #[arg(long, default_value_t = oxwright_engine::DEFAULT_MAX_CHARS, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(500..=1_000_000))]
    pub snapshot_max_chars: usize,
    /// Run a visible browser (needs a display).
    #[arg(long)]
    pub headed: bool,
    /// The LLM plain-language run_workflow calls use.
    #[command(flatten)]
    pub llm: crate::options::LlmArgs,
}

/// Runs the command; returns the process exit code.
pub async fn run(setup: Setup, cmd: McpCmd) -> anyhow::Result<i32> {
    let (secrets, secret_names): (Arc<dyn SecretStore>, Vec<String>) = match &cmd.secrets {
        Some(path) => {
            let file = FileSecrets::load(path).map_err(usage)?;
            let names = file.names();
            (Arc::new(file), names)
        }
        None => {
            // OXWRIGHT_SECRET_<NAME> variables, as `oxwright run` takes them.
            let names: Vec<String> = setup
                .env
                .keys()
                .filter_map(|k| k.strip_prefix(EnvSecrets::DEFAULT_PREFIX).map(str::to_owned))
                .filter(|k| !k.is_empty())
                .collect();
            if names.is_empty() {
                (
                    Arc::new(MemorySecrets::new(Vec::<(String, String)>::new())),
                    names,
                )
            } else {
                (
                    Arc::new(EnvSecrets::new(setup.env.clone(), EnvSecrets::DEFAULT_PREFIX)),
                    names,
                )
            }
        }
    };
    let llm = cmd.llm.model(&setup.env, &setup.config.llm)?;
    let token = match &cmd.listen {
        Some(_) => setup.env.get(&cmd.token_env).cloned().filter(|t| !t.is_empty()),
        None => None,
    };
    if let Some(addr) = cmd.listen
        && !addr.ip().is_loopback()
        && token.is_none()
    {
        return Err(usage(format!(
            "--listen {addr} is not a loopback address: put a bearer token in ${} so only your clients reach the browser",
            cmd.token_env
        )));
    }
    let config = McpConfig {
        headless: !cmd.headed,
        screenshot_dir: cmd
            .screenshot_dir
            .clone()
            .unwrap_or_else(|| setup.config.out_dir.join("mcp-screenshots")),
        max_screenshot_bytes: cmd.max_screenshot_bytes,
        max_screenshots: cmd.max_screenshots as usize,
        upload_dir: cmd.upload_dir.clone(),
        action_timeout: Duration::from_millis(cmd.action_timeout_ms),
        navigation_timeout: Duration::from_millis(cmd.navigation_timeout_ms),
        snapshot_max_chars: cmd.snapshot_max_chars,
        shared_context: cmd.shared_context,
        storage_state: cmd
            .storage_state
            .as_deref()
            .map(super::run::login_state::read)
            .transpose()?
            .map(Arc::new),
    };
    let pool = setup.pool().await?;
    let engine: Arc<dyn BrowserEngine> = Arc::new(pool.clone());
    let store = setup.store().await?;
    let cancel = crate::signals::shutdown_on_signals();
    let mut crawl_ctx = HandlerContext::new(pool.clone(), setup.policy.clone(), store.clone());
    crawl_ctx.extract_model = ExtractModel::from_section(&setup.config.llm, &setup.env);
    let crawler = crawl::McpCrawler::new(crawl_ctx, cancel.clone());
    let shared = Shared::new(McpServices {
        engine,
        policy: setup.policy.clone(),
        secrets,
        secret_names,
        store,
        llm,
        config,
        crawler: Some(Arc::new(crawler)),
    })
    .await
    .map_err(usage)?;
    let served = match cmd.listen {
        None => oxwright_mcp::serve_stdio(shared, cancel).await,
        Some(addr) => oxwright_mcp::serve_http(shared, HttpOptions { addr, token }, cancel, None).await,
    };
    pool.shutdown().await;
    served?;
    Ok(exit::OK)
}
