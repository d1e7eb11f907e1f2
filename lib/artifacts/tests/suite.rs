//! Runs the shared artefact-store suite against the filesystem and
//! in-memory stores.

use oxwright_artifacts::{ArtifactStore, Expect, FsStore, MemoryStore, test_suite};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fs_store_passes_the_suite() {
    let dir = tempfile::tempdir().unwrap();
    let store = FsStore::new(dir.path().join("out"));
    test_suite::run_all(&store).await;
    test_suite::racing_conditional_updates_lose_none(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fs_stores_of_one_root_take_turns_at_conditional_writes() {
    // Two stores over one directory stand for two processes: the lock is
    // the file's, not the store value's.
    let dir = tempfile::tempdir().unwrap();
    let a = FsStore::new(dir.path());
    let b = FsStore::new(dir.path());
    let key = "checks/login/state.json";
    let (ra, rb) = tokio::join!(
        a.put_if(key, "a".into(), "text/plain", &Expect::Absent),
        b.put_if(key, "b".into(), "text/plain", &Expect::Absent),
    );
    assert!(ra.is_ok() != rb.is_ok(), "exactly one create wins: {ra:?} {rb:?}");
    assert_eq!(
        a.list("checks/").await.unwrap(),
        vec![key.to_owned()],
        "the lock file is not listed"
    );
}

#[tokio::test]
async fn memory_store_passes_the_suite() {
    let store = MemoryStore::new();
    test_suite::run_all(&store).await;
    test_suite::racing_conditional_updates_lose_none(&store).await;
}
