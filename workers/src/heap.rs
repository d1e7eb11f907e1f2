//! The allocator of oxwright's long-running binaries (`oxwright`,
//! `oxwright-lambda`): jemalloc, with freed pages handed back to the system
//! within about a second by its background thread.
//!
//! A converted page allocates tens of MiB (its HTML, its DOM, the
//! Markdown) on whichever blocking thread ran it, and glibc's malloc, even
//! trimmed after every job and held to two arenas, kept what the pages'
//! allocations left scattered behind: over 10,000 real pages RSS rose by
//! 3.5 % and 10.1 % in two runs while the live heap did not grow — a heap
//! profile (jemalloc's, every ~700 pages of a 3,000-page batch) found no
//! allocation site whose live bytes grew (BENCHMARKS.md §3). jemalloc's
//! size-class slabs keep a page's churn from pinning the process's memory,
//! and its decay returns freed pages on a clock instead of on our calls.
//!
//! Each binary names the allocator and hands jemalloc [`MALLOC_CONF`]:
//!
//! ```ignore
//! #[global_allocator]
//! static ALLOCATOR: oxwright_worker::heap::Allocator = oxwright_worker::heap::Allocator;
//! #[unsafe(export_name = "_rjem_malloc_conf")]
//! static MALLOC_CONF: &[u8] = oxwright_worker::heap::MALLOC_CONF;
//! ```
//!
//! `_RJEM_MALLOC_CONF` in the environment still overrides any of it (for
//! example `_RJEM_MALLOC_CONF=stats_print:true` prints the allocator's
//! statistics at exit).

/// The global allocator of the binaries.
pub use tikv_jemallocator::Jemalloc as Allocator;

/// jemalloc's options, as the C string it reads at start:
/// - `background_thread`: a thread of jemalloc's own purges freed pages,
///   so an idle worker gives memory back without an allocation to trigger
///   it;
/// - `narenas:2`: two arenas, not jemalloc's four per core: the blocking
///   threads that convert pages come and go, and with eight arenas each
///   kept its own partly used slabs (RSS medians over the first and third
///   thousand pages of a soak: 76.8 → 82.6 MiB with eight, 71.2 → 73.6
///   with two);
/// - `dirty_decay_ms:1000`: pages freed are kept for reuse about a second
///   (a page's buffers are mostly reused by the next page within that),
///   then released (jemalloc's default keeps them ten seconds);
/// - `muzzy_decay_ms:0`: released means returned (`MADV_DONTNEED`), not
///   lazily freed pages that still count in RSS until the kernel wants them.
pub const MALLOC_CONF: &[u8] = b"background_thread:true,narenas:2,dirty_decay_ms:1000,muzzy_decay_ms:0\0";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_options_are_one_c_string() {
        assert_eq!(MALLOC_CONF.last(), Some(&0));
        assert_eq!(MALLOC_CONF.iter().filter(|b| **b == 0).count(), 1);
        let text = std::str::from_utf8(&MALLOC_CONF[..MALLOC_CONF.len() - 1]).unwrap();
        for option in text.split(',') {
            let (key, value) = option.split_once(':').expect("key:value");
            assert!(!key.is_empty() && !value.is_empty(), "{option}");
        }
    }
}
