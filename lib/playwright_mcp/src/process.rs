//! The owned `@playwright/mcp` child: spawned by `oxwright-owned` (its own
//! process group, `PR_SET_PDEATHSIG`), so a SIGKILL of this process takes
//! node with it; node's Chromium talks to node over a pipe
//! and exits when that pipe closes. A clean stop kills node's group and
//! the process groups of node's direct children (Playwright starts Chromium
//! detached, in a session of its own).

use std::collections::VecDeque;
use std::io::Read;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Arc, Mutex};

/// Bytes of the child's stderr kept for error messages.
const STDERR_TAIL: usize = 4096;

/// A running MCP server process this process owns.
pub struct OwnedChild {
    child: Child,
    pgid: i32,
    stderr: Arc<Mutex<VecDeque<u8>>>,
}

impl std::fmt::Debug for OwnedChild {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OwnedChild").field("pid", &self.pgid).finish()
    }
}

impl OwnedChild {
    /// Spawns `cmd` owned (own process group, killed with this process) and
    /// returns it with its stdio for the MCP transport.
    pub fn spawn(mut cmd: Command) -> std::io::Result<(Self, ChildStdin, ChildStdout)> {
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = oxwright_owned::spawn_owned(cmd)?;
        let pgid = child.id() as i32;
        let stdin = child.stdin.take().expect("stdin is piped");
        let stdout = child.stdout.take().expect("stdout is piped");
        let mut err = child.stderr.take().expect("stderr is piped");
        let tail = Arc::new(Mutex::new(VecDeque::with_capacity(STDERR_TAIL)));
        let sink = tail.clone();
        std::thread::Builder::new()
            .name(format!("pwmcp-stderr-{pgid}"))
            .spawn(move || {
                let mut buf = [0u8; 1024];
                while let Ok(n) = err.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    if let Ok(mut t) = sink.lock() {
                        t.extend(&buf[..n]);
                        let over = t.len().saturating_sub(STDERR_TAIL);
                        t.drain(..over);
                    }
                }
            })?;
        Ok((
            Self {
                child,
                pgid,
                stderr: tail,
            },
            stdin,
            stdout,
        ))
    }

    /// The child's process id (and process group id).
    pub fn pid(&self) -> i32 {
        self.pgid
    }

    /// Says whether the child has exited.
    pub fn exited(&mut self) -> bool {
        !matches!(self.child.try_wait(), Ok(None))
    }

    /// The last lines the child wrote to stderr.
    pub fn stderr_tail(&self) -> String {
        self.stderr
            .lock()
            .map(|t| String::from_utf8_lossy(&t.iter().copied().collect::<Vec<_>>()).into_owned())
            .unwrap_or_default()
    }

    /// Kills node's process group and the groups of its children
    /// (Chromium), then reaps node on a background thread.
    pub fn kill(mut self) {
        let children = child_pids(self.pgid);
        // SAFETY: plain syscalls on ids this process owns.
        unsafe {
            libc::kill(-self.pgid, libc::SIGKILL);
            for pid in &children {
                // Chromium leads its own group: kill it whole.
                libc::kill(-*pid, libc::SIGKILL);
                libc::kill(*pid, libc::SIGKILL);
            }
        }
        let _ = std::thread::Builder::new()
            .name("pwmcp-reaper".into())
            .spawn(move || {
                let _ = self.child.wait();
            });
    }
}

/// Returns the pids whose parent is `parent`, from `/proc`.
fn child_pids(parent: i32) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| parent_of(*pid) == Some(parent))
        .collect()
}

/// Reads a process's parent id from `/proc/<pid>/stat`.
fn parent_of(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may hold spaces.
    let rest = &stat[stat.rfind(')')? + 2..];
    rest.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_parent_of_this_process() {
        let me = std::process::id() as i32;
        let parent = parent_of(me).expect("own stat");
        assert!(parent > 0);
    }
}
