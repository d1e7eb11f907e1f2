//! Runs the shared artefact-store suite against `S3Store` on a real S3
//! server (started by `infra/services.sh start`), each test in a fresh
//! bucket, plus a multipart round trip.
//!
//! Environment: `OXWRIGHT_TEST_S3_ENDPOINT` (default
//! `http://127.0.0.1:9000`), `AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY`
//! (defaults `oxwright` / `oxwright-secret`, as in the script),
//! `AWS_REGION` (default `us-east-1`). A missing server fails the tests.

use bytes::Bytes;
use oxwright_artifacts::{ArtifactStore, S3Config, S3Credentials, S3Store, test_suite};

fn env_or(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_owned())
}

fn config(bucket: &str) -> S3Config {
    let mut config = S3Config::new(bucket);
    config.endpoint = Some(env_or("OXWRIGHT_TEST_S3_ENDPOINT", "http://127.0.0.1:9000"));
    config.region = Some(env_or("AWS_REGION", "us-east-1"));
    config.credentials = Some(S3Credentials {
        access_key_id: env_or("AWS_ACCESS_KEY_ID", "oxwright"),
        secret_access_key: env_or("AWS_SECRET_ACCESS_KEY", "oxwright-secret"),
    });
    config
}

/// Creates a store on a fresh bucket, failing with instructions when the
/// server is not there.
async fn fresh_store(prefix: &str, tweak: impl FnOnce(&mut S3Config)) -> S3Store {
    let bucket = format!("oxwright-test-{}", uuid::Uuid::new_v4().simple());
    let mut config = config(&bucket);
    config.prefix = prefix.to_owned();
    tweak(&mut config);
    let endpoint = config.endpoint.clone().unwrap_or_default();
    let store = S3Store::new(config).await.expect("S3 config is valid");
    if let Err(err) = store.create_bucket().await {
        panic!(
            "S3 server not usable at {endpoint} ({err}); start it with `infra/services.sh install && \
             infra/services.sh start` or point OXWRIGHT_TEST_S3_ENDPOINT at one"
        );
    }
    store
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_store_passes_the_suite() {
    let store = fresh_store("", |_| {}).await;
    test_suite::run_all(&store).await;
}

#[tokio::test]
async fn s3_store_passes_the_suite_under_a_prefix() {
    let store = fresh_store("deployments/test", |_| {}).await;
    test_suite::run_all(&store).await;
    let keys = store.list("").await.unwrap();
    assert!(!keys.is_empty());
    assert!(
        keys.iter().all(|k| !k.starts_with("deployments/")),
        "list strips the store prefix: {keys:?}"
    );
    let described = store.describe();
    assert!(described.contains("deployments/test/"), "{described}");
}

#[tokio::test]
async fn large_bodies_round_trip_through_multipart_upload() {
    const MIB: usize = 1024 * 1024;
    let store = fresh_store("", |c| {
        c.multipart_threshold = 5 * MIB;
        c.part_size = 5 * MIB;
    })
    .await;
    // 12 MiB of non-repeating bytes: three parts, the last one short.
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let body: Vec<u8> = (0..12 * MIB)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state.to_le_bytes()[0]
        })
        .collect();
    let body = Bytes::from(body);
    let key = "sessions/s1/screenshots/big.png";
    store.put(key, body.clone(), "image/png").await.unwrap();
    let got = store.get(key).await.unwrap();
    assert_eq!(got.len(), body.len());
    assert!(got == body, "multipart body differs");
    let head = store
        .client()
        .head_object()
        .bucket(store.bucket())
        .key(key)
        .send()
        .await
        .unwrap();
    let etag = head.e_tag().unwrap_or_default();
    assert!(
        etag.trim_matches('"').ends_with("-3"),
        "multipart ETag of 3 parts, got {etag}"
    );
    // A small body under the threshold still goes up in one request.
    store
        .put(key, Bytes::from_static(b"small"), "image/png")
        .await
        .unwrap();
    assert_eq!(store.get(key).await.unwrap(), Bytes::from_static(b"small"));
}
