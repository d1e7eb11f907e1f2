//! Adaptive admission: how many pages the pool lets run at once.
//!
//! A fixed number of pages in flight leaves the CPU idle while they wait —
//! on the network, on a page's timers, on the `ready` wait's quiet period —
//! and overloads it when every page renders at once. The pool starts at
//! `pages_per_browser` per browser and a controller samples the machine's
//! CPU (`/proc/stat`) every [`Admission::interval`]: while jobs wait for a
//! page, every admitted page is busy and the CPU is below
//! [`Admission::idle_below`], one more page is admitted (up to
//! `max_pages_per_browser`); above [`Admission::busy_above`] one is taken
//! back, down to the start — never below it, since a lease may be held
//! for long (an MCP tab, a workflow session) and a limit under the start
//! could starve the next one while the CPU is busy. No page is admitted while
//! the machine has less than [`Admission::min_free_mib`] of available
//! memory. Capacity beyond the current limit is held as semaphore permits
//! by the controller, so a lease never waits on anything but the semaphore.

use std::time::Duration;

/// Settings of the admission controller.
#[derive(Debug, Clone, PartialEq)]
pub struct Admission {
    /// How often the CPU is sampled and the limit moved (by one page).
    pub interval: Duration,
    /// CPU busy fraction (all cores) below which a page more is admitted
    /// when jobs wait.
    pub idle_below: f64,
    /// CPU busy fraction above which a page is taken back.
    pub busy_above: f64,
    /// Available memory (MiB, `MemAvailable`) below which no page more is
    /// admitted.
    pub min_free_mib: u64,
}

impl Default for Admission {
    fn default() -> Self {
        Self {
            interval: Duration::from_millis(500),
            idle_below: 0.70,
            busy_above: 0.92,
            min_free_mib: 1024,
        }
    }
}

/// What the controller saw in one interval.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sample {
    /// CPU busy fraction since the last sample; `None` when unknown.
    pub busy: Option<f64>,
    /// Available memory in MiB; `None` when unknown.
    pub free_mib: Option<u64>,
    /// Leases waiting for a page.
    pub waiting: usize,
    /// Pages on loan.
    pub in_use: usize,
}

/// The next limit from the current one: one page more, one less, or the same.
pub(crate) fn next_limit(cfg: &Admission, limit: usize, min: usize, max: usize, s: Sample) -> usize {
    let Some(busy) = s.busy else { return limit };
    if busy > cfg.busy_above && limit > min {
        return limit - 1;
    }
    let memory_ok = s.free_mib.is_none_or(|m| m >= cfg.min_free_mib);
    if busy < cfg.idle_below && s.waiting > 0 && s.in_use >= limit && limit < max && memory_ok {
        return limit + 1;
    }
    limit
}

/// The machine's CPU counters: busy and total jiffies of all cores.
pub(crate) fn cpu_jiffies() -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    if v.len() < 5 {
        return None;
    }
    // user nice system idle iowait irq softirq steal (guest is inside user).
    let total: u64 = v.iter().take(8).sum();
    let idle = v[3] + v[4];
    Some((total - idle, total))
}

/// The busy fraction between two [`cpu_jiffies`] readings.
pub(crate) fn busy_between(before: (u64, u64), after: (u64, u64)) -> Option<f64> {
    let total = after.1.checked_sub(before.1)?;
    let busy = after.0.checked_sub(before.0)?;
    (total > 0).then(|| busy as f64 / total as f64)
}

/// `MemAvailable` in MiB.
pub(crate) fn free_mib() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(busy: f64, waiting: usize, in_use: usize) -> Sample {
        Sample {
            busy: Some(busy),
            free_mib: Some(8_000),
            waiting,
            in_use,
        }
    }

    #[test]
    fn admits_more_only_when_idle_full_and_asked() {
        let cfg = Admission::default();
        // Idle CPU, every page busy, jobs waiting: one more.
        assert_eq!(next_limit(&cfg, 4, 2, 8, sample(0.30, 3, 4)), 5);
        // Nobody waiting, or a page free: no change.
        assert_eq!(next_limit(&cfg, 4, 2, 8, sample(0.30, 0, 4)), 4);
        assert_eq!(next_limit(&cfg, 4, 2, 8, sample(0.30, 3, 3)), 4);
        // At the maximum.
        assert_eq!(next_limit(&cfg, 8, 2, 8, sample(0.10, 3, 8)), 8);
        // Between the thresholds: hold.
        assert_eq!(next_limit(&cfg, 4, 2, 8, sample(0.80, 3, 4)), 4);
        // Low memory: hold.
        let low = Sample {
            free_mib: Some(100),
            ..sample(0.10, 3, 4)
        };
        assert_eq!(next_limit(&cfg, 4, 2, 8, low), 4);
        // Unknown CPU: hold.
        let unknown = Sample {
            busy: None,
            ..sample(0.10, 3, 4)
        };
        assert_eq!(next_limit(&cfg, 4, 2, 8, unknown), 4);
    }

    #[test]
    fn takes_back_when_saturated_down_to_the_minimum() {
        let cfg = Admission::default();
        assert_eq!(next_limit(&cfg, 6, 2, 8, sample(0.99, 5, 6)), 5);
        assert_eq!(next_limit(&cfg, 2, 2, 8, sample(0.99, 5, 2)), 2);
    }

    #[test]
    fn reads_this_machine() {
        let a = cpu_jiffies().expect("/proc/stat");
        std::thread::sleep(Duration::from_millis(30));
        let b = cpu_jiffies().expect("/proc/stat");
        assert!(b.1 >= a.1 && b.0 >= a.0);
        assert!(free_mib().expect("/proc/meminfo") > 0);
        if let Some(busy) = busy_between(a, b) {
            assert!((0.0..=1.0).contains(&busy), "{busy}");
        }
    }
}
