//! `oxwright sample-site`: serves the bundled sample site (the test fixture
//! site) on loopback, for demos and trying things out.

use clap::Args;

/// Arguments of `oxwright sample-site`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  oxwright sample-site                            # http://127.0.0.1:8765/ (articles; /app/ for workflows)
  oxwright sample-site --listen 127.0.0.1:9000 --write-urls urls.txt")]
pub struct SampleSiteCmd {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8765")]
    pub listen: std::net::SocketAddr,
    /// Write the URL list of the sample articles to this file and keep serving.
    #[arg(long)]
    pub write_urls: Option<std::path::PathBuf>,
}

/// Serves until SIGINT or SIGTERM.
pub async fn run(cmd: SampleSiteCmd) -> anyhow::Result<i32> {
    let site = oxwright_fixtures::FixtureServer::start_on(cmd.listen).await?;
    let urls: Vec<String> = oxwright_fixtures::article_paths()
        .iter()
        .map(|p| site.url(p))
        .collect();
    if let Some(path) = &cmd.write_urls {
        std::fs::write(path, urls.join("\n") + "\n")?;
    }
    eprintln!("sample site on {} ({} articles)", site.url("/"), urls.len());
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
    site.shutdown().await;
    Ok(crate::exit::OK)
}
