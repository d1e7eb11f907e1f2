//! The scheduler side of oxwright: job intake (batch files, URL lists, the
//! HTTP API, schedules, webhooks), publishing to the job queue, batch
//! progress and manifests.

pub mod api;
pub mod batch;
pub mod checks;
pub mod config;
pub mod crawl;
pub mod daemon;
pub mod hooks;
pub mod links;
pub mod politeness;
pub mod submit;
pub mod template;
pub mod tracker;

pub use batch::{BatchLine, BatchRequest, BatchSummary, new_batch_id, parse_url_list, run_batch};
pub use config::{ApiOptions, ScheduleConfig, SchedulerOptions, SchedulerSection, WebhookConfig};
pub use daemon::{SchedulerError, run_scheduler};
pub use submit::{
    BatchRecord, Expanded, SubmitReceipt, fetch_jobs, publish_job, read_batch_record, submit_batch,
    submit_batch_with,
};
pub use template::{ExpandTemplate, JobTemplate, submit_template};
pub use tracker::{BatchStatus, BatchTracker, Recorded};
