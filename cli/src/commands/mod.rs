//! The subcommands, one file each.

#[cfg(feature = "browser")]
pub mod batch;
#[cfg(feature = "browser")]
pub mod check;
#[cfg(feature = "browser")]
pub mod codegen;
pub mod config;
#[cfg(feature = "browser")]
pub mod crawl;
pub mod dashboard;
#[cfg(feature = "browser")]
pub mod fetch;
#[cfg(feature = "browser")]
pub mod map;
#[cfg(feature = "browser")]
pub mod mcp;
#[cfg(feature = "browser")]
pub mod replay;
pub mod report;
#[cfg(feature = "browser")]
pub mod run;
pub mod sample_site;
pub mod scheduler;
pub mod sitemap;
pub mod submit;
mod submit_wait;
#[cfg(feature = "browser")]
pub mod worker;

use std::io::Read;
use std::path::PathBuf;

use anyhow::Context;

use oxwright_config::Setup;

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
