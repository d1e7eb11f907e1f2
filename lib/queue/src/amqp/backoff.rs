//! The pause between attempts to reach the broker again and what to log
//! about them: capped exponential backoff with jitter (so a fleet of
//! workers does not reconnect in step), one warning when the broker goes
//! away, a reminder while it stays away, one line when it is back.
//! Before this a consumer logged every attempt, and a caller that polled
//! `next()` inside a `select!` restarted the backoff at its first step.

use std::time::Duration;

use tokio::time::Instant;

/// The first step of the backoff.
pub(super) const START: Duration = Duration::from_millis(100);
/// The largest step while re-subscribing (a broker back after a restart is
/// found within this).
pub(super) const SUBSCRIBE_MAX: Duration = Duration::from_secs(10);
/// The largest step of an operation bounded by `reconnect_timeout`.
pub(super) const OPERATION_MAX: Duration = Duration::from_secs(2);
/// How often a failure that goes on is reported again.
pub(super) const REMIND_EVERY: Duration = Duration::from_secs(60);

/// What to log about one failed attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Report {
    /// The first failure after a success: the state changed, say so.
    Warn,
    /// Still failing, [`REMIND_EVERY`] after the last report.
    Remind,
    /// Nothing new: debug level at most.
    Quiet,
}

/// The state of a run of failed attempts.
#[derive(Debug)]
pub(super) struct Backoff {
    step: Duration,
    cap: Duration,
    failures: u32,
    down_since: Option<Instant>,
    reported_at: Option<Instant>,
}

impl Backoff {
    /// A backoff from [`START`] doubling up to `cap`.
    pub(super) fn new(cap: Duration) -> Self {
        Self {
            step: START,
            cap,
            failures: 0,
            down_since: None,
            reported_at: None,
        }
    }

    /// Records a failed attempt at `now`. Returns the pause before the
    /// next attempt, somewhere in the upper half of the current step
    /// (`jitter` in `[0, 1)` picks where), and what to log.
    pub(super) fn failed(&mut self, now: Instant, jitter: f64) -> (Duration, Report) {
        self.failures += 1;
        let step = self.step;
        self.step = (self.step * 2).min(self.cap);
        let pause = step / 2 + step.mul_f64(jitter.clamp(0.0, 1.0) / 2.0);
        let report = match (self.down_since, self.reported_at) {
            (None, _) => {
                self.down_since = Some(now);
                self.reported_at = Some(now);
                Report::Warn
            }
            (Some(_), Some(last)) if now.duration_since(last) >= REMIND_EVERY => {
                self.reported_at = Some(now);
                Report::Remind
            }
            _ => Report::Quiet,
        };
        (pause, report)
    }

    /// Records a success at `now`; returns how long the failures before it
    /// lasted and how many there were, when there were any.
    pub(super) fn succeeded(&mut self, now: Instant) -> Option<(Duration, u32)> {
        let failures = std::mem::take(&mut self.failures);
        self.step = START;
        self.reported_at = None;
        let since = self.down_since.take()?;
        Some((now.duration_since(since), failures))
    }

    /// Failed attempts since the last success.
    pub(super) fn failures(&self) -> u32 {
        self.failures
    }

    /// How long the attempts have been failing at `now`.
    pub(super) fn down_for(&self, now: Instant) -> Duration {
        self.down_since.map(|s| now.duration_since(s)).unwrap_or_default()
    }
}

/// Returns a jitter fraction in `[0, 1)` from the standard library's
/// per-process hash randomness (no RNG crate for one number).
pub(super) fn jitter() -> f64 {
    use std::hash::BuildHasher;
    let bits = std::collections::hash_map::RandomState::new().hash_one(0u64);
    (bits >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[tokio::test(start_paused = true)]
    async fn steps_double_to_the_cap_within_their_jitter() {
        let mut b = Backoff::new(SUBSCRIBE_MAX);
        let mut lows = Vec::new();
        let mut highs = Vec::new();
        for _ in 0..10 {
            lows.push(b.failed(Instant::now(), 0.0).0);
        }
        let mut b = Backoff::new(SUBSCRIBE_MAX);
        for _ in 0..10 {
            highs.push(b.failed(Instant::now(), 0.999_999).0);
        }
        assert_eq!(
            lows,
            [50, 100, 200, 400, 800, 1_600, 3_200, 5_000, 5_000, 5_000].map(ms)
        );
        for (low, high) in lows.iter().zip(&highs) {
            assert!(high > low && *high <= *low * 2, "{low:?} .. {high:?}");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_ten_second_outage_warns_once_then_says_when_it_is_back() {
        let mut b = Backoff::new(SUBSCRIBE_MAX);
        let started = Instant::now();
        let mut reports = Vec::new();
        while started.elapsed() < Duration::from_secs(10) {
            let (pause, report) = b.failed(Instant::now(), 0.5);
            reports.push(report);
            tokio::time::advance(pause).await;
        }
        let warned = reports.iter().filter(|r| **r != Report::Quiet).count();
        assert_eq!(warned, 1, "{reports:?}");
        assert_eq!(reports[0], Report::Warn);
        // Ten seconds of a broker that is down take a handful of attempts, not 75.
        assert!(reports.len() <= 10, "{} attempts in 10 s", reports.len());
        let (down, failures) = b.succeeded(Instant::now()).expect("was down");
        assert!(down >= Duration::from_secs(9), "{down:?}");
        assert_eq!(failures as usize, reports.len());
        assert_eq!(
            b.failed(Instant::now(), 0.0),
            (ms(50), Report::Warn),
            "a new outage starts over"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_long_outage_is_reminded_every_minute() {
        let mut b = Backoff::new(SUBSCRIBE_MAX);
        let started = Instant::now();
        let mut reminders = 0;
        while started.elapsed() < Duration::from_secs(185) {
            let (pause, report) = b.failed(Instant::now(), 0.5);
            reminders += usize::from(report == Report::Remind);
            tokio::time::advance(pause).await;
        }
        assert_eq!(reminders, 3);
        assert!(b.down_for(Instant::now()) >= Duration::from_secs(185));
    }

    #[test]
    fn jitter_is_a_fraction() {
        for _ in 0..100 {
            let j = jitter();
            assert!((0.0..1.0).contains(&j), "{j}");
        }
    }
}
