//! Pool configuration.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

pub use oxwright_engine::Isolation;

/// How the browser pool is built.
#[derive(Debug, Clone)]
pub struct PoolConfig {
    /// Warm browsers kept running.
    pub browsers: usize,
    /// Pages (each in its own browser context) one browser serves at once
    /// to begin with and at least; adaptive admission moves the number
    /// between this and `max_pages_per_browser` (see [`crate::Admission`]).
    pub pages_per_browser: usize,
    /// The most pages one browser serves at once when the CPU has room;
    /// `None` is twice `pages_per_browser`, and `pages_per_browser` itself
    /// turns adaptive admission off. A remote browser (`chrome_url`) is
    /// never adaptive: this machine's CPU is not its.
    pub max_pages_per_browser: Option<usize>,
    /// The adaptive admission controller's settings.
    pub admission: crate::Admission,
    /// Jobs one browser context and its page serve before they are disposed.
    /// `1` gives every job a fresh context. Above 1, a context whose job went
    /// well is reset (document left, history, cookies, cache, permissions
    /// and every storage of the origins it requested cleared) and handed to
    /// the next job, which saves Chromium a new page and renderer process per
    /// job (~80 % of its CPU per page on the benchmark corpus). A context
    /// that saw an error, a crash or raw DevTools access is never reused.
    /// The default, 10, keeps that saving on real pages (within noise of
    /// 50) while a renderer's caches and heap grow over fewer pages:
    /// Chromium's median PSS at 4 pages in flight 576 MiB vs 710–725 MiB
    /// at 50 (BENCHMARKS.md §3).
    pub context_reuse: u32,
    /// Whether jobs get their own browser context (the default) or share
    /// the browser's; see [`Isolation`]. With `Shared`, `context_reuse`
    /// counts the jobs a page serves before it is closed.
    pub isolation: Isolation,
    /// The Chromium executable (`CHROME_PATH`).
    pub chrome_path: PathBuf,
    /// A remote browser's DevTools URL (`CHROME_URL`); no process is launched.
    pub chrome_url: Option<String>,
    /// Headless by default; headed jobs get their own browser on `$DISPLAY`.
    pub headless: bool,
    /// Jobs a browser serves before it is replaced.
    pub recycle_after: u32,
    /// Deadline for Chromium to start.
    pub launch_timeout: Duration,
    /// Deadline of one DevTools call. Opening a page, which starts a
    /// renderer process, gets at least 30 s.
    pub call_timeout: Duration,
    /// Extra Chromium flags.
    pub extra_args: Vec<String>,
    /// Window size.
    pub window: (u32, u32),
    /// X display for headed browsers; `$DISPLAY` when unset.
    pub display: Option<String>,
    /// How often idle browsers are pinged.
    pub health_interval: Duration,
    /// The most JavaScript and DOM heap one job's page may use, in MiB:
    /// a fetch over it ends `resource_limit`, and V8's old space is capped
    /// a quarter above it (`--max-old-space-size`, unless `extra_args`
    /// sets `--js-flags`).
    pub job_memory_mb: u64,
    /// The most DOM nodes one job's page may build.
    pub job_dom_nodes: u64,
    /// Whether Chromium runs in its own sandbox: `Auto` (the default) turns
    /// it on whenever it can run (not root, user namespaces allowed) and
    /// says loudly, once, when it cannot.
    pub sandbox: oxwright_owned::sandbox::SandboxMode,
}

impl Default for PoolConfig {
    fn default() -> Self {
        Self {
            browsers: 1,
            pages_per_browser: 4,
            max_pages_per_browser: None,
            admission: crate::Admission::default(),
            context_reuse: oxwright_engine::DEFAULT_CONTEXT_REUSE,
            isolation: Isolation::Context,
            chrome_path: PathBuf::from("/usr/bin/chromium"),
            chrome_url: None,
            headless: true,
            recycle_after: 500,
            launch_timeout: Duration::from_secs(20),
            call_timeout: Duration::from_secs(10),
            extra_args: Vec::new(),
            window: (1280, 800),
            display: None,
            health_interval: Duration::from_secs(30),
            job_memory_mb: oxwright_engine::DEFAULT_JOB_MEMORY_MB,
            job_dom_nodes: oxwright_engine::DEFAULT_JOB_DOM_NODES,
            sandbox: oxwright_owned::sandbox::SandboxMode::Auto,
        }
    }
}

impl PoolConfig {
    /// Applies `CHROME_PATH` and `CHROME_URL` from an environment map.
    pub fn with_env(mut self, env: &BTreeMap<String, String>) -> Self {
        if let Some(path) = env.get("CHROME_PATH").filter(|p| !p.is_empty()) {
            self.chrome_path = PathBuf::from(path);
        }
        if let Some(url) = env.get("CHROME_URL").filter(|u| !u.is_empty()) {
            self.chrome_url = Some(url.clone());
        }
        if let Some(display) = env.get("DISPLAY").filter(|d| !d.is_empty()) {
            self.display.get_or_insert_with(|| display.clone());
        }
        self
    }

    /// The per-job memory ceiling these settings give.
    pub fn memory_limit(&self) -> oxwright_engine::MemoryLimit {
        oxwright_engine::MemoryLimit {
            heap_bytes: self.job_memory_mb.saturating_mul(1024 * 1024),
            dom_nodes: self.job_dom_nodes,
            renderer_bytes: self.renderer_ceiling_mb().saturating_mul(1024 * 1024),
        }
    }

    /// The most memory (proportional set size) one job's renderer may
    /// hold: half again `job_memory_mb` and 256 MiB for the renderer's own
    /// code and caches. Above V8's heap cap, so a page that grows its
    /// JavaScript heap meets the heap limit first; this one stops what the
    /// heap does not count (canvases, images, layers).
    pub fn renderer_ceiling_mb(&self) -> u64 {
        self.job_memory_mb.saturating_mul(3) / 2 + 256
    }

    /// Returns how many pages the pool serves at once to begin with.
    pub fn capacity(&self) -> usize {
        self.browsers.max(1) * self.pages_per_browser.max(1)
    }

    /// The most pages one browser serves at once (adaptive admission's ceiling).
    pub fn max_pages(&self) -> usize {
        if self.chrome_url.is_some() {
            return self.pages_per_browser.max(1);
        }
        self.max_pages_per_browser
            .unwrap_or(self.pages_per_browser.max(1) * 2)
            .max(self.pages_per_browser.max(1))
    }

    /// The most pages the pool serves at once.
    pub fn max_capacity(&self) -> usize {
        self.browsers.max(1) * self.max_pages()
    }
}
