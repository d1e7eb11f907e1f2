//! A check's state and the alerts its changes raise: `passing` turns
//! `failing` after `after` consecutive failed runs (one `check.failed`),
//! a run that passes while failing turns it `recovered` (one
//! `check.recovered`), and the next pass `passing` again; while it stays
//! failing, a `check.reminder` at most every `reminder_every`. Never one
//! alert per failed run. Pure: the daemon loads, folds and stores.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// Where a check stands.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Health {
    /// No run yet.
    #[default]
    Unknown,
    /// The last runs passed (or failed fewer than `after` times in a row).
    Passing,
    /// `after` or more runs in a row failed; an alert went out.
    Failing,
    /// The run after a failing spell passed; the next pass makes it `passing`.
    Recovered,
}

/// A check's state, kept at `checks/<name>/state.json`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CheckState {
    /// The check.
    pub check: String,
    /// Where it stands.
    pub health: Health,
    /// Failed runs in a row (0 after a pass).
    pub consecutive_failures: u32,
    /// Runs folded in so far.
    pub runs: u64,
    /// The last run folded in (its id): a report folded twice changes nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_run: Option<String>,
    /// When the last run finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_run_at: Option<DateTime<Utc>>,
    /// When it turned failing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failing_since: Option<DateTime<Utc>>,
    /// When the last alert of the current failing spell was raised.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_alert_at: Option<DateTime<Utc>>,
    /// Ticks skipped because the previous run was still going.
    #[serde(default)]
    pub skipped_ticks: u64,
}

/// An alert a change of state raises.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum AlertEvent {
    /// The check turned failing.
    #[serde(rename = "check.failed")]
    Failed,
    /// The check came back.
    #[serde(rename = "check.recovered")]
    Recovered,
    /// The check is still failing.
    #[serde(rename = "check.reminder")]
    Reminder,
}

impl AlertEvent {
    /// The event's name, as the alert body and its header carry it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Failed => "check.failed",
            Self::Recovered => "check.recovered",
            Self::Reminder => "check.reminder",
        }
    }
}

/// When a check alerts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AlertRule {
    /// Consecutive failed runs before it turns failing (at least 1).
    pub after: u32,
    /// How often a reminder goes out while it stays failing.
    pub reminder_every: Option<std::time::Duration>,
}

impl CheckState {
    /// A new check's state.
    pub fn new(check: &str) -> Self {
        Self {
            check: check.to_string(),
            ..Self::default()
        }
    }

    /// Folds in run `run_id`, which `passed` (a flaky run passed) and
    /// finished `at`; returns the alert it raises, if any. A run already
    /// folded in changes nothing and raises nothing.
    pub fn fold(
        &mut self,
        run_id: &str,
        passed: bool,
        at: DateTime<Utc>,
        rule: AlertRule,
    ) -> Option<AlertEvent> {
        if self.last_run.as_deref() == Some(run_id) {
            return None;
        }
        self.runs += 1;
        self.last_run = Some(run_id.to_string());
        self.last_run_at = Some(at);
        if passed {
            self.consecutive_failures = 0;
            let was = self.health;
            self.health = if was == Health::Failing {
                Health::Recovered
            } else {
                Health::Passing
            };
            if was == Health::Failing {
                self.failing_since = None;
                self.last_alert_at = None;
                return Some(AlertEvent::Recovered);
            }
            return None;
        }
        self.consecutive_failures += 1;
        if self.health == Health::Failing {
            let due = match (rule.reminder_every, self.last_alert_at) {
                (Some(every), Some(last)) => {
                    at.signed_duration_since(last).to_std().unwrap_or_default() >= every
                }
                _ => false,
            };
            if due {
                self.last_alert_at = Some(at);
                return Some(AlertEvent::Reminder);
            }
            return None;
        }
        if self.consecutive_failures >= rule.after.max(1) {
            self.health = Health::Failing;
            self.failing_since = Some(at);
            self.last_alert_at = Some(at);
            return Some(AlertEvent::Failed);
        }
        if self.health == Health::Unknown || self.health == Health::Recovered {
            self.health = Health::Passing;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn at(seconds: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_700_000_000 + seconds, 0).unwrap()
    }

    fn run(state: &mut CheckState, n: i64, passed: bool, rule: AlertRule) -> Option<AlertEvent> {
        state.fold(&format!("r{n}"), passed, at(n * 60), rule)
    }

    #[test]
    fn one_alert_when_it_turns_and_one_when_it_comes_back() {
        let rule = AlertRule {
            after: 2,
            reminder_every: None,
        };
        let mut s = CheckState::new("login");
        let outcomes = [true, false, true, false, false, false, false, true, true];
        let alerts: Vec<_> = outcomes
            .iter()
            .enumerate()
            .map(|(n, passed)| run(&mut s, n as i64, *passed, rule))
            .collect();
        assert_eq!(
            alerts,
            [
                None,
                None,
                None,
                None,
                Some(AlertEvent::Failed),
                None,
                None,
                Some(AlertEvent::Recovered),
                None
            ],
            "a single failure under `after` alerts no one, a failing spell once"
        );
        assert_eq!(s.health, Health::Passing);
        assert_eq!(s.runs, 9);
    }

    #[test]
    fn reminders_while_it_stays_down_and_a_report_folded_twice_counts_once() {
        let rule = AlertRule {
            after: 1,
            reminder_every: Some(Duration::from_secs(150)),
        };
        let mut s = CheckState::new("login");
        assert_eq!(run(&mut s, 0, false, rule), Some(AlertEvent::Failed));
        assert_eq!(run(&mut s, 1, false, rule), None);
        assert_eq!(run(&mut s, 2, false, rule), None);
        assert_eq!(run(&mut s, 3, false, rule), Some(AlertEvent::Reminder));
        let before = s.clone();
        assert_eq!(run(&mut s, 3, false, rule), None);
        assert_eq!(s, before, "the same run folded again changes nothing");
        assert_eq!(run(&mut s, 4, true, rule), Some(AlertEvent::Recovered));
        assert_eq!(s.health, Health::Recovered);
        assert_eq!(run(&mut s, 5, true, rule), None);
        assert_eq!(s.health, Health::Passing);
    }
}
