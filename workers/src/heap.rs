//! Gives freed heap back to the system between jobs. A converted page
//! allocates tens of MiB (its DOM, the Markdown) on whichever blocking
//! thread ran it, and glibc keeps what such a thread's arena freed for
//! reuse instead of returning it: over a long batch the process's RSS
//! ratchets up with the largest pages each arena has seen (measured: 100 →
//! 211 MiB over 2,000 real pages, 57 MiB of it released by one
//! `malloc_trim`). Trimming at most once a second after a job keeps RSS at
//! what is live, for about a millisecond of one blocking thread.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// Least time between two trims, in milliseconds.
const EVERY_MS: u64 = 1_000;

static LAST_MS: AtomicU64 = AtomicU64::new(0);

/// Releases free heap memory to the system, unless that was done less than
/// [`EVERY_MS`] ago; runs on a blocking thread and returns at once.
pub fn trim_after_job() {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
    let last = LAST_MS.load(Ordering::Relaxed);
    if now.saturating_sub(last) < EVERY_MS
        || LAST_MS
            .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
            .is_err()
    {
        return;
    }
    if let Ok(handle) = tokio::runtime::Handle::try_current() {
        handle.spawn_blocking(trim);
    }
}

/// Sets the allocator up for a long-running process that converts pages of
/// very different sizes on many threads: at most two arenas (glibc's
/// default is eight per core, each keeping what it freed), and a fixed
/// 1 MiB threshold above which an allocation gets its own mapping, returned
/// to the system when freed (glibc raises the threshold as large blocks
/// are freed, up to 32 MiB, after which a page's HTML and DOM land in the
/// arenas and fragment them). Call it at the top of `main`: the arena
/// limit applies to arenas made after it.
pub fn tune() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets allocator parameters; called before other
    // threads exist.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 2);
        libc::mallopt(libc::M_MMAP_THRESHOLD, 1 << 20);
    }
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn trim() {
    // SAFETY: malloc_trim only walks the allocator's own arenas, under
    // their locks; 0 keeps no pad at the top of the heap.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn trim() {}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn trims_at_most_once_a_second() {
        LAST_MS.store(0, Ordering::Relaxed);
        trim_after_job();
        let first = LAST_MS.load(Ordering::Relaxed);
        assert!(first > 0);
        trim_after_job();
        assert_eq!(LAST_MS.load(Ordering::Relaxed), first);
    }
}
