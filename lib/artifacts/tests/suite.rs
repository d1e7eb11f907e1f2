//! Runs the shared artefact-store suite against the filesystem and
//! in-memory stores.

use oxwright_artifacts::{FsStore, MemoryStore, test_suite};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fs_store_passes_the_suite() {
    let dir = tempfile::tempdir().unwrap();
    let store = FsStore::new(dir.path().join("out"));
    test_suite::run_all(&store).await;
}

#[tokio::test]
async fn memory_store_passes_the_suite() {
    let store = MemoryStore::new();
    test_suite::run_all(&store).await;
}
