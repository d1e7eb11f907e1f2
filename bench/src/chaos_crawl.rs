//! The chaos run's crawl: instead of a batch, `POST /v1/crawls` from the
//! root of a fixture site laid out as a binary tree (`/tree/N`, each
//! child linked twice under two spellings, every 50th page linking a page
//! that answers 404). Beside the batch's checks, a crawl must take exactly
//! the tree's pages, one manifest line each, leave no report orphaned and
//! no crawl listed; how many pages the site served more than once is
//! counted.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use oxwright_artifacts::ArtifactStore;
use oxwright_fixtures::{FixtureServer, tree_pages};
use oxwright_jobs::keys;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The pages a crawl of a `pages`-page tree takes.
pub fn expected(pages: usize) -> usize {
    tree_pages(pages as u32).len()
}

/// Starts the crawl through the scheduler's API at `api` (trying until
/// the scheduler listens); returns its batch id.
pub async fn submit(api: SocketAddr, site: &FixtureServer, pages: usize) -> Result<String> {
    let body = serde_json::json!({
        "url": site.url(&format!("/tree/0?of={pages}")),
        "crawl": { "max_depth": 40, "limit": pages * 2, "per_host_concurrency": 8, "per_host_delay_ms": 0 },
        "options": { "retry_count": 0, "timeout_ms": 10_000 },
    })
    .to_string();
    let started = Instant::now();
    loop {
        match post(api, "/v1/crawls", &body).await {
            Ok((202, answer)) => {
                return answer["batch_id"]
                    .as_str()
                    .map(str::to_owned)
                    .context("the crawl's answer names no batch");
            }
            Ok((status, answer)) => bail!("POST /v1/crawls answered {status}: {answer}"),
            Err(_) if started.elapsed() < Duration::from_secs(60) => {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(err) => return Err(err.context("the scheduler's API never answered")),
        }
    }
}

/// One HTTP/1.1 POST of a JSON body; the status and the JSON answer.
async fn post(addr: SocketAddr, path: &str, body: &str) -> Result<(u16, serde_json::Value)> {
    let mut stream = tokio::net::TcpStream::connect(addr).await?;
    let request = format!(
        "POST {path} HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await?;
    let mut response = String::new();
    stream.read_to_string(&mut response).await?;
    let status = response.get(9..12).context("no status line")?.parse()?;
    let json = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| serde_json::from_str(b).unwrap_or_default())
        .unwrap_or_default();
    Ok((status, json))
}

/// What the crawl's own checks found.
#[derive(Debug, Default)]
pub struct CrawlTally {
    /// Pages the site served more than once.
    pub loaded_twice: usize,
}

/// Checks the crawl `batch_id` of a `pages`-page tree: every page of the
/// tree in the manifest once, nothing else; no orphaned report; the crawl
/// no longer listed. Counts the pages loaded more than once.
pub async fn check(
    store: &dyn ArtifactStore,
    site: &FixtureServer,
    batch_id: &str,
    pages: usize,
    problems: &mut Vec<String>,
) -> Result<CrawlTally> {
    let body = store.get(&keys::batch_manifest(batch_id)).await?;
    let mut taken: BTreeMap<String, usize> = BTreeMap::new();
    for line in String::from_utf8(body.to_vec())?.lines() {
        let line: serde_json::Value = serde_json::from_str(line)?;
        let url = line["url"].as_str().unwrap_or_default();
        let path = url.split_once(&site.addr().to_string()).map_or(url, |(_, p)| p);
        *taken.entry(path.to_owned()).or_default() += 1;
    }
    let want: BTreeSet<String> = tree_pages(pages as u32).into_iter().collect();
    let got: BTreeSet<String> = taken.keys().cloned().collect();
    let lost: Vec<&String> = want.difference(&got).collect();
    let extra: Vec<&String> = got.difference(&want).collect();
    let twice: Vec<(&String, &usize)> = taken.iter().filter(|(_, n)| **n > 1).collect();
    if !lost.is_empty() {
        problems.push(format!(
            "{} pages never taken: {:?}",
            lost.len(),
            &lost[..lost.len().min(10)]
        ));
    }
    if !extra.is_empty() {
        problems.push(format!(
            "{} pages taken that are not the tree's: {:?}",
            extra.len(),
            &extra[..extra.len().min(10)]
        ));
    }
    if !twice.is_empty() {
        problems.push(format!(
            "{} pages with more than one manifest line: {:?}",
            twice.len(),
            &twice[..twice.len().min(10)]
        ));
    }
    if store.exists(&keys::crawl_listing(batch_id)).await? {
        problems.push("the ended crawl is still listed under crawling/".to_owned());
    }
    let orphans = store.list("orphans/").await?.len();
    if orphans > 0 {
        problems.push(format!("{orphans} reports kept as orphans"));
    }
    let mut loads: BTreeMap<String, usize> = BTreeMap::new();
    for request in site.requests() {
        if request.path.starts_with("/tree/") {
            *loads.entry(request.path).or_default() += 1;
        }
    }
    Ok(CrawlTally {
        loaded_twice: loads.values().filter(|n| **n > 1).count(),
    })
}
