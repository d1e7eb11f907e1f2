//! Main-content quality: public pages with their own ground
//! truth (trafilatura's evaluation set, mozilla/readability's test pages,
//! laid out by `bench/quality/prepare.py`) are served on loopback, rendered
//! by Chromium through the fetch path (`BrowserPool` as the engine, `goto`
//! with images, fonts and media blocked, `oxwright_fetch::extract`), and
//! each extractor's Markdown is scored against the truth. Rendered pages are
//! cached beside the corpus so extractors can be compared without
//! re-rendering; `--refetch` renders again.

mod score;
mod score_md;

pub use score_md::{ScoreMdArgs, markdown as score_md_markdown, run as score_md};

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use futures::StreamExt;
use oxwright_browser::BrowserPool;
use oxwright_engine::{BrowserEngine, GotoOptions, OpenOptions, UrlPolicy};
use oxwright_jobs::{BlockResource, ContentMode, FetchSpec};
use oxwright_markdown::{Extractor, html_to_markdown_with};
use serde::{Deserialize, Serialize};

use crate::modes::pool_config;
use crate::stats::percentile;
use score::Prf;

/// Options of the `quality` subcommand.
#[derive(Debug, Clone, clap::Args)]
pub struct QualityArgs {
    /// The corpus directory written by `bench/quality/prepare.py`.
    #[arg(long, env = "OXWRIGHT_BENCH_CORPUS")]
    pub corpus: PathBuf,
    /// Pages rendered at once (tabs of one browser).
    #[arg(long, default_value_t = 2)]
    pub concurrency: usize,
    /// Render every page again instead of using `<corpus>/rendered/`.
    #[arg(long)]
    pub refetch: bool,
    /// Scores only pages already rendered; renders nothing.
    #[arg(long)]
    pub cached_only: bool,
    /// Only the first N pages of each corpus (in `truth.jsonl` order).
    #[arg(long)]
    pub limit: Option<usize>,
    /// Timed conversions per page and extractor (the median is kept).
    #[arg(long, default_value_t = 1)]
    pub iterations: usize,
    /// Writes each page's Markdown per extractor under this directory.
    #[arg(long)]
    pub dump: Option<PathBuf>,
}

#[derive(Debug, Clone, Deserialize)]
struct Truth {
    id: String,
    corpus: String,
    source: String,
    #[serde(default)]
    with: Vec<String>,
    #[serde(default)]
    without: Vec<String>,
    #[serde(default)]
    text: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Rendered {
    final_url: String,
    visible_html: String,
}

/// One extractor's figures on one corpus.
#[derive(Debug, Clone, Serialize)]
pub struct Score {
    pub extractor: String,
    pub corpus: String,
    pub pages: usize,
    /// Mean over pages of the word-level scores (readability set only).
    pub words: Option<Prf>,
    /// Snippet scores over all snippets (trafilatura set only).
    pub snippets: Option<Prf>,
    /// Pages where main mode fell back to the full page.
    pub fallbacks: usize,
    /// Thread CPU ms of `html_to_markdown_with` per page.
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub mean_ms: f64,
}

/// The `quality` results.
#[derive(Debug, Clone, Serialize)]
pub struct QualityReport {
    pub corpus: String,
    pub render_failures: Vec<String>,
    pub scores: Vec<Score>,
    /// Per page and extractor: word F1 or snippet (tp, fp, fn, tn).
    pub pages: BTreeMap<String, BTreeMap<String, serde_json::Value>>,
}

/// Reads `<corpus>/truth.jsonl`.
fn read_truth(corpus: &Path) -> Result<Vec<Truth>> {
    let truth_path = corpus.join("truth.jsonl");
    let text = std::fs::read_to_string(&truth_path).with_context(|| {
        format!(
            "read {} (run bench/quality/prepare.py first)",
            truth_path.display()
        )
    })?;
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| Ok(serde_json::from_str(l)?))
        .collect()
}

/// Runs the quality benchmark.
pub async fn run(args: &QualityArgs) -> Result<QualityReport> {
    let mut truths: Vec<Truth> = Vec::new();
    let mut per_corpus: BTreeMap<String, usize> = BTreeMap::new();
    for t in read_truth(&args.corpus)? {
        let n = per_corpus.entry(t.corpus.clone()).or_default();
        if args.limit.is_none_or(|l| *n < l) {
            *n += 1;
            truths.push(t);
        }
    }
    let failures = if args.cached_only {
        Vec::new()
    } else {
        render_all(args, &truths).await?
    };
    let args = args.clone();
    // Chromium is gone: convert on a blocking thread.
    tokio::task::spawn_blocking(move || evaluate(&args, &truths, failures)).await?
}

fn rendered_path(corpus: &Path, id: &str) -> PathBuf {
    corpus.join("rendered").join(format!("{id}.json"))
}

/// Renders every page not yet cached; returns the ids that failed.
async fn render_all(args: &QualityArgs, truths: &[Truth]) -> Result<Vec<String>> {
    std::fs::create_dir_all(args.corpus.join("rendered"))?;
    let todo: Vec<&Truth> = truths
        .iter()
        .filter(|t| args.refetch || !rendered_path(&args.corpus, &t.id).exists())
        .collect();
    let mut failed = Vec::new();
    if todo.is_empty() {
        return Ok(failed);
    }
    let (addr, server) = serve(args.corpus.join("pages")).await?;
    let policy = Arc::new(UrlPolicy::allowing([addr
        .to_string()
        .parse()
        .expect("host:port parses")]));
    let pool = Arc::new(BrowserPool::start(pool_config(1, args.concurrency.max(1))).await?);
    let total = todo.len();
    let mut done = 0usize;
    let mut results = futures::stream::iter(todo)
        .map(|t| {
            let (pool, policy) = (pool.clone(), policy.clone());
            async move {
                let url =
                    url::Url::parse(&format!("http://{addr}/{}.html", t.id)).expect("loopback URL parses");
                (t, render(pool.as_ref(), &policy, &url).await)
            }
        })
        .buffer_unordered(args.concurrency.max(1));
    while let Some((t, out)) = results.next().await {
        done += 1;
        match out {
            Ok(r) => std::fs::write(rendered_path(&args.corpus, &t.id), serde_json::to_vec(&r)?)?,
            Err(e) => {
                eprintln!("render {} ({}): {e:#}", t.id, t.source);
                failed.push(t.id.clone());
            }
        }
        if done.is_multiple_of(50) {
            eprintln!("rendered {done}/{total}");
        }
    }
    drop(results);
    if let Ok(pool) = Arc::try_unwrap(pool) {
        pool.shutdown().await;
    }
    server.abort();
    Ok(failed)
}

/// What `fetch_page` does up to conversion, with the job's default waits.
async fn render(engine: &dyn BrowserEngine, policy: &Arc<UrlPolicy>, url: &url::Url) -> Result<Rendered> {
    let spec = FetchSpec::new(url.clone());
    let tab = engine.open(&OpenOptions::new(policy.clone())).await?;
    let opts = GotoOptions {
        wait_until: spec.wait_until,
        wait_for: None,
        block: vec![BlockResource::Image, BlockResource::Font, BlockResource::Media],
        timeout: Duration::from_secs(20),
        capture_pdf: None,
        conditional: Vec::new(),
        skip_frames: spec.frames.skipped(),
        served: None,
    };
    let nav = tab.goto(url, &opts).await?;
    let page = oxwright_fetch::extract(tab.as_ref(), Duration::from_secs(20)).await?;
    Ok(Rendered {
        final_url: nav.final_url,
        visible_html: page.visible_html,
    })
}

/// The header a real server would send for an archived page: UTF-8 when the
/// bytes are UTF-8 and the page declares nothing itself (the archives lost
/// their original headers, and Chromium's fallback for an undeclared page
/// is windows-1252), else no charset so the page's own `<meta>` decides.
fn content_type(bytes: &[u8]) -> &'static str {
    let head = String::from_utf8_lossy(&bytes[..bytes.len().min(4096)]).to_ascii_lowercase();
    if std::str::from_utf8(bytes).is_ok() && !head.contains("charset") {
        "text/html; charset=utf-8"
    } else {
        "text/html"
    }
}

/// Serves `dir`'s `*.html` files.
async fn serve(dir: PathBuf) -> Result<(std::net::SocketAddr, tokio::task::JoinHandle<()>)> {
    use axum::http::{StatusCode, header};
    use axum::response::IntoResponse;
    let dir = Arc::new(dir);
    let app = axum::Router::new().fallback(move |uri: axum::http::Uri| {
        let dir = dir.clone();
        async move {
            let name = uri.path().trim_start_matches('/');
            if name.contains('/') || name.contains("..") || !name.ends_with(".html") {
                return StatusCode::NOT_FOUND.into_response();
            }
            match tokio::fs::read(dir.join(name)).await {
                Ok(bytes) => ([(header::CONTENT_TYPE, content_type(&bytes))], bytes).into_response(),
                Err(_) => StatusCode::NOT_FOUND.into_response(),
            }
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let handle = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok((addr, handle))
}

/// Thread CPU time, so other work on the shared machine does not count.
fn thread_cpu_ms() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 * 1000.0 + ts.tv_nsec as f64 / 1e6
}

#[derive(Default)]
struct Acc {
    pages: usize,
    word: Vec<Prf>,
    snip: [usize; 4],
    fallbacks: usize,
    ms: Vec<f64>,
}

fn evaluate(args: &QualityArgs, truths: &[Truth], render_failures: Vec<String>) -> Result<QualityReport> {
    let mut acc: BTreeMap<(String, String), Acc> = BTreeMap::new();
    let mut pages: BTreeMap<String, BTreeMap<String, serde_json::Value>> = BTreeMap::new();
    for t in truths {
        let Ok(bytes) = std::fs::read(rendered_path(&args.corpus, &t.id)) else {
            continue;
        };
        let r: Rendered = serde_json::from_slice(&bytes)?;
        let base = url::Url::parse(&r.final_url).ok();
        for &ex in Extractor::ALL {
            let mut times = Vec::new();
            let mut conv = None;
            for _ in 0..args.iterations.max(1) {
                let t0 = thread_cpu_ms();
                let c = html_to_markdown_with(&r.visible_html, base.as_ref(), ContentMode::Main, ex)?;
                times.push(thread_cpu_ms() - t0);
                conv = Some(c);
            }
            let conv = conv.expect("at least one iteration");
            if let Some(dir) = &args.dump {
                let d = dir.join(ex.name());
                std::fs::create_dir_all(&d)?;
                std::fs::write(d.join(format!("{}.md", t.id)), &conv.markdown)?;
            }
            let a = acc.entry((t.corpus.clone(), ex.name().to_string())).or_default();
            a.pages += 1;
            a.ms.push(percentile(&times, 0.5));
            a.fallbacks += usize::from(conv.fell_back());
            let text = score::plain_text(&conv.markdown);
            let page = pages.entry(t.id.clone()).or_default();
            if let Some(truth) = &t.text {
                let s = score::word_prf(&text, truth);
                a.word.push(s);
                page.insert(
                    ex.name().to_string(),
                    serde_json::json!((s.f1 * 1000.0).round() / 1000.0),
                );
            } else {
                let c = score::snippet_counts(&text, &t.with, &t.without);
                for (sum, n) in a.snip.iter_mut().zip(c) {
                    *sum += n;
                }
                page.insert(ex.name().to_string(), serde_json::json!(c));
            }
        }
    }
    let scores = acc
        .into_iter()
        .map(|((corpus, extractor), a)| {
            let n = a.word.len().max(1) as f64;
            let words = (!a.word.is_empty()).then(|| Prf {
                precision: a.word.iter().map(|s| s.precision).sum::<f64>() / n,
                recall: a.word.iter().map(|s| s.recall).sum::<f64>() / n,
                f1: a.word.iter().map(|s| s.f1).sum::<f64>() / n,
            });
            let [tp, fp, fn_, _] = a.snip;
            let snippets = (tp + fp + fn_ > 0).then(|| Prf::from_counts(tp as f64, fp as f64, fn_ as f64));
            Score {
                extractor,
                corpus,
                pages: a.pages,
                words,
                snippets,
                fallbacks: a.fallbacks,
                p50_ms: percentile(&a.ms, 0.5),
                p95_ms: percentile(&a.ms, 0.95),
                mean_ms: a.ms.iter().sum::<f64>() / a.ms.len().max(1) as f64,
            }
        })
        .collect();
    Ok(QualityReport {
        corpus: args.corpus.display().to_string(),
        render_failures,
        scores,
        pages,
    })
}

/// Renders the report as Markdown tables.
pub fn markdown(r: &QualityReport) -> String {
    let mut s = String::from(
        "| corpus | extractor | pages | word P | word R | word F1 | snippet P | snippet R | snippet F1 | fallbacks | CPU p50 ms | p95 ms | mean ms |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    let f = |p: Option<Prf>, g: fn(&Prf) -> f64| p.map(|p| format!("{:.3}", g(&p))).unwrap_or_default();
    for x in &r.scores {
        s += &format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.2} | {:.2} | {:.2} |\n",
            x.corpus,
            x.extractor,
            x.pages,
            f(x.words, |p| p.precision),
            f(x.words, |p| p.recall),
            f(x.words, |p| p.f1),
            f(x.snippets, |p| p.precision),
            f(x.snippets, |p| p.recall),
            f(x.snippets, |p| p.f1),
            x.fallbacks,
            x.p50_ms,
            x.p95_ms,
            x.mean_ms
        );
    }
    if !r.render_failures.is_empty() {
        s += &format!(
            "\n{} page(s) failed to render: {:?}\n",
            r.render_failures.len(),
            r.render_failures
        );
    }
    s
}
