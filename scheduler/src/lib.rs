//! The scheduler side of oxwright: job intake (batch files and URL lists),
//! publishing to the job queue, batch progress and manifests.

pub mod batch;

pub use batch::{BatchLine, BatchRequest, BatchSummary, new_batch_id, parse_url_list, run_batch};
