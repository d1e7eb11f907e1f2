//! `oxwright mcp`: an MCP server over the engine seam for coding agents.
//!
//! The browser tools speak Microsoft's Playwright MCP names and arguments
//! (`browser_snapshot`, `browser_click {element, target}` …) with the
//! seed's `playwright_*` names as aliases, plus `fetch_markdown`,
//! `load_sitemap` and `run_workflow`. Each client session gets its own
//! pages from the engine (so its own cookies and tabs); the URL policy holds
//! for every request those pages make; results are capped, never carry a
//! secret's value, and every failure is a tool error that says what to do.
//!
//! Transports: stdio ([`serve_stdio`]) and streamable HTTP ([`serve_http`],
//! loopback by default, a bearer token required on any other address).

mod args;
mod crawl;
mod diff;
mod errors;
mod screenshots;
mod server;
mod session;
mod tools;

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context as _;
use rmcp::ServiceExt as _;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

pub use args::{FETCH_NOT_IN_MCP, camel};
pub use crawl::{
    CRAWL_CALL_LIMIT, CrawlArgs, CrawlCall, CrawlOutcome, DEFAULT_CRAWL_MAX_CHARS, DEFAULT_CRAWL_PAGES,
    MAX_CRAWL_PAGES, SiteCrawler,
};
pub use errors::explain;
pub use screenshots::{ScreenshotError, ScreenshotStore};
pub use server::{McpConfig, McpServices, OxwrightMcp, Shared};
pub use tools::{ToolName, catalogue};

/// Serves one client over standard input and output until it disconnects
/// or `cancel` fires.
pub async fn serve_stdio(shared: Arc<Shared>, cancel: CancellationToken) -> anyhow::Result<()> {
    let handler = OxwrightMcp::new(shared);
    let (stdin, stdout) = rmcp::transport::io::stdio_pipes();
    let running = handler
        .serve_with_ct((stdin, stdout), cancel.clone())
        .await
        .context("starting the MCP session on stdio")?;
    running.waiting().await.context("the MCP session on stdio")?;
    Ok(())
}

/// How the HTTP transport listens.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// Where to listen.
    pub addr: SocketAddr,
    /// The bearer token clients must send (`Authorization: Bearer …`);
    /// required when `addr` is not loopback.
    pub token: Option<String>,
}

/// Serves streamable HTTP at `/mcp` until `cancel` fires; each MCP session
/// gets its own handler (own tabs). Returns the bound address through
/// `bound` as soon as it listens.
pub async fn serve_http(
    shared: Arc<Shared>,
    opts: HttpOptions,
    cancel: CancellationToken,
    bound: Option<tokio::sync::oneshot::Sender<SocketAddr>>,
) -> anyhow::Result<()> {
    let loopback = opts.addr.ip().is_loopback();
    if !loopback && opts.token.as_deref().is_none_or(str::is_empty) {
        anyhow::bail!(
            "--listen {} is not a loopback address: set a bearer token (--token-env NAME) so only your clients reach the browser",
            opts.addr
        );
    }
    let mut config = StreamableHttpServerConfig::default().with_cancellation_token(cancel.child_token());
    if !loopback {
        // Remote clients name this host however they reach it; the token guards it.
        config = config.disable_allowed_hosts();
    }
    let factory_shared = shared.clone();
    let service: StreamableHttpService<OxwrightMcp, LocalSessionManager> = StreamableHttpService::new(
        move || Ok(OxwrightMcp::new(factory_shared.clone())),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let token = opts.token.clone().filter(|t| !t.is_empty());
    let router = axum::Router::new()
        .nest_service("/mcp", service)
        .layer(axum::middleware::from_fn(
            move |req: axum::extract::Request, next: axum::middleware::Next| {
                let token = token.clone();
                async move {
                    if let Some(want) = token {
                        let got = req
                            .headers()
                            .get(axum::http::header::AUTHORIZATION)
                            .and_then(|v| v.to_str().ok())
                            .and_then(|v| v.strip_prefix("Bearer "));
                        if !got.is_some_and(|g| constant_time_eq(g.as_bytes(), want.as_bytes())) {
                            return axum::response::IntoResponse::into_response((
                                axum::http::StatusCode::UNAUTHORIZED,
                                [(axum::http::header::WWW_AUTHENTICATE, "Bearer")],
                                "a bearer token is required (Authorization: Bearer …)\n",
                            ));
                        }
                    }
                    next.run(req).await
                }
            },
        ));
    let listener = tokio::net::TcpListener::bind(opts.addr)
        .await
        .with_context(|| format!("listening on {}", opts.addr))?;
    let local = listener.local_addr()?;
    tracing::info!(addr = %local, "MCP server listening on http://{local}/mcp");
    if let Some(tx) = bound {
        let _ = tx.send(local);
    }
    axum::serve(listener, router)
        .with_graceful_shutdown(async move { cancel.cancelled_owned().await })
        .await
        .context("serving MCP over HTTP")?;
    Ok(())
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
