//! The job envelope that travels through the queue.

use std::fmt;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::{FetchResult, FetchSpec, JobError, WorkflowSpec};

/// A sitemap-load request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SitemapSpec {
    /// A domain, a site URL, or a sitemap URL.
    pub target: String,
}

/// Version of the job message schema; a worker refuses other versions.
pub const SCHEMA_VERSION: u32 = 1;

/// Identifies a job; artefact keys derive from it so a redelivery overwrites.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct JobId(pub Uuid);

impl JobId {
    /// Creates a new time-ordered id.
    pub fn new() -> Self {
        Self(Uuid::now_v7())
    }
}

impl Default for JobId {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Display for JobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// The kind of a job; also its routing key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JobKind {
    /// Fetch one page and convert it to Markdown.
    Fetch,
    /// Discover and load a site's sitemaps.
    Sitemap,
    /// Run a plain-language or structured UI workflow.
    Workflow,
}

impl JobKind {
    /// Returns the routing key / artefact folder name of this kind.
    pub fn as_str(self) -> &'static str {
        match self {
            JobKind::Fetch => "fetch",
            JobKind::Sitemap => "sitemap",
            JobKind::Workflow => "workflow",
        }
    }
}

impl fmt::Display for JobKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a job asks for, one variant per kind.
// A job is built once per page and moved a few times: the fetch variant's
// size (its many options) costs nothing worth a box at every match.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", content = "spec", rename_all = "snake_case")]
pub enum JobSpec {
    /// A page fetch.
    Fetch(FetchSpec),
    /// A sitemap load.
    Sitemap(SitemapSpec),
    /// A workflow run.
    Workflow(Box<WorkflowSpec>),
}

impl JobSpec {
    /// Returns the kind of this spec.
    pub fn kind(&self) -> JobKind {
        match self {
            JobSpec::Fetch(_) => JobKind::Fetch,
            JobSpec::Sitemap(_) => JobKind::Sitemap,
            JobSpec::Workflow(_) => JobKind::Workflow,
        }
    }
}

/// A unit of work as it travels through the queue.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Job {
    /// Message schema version; see [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// Job id; the message id on the broker.
    pub id: JobId,
    /// What to do.
    #[serde(flatten)]
    pub spec: JobSpec,
    /// Batch this job belongs to, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_id: Option<String>,
    /// Delivery attempt, starting at 1.
    pub attempt: u32,
    /// When the job was created.
    pub created_at: DateTime<Utc>,
    /// After this instant the job is not worth running.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline: Option<DateTime<Utc>>,
    /// The identity of the artefact store the submitter uses (see
    /// `oxwright_artifacts::store_id`): a worker writing to another store
    /// refuses the job instead of losing its results there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store_id: Option<String>,
    /// The job may have run before under this id (its scheduler was
    /// restarted after publishing it): a worker answers it from the
    /// result stored under its id, when there is one, instead of running
    /// it again.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub may_have_run: bool,
}

impl Job {
    /// Creates a first-attempt job for `spec`.
    pub fn new(spec: JobSpec, batch_id: Option<String>) -> Self {
        Self {
            schema_version: SCHEMA_VERSION,
            id: JobId::new(),
            spec,
            batch_id,
            attempt: 1,
            created_at: Utc::now(),
            deadline: None,
            store_id: None,
            may_have_run: false,
        }
    }

    /// Returns the kind of this job.
    pub fn kind(&self) -> JobKind {
        self.spec.kind()
    }

    /// Returns the URL this job is about, for manifests and logs.
    pub fn url(&self) -> &str {
        match &self.spec {
            JobSpec::Fetch(spec) => spec.url.as_str(),
            JobSpec::Sitemap(spec) => spec.target.as_str(),
            JobSpec::Workflow(spec) => spec.start_url.as_str(),
        }
    }
}

/// What running a job produced: a result or a typed error.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum JobOutcome {
    /// The fetch succeeded.
    Fetched(Box<FetchResult>),
    /// The job failed; `error.kind` says how.
    Failed {
        /// The typed error.
        error: JobError,
    },
}

/// Whether a job ended well; the status column of manifests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReportStatus {
    /// The job produced its result.
    Ok,
    /// The job failed for good (after retries, or permanently).
    Failed,
}

/// What a worker publishes when a job ends: one manifest line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobReport {
    /// The job.
    pub job_id: JobId,
    /// Its kind.
    pub kind: JobKind,
    /// Its batch, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_id: Option<String>,
    /// The URL it was about.
    pub url: String,
    /// Ok or failed.
    pub status: ReportStatus,
    /// The typed error when failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<JobError>,
    /// Artefact keys written for the job.
    #[serde(default)]
    pub artifacts: Vec<String>,
    /// Delivery attempt that produced this report.
    pub attempt: u32,
    /// Wall time of the job on the worker, in milliseconds.
    pub duration_ms: f64,
    /// When the job ended.
    pub finished_at: DateTime<Utc>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_round_trips_through_json() {
        let spec = FetchSpec::new("https://example.com/a".parse().unwrap());
        let job = Job::new(JobSpec::Fetch(spec), Some("b1".into()));
        let text = serde_json::to_string(&job).unwrap();
        assert!(text.contains(r#""kind":"fetch""#), "{text}");
        let back: Job = serde_json::from_str(&text).unwrap();
        assert_eq!(back, job);
    }

    #[test]
    fn unknown_kind_is_refused() {
        let text = r#"{"schema_version":1,"id":"0190f0f0-0000-7000-8000-000000000000","kind":"teleport","spec":{},"attempt":1,"created_at":"2026-01-01T00:00:00Z"}"#;
        assert!(serde_json::from_str::<Job>(text).is_err());
    }
}
