//! The fetch cache against real Chromium, the fixture
//! site (which counts requests per path and answers conditional requests
//! to `/cache/page`) and a memory store: a hit within `max_age_ms` makes
//! no request, a stale entry is revalidated with If-None-Match or
//! If-Modified-Since, a changed page replaces it, `max_age_ms` 0 always
//! fetches, and options that change the output do not share an entry.

mod common;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use common::Env;
use oxwright_artifacts::{ArtifactError, ArtifactStore, MemoryStore};
use oxwright_fetch::fetch_cached;
use oxwright_fixtures::RecordedRequest;
use oxwright_fixtures::actions::CACHE_VERSION_TEXT;
use oxwright_jobs::{CacheStatus, ContentMode, FetchResult, FetchSpec, Job, JobSpec, ReportStatus};

const PAGE: &str = "/cache/page";

fn spec(env: &Env, validator: &str, max_age_ms: u64) -> FetchSpec {
    let mut spec = env.spec(&format!("{PAGE}?validator={validator}"));
    spec.max_age_ms = max_age_ms;
    spec
}

async fn fetch(env: &Env, store: &dyn ArtifactStore, spec: &FetchSpec) -> FetchResult {
    fetch_cached(&env.pool, &env.policy, Some(store), spec)
        .await
        .unwrap_or_else(|e| panic!("{}: {e}", spec.url))
        .result
}

fn version(r: &FetchResult, n: u32) -> bool {
    r.markdown.contains(&format!("{CACHE_VERSION_TEXT}{n}"))
}

/// The last request the fixture received for the cached page.
fn last_request(env: &Env) -> RecordedRequest {
    env.site
        .requests()
        .into_iter()
        .rfind(|r| r.path == PAGE)
        .expect("a request for the page")
}

fn header<'a>(r: &'a RecordedRequest, name: &str) -> Option<&'a str> {
    r.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn within_max_age_the_cache_answers_with_no_navigation() {
    let env = Env::start().await;
    let store = MemoryStore::new();
    let first = fetch(&env, &store, &spec(&env, "etag", 60_000)).await;
    assert_eq!(first.cache, Some(CacheStatus::Miss));
    assert!(version(&first, 1), "{}", first.markdown);
    assert_eq!(env.site.hits(PAGE), 1);
    assert!(
        store
            .list("cache/fetch/")
            .await
            .unwrap()
            .iter()
            .any(|k| k.ends_with("/entry.json")),
        "the entry is under cache/fetch/"
    );

    let second = fetch(&env, &store, &spec(&env, "etag", 60_000)).await;
    assert_eq!(second.cache, Some(CacheStatus::Hit));
    assert_eq!(env.site.hits(PAGE), 1, "a hit starts no navigation");
    assert_eq!(second.markdown, first.markdown);
    assert_eq!(
        (second.title.as_str(), second.status),
        (first.title.as_str(), 200)
    );
    assert_eq!(second.attempts, 0);

    // Options that do not change the output share the entry.
    let mut patient = spec(&env, "etag", 60_000);
    patient.timeout_ms = 20_000;
    patient.retry_count = 0;
    assert_eq!(fetch(&env, &store, &patient).await.cache, Some(CacheStatus::Hit));
    assert_eq!(env.site.hits(PAGE), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_max_age_a_conditional_request_revalidates_and_resets_the_age() {
    let env = Env::start().await;
    let store = MemoryStore::new();
    for (validator, sent, value) in [
        ("etag", "if-none-match", "\"v1\""),
        ("modified", "if-modified-since", "Mon, 01 Nov 2026 08:00:00 GMT"),
    ] {
        let first = fetch(&env, &store, &spec(&env, validator, 60_000)).await;
        assert_eq!(first.cache, Some(CacheStatus::Miss), "{validator}");
        let before = env.site.hits(PAGE);
        assert!(
            header(&last_request(&env), sent).is_none(),
            "the first request is not conditional"
        );
        tokio::time::sleep(Duration::from_millis(1_200)).await;

        let again = fetch(&env, &store, &spec(&env, validator, 1_000)).await;
        assert_eq!(again.cache, Some(CacheStatus::Revalidated), "{validator}");
        assert_eq!(env.site.hits(PAGE), before + 1, "one conditional request");
        assert_eq!(header(&last_request(&env), sent), Some(value), "{validator}");
        assert_eq!(again.markdown, first.markdown);
        assert_eq!(again.status, 200, "the cached answer's status");

        // Its age was reset: within the same max_age it is a hit now.
        let hit = fetch(&env, &store, &spec(&env, validator, 1_000)).await;
        assert_eq!(hit.cache, Some(CacheStatus::Hit), "{validator}");
        assert_eq!(env.site.hits(PAGE), before + 1);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_page_is_a_miss_with_the_new_content() {
    let env = Env::start().await;
    let store = MemoryStore::new();
    assert!(version(
        &fetch(&env, &store, &spec(&env, "etag", 60_000)).await,
        1
    ));
    env.site.set_cache_version(2);
    tokio::time::sleep(Duration::from_millis(20)).await;
    let changed = fetch(&env, &store, &spec(&env, "etag", 10)).await;
    assert_eq!(header(&last_request(&env), "if-none-match"), Some("\"v1\""));
    assert_eq!(changed.cache, Some(CacheStatus::Miss));
    assert!(version(&changed, 2), "{}", changed.markdown);
    assert_eq!(env.site.hits(PAGE), 2);
    // The entry now holds the new version (and its new ETag).
    let hit = fetch(&env, &store, &spec(&env, "etag", 60_000)).await;
    assert_eq!(hit.cache, Some(CacheStatus::Hit));
    assert!(version(&hit, 2));
    tokio::time::sleep(Duration::from_millis(20)).await;
    let revalidated = fetch(&env, &store, &spec(&env, "etag", 10)).await;
    assert_eq!(revalidated.cache, Some(CacheStatus::Revalidated));
    assert_eq!(header(&last_request(&env), "if-none-match"), Some("\"v2\""));

    // With no validator, a stale entry is fetched in full, unconditionally.
    let plain = fetch(&env, &store, &spec(&env, "none", 60_000)).await;
    assert_eq!(plain.cache, Some(CacheStatus::Miss));
    tokio::time::sleep(Duration::from_millis(20)).await;
    let stale = fetch(&env, &store, &spec(&env, "none", 10)).await;
    assert_eq!(stale.cache, Some(CacheStatus::Miss));
    let last = last_request(&env);
    assert!(
        header(&last, "if-none-match").is_none() && header(&last, "if-modified-since").is_none(),
        "{last:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_age_zero_always_fetches_and_keeps_nothing() {
    let env = Env::start().await;
    let store = MemoryStore::new();
    for n in 1..=2 {
        let r = fetch(&env, &store, &spec(&env, "etag", 0)).await;
        assert_eq!(r.cache, Some(CacheStatus::Miss));
        assert_eq!(env.site.hits(PAGE), n);
    }
    assert!(store.list("cache/").await.unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn options_that_change_the_output_do_not_share_an_entry() {
    let env = Env::start().await;
    let store = MemoryStore::new();
    let main = fetch(&env, &store, &spec(&env, "etag", 60_000)).await;
    let mut full = spec(&env, "etag", 60_000);
    full.content = ContentMode::Full;
    let full = fetch(&env, &store, &full).await;
    assert_eq!(
        (main.cache, full.cache),
        (Some(CacheStatus::Miss), Some(CacheStatus::Miss))
    );
    assert_eq!(full.content_mode, ContentMode::Full);
    assert_eq!(env.site.hits(PAGE), 2);
    let again = fetch(&env, &store, &spec(&env, "etag", 60_000)).await;
    assert_eq!(again.cache, Some(CacheStatus::Hit));
    assert_eq!(again.content_mode, ContentMode::Main);
    assert_eq!(env.site.hits(PAGE), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_write_the_cache_status_and_their_artefacts_on_a_hit() {
    let env = Env::start().await;
    let (ctx, store) = env.handler();
    let mut spec = spec(&env, "etag", 60_000);
    spec.include_html = true;
    let mut results = Vec::new();
    for _ in 0..2 {
        let job = Job::new(JobSpec::Fetch(spec.clone()), None);
        let report = oxwright_worker::run_job(&ctx, &job).await;
        assert_eq!(report.status, ReportStatus::Ok, "{:?}", report.error);
        let key = oxwright_jobs::keys::job_result(job.kind(), job.id);
        let json: serde_json::Value = serde_json::from_slice(&store.get(&key).await.unwrap()).unwrap();
        let html = oxwright_jobs::keys::job_artifact(job.kind(), job.id, "page.html");
        assert!(
            store.get(&html).await.unwrap().starts_with(b"<"),
            "page.html on every job"
        );
        results.push(json);
    }
    assert_eq!(results[0]["cache"], "miss");
    assert_eq!(results[1]["cache"], "hit");
    assert_eq!(results[0]["markdown"], results[1]["markdown"]);
    assert_eq!(env.site.hits(PAGE), 1);
}

/// A store whose reads fail (its writes work).
#[derive(Debug, Clone, Default)]
struct ReadsFail(MemoryStore);

#[async_trait]
impl ArtifactStore for ReadsFail {
    async fn put(&self, key: &str, body: Bytes, content_type: &str) -> Result<(), ArtifactError> {
        self.0.put(key, body, content_type).await
    }
    async fn get(&self, key: &str) -> Result<Bytes, ArtifactError> {
        Err(ArtifactError::Backend {
            key: key.into(),
            message: "connection reset".into(),
            retryable: true,
            source: None,
        })
    }
    async fn append(&self, key: &str, line: Bytes) -> Result<(), ArtifactError> {
        self.0.append(key, line).await
    }
    async fn get_versioned(&self, key: &str) -> Result<(Bytes, oxwright_artifacts::Version), ArtifactError> {
        self.get(key).await.map(|_| unreachable!("reads fail"))
    }
    async fn put_if(
        &self,
        key: &str,
        body: Bytes,
        content_type: &str,
        expect: &oxwright_artifacts::Expect,
    ) -> Result<oxwright_artifacts::Version, ArtifactError> {
        self.0.put_if(key, body, content_type, expect).await
    }
    async fn list(&self, prefix: &str) -> Result<Vec<String>, ArtifactError> {
        self.0.list(prefix).await
    }
    async fn exists(&self, key: &str) -> Result<bool, ArtifactError> {
        self.0.exists(key).await
    }
    async fn delete(&self, key: &str) -> Result<(), ArtifactError> {
        self.0.delete(key).await
    }
    fn describe(&self) -> String {
        "a store whose reads fail".into()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_that_cannot_be_read_is_a_miss_not_a_failure() {
    let env = Env::start().await;
    let store: Arc<dyn ArtifactStore> = Arc::new(ReadsFail::default());
    for n in 1..=2 {
        let r = fetch(&env, store.as_ref(), &spec(&env, "etag", 60_000)).await;
        assert_eq!(r.cache, Some(CacheStatus::Miss));
        assert!(version(&r, 1));
        assert_eq!(env.site.hits(PAGE), n);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revalidation_carries_the_request_shaping_and_the_policy_still_applies() {
    let env = Env::start().await;
    let store = MemoryStore::new();
    let shaped = |max_age_ms| {
        let mut s = spec(&env, "etag", max_age_ms);
        s.headers.insert("X-Team".into(), "blue".into());
        s.user_agent = Some("CacheBot/1".into());
        s
    };
    assert_eq!(
        fetch(&env, &store, &shaped(60_000)).await.cache,
        Some(CacheStatus::Miss)
    );
    tokio::time::sleep(Duration::from_millis(20)).await;
    let again = fetch(&env, &store, &shaped(10)).await;
    assert_eq!(again.cache, Some(CacheStatus::Revalidated));
    let last = last_request(&env);
    assert_eq!(header(&last, "if-none-match"), Some("\"v1\""));
    assert_eq!(header(&last, "x-team"), Some("blue"), "{last:?}");
    assert_eq!(header(&last, "user-agent"), Some("CacheBot/1"), "{last:?}");

    // A URL the policy refuses now is refused, cached or not.
    let nothing_allowed = Arc::new(oxwright_policy::UrlPolicy::allowing(Vec::<
        oxwright_policy::HostRule,
    >::new()));
    let err = fetch_cached(&env.pool, &nothing_allowed, Some(&store), &shaped(60_000))
        .await
        .unwrap_err();
    assert_eq!(err.kind, oxwright_jobs::ErrorKind::PolicyDenied, "{err}");
    assert_eq!(env.site.hits(PAGE), 2);
}
