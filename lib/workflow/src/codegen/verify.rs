//! Runs a generated spec headless before it is published: `@playwright/test`
//! from `infra/node` (its own `cli.js`, so the spec and the runner share one
//! Playwright), Debian Chromium through `executablePath`, in a scratch
//! folder whose `node_modules` links to `infra/node`'s. Nothing downloads
//! a browser.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::{Sanitizer, WorkflowError};

/// Where the runner and the browser are.
#[derive(Debug, Clone)]
pub struct VerifyOptions {
    /// `infra/node` (holds `node_modules/@playwright/test`).
    pub node_dir: PathBuf,
    /// The Chromium executable.
    pub chromium: PathBuf,
    /// Values of the spec's `process.env` placeholders (never written to a file).
    pub env: Vec<(String, String)>,
    /// Deadline of the whole run.
    pub timeout: Duration,
}

impl VerifyOptions {
    /// `infra/node` under `node_dir`, `/usr/bin/chromium`, no env, 3 minutes.
    pub fn new(node_dir: impl Into<PathBuf>) -> Self {
        Self {
            node_dir: node_dir.into(),
            chromium: PathBuf::from("/usr/bin/chromium"),
            env: Vec::new(),
            timeout: Duration::from_secs(180),
        }
    }
}

/// How a verification run went.
#[derive(Debug, Clone)]
pub struct Verified {
    /// Every test passed.
    pub passed: bool,
    /// The runner's output (sanitised).
    pub output: String,
}

fn running_as_root() -> bool {
    use std::os::unix::fs::MetadataExt as _;
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

fn config(chromium: &Path) -> String {
    let exe = serde_json::to_string(&chromium.to_string_lossy()).unwrap_or_default();
    let args = if running_as_root() {
        "['--no-sandbox']"
    } else {
        "[]"
    };
    format!(
        "// Written by oxwright codegen to verify a spec; no imports, no downloads.\n\
         module.exports = {{\n  testDir: __dirname,\n  testMatch: ['spec.spec.ts'],\n  timeout: 60000,\n  \
         retries: 0,\n  workers: 1,\n  reporter: [['line']],\n  outputDir: __dirname + '/test-results',\n  \
         use: {{ headless: true, trace: 'off', screenshot: 'off', video: 'off', actionTimeout: 10000,\n    \
         launchOptions: {{ executablePath: {exe}, args: {args} }} }},\n}};\n"
    )
}

/// Runs `spec` once with `npx playwright test` semantics and reports
/// whether it passed. `Err` when the runner itself cannot start.
pub async fn verify(
    spec: &str,
    opts: &VerifyOptions,
    sanitizer: &Sanitizer,
) -> Result<Verified, WorkflowError> {
    let modules = std::path::absolute(opts.node_dir.join("node_modules"))
        .map_err(|e| WorkflowError::Config(format!("infra/node: {e}")))?;
    let cli = modules.join("@playwright/test/cli.js");
    if !cli.exists() {
        return Err(WorkflowError::Config(format!(
            "@playwright/test is not installed at {} (run bash infra/install.sh)",
            cli.display()
        )));
    }
    if !opts.chromium.exists() {
        return Err(WorkflowError::Config(format!(
            "no Chromium at {} (apt-get install chromium)",
            opts.chromium.display()
        )));
    }
    let dir = tempfile::tempdir().map_err(|e| WorkflowError::Config(format!("scratch folder: {e}")))?;
    let io = |e: std::io::Error| WorkflowError::Config(format!("scratch folder: {e}"));
    std::os::unix::fs::symlink(&modules, dir.path().join("node_modules")).map_err(io)?;
    std::fs::write(dir.path().join("playwright.config.js"), config(&opts.chromium)).map_err(io)?;
    std::fs::write(dir.path().join("spec.spec.ts"), spec).map_err(io)?;
    let mut cmd = tokio::process::Command::new("node");
    cmd.arg(&cli)
        .args(["test", "-c", "playwright.config.js"])
        .current_dir(dir.path())
        .env("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")
        .env("CI", "1")
        .env_remove("PLAYWRIGHT_BROWSERS_PATH")
        .kill_on_drop(true)
        .stdin(std::process::Stdio::null());
    for (k, v) in &opts.env {
        sanitizer.register(k, v);
        cmd.env(k, v);
    }
    let out = tokio::time::timeout(opts.timeout, cmd.output())
        .await
        .map_err(|_| WorkflowError::Config(format!("npx playwright test ran over {:?}", opts.timeout)))?
        .map_err(|e| WorkflowError::Config(format!("node: {e}")))?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(Verified {
        passed: out.status.success(),
        output: sanitizer.clean(&text),
    })
}
