//! Whether Chromium can run inside its own sandbox here. On Linux its
//! sandbox is a set of namespaces (user, PID, network) around each
//! renderer plus a seccomp-BPF filter; Debian's Chromium has no setuid
//! helper, so it needs unprivileged user namespaces, and it refuses the
//! sandbox to root. Containers often forbid the namespaces (Docker's
//! default seccomp profile, AWS Lambda).

use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// How the browser's sandbox is chosen (`pool.sandbox`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SandboxMode {
    /// On whenever it can be: not root, and user namespaces allowed.
    #[default]
    Auto,
    /// Always on: starting fails, saying why, where it cannot be.
    On,
    /// Always off (`--no-sandbox`).
    Off,
}

/// What was decided, and why when the sandbox is off.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sandbox {
    /// Chromium runs sandboxed.
    On,
    /// Chromium runs with `--no-sandbox`, for this reason.
    Off(String),
}

impl Sandbox {
    /// Says whether Chromium runs sandboxed.
    pub fn is_on(&self) -> bool {
        matches!(self, Self::On)
    }
}

/// Decides the sandbox for `mode` on this machine; an error says why
/// [`SandboxMode::On`] cannot be had.
pub fn decide(mode: SandboxMode) -> Result<Sandbox, String> {
    if mode == SandboxMode::Off {
        return Ok(Sandbox::Off("pool.sandbox is \"off\"".into()));
    }
    let missing = missing();
    match (mode, missing) {
        (_, None) => Ok(Sandbox::On),
        (SandboxMode::On, Some(why)) => Err(format!("pool.sandbox is \"on\" but {why}")),
        (_, Some(why)) => Ok(Sandbox::Off(why)),
    }
}

/// What keeps the sandbox from running here (checked once per process),
/// or `None` when it can run.
pub fn missing() -> Option<String> {
    static MISSING: OnceLock<Option<String>> = OnceLock::new();
    MISSING
        .get_or_init(|| {
            // SAFETY: geteuid has no preconditions.
            if unsafe { libc::geteuid() } == 0 {
                return Some("oxwright runs as root, and Chromium refuses its sandbox to root".into());
            }
            namespaces_refused()
                .map(|e| format!("this machine refuses the user namespaces Chromium's sandbox needs ({e})"))
        })
        .clone()
}

/// Tries, in a child, the namespaces Chromium's sandbox makes: the error
/// when they are refused.
fn namespaces_refused() -> Option<String> {
    let mut probe = Command::new("/bin/true");
    probe
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // SAFETY: unshare is a system call, safe between fork and exec.
    unsafe {
        probe.pre_exec(|| {
            if libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWPID | libc::CLONE_NEWNET) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    match probe.status() {
        Ok(status) if status.success() => None,
        Ok(status) => Some(format!("probe exited {status}")),
        Err(e) => Some(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn off_is_off() {
        assert!(!decide(SandboxMode::Off).unwrap().is_on());
    }

    #[test]
    fn root_never_gets_the_sandbox() {
        // SAFETY: as above.
        let root = unsafe { libc::geteuid() } == 0;
        let auto = decide(SandboxMode::Auto).unwrap();
        if root {
            assert!(!auto.is_on());
            assert!(decide(SandboxMode::On).unwrap_err().contains("root"));
        } else {
            assert_eq!(auto.is_on(), missing().is_none());
        }
    }
}
