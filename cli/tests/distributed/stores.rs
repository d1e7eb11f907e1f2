//! A submitter, a scheduler and workers configured with different
//! artefact stores lose nothing silently: a worker refuses a job
//! submitted to another store (`store_mismatch`, not run, nothing
//! written to its store), and a scheduler keeps a report for a batch its
//! store has no record of under `orphans/` instead of dropping it.

use std::time::Duration;

use oxwright_artifacts::ArtifactStore;
use oxwright_jobs::keys;

use crate::cluster::{Cluster, eventually};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_on_another_store_refuses_the_job_and_the_batch_still_ends() {
    let mut cluster = Cluster::start().await;
    cluster.scheduler();
    let ours = cluster.bucket.clone();
    let (other, other_store) = cluster.another_bucket().await;
    cluster.bucket = other.clone();
    let worker = cluster.worker(2, &[]);
    cluster.bucket = ours;
    let batch = cluster.submit(&["/".to_owned()], &[]);
    let lines = cluster.manifest(&batch, Duration::from_secs(120)).await;
    assert_eq!(lines.len(), 1, "{lines:?}");
    let line = &lines[0];
    assert_eq!(
        line["status"], "failed",
        "the page was fetched into {other}: {line}"
    );
    assert_eq!(line["error"]["kind"], "store_mismatch", "{line}");
    let message = line["error"]["message"].as_str().unwrap();
    assert!(
        message.contains(&other) && message.contains("same store"),
        "the message names the worker's store and the fix: {message}"
    );
    assert!(
        other_store.list("jobs/").await.unwrap().is_empty(),
        "nothing of the job in the worker's store"
    );
    assert_eq!(cluster.site.hits("/"), 0, "the job was not run");
    let log = cluster.log(&format!("worker-{worker}"));
    assert!(log.contains("job refused"), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_report_for_a_batch_of_another_store_is_kept_not_dropped() {
    let mut cluster = Cluster::start().await;
    cluster.scheduler();
    cluster.worker(2, &[]);
    // The submitter writes its batch record to another store.
    let ours = cluster.bucket.clone();
    let (other, _other_store) = cluster.another_bucket().await;
    cluster.bucket = other;
    let batch = cluster.submit(&["/".to_owned()], &[]);
    cluster.bucket = ours;
    let prefix = format!("orphans/{batch}/");
    eventually("the orphan report", Duration::from_secs(60), || {
        let store = &cluster.store;
        let prefix = prefix.clone();
        async move { !store.list(&prefix).await.unwrap().is_empty() }
    })
    .await;
    let kept = cluster.store.list(&prefix).await.unwrap();
    assert_eq!(kept.len(), 1, "{kept:?}");
    let report: serde_json::Value =
        serde_json::from_slice(&cluster.store.get(&kept[0]).await.unwrap()).unwrap();
    assert_eq!(report["batch_id"], batch.as_str(), "{report}");
    assert_eq!(report["error"]["kind"], "store_mismatch", "{report}");
    assert!(!cluster.store.exists(&keys::batch_summary(&batch)).await.unwrap());
    let log = cluster.log("scheduler");
    assert!(log.contains("kept under orphans/"), "{log}");
}
