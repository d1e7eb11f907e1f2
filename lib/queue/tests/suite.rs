//! Runs the shared job-queue suite against the in-memory queue.

use oxwright_queue::{MemoryQueue, test_suite};

#[tokio::test]
async fn memory_queue_passes_the_suite() {
    let queue = MemoryQueue::new();
    test_suite::run_all(&queue).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_queue_passes_the_suite_on_many_threads() {
    let queue = MemoryQueue::new();
    test_suite::run_all(&queue).await;
}
