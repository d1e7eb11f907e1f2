//! Child processes that die with this process, for the browsers oxwright
//! starts (Chromium in `oxwright-browser`, the Playwright MCP server in
//! `oxwright-playwright-mcp`). Each child leads its own process group, so
//! its owner can kill the whole tree at once, and gets
//! `PR_SET_PDEATHSIG(SIGKILL)`, so a SIGKILL of this process takes it too.
//! The death signal fires when the *thread* that forked the child exits,
//! so every child is forked from one launcher thread that lives as long
//! as the process.

pub mod sandbox;

use std::os::unix::process::CommandExt;
use std::process::{Child, Command};
use std::sync::mpsc;
use std::sync::{Mutex, OnceLock};

type SpawnRequest = (Command, mpsc::Sender<std::io::Result<Child>>);

/// Spawns `cmd` owned: its own process group (its pid is the group id) and
/// killed when this process dies.
pub fn spawn_owned(mut cmd: Command) -> std::io::Result<Child> {
    let parent = std::process::id() as i32;
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            if libc::setpgid(0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The parent may have died before prctl took effect.
            if libc::getppid() != parent {
                libc::_exit(1);
            }
            Ok(())
        });
    }
    spawn_from_launcher(cmd)
}

/// Hands `cmd` to the launcher thread and waits for the spawn.
fn spawn_from_launcher(cmd: Command) -> std::io::Result<Child> {
    static LAUNCHER: OnceLock<Mutex<mpsc::Sender<SpawnRequest>>> = OnceLock::new();
    let sender = LAUNCHER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<SpawnRequest>();
        std::thread::Builder::new()
            .name("oxwright-launcher".into())
            .spawn(move || {
                while let Ok((mut cmd, reply)) = rx.recv() {
                    let _ = reply.send(cmd.spawn());
                }
            })
            .expect("launcher thread starts");
        Mutex::new(tx)
    });
    let (reply_tx, reply_rx) = mpsc::channel();
    sender
        .lock()
        .map_err(|_| std::io::Error::other("launcher lock poisoned"))?
        .send((cmd, reply_tx))
        .map_err(|_| std::io::Error::other("launcher thread gone"))?;
    reply_rx
        .recv()
        .map_err(|_| std::io::Error::other("launcher thread gone"))?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_leads_its_own_group() {
        let mut child = spawn_owned({
            let mut c = Command::new("sleep");
            c.arg("5");
            c
        })
        .expect("sleep starts");
        let pid = child.id() as i32;
        // SAFETY: plain syscalls on the child this test started.
        let pgid = unsafe { libc::getpgid(pid) };
        assert_eq!(pgid, pid);
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
        let _ = child.wait();
    }
}
