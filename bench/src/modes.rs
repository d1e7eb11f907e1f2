//! The ways a page is fetched: the warm pool, a cold browser per page, bare
//! chromiumoxide, and diagnostic steps between bare and warm.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use chromiumoxide::cdp::browser_protocol::fetch::{ContinueRequestParams, EventRequestPaused};
use chromiumoxide::cdp::browser_protocol::target::{CreateBrowserContextParams, CreateTargetParams};
use chromiumoxide::handler::HandlerConfig;
use chromiumoxide::{Browser, Page};
use futures::StreamExt;
use oxwright_browser::process::{ChromiumProcess, LaunchOptions};
use oxwright_browser::{BrowserPool, Isolation, NavigateOptions, PoolConfig, UrlPolicy};
use oxwright_jobs::FetchSpec;
use tokio::task::JoinHandle;

use crate::stats::ms;

/// A fetch mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// `fetch_page` through a warm `BrowserPool` (default configuration:
    /// contexts reset and reused between jobs).
    Warm,
    /// `fetch_page` through a warm `BrowserPool` with `context_reuse = 1`:
    /// a fresh browser context and page per job.
    WarmFresh,
    /// `fetch_page` through a warm `BrowserPool` with `Isolation::Shared`:
    /// a browser's pages in its default context, nothing reset between jobs.
    WarmShared,
    /// A fresh one-page `BrowserPool` launched and shut down for every page.
    Cold,
    /// chromiumoxide on one browser, long-lived pages, `goto` + `outerHTML`.
    Bare,
    /// Diagnostic: bare, but each long-lived page in its own browser context
    /// (as the pool's pages are): one renderer process per page.
    BareContexts,
    /// Diagnostic: bare, plus a fresh browser context and page per fetch.
    BareCtx,
    /// Diagnostic: bare, plus a fresh page (default context) per fetch, closed after.
    BarePage,
    /// Diagnostic: bare, plus Fetch-domain interception continuing every request.
    BareFetch,
    /// Diagnostic: pool lease + `Tab::navigate` + `outerHTML` (no extract, no conversion).
    PoolNav,
    /// Diagnostic: pool lease + `Tab::navigate` + `Tab::extract` (no conversion).
    PoolExtract,
}

impl Mode {
    /// The mode's name as written on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Warm => "warm",
            Mode::WarmFresh => "warm-fresh",
            Mode::WarmShared => "warm-shared",
            Mode::Cold => "cold",
            Mode::Bare => "bare",
            Mode::BareContexts => "bare-contexts",
            Mode::BareCtx => "bare-ctx",
            Mode::BarePage => "bare-page",
            Mode::BareFetch => "bare-fetch",
            Mode::PoolNav => "pool-nav",
            Mode::PoolExtract => "pool-extract",
        }
    }
}

/// One fetched page: end-to-end latency, named phase times, bytes of output
/// (HTML read, or Markdown for `fetch_page`).
#[derive(Debug, Clone)]
pub struct Sample {
    pub latency_ms: f64,
    pub phases: Vec<(&'static str, f64)>,
    pub output_bytes: usize,
}

/// One Chromium launched with oxwright's flags and driven by chromiumoxide directly.
pub struct BareBrowser {
    pub browser: Browser,
    handler: JoinHandle<()>,
    pub process: ChromiumProcess,
}

impl BareBrowser {
    /// Launches Chromium with the pool's flags and connects to it.
    pub async fn launch(cfg: &PoolConfig) -> Result<Self> {
        let opts = LaunchOptions {
            executable: cfg.chrome_path.clone(),
            headless: true,
            extra_args: cfg.extra_args.clone(),
            // As the pool decides it, so both run alike.
            sandbox: oxwright_browser::sandbox::missing().is_none(),
            launch_timeout: cfg.launch_timeout,
            window: cfg.window,
            display: None,
        };
        let (process, ws) = tokio::task::spawn_blocking(move || ChromiumProcess::launch(&opts)).await??;
        // Same handler settings as the pool (no viewport emulation), so pages lay out alike.
        let config = HandlerConfig {
            viewport: None,
            request_timeout: cfg.call_timeout,
            ..HandlerConfig::default()
        };
        let (browser, mut handler) = Browser::connect_with_config(ws, config).await?;
        let handler = tokio::spawn(async move { while handler.next().await.is_some() {} });
        Ok(Self {
            browser,
            handler,
            process,
        })
    }

    /// Closes the connection and kills the process group.
    pub fn shutdown(self) {
        self.handler.abort();
        drop(self.browser);
        drop(self.process);
    }
}

/// Everything a mode needs for one round, built before the clock starts.
pub enum Runner {
    Pool {
        mode: Mode,
        pool: BrowserPool,
    },
    Cold {
        cfg: PoolConfig,
    },
    Bare {
        bare: BareBrowser,
        pages: Vec<Page>,
        tasks: Vec<JoinHandle<()>>,
    },
    BareCtx {
        bare: BareBrowser,
        fresh_context: bool,
    },
}

/// The pool configuration every mode starts from.
pub fn pool_config(browsers: usize, pages_per_browser: usize) -> PoolConfig {
    PoolConfig {
        browsers,
        pages_per_browser,
        ..PoolConfig::default()
    }
}

/// The fetch job every pool mode runs: defaults, no retries (errors must show).
pub fn spec(url: &url::Url) -> FetchSpec {
    let mut spec = FetchSpec::new(url.clone());
    spec.retry_count = 0;
    spec
}

const OUTER_HTML: &str = "document.documentElement.outerHTML";

impl Runner {
    /// Launches what `mode` needs; `concurrency` long-lived pages for bare modes.
    pub async fn start(mode: Mode, cfg: &PoolConfig, concurrency: usize) -> Result<Self> {
        Ok(match mode {
            Mode::Warm | Mode::PoolNav | Mode::PoolExtract => Runner::Pool {
                mode,
                pool: BrowserPool::start(cfg.clone()).await?,
            },
            Mode::WarmFresh => Runner::Pool {
                mode,
                pool: BrowserPool::start(PoolConfig {
                    context_reuse: 1,
                    ..cfg.clone()
                })
                .await?,
            },
            Mode::WarmShared => Runner::Pool {
                mode,
                pool: BrowserPool::start(PoolConfig {
                    isolation: Isolation::Shared,
                    ..cfg.clone()
                })
                .await?,
            },
            Mode::Cold => Runner::Cold {
                cfg: PoolConfig {
                    browsers: 1,
                    pages_per_browser: 1,
                    ..cfg.clone()
                },
            },
            Mode::Bare | Mode::BareFetch | Mode::BareContexts => {
                let bare = BareBrowser::launch(cfg).await?;
                let mut pages = Vec::new();
                let mut tasks = Vec::new();
                for _ in 0..concurrency {
                    let mut params = CreateTargetParams::new("about:blank");
                    if mode == Mode::BareContexts {
                        params.browser_context_id = Some(
                            bare.browser
                                .create_browser_context(CreateBrowserContextParams::default())
                                .await?,
                        );
                    }
                    let page = bare.browser.new_page(params).await?;
                    if mode == Mode::BareFetch {
                        tasks.push(intercept_all(&page).await?);
                    }
                    pages.push(page);
                }
                Runner::Bare { bare, pages, tasks }
            }
            Mode::BareCtx | Mode::BarePage => Runner::BareCtx {
                fresh_context: mode == Mode::BareCtx,
                bare: BareBrowser::launch(cfg).await?,
            },
        })
    }

    /// Fetches `url` as worker `worker`.
    pub async fn one(&self, worker: usize, url: &url::Url, policy: &Arc<UrlPolicy>) -> Result<Sample> {
        let t0 = Instant::now();
        match self {
            Runner::Pool {
                mode: Mode::Warm | Mode::WarmFresh | Mode::WarmShared,
                pool,
            } => warm(pool, policy, url, t0).await,
            Runner::Pool { mode, pool } => pool_steps(*mode, pool, policy, url, t0).await,
            Runner::Cold { cfg } => {
                let pool = BrowserPool::start(cfg.clone()).await?;
                let launch_ms = ms(t0.elapsed());
                let out = warm(&pool, policy, url, t0).await;
                let t1 = Instant::now();
                pool.shutdown().await;
                let mut sample = out?;
                sample.phases.insert(0, ("launch", launch_ms));
                sample.phases.push(("shutdown", ms(t1.elapsed())));
                sample.latency_ms = ms(t0.elapsed());
                Ok(sample)
            }
            Runner::Bare { pages, .. } => {
                let page = &pages[worker % pages.len()];
                page.goto(url.as_str()).await?;
                let t1 = Instant::now();
                let html: String = page.evaluate(OUTER_HTML).await?.into_value()?;
                Ok(Sample {
                    latency_ms: ms(t0.elapsed()),
                    phases: vec![("goto", ms(t1 - t0)), ("read", ms(t1.elapsed()))],
                    output_bytes: html.len(),
                })
            }
            Runner::BareCtx { bare, fresh_context } => {
                let ctx = if *fresh_context {
                    Some(
                        bare.browser
                            .create_browser_context(CreateBrowserContextParams::default())
                            .await?,
                    )
                } else {
                    None
                };
                let tc = Instant::now();
                let mut params = CreateTargetParams::new("about:blank");
                params.browser_context_id = ctx.clone();
                let page = bare.browser.new_page(params).await?;
                let t1 = Instant::now();
                page.goto(url.as_str()).await?;
                let t2 = Instant::now();
                let html: String = page.evaluate(OUTER_HTML).await?.into_value()?;
                let t3 = Instant::now();
                match ctx {
                    Some(ctx) => bare.browser.dispose_browser_context(ctx).await?,
                    None => page.close().await?,
                }
                Ok(Sample {
                    latency_ms: ms(t0.elapsed()),
                    phases: vec![
                        ("context", ms(tc - t0)),
                        ("page", ms(t1 - tc)),
                        ("goto", ms(t2 - t1)),
                        ("read", ms(t3 - t2)),
                        ("close", ms(t3.elapsed())),
                    ],
                    output_bytes: html.len(),
                })
            }
        }
    }

    /// The pool of a pool mode (for memory readings).
    pub fn pool(&self) -> Option<&BrowserPool> {
        match self {
            Runner::Pool { pool, .. } => Some(pool),
            _ => None,
        }
    }

    /// Stops every browser this runner started.
    pub async fn shutdown(self) {
        match self {
            Runner::Pool { pool, .. } => pool.shutdown().await,
            Runner::Cold { .. } => {}
            Runner::Bare { bare, pages, tasks } => {
                for task in tasks {
                    task.abort();
                }
                drop(pages);
                bare.shutdown();
            }
            Runner::BareCtx { bare, .. } => bare.shutdown(),
        }
        // Let spawned lease releases and handler tasks see the dead connections.
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn warm(pool: &BrowserPool, policy: &Arc<UrlPolicy>, url: &url::Url, t0: Instant) -> Result<Sample> {
    let out = oxwright_fetch::fetch_page(pool, policy, &spec(url))
        .await
        .map_err(|e| anyhow::anyhow!("fetch {url}: {e}"))?;
    let t = &out.result.timings;
    if out.result.markdown.is_empty() {
        bail!("fetch {url}: empty Markdown");
    }
    Ok(Sample {
        latency_ms: ms(t0.elapsed()),
        phases: vec![
            ("acquire", t.acquire_ms),
            ("navigate", t.navigate_ms),
            ("extract", t.extract_ms),
            ("convert", t.convert_ms),
        ],
        output_bytes: out.result.markdown.len(),
    })
}

async fn pool_steps(
    mode: Mode,
    pool: &BrowserPool,
    policy: &Arc<UrlPolicy>,
    url: &url::Url,
    t0: Instant,
) -> Result<Sample> {
    let lease = pool.acquire(true).await?;
    let t1 = Instant::now();
    let opts = NavigateOptions::load(policy.clone(), Duration::from_secs(30));
    lease.navigate(url, &opts).await?;
    let t2 = Instant::now();
    let output_bytes = if mode == Mode::PoolExtract {
        let v = lease
            .evaluate(oxwright_fetch::EXTRACT_JS, Duration::from_secs(20))
            .await?;
        oxwright_fetch::parse_extracted(v)?.visible_html.len()
    } else {
        let v = lease.evaluate(OUTER_HTML, Duration::from_secs(20)).await?;
        v.as_str().context("outerHTML is not a string")?.len()
    };
    let t3 = Instant::now();
    drop(lease);
    Ok(Sample {
        latency_ms: ms(t0.elapsed()),
        phases: vec![
            ("acquire", ms(t1 - t0)),
            ("navigate", ms(t2 - t1)),
            (
                if mode == Mode::PoolExtract {
                    "extract"
                } else {
                    "read"
                },
                ms(t3 - t2),
            ),
        ],
        output_bytes,
    })
}

/// Enables the Fetch domain with the pool's patterns on `page` and
/// continues every paused request, as the pool's interceptor does when
/// nothing is blocked.
async fn intercept_all(page: &Page) -> Result<JoinHandle<()>> {
    let mut events = page.event_listener::<EventRequestPaused>().await?;
    page.execute(oxwright_browser::fetch_patterns()).await?;
    let page = page.clone();
    Ok(tokio::spawn(async move {
        while let Some(ev) = events.next().await {
            let page = page.clone();
            tokio::spawn(async move {
                let _ = page
                    .execute(ContinueRequestParams::new(ev.request_id.clone()))
                    .await;
            });
        }
    }))
}
