//! What the jobs of one browser share, and the defaults of a browser's
//! page budget. Declared below every backend, so the configuration reads
//! them without linking one.

/// What concurrent and consecutive jobs of one browser share.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Isolation {
    /// Every page in its own browser context, reset between jobs (see
    /// [`DEFAULT_CONTEXT_REUSE`]): no job sees another's cookies,
    /// storage, cache, history or permissions.
    #[default]
    Context,
    /// Every page of a browser in its default context, nothing reset
    /// between jobs: jobs see each other's cookies, storage and HTTP cache,
    /// as tabs of one browser profile do. For trusted batches of public
    /// pages: one renderer serves a browser's same-site pages, ~2× the
    /// pages/s of `Context` on 2 cores (BENCHMARKS.md §1).
    Shared,
}

/// Jobs one browser context serves, reset between them, before it is
/// disposed (the pool's `context_reuse` and `[browser] context_reuse`).
pub const DEFAULT_CONTEXT_REUSE: u32 = 10;

/// The most JavaScript and DOM heap one job's page may use, in MiB.
pub const DEFAULT_JOB_MEMORY_MB: u64 = 2048;

/// The most DOM nodes one job's page may build.
pub const DEFAULT_JOB_DOM_NODES: u64 = 1_500_000;
