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
//! static ALLOCATOR: oxwright_config::heap::Allocator = oxwright_config::heap::Allocator;
//! #[unsafe(export_name = "_rjem_malloc_conf")]
//! static MALLOC_CONF: &[u8] = oxwright_config::heap::MALLOC_CONF;
//! ```
//!
//! `_RJEM_MALLOC_CONF` in the environment still overrides any of it. In a
//! build with the `heap-stats` feature, `_RJEM_MALLOC_CONF=stats_print:true`
//! prints the allocator's statistics at exit, and `stats_interval:<bytes>`
//! every that many bytes allocated (`bench/peers/heapstats.py` reads them).
//!
//! Both binaries also run on [`runtime`], whose pool of blocking threads
//! is bounded: every thread that ever converted a page keeps its stack's
//! touched pages and a jemalloc thread cache for as long as it lives.

/// The global allocator of the binaries.
pub use tikv_jemallocator::Jemalloc as Allocator;

/// jemalloc's options, as the C string it reads at start:
/// - `background_thread`: a thread of jemalloc's own purges freed pages,
///   so an idle worker gives memory back without an allocation to trigger
///   it;
/// - `narenas:2`: two arenas, not jemalloc's four per core: the blocking
///   threads that convert pages are spread over the arenas, and with eight
///   each kept its own partly used slabs (RSS medians over the first and third
///   thousand pages of a soak: 76.8 → 82.6 MiB with eight, 71.2 → 73.6
///   with two);
/// - `dirty_decay_ms:1000`: pages freed are kept for reuse about a second
///   (a page's buffers are mostly reused by the next page within that),
///   then released (jemalloc's default keeps them ten seconds);
/// - `muzzy_decay_ms:0`: released means returned (`MADV_DONTNEED`), not
///   lazily freed pages that still count in RSS until the kernel wants them.
pub const MALLOC_CONF: &[u8] = b"background_thread:true,narenas:2,dirty_decay_ms:1000,muzzy_decay_ms:0\0";

/// The most blocking threads [`runtime`] keeps: four per core, and no
/// fewer than 16.
///
/// Page conversion (parsing, extraction, Markdown, token counts), file
/// writes and `getaddrinfo` all run on tokio's blocking pool, whose default
/// bound is 512 threads, each kept until it has idled ten seconds. Under a
/// steady batch every thread is woken again within that, so the pool only
/// grew: in a 10,000-page soak on 2 cores it went from 16 to 28 threads
/// between pages 1,500 and 3,000 and stayed there, and the process's
/// anonymous RSS stepped up with it (median 39.3 → 42.1 MiB), each thread
/// holding its stack's touched pages and its allocator cache. Bounded, the
/// pool is full by page 500 and that step is gone (BENCHMARKS.md §3).
/// Conversion is CPU-bound, so more threads than cores buy nothing there;
/// the rest of the bound is for file writes and name lookups, which wait
/// on I/O.
pub fn blocking_threads() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    (4 * cores).max(16)
}

/// The tokio runtime of the binaries: multi-threaded, all drivers on, at
/// most [`blocking_threads`] blocking threads.
pub fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .max_blocking_threads(blocking_threads())
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_runtime_runs_blocking_work_on_a_bounded_pool() {
        let bound = blocking_threads();
        assert!(bound >= 16);
        let rt = runtime().unwrap();
        let threads = rt.block_on(async {
            let tasks: Vec<_> = (0..3 * bound)
                .map(|_| {
                    tokio::task::spawn_blocking(|| {
                        std::thread::sleep(std::time::Duration::from_millis(50));
                        std::thread::current().id()
                    })
                })
                .collect();
            let mut ids = std::collections::HashSet::new();
            for task in tasks {
                ids.insert(task.await.unwrap());
            }
            ids
        });
        // All of them ran, on no more threads than the bound (tokio's
        // default would have started one thread per task).
        assert!(
            threads.len() <= bound,
            "{} threads for a bound of {bound}",
            threads.len()
        );
        assert!(threads.len() > 1);
    }

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
