//! Each scheduled check's clock: at every due time the check is started,
//! unless its last run is still going (then the tick is skipped and
//! counted in its state).

use std::sync::Arc;

use chrono::Utc;
use oxwright_checks::Trigger;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::{CheckRunner, TriggerError};

/// Spawns on `tasks` one clock per check with a schedule, until `shutdown`.
pub fn run_schedules(runner: &Arc<CheckRunner>, tasks: &TaskTracker, shutdown: &CancellationToken) {
    for (name, check) in runner.checks() {
        let Some(schedule) = check.schedule.clone() else {
            continue;
        };
        let (runner, shutdown, name) = (runner.clone(), shutdown.clone(), name.clone());
        tasks.spawn(async move {
            tracing::info!(check = %name, "check scheduled");
            let mut last = Utc::now();
            loop {
                let Some(next) = schedule.next_after(last) else {
                    tracing::info!(check = %name, "check schedule has no further ticks");
                    return;
                };
                let wait = (next - Utc::now()).to_std().unwrap_or_default();
                tokio::select! {
                    _ = shutdown.cancelled() => return,
                    _ = tokio::time::sleep(wait) => {}
                }
                last = next.max(Utc::now());
                match runner
                    .trigger(&name, Trigger::Schedule, None, Default::default(), false)
                    .await
                {
                    Ok(_) | Err(TriggerError::Running(_)) => {}
                    Err(err) => tracing::warn!(check = %name, error = %err, "scheduled check not started"),
                }
            }
        });
    }
}
