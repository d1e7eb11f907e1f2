//! The two sources of a page snapshot on Chromium, side by side on the same
//! pages: the flattened DOM with roles and names worked out by oxwright
//! (`DOMSnapshot.captureSnapshot`, the default) and Chromium's own
//! accessibility tree (`Accessibility.getFullAXTree`). Per page: the median
//! time of each (interleaved calls on the settled page), the elements each
//! gives a ref, and how many of the DOM reader's lines the tree has too.
//!
//!   python3 -m http.server 8766 --bind 127.0.0.1 -d CORPUS/pages &
//!   cargo run --release -p oxwright-bench -- snapshot-sources \
//!     --base http://127.0.0.1:8766 --pages r-buzzfeed-1.html,…

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use oxwright_browser::{BrowserPool, ChromiumPage, SnapshotSource};
use oxwright_engine::{BrowserEngine, GotoOptions, OpenOptions, Snapshot, SnapshotOptions};
use oxwright_policy::UrlPolicy;
use serde::Serialize;

use crate::modes::pool_config;
use crate::stats::{median, ms};

/// Options of the `snapshot-sources` subcommand.
#[derive(Debug, Clone, clap::Args)]
pub struct SnapshotSourcesArgs {
    /// Origin serving the pages (loopback).
    #[arg(long)]
    pub base: String,
    /// Comma-separated paths under --base; or a file with one path a line (@file).
    #[arg(long)]
    pub pages: String,
    /// Timed snapshots per page and source.
    #[arg(long, default_value_t = 7)]
    pub repeats: usize,
    /// Writes each page's two snapshots here (`<page>.dom.txt`, `<page>.tree.txt`).
    #[arg(long)]
    pub dump: Option<std::path::PathBuf>,
}

/// One page's figures.
#[derive(Debug, Clone, Serialize)]
pub struct PageSources {
    pub path: String,
    pub dom_ms: f64,
    pub tree_ms: f64,
    pub dom_elements: usize,
    pub tree_elements: usize,
    pub dom_chars: usize,
    pub tree_chars: usize,
    /// Share of the DOM reader's lines (refs left out) the tree has too.
    pub lines_shared: f64,
}

/// The `snapshot-sources` results.
#[derive(Debug, Clone, Serialize)]
pub struct SourcesReport {
    pub repeats: usize,
    pub pages: Vec<PageSources>,
    pub dom_ms_median: f64,
    pub tree_ms_median: f64,
    pub lines_shared_median: f64,
}

/// A line without its ref, and a list item without the level the tree
/// gives it (Playwright's snapshot has none).
fn plain(line: &str) -> String {
    let mut out = line.to_string();
    for key in [" [ref=", " [level="] {
        if key == " [level=" && !line.trim_start().starts_with("- listitem") {
            continue;
        }
        if let Some(at) = out.find(key)
            && let Some(end) = out[at..].find(']')
        {
            out.replace_range(at..at + end + 1, "");
        }
    }
    out
}

fn shared(dom: &Snapshot, tree: &Snapshot) -> f64 {
    let mut tree_lines: std::collections::HashMap<String, usize> = Default::default();
    for l in tree.text.lines() {
        *tree_lines.entry(plain(l)).or_default() += 1;
    }
    let (mut hit, mut all) = (0usize, 0usize);
    for l in dom.text.lines() {
        all += 1;
        if let Some(n) = tree_lines.get_mut(&plain(l))
            && *n > 0
        {
            *n -= 1;
            hit += 1;
        }
    }
    if all == 0 { 1.0 } else { hit as f64 / all as f64 }
}

pub async fn run(args: &SnapshotSourcesArgs) -> Result<SourcesReport> {
    let paths = page_paths(args)?;
    let base = url::Url::parse(&args.base).context("--base")?;
    let host = format!(
        "{}:{}",
        base.host_str().unwrap_or_default(),
        base.port_or_known_default().unwrap_or(80)
    );
    let policy = Arc::new(UrlPolicy::allowing([host.parse().expect("host:port parses")]));
    let pool = BrowserPool::start(pool_config(1, 1)).await?;
    let mut pages = Vec::new();
    println!(
        "| page | DOM ms | tree ms | ratio | DOM refs | tree refs | DOM chars | tree chars | lines shared |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for path in &paths {
        let page = pool.open(&OpenOptions::new(policy.clone())).await?;
        let Some(row) = measure(page.as_ref(), &base, path, args).await? else {
            continue;
        };
        println!(
            "| {} | {:.1} | {:.1} | {:.2} | {} | {} | {} | {} | {:.1} % |",
            row.path,
            row.dom_ms,
            row.tree_ms,
            row.dom_ms / row.tree_ms.max(0.001),
            row.dom_elements,
            row.tree_elements,
            row.dom_chars,
            row.tree_chars,
            row.lines_shared * 100.0
        );
        pages.push(row);
        drop(page);
    }
    pool.shutdown().await;
    let col = |f: fn(&PageSources) -> f64| median(&pages.iter().map(f).collect::<Vec<_>>());
    let report = SourcesReport {
        repeats: args.repeats,
        dom_ms_median: col(|p| p.dom_ms),
        tree_ms_median: col(|p| p.tree_ms),
        lines_shared_median: col(|p| p.lines_shared),
        pages,
    };
    println!(
        "\nmedians: DOM {:.1} ms, tree {:.1} ms, lines shared {:.1} %",
        report.dom_ms_median,
        report.tree_ms_median,
        report.lines_shared_median * 100.0
    );
    Ok(report)
}

/// The pages to compare: `--pages a,b` or `--pages @FILE` (one a line).
fn page_paths(args: &SnapshotSourcesArgs) -> Result<Vec<String>> {
    Ok(match args.pages.strip_prefix('@') {
        Some(file) => std::fs::read_to_string(file)
            .with_context(|| format!("reading {file}"))?
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(str::to_owned)
            .collect(),
        None => args
            .pages
            .split(',')
            .filter(|p| !p.is_empty())
            .map(str::to_owned)
            .collect(),
    })
}

/// Both snapshots of one page, timed; `None` when the page does not load.
async fn measure(
    page: &dyn oxwright_engine::Page,
    base: &url::Url,
    path: &str,
    args: &SnapshotSourcesArgs,
) -> Result<Option<PageSources>> {
    let chromium = page
        .as_any()
        .downcast_ref::<ChromiumPage>()
        .context("not a Chromium page")?;
    let url = base.join(path)?;
    if let Err(e) = page.goto(&url, &GotoOptions::load(Duration::from_secs(30))).await {
        eprintln!("{path}: {e}");
        return Ok(None);
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    // A snapshot big enough never to be pruned: the whole page is compared.
    let opts = SnapshotOptions {
        max_chars: 10_000_000,
    };
    let (mut dom_t, mut tree_t) = (Vec::new(), Vec::new());
    let (mut dom, mut tree) = (None, None);
    for _ in 0..args.repeats.max(1) {
        let t = Instant::now();
        dom = Some(chromium.snapshot_from(SnapshotSource::Dom, &opts).await?);
        dom_t.push(ms(t.elapsed()));
        let t = Instant::now();
        tree = Some(
            chromium
                .snapshot_from(SnapshotSource::AccessibilityTree, &opts)
                .await?,
        );
        tree_t.push(ms(t.elapsed()));
    }
    let (dom, tree) = (dom.expect("one run"), tree.expect("one run"));
    if let Some(dir) = &args.dump {
        std::fs::create_dir_all(dir)?;
        let stem = path.trim_start_matches('/').replace('/', "_");
        std::fs::write(dir.join(format!("{stem}.dom.txt")), &dom.text)?;
        std::fs::write(dir.join(format!("{stem}.tree.txt")), &tree.text)?;
    }
    let row = PageSources {
        path: path.to_owned(),
        dom_ms: median(&dom_t),
        tree_ms: median(&tree_t),
        dom_elements: dom.elements.len(),
        tree_elements: tree.elements.len(),
        dom_chars: dom.text.len(),
        tree_chars: tree.text.len(),
        lines_shared: shared(&dom, &tree),
    };
    Ok(Some(row))
}
