//! How the Playwright MCP server is started and how calls to it are bounded.

use std::path::PathBuf;
use std::time::Duration;

/// Where `infra/install.sh` puts the npm package, relative to the repository root.
pub const NODE_DIR: &str = "infra/node";

/// The server's entry point inside the npm project.
const CLI_JS: &str = "node_modules/@playwright/mcp/cli.js";

/// How to start and drive `@playwright/mcp`.
#[derive(Debug, Clone)]
pub struct PwMcpConfig {
    /// `node` to run the server with.
    pub node: PathBuf,
    /// The server's `cli.js`.
    pub cli: PathBuf,
    /// The browser the server launches (`--executable-path`).
    pub executable: PathBuf,
    /// Pages (one server child each) served at once.
    pub capacity: usize,
    /// The server's own action deadline (`--timeout-action`).
    pub action_timeout: Duration,
    /// The server's own navigation deadline (`--timeout-navigation`).
    pub navigation_timeout: Duration,
    /// How long the server waits after every tool call for work it
    /// triggered (`--timeout-settle`; the server's default, 500 ms, is paid
    /// by reads too). Navigations an action starts are awaited regardless,
    /// and the page waits for `load` after an action that navigated.
    pub settle: Duration,
    /// Deadline for spawning the child and the MCP handshake.
    pub connect_timeout: Duration,
    /// Waits before the retries of a call that failed at the connection
    /// level (the seed's 2, 4 and 8 s).
    pub backoff: Vec<Duration>,
    /// Extra arguments for the server.
    pub extra_args: Vec<String>,
}

impl Default for PwMcpConfig {
    fn default() -> Self {
        Self {
            node: PathBuf::from("node"),
            cli: default_cli(),
            executable: PathBuf::from("/usr/bin/chromium"),
            capacity: 2,
            action_timeout: Duration::from_secs(10),
            navigation_timeout: Duration::from_secs(30),
            settle: Duration::ZERO,
            connect_timeout: Duration::from_secs(30),
            backoff: vec![
                Duration::from_secs(2),
                Duration::from_secs(4),
                Duration::from_secs(8),
            ],
            extra_args: Vec::new(),
        }
    }
}

/// Finds the installed server: `$OXWRIGHT_PLAYWRIGHT_MCP` (a `cli.js`),
/// then `infra/node` under the working directory, then the one in this
/// source tree.
pub fn default_cli() -> PathBuf {
    if let Some(p) = std::env::var_os("OXWRIGHT_PLAYWRIGHT_MCP") {
        return PathBuf::from(p);
    }
    let local = PathBuf::from(NODE_DIR).join(CLI_JS);
    if local.exists() {
        // The child runs in its own work directory: the path must not be relative.
        return std::path::absolute(&local).unwrap_or(local);
    }
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(NODE_DIR)
        .join(CLI_JS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retries_follow_the_seed() {
        let cfg = PwMcpConfig::default();
        assert_eq!(
            cfg.backoff,
            [2, 4, 8].map(Duration::from_secs).to_vec(),
            "seed 004: 2, 4 and 8 s"
        );
        assert!(default_cli().ends_with("node_modules/@playwright/mcp/cli.js"));
    }
}
