//! `submit --wait`: polls the store until the scheduler daemon has written
//! the batch summary, showing progress (done/total, failed by kind) on
//! stderr from the manifest the daemon flushes as reports arrive; when the
//! wait limit runs out, says how far the batch got and what that means.

use std::collections::{BTreeMap, HashSet};
use std::io::{IsTerminal as _, Write as _};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use oxwright_artifacts::{ArtifactError, ArtifactStore};
use oxwright_jobs::{ReportStatus, keys};
use oxwright_scheduler::BatchSummary;
use serde::Deserialize;

/// How often the summary is looked for.
const SUMMARY_POLL: Duration = Duration::from_millis(500);
/// Shortest and longest pause between two manifest reads. Between them the
/// pause is 20× the last read's time, so a large manifest (the store has
/// no range reads) costs at most ~5 % of the wait.
const MANIFEST_MIN: Duration = Duration::from_secs(1);
const MANIFEST_MAX: Duration = Duration::from_secs(30);

/// The part of a manifest line progress needs.
#[derive(Deserialize)]
struct Line {
    job_id: String,
    status: ReportStatus,
    #[serde(default)]
    error: Option<LineError>,
}

#[derive(Deserialize)]
struct LineError {
    kind: String,
}

/// How far a batch has got, from its manifest.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Progress {
    /// Jobs with a manifest line.
    pub done: usize,
    /// Of those, failed ones.
    pub failed: usize,
    /// Failures by error kind.
    pub failed_by_kind: BTreeMap<String, usize>,
}

impl Progress {
    /// Counts the lines of a manifest (JSON lines; a line cut by a
    /// concurrent write, or repeated, is not counted twice).
    pub(crate) fn of_manifest(body: &[u8]) -> Self {
        let mut seen = HashSet::new();
        let mut p = Progress::default();
        for raw in body.split(|b| *b == b'\n') {
            let Ok(line) = serde_json::from_slice::<Line>(raw) else {
                continue;
            };
            if !seen.insert(line.job_id) {
                continue;
            }
            p.done += 1;
            if line.status == ReportStatus::Failed {
                p.failed += 1;
                let kind = line.error.map(|e| e.kind).unwrap_or_else(|| "unknown".into());
                *p.failed_by_kind.entry(kind).or_default() += 1;
            }
        }
        p
    }

    /// Renders `3/6 done, 2 failed (http_status 1, timeout 1)`.
    pub(crate) fn describe(&self, total: usize) -> String {
        let mut s = format!("{}/{total} done", self.done);
        if self.failed > 0 {
            let kinds: Vec<String> = self
                .failed_by_kind
                .iter()
                .map(|(k, n)| format!("{k} {n}"))
                .collect();
            s.push_str(&format!(", {} failed ({})", self.failed, kinds.join(", ")));
        }
        s
    }
}

/// Waits for the summary of `batch_id` (`total` manifest lines expected)
/// for at most `limit`, showing progress on stderr.
pub(crate) async fn wait_for_summary(
    store: &dyn ArtifactStore,
    batch_id: &str,
    total: usize,
    limit: Duration,
) -> anyhow::Result<BatchSummary> {
    let summary_key = keys::batch_summary(batch_id);
    let manifest_key = keys::batch_manifest(batch_id);
    let tty = std::io::stderr().is_terminal();
    let started = Instant::now();
    let mut progress = Progress::default();
    let mut shown: Option<Progress> = None;
    let mut next_manifest = Instant::now();
    loop {
        match store.get(&summary_key).await {
            Ok(body) => {
                if tty && shown.is_some() {
                    eprint!("\r\x1b[2K");
                }
                return serde_json::from_slice(&body).context("reading the batch summary");
            }
            Err(ArtifactError::NotFound { .. }) => {}
            Err(err) => tracing::warn!(error = %err, "reading the batch summary failed; retrying"),
        }
        if Instant::now() >= next_manifest {
            let read = Instant::now();
            match store.get(&manifest_key).await {
                Ok(body) => progress = Progress::of_manifest(&body),
                Err(ArtifactError::NotFound { .. }) => {}
                Err(err) => tracing::debug!(error = %err, "reading the batch manifest failed"),
            }
            next_manifest = Instant::now() + (read.elapsed() * 20).clamp(MANIFEST_MIN, MANIFEST_MAX);
        }
        let elapsed = started.elapsed();
        if shown.as_ref() != Some(&progress) || tty {
            let line = format!(
                "batch {batch_id}: {}, {} s",
                progress.describe(total),
                elapsed.as_secs()
            );
            if tty {
                eprint!("\r\x1b[2K{line}");
                let _ = std::io::stderr().flush();
            } else {
                eprintln!("{line}");
            }
            shown = Some(progress.clone());
        }
        if elapsed >= limit {
            if tty {
                eprintln!();
            }
            anyhow::bail!(gave_up(batch_id, total, &progress, limit, &manifest_key));
        }
        tokio::time::sleep(SUMMARY_POLL).await;
    }
}

/// Says what a wait that ran out means: the batch itself goes on.
fn gave_up(batch_id: &str, total: usize, p: &Progress, limit: Duration, manifest: &str) -> String {
    let why = if p.done == 0 {
        "no job has reported yet: are `oxwright scheduler` and `oxwright worker` running on this \
         broker and store?"
            .to_string()
    } else {
        format!(
            "the batch goes on without this command; the scheduler writes {} when the last job \
             reports, and {manifest} holds the lines so far",
            keys::batch_summary(batch_id)
        )
    };
    format!(
        "stopped waiting for batch {batch_id} after {} s (--wait-timeout-s) at {}; {why}",
        limit.as_secs(),
        p.describe(total)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifest_lines_count_once_by_kind() {
        let body = br#"{"job_id":"a","kind":"fetch","url":"u","status":"ok","attempt":1,"duration_ms":1,"finished_at":"2026-01-01T00:00:00Z"}
{"job_id":"b","kind":"fetch","url":"u","status":"failed","error":{"kind":"http_status","message":"404"},"attempt":1,"duration_ms":1,"finished_at":"2026-01-01T00:00:00Z"}
{"job_id":"b","kind":"fetch","url":"u","status":"failed","error":{"kind":"http_status","message":"404"},"attempt":1,"duration_ms":1,"finished_at":"2026-01-01T00:00:00Z"}
{"job_id":"c","kind":"fetch","url":"u","status":"failed","error":{"kind":"timeout","message":"slow"},"attempt":3,"duration_ms":1,"finished_at":"2026-01-01T00:00:00Z"}
{"job_id":"d","kind":"fe"#;
        let p = Progress::of_manifest(body);
        assert_eq!(p.done, 3);
        assert_eq!(p.failed, 2);
        assert_eq!(p.describe(6), "3/6 done, 2 failed (http_status 1, timeout 1)");
        assert_eq!(Progress::default().describe(6), "0/6 done");
    }

    #[test]
    fn running_out_says_what_happened() {
        let none = gave_up("b1", 4, &Progress::default(), Duration::from_secs(2), "m");
        assert!(
            none.contains("after 2 s (--wait-timeout-s) at 0/4 done"),
            "{none}"
        );
        assert!(
            none.contains("are `oxwright scheduler` and `oxwright worker` running"),
            "{none}"
        );
        let some = Progress {
            done: 1,
            ..Default::default()
        };
        let msg = gave_up(
            "b1",
            4,
            &some,
            Duration::from_secs(2),
            "batches/b1/manifest.jsonl",
        );
        assert!(msg.contains("the batch goes on"), "{msg}");
    }
}
