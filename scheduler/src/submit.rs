//! Submitting work to the distributed queue: a batch record in the store
//! first (so the scheduler knows what to expect), then one confirmed
//! publish per job, with the submitter's trace context in its headers.
//! Lines that are not jobs (bad URLs, refused by policy) become failed
//! reports on the results queue, so the manifest still gets their line.

use bytes::Bytes;
use chrono::{DateTime, Utc};
use oxwright_artifacts::ArtifactStore;
use oxwright_jobs::{FetchSpec, HostLimits, Job, JobError, JobId, JobKind, JobReport, JobSpec, keys};
use oxwright_queue::{Headers, JobQueue};
use serde::{Deserialize, Serialize};

use crate::batch::{BatchError, BatchLine};

/// What `batches/<id>/batch.json` holds: the batch as submitted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BatchRecord {
    /// The batch id.
    pub batch_id: String,
    /// When it was submitted.
    pub created_at: DateTime<Utc>,
    /// Manifest lines expected: jobs plus refused lines.
    pub total: usize,
    /// Every job published, in input order.
    pub jobs: Vec<BatchRecordJob>,
    /// Input lines refused before publishing (they get a failed line).
    pub refused: usize,
    /// What submitted it (`cli`, `api`, `schedule:<name>`, `webhook:<name>`).
    pub source: String,
    /// Where the batch's events are POSTed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook: Option<crate::hooks::BatchWebhook>,
    /// The batch whose failed jobs this one submits again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resubmit_of: Option<String>,
    /// Per-host limits the scheduler releases the jobs under (none: all
    /// published at once).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_host: Option<HostLimits>,
}

impl BatchRecord {
    /// Writes the record to `batches/<id>/batch.json`.
    pub async fn put(&self, store: &dyn ArtifactStore) -> Result<(), oxwright_artifacts::ArtifactError> {
        let body = serde_json::to_vec_pretty(self).expect("batch records serialise");
        store
            .put(
                &keys::batch_record(&self.batch_id),
                Bytes::from(body),
                "application/json",
            )
            .await
    }
}

/// One job of a [`BatchRecord`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BatchRecordJob {
    /// The job id.
    pub job_id: JobId,
    /// The job's kind.
    pub kind: JobKind,
    /// The URL or target.
    pub url: String,
}

/// What a submission produced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SubmitReceipt {
    /// The batch id.
    pub batch_id: String,
    /// Manifest lines expected.
    pub total: usize,
    /// Jobs published.
    pub published: usize,
    /// Lines refused before publishing.
    pub refused: usize,
    /// Where the manifest will be.
    pub manifest: String,
}

/// A batch's input expanded: the jobs to publish, and the input lines
/// refused before publishing with their typed errors.
pub type Expanded = (Vec<Job>, Vec<(String, JobError)>);

/// Builds the jobs of a fetch batch from URL-list lines: valid lines become
/// jobs from `template`, the others refusals with their typed error.
pub fn fetch_jobs(batch_id: &str, lines: Vec<BatchLine>, template: &FetchSpec) -> Expanded {
    let mut jobs = Vec::new();
    let mut refused = Vec::new();
    for line in lines {
        match line {
            BatchLine::Url(url) => {
                let mut spec = template.clone();
                spec.url = url;
                jobs.push(Job::new(JobSpec::Fetch(spec), Some(batch_id.to_owned())));
            }
            BatchLine::Invalid { text, error } => refused.push((text, error)),
        }
    }
    (jobs, refused)
}

/// Submits a batch: writes its record, publishes every job (each publish
/// confirmed by the broker) and a failed report per refused line.
pub async fn submit_batch(
    queue: &dyn JobQueue,
    store: &dyn ArtifactStore,
    batch_id: &str,
    jobs: Vec<Job>,
    refused: Vec<(String, JobError)>,
    source: &str,
) -> Result<SubmitReceipt, BatchError> {
    submit_batch_with(queue, store, batch_id, jobs, refused, source, None).await
}

/// Submits a batch like [`submit_batch`], recording `webhook` as where
/// its events go.
pub async fn submit_batch_with(
    queue: &dyn JobQueue,
    store: &dyn ArtifactStore,
    batch_id: &str,
    jobs: Vec<Job>,
    refused: Vec<(String, JobError)>,
    source: &str,
    webhook: Option<crate::hooks::BatchWebhook>,
) -> Result<SubmitReceipt, BatchError> {
    let submission = Submission {
        batch_id,
        source,
        webhook,
        per_host: None,
    };
    let (jobs, refused, record) = record_batch(queue, store, submission, jobs, refused).await?;
    for job in &jobs {
        publish_job(queue, job).await?;
    }
    publish_refused(queue, batch_id, &refused).await?;
    tracing::info!(
        batch_id,
        jobs = jobs.len(),
        refused = refused.len(),
        source,
        "batch submitted"
    );
    Ok(receipt(&record, jobs.len()))
}

/// Who submits a batch, and how it is to be released.
pub(crate) struct Submission<'a> {
    pub(crate) batch_id: &'a str,
    pub(crate) source: &'a str,
    pub(crate) webhook: Option<crate::hooks::BatchWebhook>,
    pub(crate) per_host: Option<HostLimits>,
}

/// Writes a batch's `jobs.jsonl` and its record (and, when it is released
/// host by host, its `gated/` entry between the two); returns the jobs
/// the queue takes, every refused line, and the record.
pub(crate) async fn record_batch(
    queue: &dyn JobQueue,
    store: &dyn ArtifactStore,
    submission: Submission<'_>,
    jobs: Vec<Job>,
    refused: Vec<(String, JobError)>,
) -> Result<(Vec<Job>, Vec<(String, JobError)>, BatchRecord), BatchError> {
    let batch_id = submission.batch_id;
    // Every job names the store its results must reach: a worker writing
    // to another refuses it rather than lose them there.
    let store_id = oxwright_artifacts::store_id(store).await?;
    // A job the queue would refuse becomes its line's typed refusal.
    let max_bytes = queue.max_message_bytes();
    let mut refused = refused;
    let jobs: Vec<Job> = jobs
        .into_iter()
        .map(|mut job| {
            job.store_id = Some(store_id.clone());
            job
        })
        .filter_map(|job| match oxwright_queue::encode_job(&job, max_bytes) {
            Ok(_) => Some(job),
            Err(err) => {
                refused.push((
                    job.url().to_owned(),
                    crate::batch::input::too_large_error(job.url(), &err),
                ));
                None
            }
        })
        .collect();
    let record = BatchRecord {
        batch_id: batch_id.to_owned(),
        created_at: Utc::now(),
        total: jobs.len() + refused.len(),
        jobs: jobs
            .iter()
            .map(|job| BatchRecordJob {
                job_id: job.id,
                kind: job.kind(),
                url: job.url().to_owned(),
            })
            .collect(),
        refused: refused.len(),
        source: submission.source.to_owned(),
        webhook: submission.webhook,
        resubmit_of: submission.source.strip_prefix(RESUBMIT_SOURCE).map(str::to_owned),
        per_host: submission.per_host,
    };
    store
        .put(
            &keys::batch_jobs(batch_id),
            job_lines(&jobs),
            "application/x-ndjson",
        )
        .await?;
    if let Some(limits) = submission.per_host {
        list_gated(store, batch_id, limits).await?;
    }
    record.put(store).await?;
    Ok((jobs, refused, record))
}

pub(crate) async fn publish_refused(
    queue: &dyn JobQueue,
    batch_id: &str,
    refused: &[(String, JobError)],
) -> Result<(), BatchError> {
    for (text, error) in refused.iter().cloned() {
        queue
            .publish_report(&refused_report(batch_id, &text, error))
            .await?;
    }
    Ok(())
}

pub(crate) fn receipt(record: &BatchRecord, published: usize) -> SubmitReceipt {
    SubmitReceipt {
        batch_id: record.batch_id.clone(),
        total: record.total,
        published,
        refused: record.refused,
        manifest: keys::batch_manifest(&record.batch_id),
    }
}

/// Writes `gated/<id>.json`: the batch is released by the scheduler, and
/// a restarted one takes it up again.
pub async fn list_gated(
    store: &dyn ArtifactStore,
    batch_id: &str,
    limits: HostLimits,
) -> Result<(), oxwright_artifacts::ArtifactError> {
    let body = serde_json::to_vec(&limits).expect("limits serialise");
    store
        .put(
            &keys::gated_batch(batch_id),
            Bytes::from(body),
            "application/json",
        )
        .await
}

/// Publishes one job, waiting for the broker's confirm, inside a
/// `publish` span whose context travels in the job's `traceparent` header.
pub async fn publish_job(queue: &dyn JobQueue, job: &Job) -> Result<(), BatchError> {
    let span = tracing::info_span!("publish", job_id = %job.id, kind = %job.kind());
    let mut headers = Headers::new();
    span.in_scope(|| oxwright_telemetry::inject_trace_context(&mut headers));
    tracing::Instrument::instrument(queue.publish_with_headers(job, headers), span).await?;
    Ok(())
}

/// Reads a batch record back from the store.
pub async fn read_batch_record(
    store: &dyn ArtifactStore,
    batch_id: &str,
) -> Result<Option<BatchRecord>, BatchError> {
    match store.get(&keys::batch_record(batch_id)).await {
        Ok(body) => Ok(serde_json::from_slice(&body).ok()),
        Err(oxwright_artifacts::ArtifactError::NotFound { .. }) => Ok(None),
        Err(err) => Err(err.into()),
    }
}

/// The manifest line of an input line that never became a job.
pub fn refused_report(batch_id: &str, text: &str, error: JobError) -> JobReport {
    crate::batch::input::failed_report(JobId::new(), batch_id, text, error)
}

/// The source of a batch that submits another's failed jobs again,
/// followed by that batch's id.
pub const RESUBMIT_SOURCE: &str = "resubmit:";

/// Spec fields that may hold credentials: never written to the store.
pub const WITHHELD_FIELDS: [&str; 4] = ["headers", "cookies", "basic_auth", "proxy"];

/// One line of `jobs.jsonl`: a published job's spec without its
/// credentials, and which fields were taken out.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StoredJob {
    /// The job id.
    pub job_id: JobId,
    /// The spec (`{"kind": …, "spec": {…}}`), credentials taken out.
    pub spec: serde_json::Value,
    /// The fields taken out because they held something.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub withheld: Vec<String>,
}

impl StoredJob {
    /// `job`'s spec with every non-empty credential field taken out.
    pub fn of(job: &Job) -> Self {
        let mut spec = serde_json::to_value(&job.spec).unwrap_or_default();
        let mut withheld = Vec::new();
        if let Some(fields) = spec.get_mut("spec").and_then(serde_json::Value::as_object_mut) {
            for name in WITHHELD_FIELDS {
                let held = fields.remove(name).is_some_and(|v| match v {
                    serde_json::Value::Null => false,
                    serde_json::Value::Array(a) => !a.is_empty(),
                    serde_json::Value::Object(o) => !o.is_empty(),
                    serde_json::Value::String(s) => !s.is_empty(),
                    _ => true,
                });
                if held {
                    withheld.push(name.to_owned());
                }
            }
        }
        Self {
            job_id: job.id,
            spec,
            withheld,
        }
    }
}

fn job_lines(jobs: &[Job]) -> Bytes {
    let mut out = Vec::new();
    for job in jobs {
        serde_json::to_writer(&mut out, &StoredJob::of(job)).expect("specs serialise");
        out.push(b'\n');
    }
    Bytes::from(out)
}
