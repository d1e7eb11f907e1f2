//! `[browser]`: the warm browsers and the Chromium they run.
//!
//! The one section not declared by the crate that reads it: the browser
//! crate links Chromium's driver, and the configuration is read by
//! binaries that drive no browser (the scheduler, `submit`, the scheduler
//! function). The values it names (`Isolation`, `SandboxMode`, the page
//! budget's defaults) come from the crates below the browser; the worker
//! turns the section into the pool's settings.

use std::path::PathBuf;

use oxwright_engine::Isolation;
use oxwright_owned::sandbox::SandboxMode;
use serde::{Deserialize, Serialize};

/// `[browser]`: how many warm browsers, and which Chromium.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BrowserSection {
    /// Warm browsers kept running.
    #[serde(default = "default_browsers")]
    pub browsers: usize,
    /// Pages each browser serves at once (each in its own context) to
    /// begin with; adaptive admission moves it with the CPU.
    #[serde(default = "default_pages")]
    pub pages_per_browser: usize,
    /// The most pages each browser serves at once when the CPU has room
    /// (default: twice `pages_per_browser`; equal to it turns adaptive
    /// admission off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_pages_per_browser: Option<usize>,
    /// Chromium executable; `CHROME_PATH` overrides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chrome_path: Option<PathBuf>,
    /// Remote browser DevTools URL; `CHROME_URL` overrides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chrome_url: Option<String>,
    /// Jobs a browser serves before it is replaced.
    #[serde(default = "default_recycle")]
    pub recycle_after: u32,
    /// Jobs one browser context serves, reset between them, before it is
    /// disposed; 1 gives every job a fresh context.
    #[serde(default = "default_context_reuse")]
    pub context_reuse: u32,
    /// `context` (default): a browser context per job; `shared`: a
    /// browser's jobs share its default context (cookies, storage, cache).
    #[serde(default)]
    pub isolation: Isolation,
    /// Deadline of one DevTools call, in milliseconds (opening a page gets
    /// at least 30 s).
    #[serde(default = "default_call_timeout_ms")]
    pub call_timeout_ms: u64,
    /// Extra Chromium flags.
    #[serde(default)]
    pub extra_args: Vec<String>,
    /// The most JavaScript and DOM heap one job's page may use, in MiB
    /// (a fetch over it ends `resource_limit`; V8's old space is capped
    /// at it unless `extra_args` sets `--js-flags`).
    #[serde(default = "default_job_memory_mb")]
    pub job_memory_mb: u64,
    /// The most DOM nodes one job's page may build.
    #[serde(default = "default_job_dom_nodes")]
    pub job_dom_nodes: u64,
    /// Chromium's own sandbox: `auto` (on wherever it can run: not root,
    /// user namespaces allowed; a warning at start where it cannot), `on`
    /// (starting fails where it cannot) or `off`.
    #[serde(default)]
    pub sandbox: SandboxMode,
}

fn default_job_memory_mb() -> u64 {
    oxwright_engine::DEFAULT_JOB_MEMORY_MB
}
fn default_job_dom_nodes() -> u64 {
    oxwright_engine::DEFAULT_JOB_DOM_NODES
}
fn default_browsers() -> usize {
    1
}
fn default_pages() -> usize {
    4
}
fn default_recycle() -> u32 {
    500
}
fn default_context_reuse() -> u32 {
    oxwright_engine::DEFAULT_CONTEXT_REUSE
}
fn default_call_timeout_ms() -> u64 {
    10_000
}

impl Default for BrowserSection {
    fn default() -> Self {
        Self {
            browsers: default_browsers(),
            pages_per_browser: default_pages(),
            max_pages_per_browser: None,
            chrome_path: None,
            chrome_url: None,
            recycle_after: default_recycle(),
            context_reuse: default_context_reuse(),
            isolation: Isolation::default(),
            call_timeout_ms: default_call_timeout_ms(),
            extra_args: Vec::new(),
            job_memory_mb: default_job_memory_mb(),
            job_dom_nodes: default_job_dom_nodes(),
            sandbox: SandboxMode::default(),
        }
    }
}
