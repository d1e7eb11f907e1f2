//! Scores a directory of Markdown files, `<id>.md` per page, against the
//! quality corpus's `truth.jsonl` with the same metrics as `quality`: how
//! any tool's output (oxwright, crawl4ai, Playwright + turndown) is judged
//! alike (`bench/peers/peers.py`). A page with no file counts as an empty
//! output: every `with` snippet and every truth word is missed.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use anyhow::{Context, Result};
use serde::Serialize;

use super::score::{self, Prf};

/// Options of the `score-md` subcommand.
#[derive(Debug, Clone, clap::Args)]
pub struct ScoreMdArgs {
    /// The corpus directory written by `bench/quality/prepare.py` (its `truth.jsonl`).
    #[arg(long, env = "OXWRIGHT_BENCH_CORPUS")]
    pub corpus: PathBuf,
    /// Directory of `<page id>.md` files.
    #[arg(long)]
    pub dir: PathBuf,
    /// File of page ids, one a line, to score (default: every page of the corpus).
    #[arg(long)]
    pub ids: Option<PathBuf>,
}

/// One corpus's figures.
#[derive(Debug, Clone, Serialize)]
pub struct CorpusScore {
    pub corpus: String,
    pub pages: usize,
    /// Pages with no (or an empty) Markdown file.
    pub missing: usize,
    /// Mean over pages of the word-level scores (readability set).
    pub words: Option<Prf>,
    /// Scores over all snippets (trafilatura set).
    pub snippets: Option<Prf>,
}

/// The `score-md` results.
#[derive(Debug, Clone, Serialize)]
pub struct ScoreMdReport {
    pub dir: String,
    pub scores: Vec<CorpusScore>,
    /// Per page: word F1, or snippet (tp, fp, fn, tn); `null` when missing.
    pub pages: BTreeMap<String, serde_json::Value>,
}

#[derive(Default)]
struct Acc {
    pages: usize,
    missing: usize,
    word: Vec<Prf>,
    snip: [usize; 4],
}

/// Scores `args.dir` against the truth.
pub fn run(args: &ScoreMdArgs) -> Result<ScoreMdReport> {
    let wanted: Option<BTreeSet<String>> = match &args.ids {
        Some(p) => Some(
            std::fs::read_to_string(p)
                .with_context(|| format!("read {}", p.display()))?
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .map(String::from)
                .collect(),
        ),
        None => None,
    };
    let mut acc: BTreeMap<String, Acc> = BTreeMap::new();
    let mut pages = BTreeMap::new();
    for t in super::read_truth(&args.corpus)? {
        if wanted.as_ref().is_some_and(|w| !w.contains(&t.id)) {
            continue;
        }
        let md = std::fs::read_to_string(args.dir.join(format!("{}.md", t.id))).unwrap_or_default();
        let a = acc.entry(t.corpus.clone()).or_default();
        a.pages += 1;
        let missing = md.trim().is_empty();
        a.missing += missing as usize;
        let text = score::plain_text(&md);
        let value = if let Some(truth) = &t.text {
            let s = score::word_prf(&text, truth);
            a.word.push(s);
            serde_json::json!((s.f1 * 1000.0).round() / 1000.0)
        } else {
            let c = score::snippet_counts(&text, &t.with, &t.without);
            for (sum, n) in a.snip.iter_mut().zip(c) {
                *sum += n;
            }
            serde_json::json!(c)
        };
        pages.insert(t.id, if missing { serde_json::Value::Null } else { value });
    }
    let scores = acc
        .into_iter()
        .map(|(corpus, a)| {
            let n = a.word.len().max(1) as f64;
            let words = (!a.word.is_empty()).then(|| Prf {
                precision: a.word.iter().map(|s| s.precision).sum::<f64>() / n,
                recall: a.word.iter().map(|s| s.recall).sum::<f64>() / n,
                f1: a.word.iter().map(|s| s.f1).sum::<f64>() / n,
            });
            let [tp, fp, fn_, _] = a.snip;
            let snippets = (tp + fp + fn_ > 0).then(|| Prf::from_counts(tp as f64, fp as f64, fn_ as f64));
            CorpusScore {
                corpus,
                pages: a.pages,
                missing: a.missing,
                words,
                snippets,
            }
        })
        .collect();
    Ok(ScoreMdReport {
        dir: args.dir.display().to_string(),
        scores,
        pages,
    })
}

/// Renders the report as a Markdown table.
pub fn markdown(r: &ScoreMdReport) -> String {
    let mut s = format!(
        "{}\n\n| corpus | pages | missing | P | R | F1 | metric |\n|---|---:|---:|---:|---:|---:|---|\n",
        r.dir
    );
    for x in &r.scores {
        let (p, metric) = match (x.snippets, x.words) {
            (Some(p), _) => (p, "snippets"),
            (None, Some(p)) => (p, "words (mean per page)"),
            (None, None) => (Prf::default(), "-"),
        };
        s += &format!(
            "| {} | {} | {} | {:.3} | {:.3} | {:.3} | {metric} |\n",
            x.corpus, x.pages, x.missing, p.precision, p.recall, p.f1
        );
    }
    s
}
