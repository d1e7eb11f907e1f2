//! The shared engine suite (`oxwright_engine::test_suite`) on the
//! Playwright MCP backend: `@playwright/mcp` from `infra/node` (installed
//! by `infra/install.sh`; the test fails when it is missing) driving Debian
//! Chromium, one server child per case. What the protocol cannot express
//! is declared in `Capabilities` and listed in `lib/playwright_mcp/design.md`.

use std::sync::Arc;

use oxwright_engine::test_suite::{self, Capabilities};
use oxwright_playwright_mcp::{PlaywrightMcpEngine, PwMcpConfig};

mod common;

/// The engine the tests use: the installed server, Debian Chromium.
pub fn engine() -> PlaywrightMcpEngine {
    let cfg = PwMcpConfig::default();
    assert!(
        cfg.cli.exists(),
        "@playwright/mcp is not installed at {} (run bash infra/install.sh)",
        cfg.cli.display()
    );
    PlaywrightMcpEngine::new(cfg)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn playwright_mcp_page_passes_the_engine_suite() {
    let (base, policy) = common::suite_site().await;
    let open = common::suite_opener(Arc::new(engine()), policy);
    let caps = Capabilities {
        scripts: true,
        evaluate: true,
        // Locators walk the frame tree (Playwright reaches out-of-process
        // frames itself).
        iframes: true,
        cross_origin_iframes: true,
        network: false,
        frame_deferred: false,
    };
    test_suite::run(&open, &base, caps).await;
}
