//! Batches: URL-list input, the run loop over a job queue, and manifests.

pub mod input;
pub mod manifest;
pub mod run;

pub use input::{BatchLine, parse_url_entry, parse_url_list, policy_error, shorten};
pub use manifest::{BatchSummary, ManifestWriter};
pub use run::{BatchError, BatchRequest, new_batch_id, run_batch};
