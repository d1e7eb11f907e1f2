//! Conversion CPU and token reduction per article: rendered HTML read once
//! through the pool, then `html_to_markdown` and `count_tokens` timed in-process.

use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use oxwright_browser::{BrowserPool, NavigateOptions};
use oxwright_jobs::ContentMode;
use oxwright_markdown::{count_tokens, html_to_markdown};
use serde::Serialize;

use crate::fetch::policy_for;
use crate::modes::pool_config;
use crate::stats::{ms, percentile};

/// Options of the `convert` subcommand.
#[derive(Debug, Clone, clap::Args)]
pub struct ConvertArgs {
    /// Timed iterations per article and mode.
    #[arg(long, default_value_t = 200)]
    pub iterations: usize,
    /// Untimed iterations first.
    #[arg(long, default_value_t = 5)]
    pub warmup: usize,
}

/// p50 / p99 of one timed operation, ms.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Timing {
    pub p50_ms: f64,
    pub p99_ms: f64,
}

/// One article's figures.
#[derive(Debug, Clone, Serialize)]
pub struct Article {
    pub path: String,
    /// Bytes of the rendered `outerHTML` and of the visible-only HTML converted.
    pub html_bytes: usize,
    pub visible_html_bytes: usize,
    pub main: Timing,
    pub full: Timing,
    /// `count_tokens` on the rendered HTML, and on the main-mode Markdown.
    pub tokens_html_time: Timing,
    pub tokens_markdown_time: Timing,
    pub html_tokens: usize,
    pub main_tokens: usize,
    pub full_tokens: usize,
    /// 1 − Markdown tokens / HTML tokens, percent.
    pub main_reduction_pct: f64,
    pub full_reduction_pct: f64,
}

/// The `convert` results.
#[derive(Debug, Clone, Serialize)]
pub struct ConvertReport {
    pub iterations: usize,
    pub articles: Vec<Article>,
    /// Over all articles' iterations pooled.
    pub all_main: Timing,
    pub all_full: Timing,
}

fn time<T>(iters: usize, warmup: usize, mut f: impl FnMut() -> T, all: &mut Vec<f64>) -> Timing {
    for _ in 0..warmup {
        std::hint::black_box(f());
    }
    let mut v = Vec::with_capacity(iters);
    for _ in 0..iters.max(1) {
        let t = Instant::now();
        std::hint::black_box(f());
        v.push(ms(t.elapsed()));
    }
    all.extend(&v);
    Timing {
        p50_ms: percentile(&v, 0.50),
        p99_ms: percentile(&v, 0.99),
    }
}

/// Reads each article's rendered HTML (`Extracted::html`, `visible_html`) through the pool.
async fn rendered() -> Result<Vec<(String, url::Url, String, String)>> {
    let site = oxwright_fixtures::FixtureServer::start().await?;
    let policy = policy_for(&site);
    let pool = BrowserPool::start(pool_config(1, 1)).await?;
    let mut out = Vec::new();
    for path in oxwright_fixtures::ARTICLE_PATHS {
        let url = url::Url::parse(&site.url(path))?;
        let lease = pool.acquire(true).await?;
        let opts = NavigateOptions::load(policy.clone(), Duration::from_secs(30));
        lease
            .navigate(&url, &opts)
            .await
            .with_context(|| format!("navigate {url}"))?;
        let v = lease
            .evaluate(oxwright_fetch::EXTRACT_JS, Duration::from_secs(20))
            .await?;
        let page = oxwright_fetch::parse_extracted(v)?;
        drop(lease);
        out.push((path.to_string(), url, page.html, page.visible_html));
    }
    pool.shutdown().await;
    site.shutdown().await;
    Ok(out)
}

/// Runs the conversion benchmark.
pub async fn run(args: &ConvertArgs) -> Result<ConvertReport> {
    let pages = rendered().await?;
    let args = args.clone();
    // Chromium is gone: time on a blocking thread with the cores to ourselves.
    tokio::task::spawn_blocking(move || measure(&args, pages)).await?
}

fn measure(args: &ConvertArgs, pages: Vec<(String, url::Url, String, String)>) -> Result<ConvertReport> {
    let (n, w) = (args.iterations, args.warmup);
    let (mut all_main, mut all_full, mut scratch) = (Vec::new(), Vec::new(), Vec::new());
    let mut articles = Vec::new();
    for (path, url, html, visible) in pages {
        let convert = |mode| html_to_markdown(&visible, Some(&url), mode);
        let main_md = convert(ContentMode::Main)?.markdown;
        let full_md = convert(ContentMode::Full)?.markdown;
        let main = time(n, w, || convert(ContentMode::Main), &mut all_main);
        let full = time(n, w, || convert(ContentMode::Full), &mut all_full);
        let tokens_html_time = time(n, w, || count_tokens(&html), &mut scratch);
        let tokens_markdown_time = time(n, w, || count_tokens(&main_md), &mut scratch);
        let html_tokens = count_tokens(&html);
        let (main_tokens, full_tokens) = (count_tokens(&main_md), count_tokens(&full_md));
        let reduction = |t: usize| 100.0 * (1.0 - t as f64 / html_tokens.max(1) as f64);
        eprintln!(
            "  {path}: main p50 {:.2} ms, full p50 {:.2} ms, tokens {html_tokens} → {main_tokens} / {full_tokens}",
            main.p50_ms, full.p50_ms
        );
        articles.push(Article {
            path,
            html_bytes: html.len(),
            visible_html_bytes: visible.len(),
            main,
            full,
            tokens_html_time,
            tokens_markdown_time,
            html_tokens,
            main_tokens,
            full_tokens,
            main_reduction_pct: reduction(main_tokens),
            full_reduction_pct: reduction(full_tokens),
        });
    }
    let pooled = |v: &[f64]| Timing {
        p50_ms: percentile(v, 0.50),
        p99_ms: percentile(v, 0.99),
    };
    Ok(ConvertReport {
        iterations: n,
        all_main: pooled(&all_main),
        all_full: pooled(&all_full),
        articles,
    })
}

/// Renders the report as Markdown.
pub fn markdown(r: &ConvertReport) -> String {
    let mut out = format!(
        "Conversion CPU per page ({} iterations per article; target p50 ≤ 5 ms)\n\n",
        r.iterations
    );
    out.push_str("| article | visible HTML KB | main p50 / p99 ms | full p50 / p99 ms | count_tokens HTML p50 ms | count_tokens MD p50 ms |\n");
    out.push_str("|---|---:|---:|---:|---:|---:|\n");
    for a in &r.articles {
        out.push_str(&format!(
            "| {} | {:.1} | {:.2} / {:.2} | {:.2} / {:.2} | {:.2} | {:.2} |\n",
            short(&a.path),
            a.visible_html_bytes as f64 / 1024.0,
            a.main.p50_ms,
            a.main.p99_ms,
            a.full.p50_ms,
            a.full.p99_ms,
            a.tokens_html_time.p50_ms,
            a.tokens_markdown_time.p50_ms
        ));
    }
    out.push_str(&format!(
        "| **all** | | **{:.2} / {:.2}** | **{:.2} / {:.2}** | | |\n\n",
        r.all_main.p50_ms, r.all_main.p99_ms, r.all_full.p50_ms, r.all_full.p99_ms
    ));
    out.push_str("Token reduction (cl100k; rendered HTML → Markdown)\n\n");
    out.push_str("| article | HTML tokens | main tokens | main reduction | full tokens | full reduction |\n");
    out.push_str("|---|---:|---:|---:|---:|---:|\n");
    for a in &r.articles {
        out.push_str(&format!(
            "| {} | {} | {} | {:.1} % | {} | {:.1} % |\n",
            short(&a.path),
            a.html_tokens,
            a.main_tokens,
            a.main_reduction_pct,
            a.full_tokens,
            a.full_reduction_pct
        ));
    }
    out
}

fn short(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path).trim_end_matches(".html")
}
