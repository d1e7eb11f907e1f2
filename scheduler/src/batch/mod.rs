//! Batches: URL-list input, the run loop over a job queue, manifests, and
//! what the API and the dashboard read of a batch and do to it.

pub mod control;
pub mod gate;
pub mod input;
pub mod manifest;
pub mod run;

pub use control::{BatchFault, Batches, Growing, check_batch_id, mark_cancelled};
pub use gate::{Gate, submit_for_release, submit_gated};
pub use input::{BatchLine, parse_url_entry, parse_url_list, policy_error, shorten};
pub use manifest::{BatchSummary, ManifestWriter, Place};
pub use oxwright_jobs::HostLimits;
pub use run::{BatchError, BatchRequest, PerHost, new_batch_id, run_batch};
