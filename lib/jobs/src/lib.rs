//! Job and result types shared by every oxwright component: the `Job`
//! envelope, the per-kind specs and results, typed error kinds and the
//! artefact key layout. Serde only, no I/O.

mod crawl;
pub mod css_schema;
mod defaults;
mod error;
mod fetch;
mod fetch_result;
mod job;
pub mod json_schema;
pub mod keys;
pub mod limits;
mod locator;
pub mod normalise;
pub mod options;
mod page_info;
pub mod patch;
pub mod schedule;
pub mod schema;
mod shape;
mod sites;
mod step;
mod template;
mod workflow;

pub use crawl::{
    CrawlOptions, DEFAULT_CRAWL_LIMIT, DEFAULT_CRAWL_MAX_DEPTH, DEFAULT_CRAWL_PER_HOST_CONCURRENCY,
    DEFAULT_CRAWL_PER_HOST_DELAY_MS, HostLimits, SkipReason, SkippedUrl,
};
pub use css_schema::{CssField, CssFieldKind, CssSchema, SchemaError, Transform};
pub use defaults::{FetchDefaults, NOT_IN_CONFIG};
pub use error::{ErrorKind, JobError, MAX_RETRY_AFTER_S, parse_retry_after};
pub use fetch::{
    BlockResource, ContentMode, DialogAction, FetchSpec, Format, Frames, LinkStyle, Render, WaitUntil,
};
pub use fetch_result::{CacheStatus, Extraction, ExtractionMethod, FetchResult, FetchTimings, TokenCounts};
pub use job::{
    Job, JobId, JobKind, JobOutcome, JobReport, JobSpec, ReportStatus, SCHEMA_VERSION, SitemapSpec,
};
pub use json_schema::{JsonSchema, JsonSchemaError, MAX_JSON_SCHEMA_BYTES};
pub use locator::Locator;
pub use normalise::{NormaliseRules, TrapGuard, TrapLimits, normalise, normalise_escapes};
pub use page_info::{PageImage, PageLink, PageLinks, PageMetadata};
pub use patch::{FetchPatch, PatchError};
pub use shape::{BasicAuth, CookieSpec, ProxyUrl, RequestShape, Viewport};
pub use sites::{MAX_SITE_PROFILES, SiteProfile, SiteProfiles};
pub use step::{
    StepAttemptResult, StepDecision, StepDurations, StepEmergency, StepRecord, StepTokens, StepValue,
};
pub use template::JobTemplate;
pub use workflow::{
    LlmSpec, ResumeMark, RunStatus, STORAGE_STATE_BOUND, StepOutcome, StepOutput, StepSource, WorkflowMode,
    WorkflowResult, WorkflowSpec, WorkflowTotals, step_text,
};
