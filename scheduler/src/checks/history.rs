//! A check's history as the store keeps it: the checks that have runs,
//! a run log read newest first, pass rates and the step that fails most.
//! The API and the dashboard both read checks through here.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};
use oxwright_artifacts::{ArtifactError, ArtifactStore};
use oxwright_checks::{CheckRun, runs_prefix};

/// The names of the checks with anything in the store (`checks/<name>/…`).
pub async fn stored_names(store: &dyn ArtifactStore) -> Result<BTreeSet<String>, ArtifactError> {
    Ok(store
        .list("checks/")
        .await?
        .iter()
        .filter_map(|k| k.strip_prefix("checks/")?.split_once('/'))
        .map(|(name, _)| name.to_string())
        .filter(|name| oxwright_checks::validate_name(name).is_ok())
        .collect())
}

/// The stored runs of `name`, newest first (run ids sort by time), at most `limit`.
pub async fn read_runs(
    store: &dyn ArtifactStore,
    name: &str,
    limit: usize,
) -> Result<Vec<CheckRun>, ArtifactError> {
    let mut keys = store.list(&runs_prefix(name)).await?;
    keys.sort();
    keys.reverse();
    let mut runs = Vec::new();
    for key in keys.into_iter().take(limit) {
        if let Ok(bytes) = store.get(&key).await
            && let Ok(run) = serde_json::from_slice(&bytes)
        {
            runs.push(run);
        }
    }
    Ok(runs)
}

/// The share of `runs` started since `since` that passed (flaky ones
/// count as passed); none without such runs.
pub fn pass_rate(runs: &[CheckRun], since: DateTime<Utc>) -> Option<f64> {
    let recent: Vec<&CheckRun> = runs.iter().filter(|r| r.started_at >= since).collect();
    (!recent.is_empty())
        .then(|| recent.iter().filter(|r| r.status.is_pass()).count() as f64 / recent.len() as f64)
}

/// The pass rates over the last 24 hours and the last 7 days.
pub fn pass_rates(runs: &[CheckRun], now: DateTime<Utc>) -> (Option<f64>, Option<f64>) {
    (
        pass_rate(runs, now - chrono::Duration::hours(24)),
        pass_rate(runs, now - chrono::Duration::days(7)),
    )
}

/// The step the failed and flaky runs failed at most often, with how
/// often (ties go to the earlier step).
pub fn most_failing_step(runs: &[CheckRun]) -> Option<(u32, String, usize)> {
    let mut counts: BTreeMap<(u32, &str), usize> = BTreeMap::new();
    for step in runs.iter().filter_map(|r| r.failed_step.as_ref()) {
        *counts.entry((step.index, step.text.as_str())).or_default() += 1;
    }
    let most = counts.values().copied().max()?;
    counts
        .into_iter()
        .find(|(_, n)| *n == most)
        .map(|((index, text), n)| (index, text.to_string(), n))
}
