//! Command-line flags shared by the commands that fetch pages.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use oxwright_jobs::{BlockResource, ContentMode, DialogAction, FetchSpec, WaitUntil};
use oxwright_policy::HostRule;

/// Wait state names as typed on the command line.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum LoadState {
    /// The page's text stopped changing after DOMContentLoaded (the default).
    Ready,
    /// The `load` event.
    Load,
    /// `DOMContentLoaded`.
    Domcontentloaded,
    /// No network for 500 ms.
    Networkidle,
}

/// Content modes as typed on the command line.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Content {
    /// Readability-style main content.
    Main,
    /// The whole visible page.
    Full,
}

/// Resource types as typed on the command line.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Block {
    /// Images.
    Image,
    /// Web fonts.
    Font,
    /// Audio and video.
    Media,
    /// CSS.
    Stylesheet,
    /// JavaScript.
    Script,
    /// XHR.
    Xhr,
    /// fetch().
    Fetch,
    /// WebSockets.
    Websocket,
    /// Server-sent events.
    Eventsource,
    /// Manifests.
    Manifest,
    /// Prefetches, pings, other.
    Other,
}

/// Global flags: configuration, output, policy.
#[derive(Debug, Clone, Args)]
pub struct CommonArgs {
    /// Configuration file (TOML).
    #[arg(long, global = true, env = "OXWRIGHT_CONFIG")]
    pub config: Option<PathBuf>,
    /// Artefact directory (default ./oxwright-out).
    #[arg(long, global = true)]
    pub out: Option<PathBuf>,
    /// Allow a private host or host:port (repeatable).
    #[arg(long = "allow-host", global = true, value_name = "HOST[:PORT]")]
    pub allow_hosts: Vec<HostRule>,
    /// Allow every private, loopback and link-local address (demos only).
    #[arg(long, global = true)]
    pub allow_private: bool,
    /// Warm browsers (overrides the config file).
    #[arg(long, global = true)]
    pub browsers: Option<usize>,
    /// Pages per browser at once (overrides the config file).
    #[arg(long, global = true)]
    pub pages_per_browser: Option<usize>,
    /// The most pages per browser at once when the CPU has room (default:
    /// twice --pages-per-browser; equal to it keeps the number fixed).
    #[arg(long, global = true)]
    pub max_pages_per_browser: Option<usize>,
    /// RabbitMQ URL of the distributed mode (else `[queue] amqp_url`,
    /// `OXWRIGHT_AMQP_URL`).
    #[arg(long, global = true, value_name = "URL")]
    pub amqp: Option<String>,
    /// Prefix of the queue and exchange names (deployments sharing a broker).
    #[arg(long, global = true, value_name = "PREFIX")]
    pub queue_prefix: Option<String>,
    /// Artefacts in S3: `s3://bucket/prefix` (else `[store] s3`, `OXWRIGHT_S3`;
    /// without any, the file store under --out).
    #[arg(long, global = true, value_name = "s3://BUCKET/PREFIX")]
    pub s3: Option<String>,
    /// A custom S3 endpoint, e.g. http://127.0.0.1:9000 (else
    /// `OXWRIGHT_S3_ENDPOINT`, `AWS_ENDPOINT_URL`).
    #[arg(long, global = true, value_name = "URL")]
    pub s3_endpoint: Option<String>,
}

impl CommonArgs {
    /// The overrides these flags make to the file and the environment.
    pub fn overrides(&self) -> oxwright_worker::Overrides {
        oxwright_worker::Overrides {
            config: self.config.clone(),
            out: self.out.clone(),
            allow_hosts: self.allow_hosts.clone(),
            allow_private: self.allow_private,
            browsers: self.browsers,
            pages_per_browser: self.pages_per_browser,
            max_pages_per_browser: self.max_pages_per_browser,
            amqp: self.amqp.clone(),
            queue_prefix: self.queue_prefix.clone(),
            s3: self.s3.clone(),
            s3_endpoint: self.s3_endpoint.clone(),
        }
    }
}

/// Flags that shape each page fetch.
#[derive(Debug, Clone, Args)]
pub struct FetchArgs {
    /// Deadline of one attempt, in milliseconds.
    #[arg(long, default_value_t = 30_000,
          value_parser = clap::value_parser!(u64).range(1..=oxwright_jobs::limits::MAX_TIMEOUT_MS))]
    pub timeout_ms: u64,
    /// What to wait for before reading the page: `ready` = after
    /// DOMContentLoaded, until the page's text has stopped changing for
    /// 500 ms (at most 5 s; `load` not needed), or a lifecycle event.
    #[arg(long, value_enum, default_value = "ready")]
    pub wait_until: LoadState,
    /// A fixed extra wait, in milliseconds, after the `--wait-until`
    /// state and `--wait-for`, before the page is read (within
    /// `--timeout-ms`).
    #[arg(long, default_value_t = 0, value_name = "N",
          value_parser = clap::value_parser!(u64).range(0..=oxwright_jobs::limits::MAX_WAIT_MS))]
    pub wait_ms: u64,
    /// CSS selector that must appear before the page is read.
    #[arg(long)]
    pub wait_for: Option<String>,
    /// Retries of transient failures (timeouts, connection errors, 5xx,
    /// 408, 429, browser crashes); others fail at once and say why.
    #[arg(long, default_value_t = 2,
          value_parser = clap::value_parser!(u32).range(0..=oxwright_jobs::limits::MAX_RETRY_COUNT as i64))]
    pub retries: u32,
    /// Base delay between retries (doubles each time), in milliseconds.
    #[arg(long, default_value_t = 1_000,
          value_parser = clap::value_parser!(u64).range(0..=oxwright_jobs::limits::MAX_RETRY_DELAY_MS))]
    pub retry_delay_ms: u64,
    /// Resource types never downloaded (comma-separated).
    #[arg(long, value_enum, value_delimiter = ',')]
    pub block: Vec<Block>,
    /// Main content or the full page.
    #[arg(long, value_enum, default_value = "main")]
    pub content: Content,
    /// Keep the rendered HTML as page.html.
    #[arg(long)]
    pub include_html: bool,
    /// Take a PNG screenshot.
    #[arg(long)]
    pub screenshot: bool,
    /// Run a visible browser (needs a display).
    #[arg(long)]
    pub headed: bool,
    /// How the page's JavaScript dialogs (alert, confirm, prompt) are
    /// answered; each is listed in the result's warnings.
    #[arg(long, value_enum, default_value = "dismiss", value_name = "ANSWER")]
    pub dialogs: Dialogs,
}

/// Dialog answers as typed on the command line.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Dialogs {
    /// Press Cancel (an alert is just closed).
    Dismiss,
    /// Press OK (a prompt gets its default text).
    Accept,
}

impl FetchArgs {
    /// Builds a spec for `url` from these flags.
    pub fn spec(&self, url: url::Url) -> FetchSpec {
        let mut spec = FetchSpec::new(url);
        spec.headless = !self.headed;
        spec.timeout_ms = self.timeout_ms;
        spec.wait_for_load_state = match self.wait_until {
            LoadState::Ready => WaitUntil::Ready,
            LoadState::Load => WaitUntil::Load,
            LoadState::Domcontentloaded => WaitUntil::Domcontentloaded,
            LoadState::Networkidle => WaitUntil::Networkidle,
        };
        spec.wait_for = self.wait_for.clone();
        spec.wait_ms = self.wait_ms;
        spec.retry_count = self.retries;
        spec.retry_delay_ms = self.retry_delay_ms;
        spec.block_resources = self.block.iter().map(|b| block(*b)).collect();
        spec.content = match self.content {
            Content::Main => ContentMode::Main,
            Content::Full => ContentMode::Full,
        };
        spec.include_html = self.include_html;
        spec.screenshot = self.screenshot;
        spec.dialogs = match self.dialogs {
            Dialogs::Dismiss => DialogAction::Dismiss,
            Dialogs::Accept => DialogAction::Accept,
        };
        spec
    }
}

fn block(b: Block) -> BlockResource {
    match b {
        Block::Image => BlockResource::Image,
        Block::Font => BlockResource::Font,
        Block::Media => BlockResource::Media,
        Block::Stylesheet => BlockResource::Stylesheet,
        Block::Script => BlockResource::Script,
        Block::Xhr => BlockResource::Xhr,
        Block::Fetch => BlockResource::Fetch,
        Block::Websocket => BlockResource::Websocket,
        Block::Eventsource => BlockResource::Eventsource,
        Block::Manifest => BlockResource::Manifest,
        Block::Other => BlockResource::Other,
    }
}

/// The LLM a plain-language workflow talks to (`run`, `mcp`).
#[derive(Debug, Clone, Args)]
pub struct LlmArgs {
    /// Base URL of an OpenAI-compatible API (e.g. http://127.0.0.1:11434/v1).
    #[arg(long, env = "OXWRIGHT_LLM_BASE_URL")]
    pub llm_base_url: Option<String>,
    /// Model name.
    #[arg(long, env = "OXWRIGHT_LLM_MODEL")]
    pub model: Option<String>,
    /// Environment variable holding the API key.
    #[arg(long, env = "OXWRIGHT_LLM_API_KEY_ENV")]
    pub api_key_env: Option<String>,
    /// Larger model on the same endpoint for emergency mode (a step that
    /// keeps failing, stalls or decides with low confidence).
    #[arg(long, env = "OXWRIGHT_LLM_LARGE_MODEL")]
    pub large_model: Option<String>,
    /// Deadline of one LLM request, in milliseconds.
    #[arg(long, default_value_t = 30_000, value_parser = clap::value_parser!(u64).range(1..=600_000))]
    pub llm_timeout_ms: u64,
}

impl LlmArgs {
    /// The chat model these flags name, if any (both or neither of base URL and model).
    pub fn model(
        &self,
        env: &std::collections::BTreeMap<String, String>,
    ) -> anyhow::Result<Option<std::sync::Arc<dyn oxwright_llm::ChatModel>>> {
        match (&self.llm_base_url, &self.model) {
            (Some(base), Some(model)) => {
                let mut cfg = oxwright_llm::LlmConfig::new(base.clone(), model.clone());
                cfg.model.api_key_env = self.api_key_env.clone();
                cfg.timeout_ms = self.llm_timeout_ms;
                let cfg = cfg.with_large_model(self.large_model.clone());
                let client = oxwright_llm::LlmClient::new(cfg, env).map_err(crate::exit::usage)?;
                Ok(Some(std::sync::Arc::new(client)))
            }
            (None, None) => Ok(None),
            _ => Err(crate::exit::usage("--llm-base-url and --model go together")),
        }
    }
}
