//! Adaptive admission: how many pages the pool lets run at once.
//!
//! A fixed number of pages in flight leaves the CPU idle while they wait —
//! on the network, on a page's timers, on the `ready` wait's quiet period —
//! and overloads it when every page renders at once. The pool starts at
//! `pages_per_browser` per browser and a controller samples the machine's
//! CPU (`/proc/stat`) every [`Admission::interval`].
//!
//! - **A page more, on trial.** While jobs wait for a page, every admitted
//!   page is busy, the CPU has stayed under [`Admission::idle_below`] for
//!   [`Admission::sustain`] and the limit has held for a [`Admission::trial`],
//!   one more page is admitted (up to `max_pages_per_browser`) for one
//!   trial. It stays only if the pool handed out pages faster during the
//!   trial than during the trial's span before it, by at least half of what
//!   one page more could add; otherwise it is taken back and no page more is
//!   tried for [`Admission::backoff`], doubled after each trial in a row
//!   that bought nothing.
//! - **A page less, on trial.** Above the start, with jobs waiting and the
//!   limit held for a trial's span, one page is taken back for one trial;
//!   it is given back only if pages then went out slower by more than half
//!   of what one page could cost.
//! - **Saturation.** Above [`Admission::busy_above`] in one interval a page
//!   is taken back at once (a trial on, it fails).
//!
//! An idle CPU is not proof that a page more helps: pages render in bursts
//! and wait on things that are not the CPU, and a limit raised on idle
//! readings alone climbed to its maximum on real pages, holding a renderer
//! per page more for no page more per second. The trials keep a page only
//! where it pays. The limit never goes below the start, since a lease may
//! be held for long (an MCP tab, a workflow session) and a limit under the
//! start could starve the next one while the CPU is busy. No page is
//! admitted while the machine has less than [`Admission::min_free_mib`] of
//! available memory. Capacity beyond the current limit is held as semaphore
//! permits by the controller, so a lease never waits on anything but the
//! semaphore.

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
    /// How long the CPU must have stayed under `idle_below` (over that
    /// whole span) before a page more is tried.
    pub sustain: Duration,
    /// How long a page more or less is tried, and the span before it that
    /// the trial is compared with. Zero: no trials (a page more is kept,
    /// none is taken back but on saturation).
    pub trial: Duration,
    /// After a trial of a page more that bought nothing, how long before
    /// the next one; doubled after each such trial in a row, up to 16×.
    pub backoff: Duration,
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
            sustain: Duration::from_secs(2),
            trial: Duration::from_secs(10),
            backoff: Duration::from_secs(30),
            min_free_mib: 1024,
        }
    }
}

/// What the controller reads in one interval.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Reading {
    /// The machine's CPU counters ([`cpu_jiffies`]); `None` when unknown.
    pub cpu: Option<(u64, u64)>,
    /// Available memory in MiB; `None` when unknown.
    pub free_mib: Option<u64>,
    /// Leases waiting for a page.
    pub waiting: usize,
    /// Pages on loan.
    pub in_use: usize,
    /// Pages handed out since the pool started.
    pub granted: u64,
}

/// A page more or less being tried.
#[derive(Debug, Clone, Copy)]
struct Trial {
    /// The limit before it.
    from: usize,
    /// Pages handed out per interval over the span before it.
    baseline: f64,
    granted_at_start: u64,
    intervals: usize,
}

/// The controller's state between intervals.
#[derive(Debug)]
pub(crate) struct Controller {
    cfg: Admission,
    sustain: usize,
    trial_len: usize,
    /// CPU readings and pages handed out, one per interval since the limit
    /// last moved (the latest `trial_len + 1` at most).
    readings: std::collections::VecDeque<(Option<(u64, u64)>, u64)>,
    trial: Option<Trial>,
    /// Trials in a row that bought nothing (a page more) or cost too much
    /// (a page less), and the intervals before the next of each.
    failures: [u32; 2],
    quiet: [usize; 2],
}

const UP: usize = 0;
const DOWN: usize = 1;

impl Controller {
    pub(crate) fn new(cfg: Admission) -> Self {
        let intervals = |d: Duration| {
            let each = cfg.interval.as_millis().max(1);
            d.as_millis().div_ceil(each) as usize
        };
        let sustain = intervals(cfg.sustain).max(1);
        let trial_len = intervals(cfg.trial);
        Self {
            cfg,
            sustain,
            trial_len,
            readings: Default::default(),
            trial: None,
            failures: [0; 2],
            quiet: [0; 2],
        }
    }

    /// The busy fraction over the last `n` intervals, when there are that many.
    fn busy_over(&self, n: usize) -> Option<f64> {
        let len = self.readings.len();
        if len <= n {
            return None;
        }
        let (now, _) = self.readings[len - 1];
        let (then, _) = self.readings[len - 1 - n];
        busy_between(then?, now?)
    }

    /// Pages handed out per interval over the last `n` intervals.
    fn rate_over(&self, n: usize) -> Option<f64> {
        let len = self.readings.len();
        (n > 0 && len > n)
            .then(|| (self.readings[len - 1].1 - self.readings[len - 1 - n].1) as f64 / n as f64)
    }

    /// The limit moved: the next decision reads only what comes after.
    fn moved(&mut self) {
        let last = self.readings.pop_back();
        self.readings.clear();
        self.readings.extend(last);
    }

    /// A trial in direction `way` failed: no other that way for a while.
    fn back_off(&mut self, way: usize) {
        let backoff = self.cfg.backoff.as_millis() << self.failures[way].min(4);
        self.quiet[way] = backoff.div_ceil(self.cfg.interval.as_millis().max(1)) as usize;
        self.failures[way] += 1;
    }

    /// One interval: reads `r` and returns the limit the pool should have.
    pub(crate) fn step(&mut self, limit: usize, min: usize, max: usize, r: Reading) -> usize {
        self.readings.push_back((r.cpu, r.granted));
        while self.readings.len() > self.trial_len.max(self.sustain) + 1 {
            self.readings.pop_front();
        }
        self.quiet = self.quiet.map(|q| q.saturating_sub(1));
        let Some(busy) = self.busy_over(1) else {
            return limit;
        };
        if busy > self.cfg.busy_above && limit > min {
            if self.trial.take().is_some_and(|t| limit > t.from) {
                self.back_off(UP);
            }
            self.moved();
            return limit - 1;
        }
        if let Some(trial) = self.trial.as_mut() {
            trial.intervals += 1;
            if trial.intervals < self.trial_len {
                return limit;
            }
            let trial = self.trial.take().expect("on trial");
            return self.judge(trial, limit, r.granted);
        }
        let held = self.readings.len() > self.trial_len;
        if r.waiting == 0 || r.in_use < limit || !held {
            return limit;
        }
        let idle = busy < self.cfg.idle_below
            && self
                .busy_over(self.sustain)
                .is_some_and(|b| b < self.cfg.idle_below);
        let memory_ok = r.free_mib.is_none_or(|m| m >= self.cfg.min_free_mib);
        let to = if idle && limit < max && memory_ok && self.quiet[UP] == 0 {
            limit + 1
        } else if limit > min && self.trial_len > 0 && self.quiet[DOWN] == 0 {
            limit - 1
        } else {
            return limit;
        };
        if self.trial_len > 0 {
            self.trial = Some(Trial {
                from: limit,
                baseline: self.rate_over(self.trial_len).unwrap_or(0.0),
                granted_at_start: r.granted,
                intervals: 0,
            });
        }
        self.moved();
        to
    }

    /// The end of a trial: keeps its limit or goes back to the one before.
    fn judge(&mut self, trial: Trial, limit: usize, granted: u64) -> usize {
        let rate = (granted - trial.granted_at_start) as f64 / trial.intervals as f64;
        // Half of what one page more (or less) adds (or costs) at this limit.
        let step = trial.baseline * 0.5 / trial.from.min(limit).max(1) as f64;
        let kept = if limit > trial.from {
            rate > 0.0 && rate >= trial.baseline + step
        } else {
            rate >= trial.baseline - step
        };
        tracing::debug!(
            from = trial.from,
            to = limit,
            baseline = trial.baseline,
            rate,
            kept,
            "admission trial"
        );
        let way = if limit > trial.from { UP } else { DOWN };
        self.moved();
        if kept {
            self.failures[way] = 0;
            return limit;
        }
        self.back_off(way);
        trial.from
    }
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

    /// A controller ticking every second, with a 2 s sustain, 4 s trials
    /// and an 8 s back-off, fed a synthetic machine.
    struct Sim {
        c: Controller,
        limit: usize,
        cpu: (u64, u64),
        granted: u64,
    }

    impl Sim {
        fn new() -> Self {
            let cfg = Admission {
                interval: Duration::from_secs(1),
                sustain: Duration::from_secs(2),
                trial: Duration::from_secs(4),
                backoff: Duration::from_secs(8),
                ..Admission::default()
            };
            Self {
                c: Controller::new(cfg),
                limit: 4,
                cpu: (0, 0),
                granted: 0,
            }
        }

        /// One interval at `busy` CPU with `pages` handed out and jobs
        /// waiting; returns the limit after it.
        fn tick(&mut self, busy: f64, pages: u64) -> usize {
            self.cpu = (self.cpu.0 + (busy * 100.0) as u64, self.cpu.1 + 100);
            self.granted += pages;
            let r = Reading {
                cpu: Some(self.cpu),
                free_mib: Some(8_000),
                waiting: 3,
                in_use: self.limit,
                granted: self.granted,
            };
            self.limit = self.c.step(self.limit, 4, 8, r);
            self.limit
        }

        /// `n` intervals where the pages handed out per interval follow the
        /// limit through `rate`; returns the limits seen.
        fn run(&mut self, n: usize, busy: f64, rate: impl Fn(usize) -> u64) -> Vec<usize> {
            (0..n).map(|_| self.tick(busy, rate(self.limit))).collect()
        }
    }

    /// Where a page more adds pages (they wait on the network), the limit
    /// climbs to the maximum, one trial at a time.
    #[test]
    fn a_page_more_that_pays_is_kept() {
        let mut sim = Sim::new();
        let seen = sim.run(60, 0.3, |limit| 10 * limit as u64);
        assert_eq!(sim.limit, 8, "{seen:?}");
        assert!(
            seen.windows(2).all(|w| w[1] <= w[0] + 1),
            "one page at a time: {seen:?}"
        );
    }

    /// Where a page more adds nothing (the pages wait on something it does
    /// not help), each trial is given up, the trials thin out, and the
    /// pages taken back on trial stay back: the limit ends at the start.
    #[test]
    fn a_page_more_that_buys_nothing_is_taken_back() {
        let mut sim = Sim::new();
        let seen = sim.run(120, 0.3, |_| 40);
        assert_eq!(sim.limit, 4, "{seen:?}");
        let above = seen.iter().filter(|&&l| l > 4).count();
        assert!(above <= 20, "on trial {above} of 120 intervals: {seen:?}");
        // Started above the start with nothing to gain: it comes down.
        let mut sim = Sim::new();
        sim.limit = 7;
        let seen = sim.run(80, 0.8, |_| 40);
        assert_eq!(sim.limit, 4, "{seen:?}");
    }

    /// Where a page less costs pages, it is given back and not tried again
    /// soon.
    #[test]
    fn a_page_less_that_costs_is_given_back() {
        let mut sim = Sim::new();
        sim.limit = 6;
        let seen = sim.run(40, 0.8, |limit| 10 * limit as u64);
        assert!(seen.iter().all(|&l| l >= 5), "{seen:?}");
        // Tried after 4, 8 and 16 intervals at 6 (the back-off doubles),
        // each time for one trial.
        let at_five = seen.iter().filter(|&&l| l == 5).count();
        assert!(at_five <= 12, "{at_five} of 40 intervals a page less: {seen:?}");
        let down = seen.windows(2).filter(|w| w[1] < w[0]).count();
        assert!(down <= 3, "tried {down} times in 40 intervals: {seen:?}");
    }

    /// A busy CPU admits nothing, a saturated one takes a page back at
    /// once, and a moment of idle CPU in a busy stretch is not a reason to
    /// try one.
    #[test]
    fn the_cpu_gates_a_page_more() {
        let mut sim = Sim::new();
        let seen = sim.run(30, 0.85, |limit| 10 * limit as u64);
        assert!(seen.iter().all(|&l| l == 4), "{seen:?}");
        let mut sim = Sim::new();
        sim.c = Controller::new(Admission {
            sustain: Duration::from_secs(4),
            ..sim.c.cfg.clone()
        });
        sim.run(8, 0.9, |limit| 10 * limit as u64);
        assert_eq!(sim.tick(0.2, 40), 4, "one idle interval after busy ones");
        sim.limit = 6;
        assert_eq!(sim.tick(0.99, 60), 5, "saturated: one back at once");
        // Never below the start.
        sim.limit = 4;
        assert_eq!(sim.tick(0.99, 40), 4);
    }

    /// Without trials a page more is kept (the CPU alone decides), and
    /// nothing is taken back but on saturation.
    #[test]
    fn without_trials_the_cpu_decides() {
        let cfg = Admission {
            interval: Duration::from_secs(1),
            sustain: Duration::from_secs(1),
            trial: Duration::ZERO,
            ..Admission::default()
        };
        let mut c = Controller::new(cfg.clone());
        let mut cpu = (0, 0);
        let mut limit = 4;
        for _ in 0..10 {
            cpu = (cpu.0 + 30, cpu.1 + 100);
            let r = Reading {
                cpu: Some(cpu),
                free_mib: Some(8_000),
                waiting: 3,
                in_use: limit,
                granted: 0,
            };
            limit = c.step(limit, 4, 8, r);
        }
        assert_eq!(limit, 8);
        // Low memory or unknown CPU: hold.
        for (free, known) in [(Some(100), true), (Some(8_000), false)] {
            let mut c = Controller::new(cfg.clone());
            let mut cpu = (0, 0);
            for _ in 0..10 {
                cpu = (cpu.0 + 30, cpu.1 + 100);
                let r = Reading {
                    cpu: known.then_some(cpu),
                    free_mib: free,
                    waiting: 3,
                    in_use: 4,
                    granted: 0,
                };
                assert_eq!(c.step(4, 4, 8, r), 4);
            }
        }
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
