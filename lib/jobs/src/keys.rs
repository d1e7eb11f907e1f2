//! Artefact keys: the same layout in S3 and on disk (DESIGN.md).

use crate::{JobId, JobKind};

/// Returns `jobs/<kind>/<id>/<name>`.
pub fn job_artifact(kind: JobKind, id: JobId, name: &str) -> String {
    format!("jobs/{kind}/{id}/{name}")
}

/// Returns `jobs/<kind>/<id>/result.json`.
pub fn job_result(kind: JobKind, id: JobId) -> String {
    job_artifact(kind, id, "result.json")
}

/// Returns `batches/<batch-id>/manifest.jsonl`.
pub fn batch_manifest(batch_id: &str) -> String {
    format!("batches/{batch_id}/manifest.jsonl")
}

/// Returns `batches/<batch-id>/skipped.jsonl`: a crawl's URLs found and
/// not taken, one [`SkippedUrl`](crate::SkippedUrl) a line, each once.
pub fn batch_skipped(batch_id: &str) -> String {
    format!("batches/{batch_id}/skipped.jsonl")
}

/// Returns `batches/<batch-id>/summary.json`.
pub fn batch_summary(batch_id: &str) -> String {
    format!("batches/{batch_id}/summary.json")
}

/// Returns `batches/<batch-id>/batch.json`: what was submitted (total, job
/// ids), written before the first job is published.
pub fn batch_record(batch_id: &str) -> String {
    format!("batches/{batch_id}/batch.json")
}

/// Returns `batches/<batch-id>/jobs.jsonl`: each published job's spec,
/// without the credentials it may carry (headers, cookies, basic auth, a
/// proxy), so its failed jobs can be submitted again.
pub fn batch_jobs(batch_id: &str) -> String {
    format!("batches/{batch_id}/jobs.jsonl")
}

/// Returns `batches/<batch-id>/cancelled.json`: written when the batch is
/// cancelled; workers skip the batch's jobs they have not started.
pub fn batch_cancelled(batch_id: &str) -> String {
    format!("batches/{batch_id}/cancelled.json")
}

/// Returns `batches/<batch-id>/released/`: where a batch released host by
/// host by the scheduler logs the jobs it has published.
pub fn batch_released_prefix(batch_id: &str) -> String {
    format!("batches/{batch_id}/released/")
}

/// Returns `batches/<batch-id>/released/<seq>.jsonl`: one round of jobs
/// the scheduler published for a batch it releases host by host, one job
/// id a line, written after the broker confirmed them.
pub fn batch_released(batch_id: &str, seq: u64) -> String {
    format!("{}{seq:012}.jsonl", batch_released_prefix(batch_id))
}

/// Where the batches the scheduler releases host by host are listed
/// while they run.
pub const GATED_PREFIX: &str = "gated/";

/// Returns `gated/<batch-id>.json`: a batch the scheduler releases host by
/// host, with its per-host limits, kept until the batch completes so a
/// restarted scheduler takes it up again.
pub fn gated_batch(batch_id: &str) -> String {
    format!("{GATED_PREFIX}{batch_id}.json")
}

/// Where the crawls a scheduler daemon runs are listed while they run.
pub const CRAWLING_PREFIX: &str = "crawling/";

/// Returns `crawling/<batch-id>.json`: a crawl the scheduler daemon runs,
/// with what it was asked (credentials taken out), kept until the crawl
/// ends so a restarted scheduler takes it up again.
pub fn crawl_listing(batch_id: &str) -> String {
    format!("{CRAWLING_PREFIX}{batch_id}.json")
}

/// Returns `orphans/<batch-id>/<job-id>.json`: a report the scheduler
/// received for a batch its store has no record of (submitted to another
/// store), kept there instead of dropped. Characters of the batch id other
/// than letters, digits, `.`, `_` and `-` become `_`.
pub fn orphan_report(batch_id: &str, job_id: JobId) -> String {
    let batch: String = batch_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    let batch = if batch.is_empty() || batch.starts_with('.') {
        format!("_{batch}")
    } else {
        batch
    };
    format!("orphans/{batch}/{job_id}.json")
}

/// Returns `sessions/<session-id>/<name>`.
pub fn session_artifact(session_id: &str, name: &str) -> String {
    format!("sessions/{session_id}/{name}")
}

/// Returns `sessions/<session-id>/steps.jsonl`.
pub fn session_steps(session_id: &str) -> String {
    session_artifact(session_id, "steps.jsonl")
}
