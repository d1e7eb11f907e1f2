//! When a check runs on its own: a fixed interval (`every = "30s"`) or a
//! cron expression in the scheduler's format (`cron = "0 */5 * * * *"`,
//! seconds first, UTC), and the durations the check file writes.

use std::str::FromStr;
use std::time::Duration;

use chrono::{DateTime, Utc};

/// A check's schedule.
#[derive(Debug, Clone, PartialEq)]
pub enum Schedule {
    /// Every this long (`every = "30s"`).
    Every(Duration),
    /// At each tick of a cron expression (`cron = "…"`).
    Cron(CronSchedule),
}

impl Schedule {
    /// Returns the first time the check is due strictly after `after`.
    pub fn next_after(&self, after: DateTime<Utc>) -> Option<DateTime<Utc>> {
        match self {
            Schedule::Every(every) => chrono::Duration::from_std(*every)
                .ok()
                .and_then(|d| after.checked_add_signed(d)),
            Schedule::Cron(cron) => cron.schedule.after(&after).next(),
        }
    }
}

impl std::fmt::Display for Schedule {
    /// As the check file writes it: `every 30s`, `cron 0 */5 * * * *`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Schedule::Every(every) => write!(f, "every {}", humantime::format_duration(*every)),
            Schedule::Cron(cron) => write!(f, "cron {}", cron.expression),
        }
    }
}

/// A parsed cron expression with the text it was written as. The format is
/// the scheduler's `[[scheduler.schedules]]` one: `sec min hour day month
/// weekday [year]`, in UTC.
#[derive(Debug, Clone)]
pub struct CronSchedule {
    expression: String,
    // Boxed: the parsed schedule is large beside an interval.
    schedule: Box<cron::Schedule>,
}

impl CronSchedule {
    /// Parses `expression`; the error says what the cron parser refused.
    pub fn parse(expression: &str) -> Result<Self, String> {
        let schedule = cron::Schedule::from_str(expression.trim()).map_err(|e| e.to_string())?;
        Ok(Self {
            expression: expression.trim().to_string(),
            schedule: Box::new(schedule),
        })
    }

    /// Returns the expression as written (trimmed).
    pub fn expression(&self) -> &str {
        &self.expression
    }

    /// Returns the parsed schedule.
    pub fn schedule(&self) -> &cron::Schedule {
        &self.schedule
    }
}

impl PartialEq for CronSchedule {
    fn eq(&self, other: &Self) -> bool {
        self.expression == other.expression
    }
}

/// Parses a humantime-style duration (`30s`, `5m`, `1h 30m`, `250ms`) that
/// is not zero.
pub(crate) fn parse_duration(text: &str) -> Result<Duration, String> {
    let d = humantime::parse_duration(text.trim())
        .map_err(|e| format!("`{text}` is not a duration like \"30s\", \"5m\" or \"1h 30m\" ({e})"))?;
    if d.is_zero() {
        return Err(format!("`{text}` is zero; give a positive duration"));
    }
    Ok(d)
}
