//! The MCP client of one `@playwright/mcp` child, after the seed's
//! connection state machine: `Disconnected → Connecting` (spawn) `→
//! Initializing` (MCP handshake) `→ Ready ⇄ Busy` (one tool call at a
//! time) `→ Disconnecting → Disconnected`. A child that exits, a closed
//! transport or a call that outlives its deadline sends the machine back
//! to `Disconnected`; the next call reconnects. Calls that failed at the
//! connection level are retried after 2, 4 and 8 s when they are safe to
//! repeat (reads, navigations); a tool's own error is never retried here.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use base64::Engine as _;
use oxwright_engine::{EngineError, EngineErrorKind};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService, ServiceError};
use serde_json::{Map, Value};
use tracing::{debug, warn};

use crate::PwMcpConfig;
use crate::process::OwnedChild;

/// Where the connection is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnState {
    /// No child runs.
    Disconnected,
    /// The child is being spawned.
    Connecting,
    /// The MCP handshake is under way.
    Initializing,
    /// Connected, no call in flight.
    Ready,
    /// A call is in flight.
    Busy,
    /// The child is being stopped.
    Disconnecting,
}

/// What a tool answered.
#[derive(Debug, Clone, Default)]
pub struct ToolOutput {
    /// The text parts, joined.
    pub text: String,
    /// Decoded image parts.
    pub images: Vec<Vec<u8>>,
    /// The server flagged the result as an error.
    pub is_error: bool,
}

/// Whether a call may be sent again after a connection failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retry {
    /// Reads and navigations: repeating them changes nothing a caller relied on.
    Safe,
    /// Actions: never repeated (a click must not happen twice).
    Never,
}

/// Extra time a call gets beyond its own deadline before the server counts as hung.
const CALL_MARGIN: Duration = Duration::from_secs(5);

/// Why one attempt failed.
enum Fail {
    /// The child or the transport is gone, or the child could not start.
    Connection(String),
    /// No answer within the deadline: the child is treated as hung.
    Hung,
    /// The server answered with a JSON-RPC error.
    Protocol(String),
    /// The child cannot start as configured.
    Misconfigured(String),
}

struct Conn {
    service: Option<RunningService<RoleClient, ()>>,
    child: Option<OwnedChild>,
}

/// A client of one Playwright MCP child.
pub struct McpClient {
    cfg: PwMcpConfig,
    args: Vec<String>,
    workdir: PathBuf,
    conn: tokio::sync::Mutex<Conn>,
    state: Arc<std::sync::Mutex<ConnState>>,
    connects: AtomicUsize,
    pid: std::sync::atomic::AtomicI32,
}

impl std::fmt::Debug for McpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpClient")
            .field("state", &self.state())
            .field("connects", &self.connects())
            .finish()
    }
}

impl McpClient {
    /// A disconnected client that starts the server with `args` (after the
    /// fixed ones) in `workdir` (its output directory and `$TMPDIR`).
    pub fn new(cfg: PwMcpConfig, args: Vec<String>, workdir: &Path) -> Self {
        Self {
            cfg,
            args,
            workdir: workdir.to_path_buf(),
            conn: tokio::sync::Mutex::new(Conn {
                service: None,
                child: None,
            }),
            state: Arc::new(std::sync::Mutex::new(ConnState::Disconnected)),
            connects: AtomicUsize::new(0),
            pid: std::sync::atomic::AtomicI32::new(0),
        }
    }

    /// The configuration the child runs with.
    pub fn config(&self) -> &PwMcpConfig {
        &self.cfg
    }

    /// Where the connection is now.
    pub fn state(&self) -> ConnState {
        *self.state.lock().expect("state lock")
    }

    /// How many times a child was started.
    pub fn connects(&self) -> usize {
        self.connects.load(Ordering::Relaxed)
    }

    /// The running child's pid (0 when none runs).
    pub fn pid(&self) -> i32 {
        self.pid.load(Ordering::Relaxed)
    }

    fn set(&self, s: ConnState) {
        let mut st = self.state.lock().expect("state lock");
        if *st != s {
            debug!(from = ?*st, to = ?s, "playwright mcp connection");
            *st = s;
        }
    }

    /// Connects now (spawn and handshake), retrying as a safe call would.
    pub async fn connect(&self) -> Result<(), EngineError> {
        let mut conn = self.conn.lock().await;
        let mut attempt = 0;
        loop {
            let message = match self.ensure(&mut conn).await {
                Ok(()) => return Ok(()),
                Err(Fail::Misconfigured(m)) => {
                    return Err(EngineError::new(EngineErrorKind::Misconfigured, m));
                }
                Err(Fail::Connection(m) | Fail::Protocol(m)) => m,
                Err(Fail::Hung) => "the playwright mcp server did not finish its handshake".to_string(),
            };
            if attempt >= self.cfg.backoff.len() {
                return Err(EngineError::new(EngineErrorKind::Unavailable, message));
            }
            let wait = self.cfg.backoff[attempt];
            warn!(attempt = attempt + 1, wait_ms = wait.as_millis() as u64, error = %message, "playwright mcp connect retried");
            tokio::time::sleep(wait).await;
            attempt += 1;
        }
    }

    /// Calls `tool` with `args` within `deadline`; connection failures of a
    /// [`Retry::Safe`] call are retried after the configured backoff.
    pub async fn call(
        &self,
        tool: &str,
        args: Value,
        deadline: Duration,
        retry: Retry,
    ) -> Result<ToolOutput, EngineError> {
        let mut conn = self.conn.lock().await;
        let mut attempt = 0;
        loop {
            let fail = match self.ensure(&mut conn).await {
                Ok(()) => match self.once(&mut conn, tool, &args, deadline).await {
                    Ok(out) => return Ok(out),
                    Err(f) => f,
                },
                Err(f) => f,
            };
            let err = match fail {
                Fail::Misconfigured(m) => return Err(EngineError::new(EngineErrorKind::Misconfigured, m)),
                Fail::Protocol(m) => {
                    return Err(EngineError::new(
                        EngineErrorKind::Protocol,
                        format!("{tool}: {m}"),
                    ));
                }
                Fail::Connection(m) => {
                    self.teardown(&mut conn);
                    EngineError::new(
                        EngineErrorKind::Crashed,
                        format!("{tool}: the playwright mcp server went away: {m}"),
                    )
                }
                Fail::Hung => {
                    self.teardown(&mut conn);
                    EngineError::new(
                        EngineErrorKind::Timeout,
                        format!("{tool}: no answer from the playwright mcp server within {deadline:?}"),
                    )
                }
            };
            if retry == Retry::Never || attempt >= self.cfg.backoff.len() {
                return Err(err);
            }
            let wait = self.cfg.backoff[attempt];
            warn!(tool, attempt = attempt + 1, wait_ms = wait.as_millis() as u64, error = %err, "playwright mcp call retried");
            tokio::time::sleep(wait).await;
            attempt += 1;
        }
    }

    async fn once(
        &self,
        conn: &mut Conn,
        tool: &str,
        args: &Value,
        deadline: Duration,
    ) -> Result<ToolOutput, Fail> {
        if conn.child.as_mut().is_some_and(|c| c.exited()) {
            return Err(Fail::Connection("the child exited".into()));
        }
        let service = conn
            .service
            .as_ref()
            .ok_or_else(|| Fail::Connection("not connected".into()))?;
        let mut params = CallToolRequestParams::new(tool.to_string());
        if let Value::Object(map) = args {
            params = params.with_arguments(map.clone());
        } else {
            params = params.with_arguments(Map::new());
        }
        self.set(ConnState::Busy);
        let res = tokio::time::timeout(deadline + CALL_MARGIN, service.call_tool(params)).await;
        self.set(ConnState::Ready);
        let result = match res {
            Err(_) => return Err(Fail::Hung),
            Ok(Err(ServiceError::McpError(e))) => return Err(Fail::Protocol(e.message.to_string())),
            Ok(Err(e)) => return Err(Fail::Connection(e.to_string())),
            Ok(Ok(r)) => r,
        };
        let mut out = ToolOutput {
            is_error: result.is_error == Some(true),
            ..ToolOutput::default()
        };
        for block in &result.content {
            if let Some(t) = block.as_text() {
                if !out.text.is_empty() {
                    out.text.push('\n');
                }
                out.text.push_str(&t.text);
            } else if let Some(img) = block.as_image()
                && let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(&img.data)
            {
                out.images.push(bytes);
            }
        }
        Ok(out)
    }

    /// Spawns and initialises the child unless it is ready.
    async fn ensure(&self, conn: &mut Conn) -> Result<(), Fail> {
        if conn.service.as_ref().is_some_and(|s| !s.is_closed())
            && !conn.child.as_mut().is_some_and(|c| c.exited())
        {
            return Ok(());
        }
        if conn.service.is_some() || conn.child.is_some() {
            warn!("playwright mcp child exited; reconnecting");
            self.teardown(conn);
        }
        if !self.cfg.cli.exists() {
            return Err(Fail::Misconfigured(format!(
                "the playwright mcp server is not installed at {} (run bash infra/install.sh)",
                self.cfg.cli.display()
            )));
        }
        self.set(ConnState::Connecting);
        // The child runs in its work directory: a relative path would miss.
        let cli = std::path::absolute(&self.cfg.cli).unwrap_or_else(|_| self.cfg.cli.clone());
        let mut cmd = Command::new(&self.cfg.node);
        cmd.arg(&cli)
            .args(&self.args)
            .current_dir(&self.workdir)
            .env("TMPDIR", &self.workdir)
            .env("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1");
        let (child, stdin, stdout) = match OwnedChild::spawn(cmd) {
            Ok(parts) => parts,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                self.set(ConnState::Disconnected);
                return Err(Fail::Misconfigured(format!(
                    "cannot run {}: {e}",
                    self.cfg.node.display()
                )));
            }
            Err(e) => {
                self.set(ConnState::Disconnected);
                return Err(Fail::Connection(format!("spawn: {e}")));
            }
        };
        self.connects.fetch_add(1, Ordering::Relaxed);
        self.pid.store(child.pid(), Ordering::Relaxed);
        self.set(ConnState::Initializing);
        let io = (
            tokio::process::ChildStdout::from_std(stdout).map_err(|e| Fail::Connection(e.to_string()))?,
            tokio::process::ChildStdin::from_std(stdin).map_err(|e| Fail::Connection(e.to_string()))?,
        );
        conn.child = Some(child);
        match tokio::time::timeout(self.cfg.connect_timeout, ().serve(io)).await {
            Ok(Ok(service)) => {
                conn.service = Some(service);
                self.set(ConnState::Ready);
                Ok(())
            }
            Ok(Err(e)) => {
                let tail = conn.child.as_ref().map(|c| c.stderr_tail()).unwrap_or_default();
                self.teardown(conn);
                Err(Fail::Connection(format!(
                    "handshake: {e}; stderr: {}",
                    tail.trim()
                )))
            }
            Err(_) => {
                self.teardown(conn);
                Err(Fail::Hung)
            }
        }
    }

    /// Kills the child (its group and Chromium's) and forgets the session.
    fn teardown(&self, conn: &mut Conn) {
        self.set(ConnState::Disconnecting);
        // Dropping the service cancels its task; the transport closes.
        conn.service = None;
        if let Some(child) = conn.child.take() {
            child.kill();
        }
        self.pid.store(0, Ordering::Relaxed);
        self.set(ConnState::Disconnected);
    }

    /// Stops the child: asks the browser to close, then kills what is left.
    pub async fn shutdown(&self) {
        let mut conn = self.conn.lock().await;
        if let Some(service) = conn.service.as_ref()
            && !service.is_closed()
        {
            let _ = tokio::time::timeout(
                Duration::from_secs(2),
                service.call_tool(CallToolRequestParams::new("browser_close")),
            )
            .await;
        }
        self.teardown(&mut conn);
    }

    /// Kills the child now, without waiting (for `Drop`).
    pub fn kill_now(&self) {
        if let Ok(mut conn) = self.conn.try_lock() {
            self.teardown(&mut conn);
        } else {
            let pid = self.pid();
            if pid > 0 {
                // SAFETY: kills the process group this client spawned.
                unsafe {
                    libc::kill(-pid, libc::SIGKILL);
                }
            }
        }
    }
}
