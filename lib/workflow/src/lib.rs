//! Workflow runs over the engine seam (`&dyn Page`; phase 1): plain-language steps become a checklist (LLM);
//! per step an accessibility snapshot of the page goes to the LLM, which
//! names one locator and one action; the locator must match exactly one
//! element (precheck); the executor acts with real input events and waits for
//! the page to settle; the LLM judges completion on a fresh snapshot. At most
//! three attempts per step. Structured steps take the same path with no LLM.
//! The step grammar and the executor are `oxwright-steps`', shared with a
//! fetch's `actions`.
//!
//! Secrets travel as `{{NAME}}` placeholders and are resolved only when typed;
//! one [`Sanitizer`] cleans every line that leaves the process. See
//! `design.md` beside this crate for the choices.

mod cache;
mod checkpoint;
pub mod codegen;
mod decision;
mod error;
mod hints;
mod log;
mod prompts;
pub mod report;
mod runner;
mod steps;

pub use cache::{
    ActionCache, CacheEvent, DEFAULT_TRUST_AFTER, Entry, EntryKey, EventFile, Fingerprint, Resolved,
    url_pattern, workflow_id, workflow_prefix,
};
pub use checkpoint::{CHECKPOINT, Checkpoint, CheckpointKey, Checkpoints, this_worker, workflow_digest};
pub use decision::{ActionDecision, DecisionAnswer, Method, Selector, parse_decision, parse_decision_in};
pub use error::{ErrorType, WorkflowError};
pub use hints::{
    Hints, SITEMAP_MAX_CHARS, SITEMAP_MAX_URLS, SiteProfile, SiteProfiles, SitemapHints, SitemapSource,
    url_block,
};
pub use oxwright_engine::{Locator, Snapshot};
pub use prompts::{CHECKLIST_MAX_TOKENS, STEP_TOKEN_BUDGET, parse_checklist};
pub use runner::{
    ConsoleSink, FINAL_MARKDOWN, FINAL_SCREENSHOT, ReplayOptions, RunDeps, WorkflowOptions, run_workflow,
};
// The secrets and the sanitiser live below workflows, in `oxwright-secrets`;
// this crate's modules name them from its root.
pub(crate) use oxwright_secrets::{Sanitizer, SecretStore, placeholders};
pub use steps::{Workflow, WorkflowBody};
