//! `oxwright sitemap DOMAIN|URL`: discovers and loads a site's sitemaps and
//! prints the URLs, the `SitemapResult` JSON, or the prompt form.

use clap::Args;
use oxwright_sitemap::{SitemapLoader, SitemapOptions, prompt_form};
use oxwright_telemetry::printable;

use oxwright_config::Setup;

/// Arguments of `oxwright sitemap`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  oxwright sitemap example.com                    # robots.txt, then /sitemap.xml; one URL a line
  oxwright sitemap --json https://example.com/sitemap_index.xml")]
pub struct SitemapCmd {
    /// A domain (`example.com`), a site URL, or a sitemap URL.
    pub target: String,
    /// Print the SitemapResult JSON.
    #[arg(long, conflicts_with = "prompt")]
    pub json: bool,
    /// Print the prompt form (`urls:` then at most 300 URLs / 10,000 characters).
    #[arg(long)]
    pub prompt: bool,
}

/// Runs the command; returns the process exit code.
pub async fn run(setup: Setup, cmd: SitemapCmd) -> anyhow::Result<i32> {
    let loader = SitemapLoader::new(setup.policy.clone(), SitemapOptions::default());
    let result = match loader.load(&cmd.target).await {
        Ok(r) => r,
        Err(err) => {
            eprintln!(
                "error: {}: {}",
                printable(&cmd.target),
                printable(&oxwright_jobs::JobError::from(err).to_string())
            );
            return Ok(crate::exit::JOBS_FAILED);
        }
    };
    if cmd.json {
        println!("{}", serde_json::to_string_pretty(&result)?);
    } else if cmd.prompt {
        println!("{}", prompt_form(&result.urls));
    } else {
        for url in &result.urls {
            println!("{}", url.loc);
        }
    }
    for w in &result.warnings {
        eprintln!("warning: {}", printable(w));
    }
    Ok(crate::exit::OK)
}

/// Expands `target`'s sitemaps into a URL list, one a line, for `batch --sitemap`.
pub async fn expand(setup: &Setup, target: &str) -> anyhow::Result<String> {
    let loader = SitemapLoader::new(setup.policy.clone(), SitemapOptions::default());
    let result = loader
        .load(target)
        .await
        .map_err(|e| anyhow::anyhow!("sitemap of {target}: {}", oxwright_jobs::JobError::from(e)))?;
    for w in &result.warnings {
        eprintln!("warning: sitemap: {}", printable(w));
    }
    Ok(result.urls.iter().map(|u| format!("{}\n", u.loc)).collect())
}
