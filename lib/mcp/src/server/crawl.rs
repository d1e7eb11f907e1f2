//! The `crawl` tool: a site's pages as Markdown, within the call's limits.

use oxwright_jobs::FetchSpec;
use serde::Serialize;
use serde_json::Value;

use super::OxwrightMcp;
use super::util::*;
use crate::{CRAWL_CALL_LIMIT, CrawlArgs, CrawlCall, CrawlOutcome};

/// One page of a crawl as the answer lists it.
#[derive(Debug, Serialize)]
struct CrawledPage {
    url: String,
    depth: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    parent: Option<String>,
    status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<Value>,
    /// The key of its Markdown in the store, when it was taken.
    #[serde(skip_serializing_if = "Option::is_none")]
    markdown: Option<String>,
}

impl CrawledPage {
    /// The page a manifest line names, if the line reads as one.
    fn of_line(line: &str) -> Option<Self> {
        let v: Value = serde_json::from_str(line).ok()?;
        let markdown = v["artifacts"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .find(|k| k.ends_with("/page.md"))
            .map(str::to_owned);
        Some(Self {
            url: v["url"].as_str()?.to_owned(),
            depth: v["depth"].as_u64().unwrap_or_default(),
            parent: v["parent"].as_str().map(str::to_owned),
            status: v["status"].as_str().unwrap_or("failed").to_owned(),
            error: v.get("error").filter(|e| !e.is_null()).cloned(),
            markdown,
        })
    }
}

impl OxwrightMcp {
    pub(super) async fn crawl(&self, a: CrawlArgs) -> Result<Reply, String> {
        let services = &self.shared.services;
        let crawler = services.crawler.as_ref().ok_or(
            "this server runs no crawls: use fetch_markdown page by page, or `oxwright crawl` outside the agent",
        )?;
        let url = parse_url(&a.url)?;
        let mut template = FetchSpec::new(url.clone());
        a.options
            .apply(&mut template)
            .map_err(|e| format!("crawl: {e}"))?;
        template.headless = self.config().headless;
        let outcome = crawler
            .crawl(CrawlCall {
                starts: vec![url],
                options: a.crawl,
                template,
                within: CRAWL_CALL_LIMIT,
            })
            .await?;
        let mut pages: Vec<CrawledPage> = match services.store.get(&outcome.manifest).await {
            Ok(body) => String::from_utf8_lossy(&body)
                .lines()
                .filter_map(CrawledPage::of_line)
                .collect(),
            Err(err) => return Err(format!("the crawl's manifest could not be read: {err}")),
        };
        // Nearest the start first; within a depth, as they were taken.
        pages.sort_by_key(|p| p.depth);
        let mut text = headline(&outcome);
        let mut budget = a.max_chars;
        let mut shown = 0;
        for page in &pages {
            let markdown = match (&page.markdown, page.status.as_str()) {
                (Some(key), "ok") => match services.store.get(key).await {
                    Ok(body) => String::from_utf8_lossy(&body).into_owned(),
                    Err(err) => format!("(its Markdown could not be read: {err})"),
                },
                _ => format!(
                    "(failed: {})",
                    page.error
                        .as_ref()
                        .and_then(|e| e["message"].as_str())
                        .unwrap_or("no result")
                ),
            };
            let section = format!(
                "\n## {} (depth {})\n\n{}\n",
                page.url,
                page.depth,
                markdown.trim()
            );
            if section.len() > budget {
                break;
            }
            budget -= section.len();
            text.push_str(&section);
            shown += 1;
        }
        if shown < pages.len() {
            text.push_str(&format!(
                "\n({} more page(s) not shown within maxChars {}: raise it, or call fetch_markdown on their URLs in the structured result)\n",
                pages.len() - shown,
                a.max_chars
            ));
        }
        let mut structured = serde_json::to_value(&outcome).unwrap_or_default();
        structured["pages"] = serde_json::to_value(&pages).unwrap_or_default();
        Ok(Reply {
            text,
            images: Vec::new(),
            structured: Some(structured),
        })
    }
}

/// The answer's first lines: what was taken, what was not and why, and
/// where the lists are.
fn headline(o: &CrawlOutcome) -> String {
    let mut text = format!(
        "Crawl {}: {} page(s) taken, {} failed, in {:.1} s{}.\n",
        o.batch_id,
        o.ok,
        o.failed,
        o.elapsed_s,
        if o.interrupted {
            " — interrupted before every page found was taken"
        } else {
            ""
        }
    );
    if !o.skipped.is_empty() {
        let reasons: Vec<String> = o.skipped.iter().map(|(why, n)| format!("{why} {n}")).collect();
        text.push_str(&format!("- Not taken: {}\n", reasons.join(", ")));
    }
    text.push_str(&format!(
        "- Manifest: {}\n- Not taken, listed: {}\n",
        o.manifest, o.skipped_list
    ));
    text
}
