//! Structured extraction: the same product pages read by a CSS schema, by
//! the model to a JSON Schema, and by schemas the model learned once.
//! Each way is one `oxwright batch --render never` over the same pages
//! (and one with no extraction, the baseline), interleaved over rounds;
//! the model is the scripted endpoint answering at once, so the model's
//! own time is not in the figures, and tokens are counted (cl100k) on
//! what was sent to it and what it answered.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::Args;
use oxwright_fixtures::FixtureServer;
use oxwright_fixtures::llm::{ReceivedCall, Reply, ScriptedLlm, shop_model, shop_record};
use serde::Serialize;
use serde_json::{Value, json};

use crate::stats::median;

/// Arguments of `extract`.
#[derive(Debug, Args)]
pub struct ExtractArgs {
    /// Product pages read per run (the shop's template changes at page 30).
    #[arg(long, default_value_t = 1000)]
    pages: u32,
    /// Rounds; each runs every way once, in turn.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// The oxwright binary (default: the one beside this bench binary).
    #[arg(long)]
    oxwright: Option<PathBuf>,
}

/// One way of reading the pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
enum Way {
    None,
    Css,
    Llm,
    Learned,
}

impl Way {
    const ALL: [Way; 4] = [Way::None, Way::Css, Way::Llm, Way::Learned];

    fn name(self) -> &'static str {
        match self {
            Way::None => "no extraction (baseline)",
            Way::Css => "CSS schema",
            Way::Llm => "LLM to a JSON Schema",
            Way::Learned => "learned CSS schema",
        }
    }
}

/// The figures of one way, over the rounds.
#[derive(Debug, Serialize)]
pub struct ExtractRow {
    way: Way,
    pages: u32,
    /// Pages whose record was the expected one (last round).
    right: u32,
    wall_s: Vec<f64>,
    median_wall_s: f64,
    records_per_s: f64,
    /// Median extra milliseconds per page over the baseline.
    extra_ms_per_page: f64,
    model_calls_per_page: f64,
    prompt_tokens_per_page: f64,
    completion_tokens_per_page: f64,
}

/// The JSON Schema every LLM and learned reading fills.
fn json_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"name": {"type": "string"}, "price": {"type": "number"}},
        "required": ["name", "price"]
    })
}

/// A CSS schema written by hand for both of the shop's templates.
fn css_schema() -> Value {
    json!({
        "name": "Product",
        "baseSelector": ".product, [data-role=item]",
        "fields": [
            {"name": "name", "selector": ".name, [data-role=title]", "type": "text"},
            {"name": "price", "selector": ".price b, [data-role=cost]", "type": "regex",
             "pattern": "[0-9]+\\.[0-9]+"}
        ]
    })
}

/// Runs every way `rounds` times, interleaved.
pub async fn run(args: &ExtractArgs) -> Result<Vec<ExtractRow>> {
    let binary = crate::distributed::oxwright_binary(args.oxwright.as_ref())?;
    let site = FixtureServer::start().await?;
    let llm = ScriptedLlm::start().await?;
    llm.respond_with(shop_model);
    let dir = tempfile::tempdir()?;
    let schema = dir.path().join("product.schema.json");
    std::fs::write(&schema, json_schema().to_string())?;
    let css = dir.path().join("product.css.json");
    std::fs::write(&css, css_schema().to_string())?;
    let urls: Vec<String> = (1..=args.pages)
        .map(|n| site.url(&format!("/shop/p/{n}")))
        .collect();
    let list = dir.path().join("urls.txt");
    std::fs::write(&list, urls.join("\n"))?;
    let ctx = Ctx {
        binary: &binary,
        addr: site.addr().to_string(),
        llm: &llm,
        schema: &schema,
        css: &css,
        list: &list,
        dir: dir.path(),
    };
    let mut walls: Vec<Vec<f64>> = vec![Vec::new(); Way::ALL.len()];
    let mut last = vec![Counted::default(); Way::ALL.len()];
    for round in 0..args.rounds {
        for (i, way) in Way::ALL.into_iter().enumerate() {
            let (wall, counted) = ctx.once(way, round, args.pages).await?;
            eprintln!("round {round} {:?}: {wall:.2} s, {} right", way, counted.right);
            walls[i].push(wall);
            last[i] = counted;
        }
    }
    let base = median(&walls[0]);
    let pages = f64::from(args.pages);
    Ok(Way::ALL
        .into_iter()
        .enumerate()
        .map(|(i, way)| {
            let wall = median(&walls[i]);
            let c = &last[i];
            ExtractRow {
                way,
                pages: args.pages,
                right: c.right,
                median_wall_s: wall,
                records_per_s: pages / wall,
                extra_ms_per_page: (wall - base) * 1000.0 / pages,
                model_calls_per_page: c.calls as f64 / pages,
                prompt_tokens_per_page: c.prompt_tokens as f64 / pages,
                completion_tokens_per_page: c.completion_tokens as f64 / pages,
                wall_s: walls[i].clone(),
            }
        })
        .collect())
}

/// What one run's results and model calls came to.
#[derive(Debug, Clone, Default)]
struct Counted {
    right: u32,
    calls: usize,
    prompt_tokens: usize,
    completion_tokens: usize,
}

struct Ctx<'a> {
    binary: &'a Path,
    addr: String,
    llm: &'a ScriptedLlm,
    schema: &'a Path,
    css: &'a Path,
    list: &'a Path,
    dir: &'a Path,
}

impl Ctx<'_> {
    /// One batch of `way` into a store of its own (nothing learned before).
    async fn once(&self, way: Way, round: usize, pages: u32) -> Result<(f64, Counted)> {
        let out = self.dir.join(format!("out-{way:?}-{round}"));
        let before = self.llm.received().len();
        let mut cmd = Command::new(self.binary);
        cmd.args(["--allow-host", &self.addr, "--out"])
            .arg(&out)
            .args(["batch", "--render", "never"])
            .env("OXWRIGHT_LLM_BASE_URL", self.llm.base_url())
            .env("OXWRIGHT_LLM_MODEL", "extractor-small");
        match way {
            Way::None => {}
            Way::Css => {
                cmd.arg("--extract-css").arg(self.css);
            }
            Way::Llm => {
                cmd.arg("--extract").arg(self.schema);
            }
            Way::Learned => {
                cmd.args(["--learn", "--extract"]).arg(self.schema);
            }
        }
        cmd.arg(self.list);
        let started = Instant::now();
        let run = tokio::task::spawn_blocking(move || cmd.output()).await??;
        let wall = started.elapsed().as_secs_f64();
        if !run.status.success() {
            bail!("{way:?}: {}", String::from_utf8_lossy(&run.stderr));
        }
        let calls: Vec<ReceivedCall> = self.llm.received().into_iter().skip(before).collect();
        let mut counted = Counted {
            calls: calls.len(),
            ..Counted::default()
        };
        for call in &calls {
            counted.prompt_tokens += oxwright_markdown::count_tokens(&call.prompt());
            let answer = shop_model(call);
            if let Reply::Text(text) = answer {
                counted.completion_tokens += oxwright_markdown::count_tokens(&text);
            }
        }
        counted.right = right_records(&out, way, pages)?;
        Ok((wall, counted))
    }
}

/// Pages whose record is the expected one (every page, for the baseline).
fn right_records(out: &Path, way: Way, pages: u32) -> Result<u32> {
    if way == Way::None {
        return Ok(pages);
    }
    let mut right = 0;
    let dir = out.join("jobs").join("fetch");
    for entry in std::fs::read_dir(&dir).with_context(|| format!("{}", dir.display()))? {
        let path = entry?.path().join("result.json");
        let Ok(body) = std::fs::read(&path) else { continue };
        let result: Value = serde_json::from_slice(&body)?;
        let n: u32 = result["url"]
            .as_str()
            .and_then(|u| u.rsplit('/').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        let got = match way {
            // A CSS schema gives a list of records, with text as read.
            Way::Css => result["extract"][0].clone(),
            _ => result["extract"].clone(),
        };
        let want = shop_record(n);
        let fits = match way {
            Way::Css => {
                got["name"] == want["name"]
                    && got["price"].as_str().and_then(|p| p.parse::<f64>().ok()) == want["price"].as_f64()
            }
            _ => got == want,
        };
        right += u32::from(fits);
    }
    Ok(right)
}

/// The table for BENCHMARKS.md.
pub fn markdown(rows: &[ExtractRow]) -> String {
    let mut out = String::from(
        "| way | pages | records right | median wall | records/s | extra ms/page | model calls/page | prompt tokens/page | completion tokens/page |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for r in rows {
        out.push_str(&format!(
            "| {} | {} | {} | {:.2} s | {:.0} | {:.2} | {:.3} | {:.1} | {:.1} |\n",
            r.way.name(),
            r.pages,
            r.right,
            r.median_wall_s,
            r.records_per_s,
            r.extra_ms_per_page,
            r.model_calls_per_page,
            r.prompt_tokens_per_page,
            r.completion_tokens_per_page
        ));
    }
    out
}
