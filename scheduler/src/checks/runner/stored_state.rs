//! A check's state in the store, written only over the version it was
//! read at: a scheduler that loses to another sharing the store reads it
//! again and applies its change again, so no run folded and no skipped
//! tick is lost, and a change alerts once.

use bytes::Bytes;
use chrono::Utc;
use oxwright_artifacts::{ArtifactError, Expect};
use oxwright_checks::{Check, CheckRun, state_key};

use super::CheckRunner;
use crate::checks::outbox::PendingAlert;
use crate::checks::state::{AlertRule, CheckState};

/// How many times a state change is folded again after losing a
/// conditional write to another scheduler before it is given up.
const STATE_WRITE_TRIES: usize = 16;

impl CheckRunner {
    pub(super) async fn count_skipped(&self, name: &str) {
        if let Err(err) = self.update_state(name, |state| state.skipped_ticks += 1).await {
            tracing::warn!(check = %name, error = %err, "skipped tick not counted");
        }
        crate::checks::metrics::record_skipped(name);
        tracing::info!(check = %name, "tick skipped: the last run is still going");
    }

    /// The state of `name` (a new one when none is stored).
    pub async fn state(&self, name: &str) -> CheckState {
        match self.store.get(&state_key(name)).await {
            Ok(bytes) => serde_json::from_slice(&bytes).unwrap_or_else(|_| CheckState::new(name)),
            Err(_) => CheckState::new(name),
        }
    }

    /// `name`'s stored state (a new one when none is stored) and what a
    /// write over it expects to find.
    async fn read_state(&self, name: &str) -> Result<(CheckState, Expect), ArtifactError> {
        match self.store.get_versioned(&state_key(name)).await {
            Ok((bytes, version)) => Ok((
                serde_json::from_slice(&bytes).unwrap_or_else(|_| CheckState::new(name)),
                Expect::Version(version),
            )),
            Err(ArtifactError::NotFound { .. }) => Ok((CheckState::new(name), Expect::Absent)),
            Err(err) => Err(err),
        }
    }

    /// Writes `state` over the version it was read at; a
    /// [`ArtifactError::Conflict`] says another scheduler wrote it meanwhile.
    async fn write_state(&self, state: &CheckState, expect: &Expect) -> Result<(), ArtifactError> {
        let body = serde_json::to_vec(state).expect("states serialise");
        self.store
            .put_if(
                &state_key(&state.check),
                Bytes::from(body),
                "application/json",
                expect,
            )
            .await
            .map(|_| ())
    }

    /// Applies `change` to `name`'s stored state and writes it over the
    /// version it read, reading and applying again when another scheduler
    /// wrote it meanwhile.
    async fn update_state(
        &self,
        name: &str,
        change: impl Fn(&mut CheckState),
    ) -> Result<CheckState, ArtifactError> {
        for _ in 0..STATE_WRITE_TRIES {
            let (mut state, expect) = self.read_state(name).await?;
            change(&mut state);
            match self.write_state(&state, &expect).await {
                Ok(()) => return Ok(state),
                Err(ArtifactError::Conflict { .. }) => {
                    tracing::debug!(check = %name, "check state written by another scheduler meanwhile; applying again");
                }
                Err(err) => return Err(err),
            }
        }
        Err(ArtifactError::Conflict { key: state_key(name) })
    }

    /// Folds `record` into `check`'s state; the alert the change raises
    /// goes to the outbox before the state is written, so a scheduler
    /// that stops in between still sends it. A fold that loses its
    /// conditional write to another scheduler's takes its alert back and
    /// folds again over the state that won.
    pub(super) async fn fold_run(
        &self,
        check: &Check,
        run_id: &str,
        record: &CheckRun,
    ) -> (CheckState, Option<PendingAlert>) {
        let rule = AlertRule {
            after: check.alert.after,
            reminder_every: check.alert.reminder_every,
        };
        let mut tries = 0;
        loop {
            tries += 1;
            let (mut state, expect) = match self.read_state(&check.name).await {
                Ok(read) => read,
                Err(err) => {
                    tracing::warn!(check = %check.name, error = %err, "check state not read; folding into a new one");
                    (CheckState::new(&check.name), Expect::Absent)
                }
            };
            let event = state.fold(run_id, record.status.is_pass(), Utc::now(), rule);
            let alert = match (event, &check.alert.webhook) {
                (Some(event), Some(webhook)) => Some(PendingAlert {
                    id: format!("{run_id}-{}", event.as_str().trim_start_matches("check.")),
                    check: check.name.clone(),
                    webhook: webhook.to_string(),
                    event: event.as_str().to_string(),
                    body: crate::checks::alert_body(event, record, &state),
                }),
                _ => None,
            };
            if let Some(alert) = &alert
                && let Err(err) = self.outbox.put(alert).await
            {
                tracing::warn!(check = %check.name, error = %err, "alert not written to the outbox");
            }
            match self.write_state(&state, &expect).await {
                Err(ArtifactError::Conflict { .. }) if tries < STATE_WRITE_TRIES => {
                    tracing::debug!(check = %check.name, "check state written by another scheduler meanwhile; folding again");
                    if let Some(alert) = &alert
                        && let Err(err) = self.outbox.withdraw(alert).await
                    {
                        tracing::warn!(check = %check.name, error = %err, "alert of a lost fold not withdrawn");
                    }
                }
                Err(err) => {
                    tracing::warn!(check = %check.name, error = %err, "check state not written");
                    return (state, alert);
                }
                Ok(()) => return (state, alert),
            }
        }
    }
}
