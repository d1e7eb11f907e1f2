//! Small statistics and `/proc` helpers: percentiles, process trees, PSS and CPU time.

use std::collections::HashMap;
use std::time::Duration;

/// Returns the `q`-quantile (0.0–1.0) of `values` by nearest rank; 0 when empty.
pub fn percentile(values: &[f64], q: f64) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Returns the median of `values` (mean of the middle two for even counts).
pub fn median(values: &[f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mid = sorted.len() / 2;
    if sorted.len().is_multiple_of(2) {
        (sorted[mid - 1] + sorted[mid]) / 2.0
    } else {
        sorted[mid]
    }
}

/// Returns the arithmetic mean of `values`; 0 when empty.
pub fn mean(values: &[f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.iter().sum::<f64>() / values.len() as f64
}

/// Milliseconds in `d`.
pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// One process as read from `/proc/<pid>/stat`.
#[derive(Debug, Clone, Copy)]
struct Stat {
    ppid: i32,
    /// utime + stime + cutime + cstime, in clock ticks.
    ticks: u64,
}

fn read_stat(pid: i32) -> Option<Stat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses: fields start after the last ')'.
    let rest = &text[text.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // rest[0] is field 3 (state); ppid is field 4, utime..cstime are fields 14..17.
    let ppid = fields.get(1)?.parse().ok()?;
    let ticks = fields
        .get(11..15)?
        .iter()
        .map(|f| f.parse::<u64>().unwrap_or(0))
        .sum();
    Some(Stat { ppid, ticks })
}

fn all_stats() -> HashMap<i32, Stat> {
    let mut out = HashMap::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return out;
    };
    for entry in dir.flatten() {
        if let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<i32>().ok())
            && let Some(stat) = read_stat(pid)
        {
            out.insert(pid, stat);
        }
    }
    out
}

/// Returns `root` and every live descendant of it (found through ppid links).
pub fn process_tree(root: i32) -> Vec<i32> {
    tree_of(&all_stats(), root)
}

fn tree_of(stats: &HashMap<i32, Stat>, root: i32) -> Vec<i32> {
    let mut children: HashMap<i32, Vec<i32>> = HashMap::new();
    for (pid, stat) in stats {
        children.entry(stat.ppid).or_default().push(*pid);
    }
    let mut out = vec![root];
    let mut i = 0;
    while i < out.len() {
        if let Some(kids) = children.get(&out[i]) {
            out.extend(kids.iter().copied());
        }
        i += 1;
    }
    out
}

/// Returns the `Pss:` of one process from `/proc/<pid>/smaps_rollup`, in KiB.
fn pss_kib(pid: i32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("Pss:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
}

/// PSS of a process tree.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct TreePss {
    /// Sum of `Pss:` over the tree, in MiB.
    pub mib: f64,
    /// Processes in the tree.
    pub processes: usize,
}

/// Sums PSS over `root` and its descendants.
pub fn tree_pss(root: i32) -> TreePss {
    let pids = process_tree(root);
    let kib: u64 = pids.iter().filter_map(|p| pss_kib(*p)).sum();
    TreePss {
        mib: kib as f64 / 1024.0,
        processes: pids.len(),
    }
}

/// CPU seconds used so far: by this process, and by every Chromium it started
/// (live descendants including what they reaped, plus children this process reaped).
#[derive(Debug, Clone, Copy, Default)]
pub struct CpuMark {
    own: f64,
    children: f64,
}

fn rusage_secs(who: libc::c_int) -> f64 {
    // SAFETY: getrusage writes into the struct we pass and nothing else.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(who, &mut usage);
        usage
    };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

impl CpuMark {
    /// Reads the counters now.
    pub fn now() -> Self {
        // SAFETY: sysconf has no preconditions.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
        let me = std::process::id() as i32;
        let stats = all_stats();
        let live: u64 = tree_of(&stats, me)
            .iter()
            .skip(1)
            .filter_map(|p| stats.get(p).map(|s| s.ticks))
            .sum();
        Self {
            own: rusage_secs(libc::RUSAGE_SELF),
            children: live as f64 / hz + rusage_secs(libc::RUSAGE_CHILDREN),
        }
    }

    /// Returns (own, browsers) CPU seconds spent since `earlier`.
    pub fn since(&self, earlier: &CpuMark) -> (f64, f64) {
        (
            self.own - earlier.own,
            (self.children - earlier.children).max(0.0),
        )
    }
}

/// Counts the Chromium renderer processes started under this process while
/// it runs: a thread polls `/proc` for new pids every few milliseconds.
/// A renderer lives for at least its page's load, far longer than the
/// polling interval, so none is missed in practice.
pub struct RendererSpawns {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: std::thread::JoinHandle<usize>,
}

fn is_renderer(pid: i32) -> bool {
    // Zygote children rewrite their argv as one space-separated title.
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|c| c.windows(15).any(|w| w == b"--type=renderer"))
        .unwrap_or(false)
}

/// Whether `pid` descends from `root`, walking ppid links.
fn descends_from(mut pid: i32, root: i32) -> bool {
    for _ in 0..16 {
        match read_stat(pid) {
            Some(stat) if stat.ppid == root => return true,
            Some(stat) if stat.ppid > 1 => pid = stat.ppid,
            _ => return false,
        }
    }
    false
}

fn pids() -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse().ok()))
        .collect()
}

impl RendererSpawns {
    /// Starts counting; renderers alive now are not counted.
    pub fn start() -> Self {
        use std::sync::atomic::Ordering;
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let me = std::process::id() as i32;
            // Only new pids are read. A zygote child carries the zygote's
            // title for a moment after the fork, so a new pid is looked at
            // again for a while before it is ruled out.
            let mut settled: std::collections::HashSet<i32> = pids().into_iter().collect();
            let mut young: std::collections::HashMap<i32, std::time::Instant> = Default::default();
            let mut renderers = 0;
            while !flag.load(Ordering::Relaxed) {
                let now = std::time::Instant::now();
                for pid in pids() {
                    if settled.contains(&pid) {
                        continue;
                    }
                    let first = *young.entry(pid).or_insert(now);
                    if is_renderer(pid) {
                        if descends_from(pid, me) {
                            renderers += 1;
                        }
                        settled.insert(pid);
                        young.remove(&pid);
                    } else if now - first > Duration::from_millis(500) {
                        settled.insert(pid);
                        young.remove(&pid);
                    }
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            renderers
        });
        Self { stop, thread }
    }

    /// Stops counting; returns the renderers started since `start`.
    pub fn finish(self) -> usize {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        self.thread.join().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&v, 0.5), 50.0);
        assert_eq!(percentile(&v, 0.95), 95.0);
        assert_eq!(percentile(&v, 0.99), 99.0);
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
    }

    #[test]
    fn own_tree_has_self() {
        let me = std::process::id() as i32;
        assert_eq!(process_tree(me)[0], me);
        assert!(tree_pss(me).mib > 0.0);
    }
}
