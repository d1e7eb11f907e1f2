//! The renderers' memory as the system counts it (proportional set size
//! from `/proc`), which holds what the JavaScript heap and DOM counters do
//! not: canvases, decoded images, layers, fonts. Each job's page has its
//! own browser context and so its own renderer; a renderer over the
//! per-job ceiling is killed (its job ends `resource_limit`, the jobs
//! beside it go on), and the kill is remembered for the job to say why.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// How often the renderers are measured.
const EVERY: Duration = Duration::from_millis(500);

/// The last renderer killed for its memory: when (Unix ms) and its size.
#[derive(Debug, Default)]
pub(crate) struct Killed {
    at_ms: AtomicU64,
    mib: AtomicU64,
}

impl Killed {
    /// The size (MiB) of a renderer killed within `window` before now.
    pub(crate) fn within(&self, window: Duration) -> Option<u64> {
        let at = self.at_ms.load(Ordering::SeqCst);
        (at != 0 && crate::process::unix_ms().saturating_sub(at) <= window.as_millis() as u64)
            .then(|| self.mib.load(Ordering::SeqCst))
    }
}

/// The renderer processes of the browser whose process group is `pgid`
/// holding more than `over_kib` (their proportional set size in KiB).
/// The resident size, cheap to read, is an upper bound of the
/// proportional one, which costs the kernel a walk of the process's
/// mappings (~3 ms a renderer): only a renderer resident over the ceiling
/// is measured that way.
pub(crate) fn renderers_over(pgid: i32, over_kib: u64) -> Vec<(i32, u64)> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|s| {
                    let rest = s[s.rfind(')')? + 2..].to_string();
                    rest.split_whitespace().nth(2)?.parse::<i32>().ok()
                })
                == Some(pgid)
        })
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| c.windows(15).any(|w| w == b"--type=renderer"))
        })
        .filter(|pid| rss_kib(*pid).is_some_and(|rss| rss > over_kib))
        .filter_map(|pid| Some((pid, pss_kib(pid)?)))
        .filter(|(_, pss)| *pss > over_kib)
        .collect()
}

fn rss_kib(pid: i32) -> Option<u64> {
    // statm: size, resident, … in pages.
    let statm = std::fs::read_to_string(format!("/proc/{pid}/statm")).ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as u64;
    Some(pages * page / 1024)
}

fn pss_kib(pid: i32) -> Option<u64> {
    let rollup = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).ok()?;
    rollup
        .lines()
        .find_map(|l| l.strip_prefix("Pss:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Measures the renderers of `pgid` every [`EVERY`] while `alive`, and
/// kills each one over `ceiling_mib`, noting it in `killed`.
pub(crate) fn watch(pgid: i32, ceiling_mib: u64, alive: Arc<AtomicBool>, killed: Arc<Killed>) {
    tokio::spawn(async move {
        while alive.load(Ordering::SeqCst) {
            tokio::time::sleep(EVERY).await;
            let Ok(over) =
                tokio::task::spawn_blocking(move || renderers_over(pgid, ceiling_mib * 1024)).await
            else {
                continue;
            };
            for (pid, kib) in over {
                // Noted before the kill, so the crash it causes always finds
                // its cause.
                killed.mib.store(kib / 1024, Ordering::SeqCst);
                killed.at_ms.store(crate::process::unix_ms(), Ordering::SeqCst);
                // SAFETY: a renderer of the browser this pool launched.
                if unsafe { libc::kill(pid, libc::SIGKILL) } == 0 {
                    tracing::warn!(
                        pid,
                        mib = kib / 1024,
                        ceiling_mib,
                        "renderer over the per-job memory ceiling killed"
                    );
                }
            }
        }
    });
}
