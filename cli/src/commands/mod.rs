//! The subcommands, one file each.

pub mod batch;
pub mod codegen;
pub mod config;
pub mod dashboard;
pub mod fetch;
pub mod mcp;
pub mod replay;
pub mod report;
pub mod run;
pub mod sample_site;
pub mod scheduler;
pub mod sitemap;
pub mod submit;
mod submit_wait;
pub mod worker;

use std::io::Read;
use std::path::PathBuf;

use anyhow::Context;

use oxwright_worker::Setup;

/// Reads a URL list (one a line) from a site's sitemaps, a file, or
/// standard input (`-`).
pub async fn read_url_list(
    setup: &Setup,
    sitemap: Option<&str>,
    file: Option<&PathBuf>,
) -> anyhow::Result<String> {
    match (sitemap, file) {
        (Some(target), _) => sitemap::expand(setup, target).await,
        (None, Some(file)) if file.as_os_str() == "-" => {
            let mut s = String::new();
            std::io::stdin()
                .read_to_string(&mut s)
                .context("reading URLs from stdin")
                .map_err(crate::exit::usage)?;
            Ok(s)
        }
        (None, Some(file)) => std::fs::read_to_string(file)
            .with_context(|| format!("reading {}", file.display()))
            .map_err(crate::exit::usage),
        (None, None) => Err(crate::exit::usage("give a URL file or --sitemap")),
    }
}
