//! The fetch cache, in the artefact store: a result is kept under
//! `cache/fetch/<key>/` (`entry.json`, plus `page.html` and
//! `screenshot.png` when the request produced them), where `<key>` is an
//! HMAC-SHA-256 of the URL and every option that changes the output,
//! keyed with a secret the store holds ([`CACHE_SECRET_KEY`]): a listing
//! of the store's keys says nothing of the URLs, headers, cookies or
//! credentials behind them to one who cannot read that secret. A request
//! with `max_age_ms` > 0 is answered from an entry younger than that with
//! no navigation (`hit`); an older entry whose main document stated an
//! `ETag` or `Last-Modified` is revalidated with a conditional request
//! made through the browser (so the URL policy and the job's headers,
//! cookies, credentials and user agent apply), and a `304` serves it again
//! with its age reset (`revalidated`); anything else fetches the page and
//! replaces the entry (`miss`). `max_age_ms` 0 neither reads nor writes
//! the cache. The store failing is never the job's failure: a read that
//! fails is a miss, a write that fails is a warning.

use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use hmac::{Hmac, Mac};
use oxwright_artifacts::{ArtifactError, ArtifactStore};
use oxwright_engine::{BrowserEngine, EngineError, UrlPolicy};
use oxwright_jobs::{CacheStatus, FetchResult, FetchSpec, FetchTimings, JobError};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::Sha256;

use crate::{FetchOutput, fetch_page, fetch_page_if, ms, parse_actions};

/// Where cache entries live in the store.
pub const CACHE_PREFIX: &str = "cache/fetch/";

/// The store key of the secret the cache keys are made with.
pub const CACHE_SECRET_KEY: &str = "cache/secret.json";

/// The spec's fields that do not change what a fetch produces, left out of
/// its cache key: how long and how often to try, how old an answer may be,
/// and whether the browser shows a window.
pub const NOT_IN_KEY: &[&str] = &[
    "timeout_ms",
    "retry_count",
    "retry_delay_ms",
    "max_age_ms",
    "headless",
];

/// Changes when the entry's layout does, so old entries are not read.
const KEY_SALT: &str = "oxwright fetch cache v1";

/// One cached result.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Entry {
    /// The URL asked for (for people browsing the store).
    url: String,
    /// When the page was last fetched or revalidated, ms since the epoch.
    stored_at_ms: u64,
    /// The conditional request headers that revalidate it.
    #[serde(default)]
    validators: Vec<(String, String)>,
    /// `page.html` is stored beside it.
    #[serde(default)]
    html: bool,
    /// `screenshot.png` is stored beside it.
    #[serde(default)]
    screenshot: bool,
    /// The result (no artefact keys, no cache status).
    result: FetchResult,
}

/// Returns the cache key of `spec` under `secret`: the hex HMAC-SHA-256 of
/// its JSON with the [`NOT_IN_KEY`] fields removed and object keys sorted.
/// Options left at their default are not in the JSON, so a new option does
/// not change the keys of requests that do not use it.
pub fn cache_key(secret: &[u8], spec: &FetchSpec) -> String {
    let mut value = serde_json::to_value(spec).unwrap_or(Value::Null);
    if let Value::Object(map) = &mut value {
        for field in NOT_IN_KEY {
            map.remove(*field);
        }
    }
    let mut text = String::new();
    canonical(&value, &mut text);
    let mut mac = Hmac::<Sha256>::new_from_slice(secret).expect("HMAC takes a key of any length");
    mac.update(KEY_SALT.as_bytes());
    mac.update(&[0]);
    mac.update(text.as_bytes());
    hex::encode(mac.finalize().into_bytes())
}

fn parse_secret(v: &Value) -> Option<Vec<u8>> {
    hex::decode(v.get("secret")?.as_str()?)
        .ok()
        .filter(|s| s.len() >= 16)
}

/// Returns the store's cache secret (hex in [`CACHE_SECRET_KEY`]),
/// creating it when the store has none.
pub async fn cache_secret(store: &dyn ArtifactStore) -> Result<Vec<u8>, ArtifactError> {
    let make = || {
        let mut secret = uuid::Uuid::new_v4().as_bytes().to_vec();
        secret.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
        serde_json::json!({
            "secret": hex::encode(&secret),
            "about": "the key of the fetch cache's entry names: whoever reads it can tell which request an entry answers",
        })
    };
    oxwright_artifacts::read_or_create(store, CACHE_SECRET_KEY, parse_secret, make).await
}

/// The cache key of `spec` in `store`; `None` (no caching) when the
/// store's secret can be neither read nor made.
async fn key_in(store: &dyn ArtifactStore, spec: &FetchSpec) -> Option<String> {
    match cache_secret(store).await {
        Ok(secret) => Some(cache_key(&secret, spec)),
        Err(err) => {
            tracing::warn!(error = %err, "fetch cache secret unreadable; fetching the page");
            None
        }
    }
}

/// Writes `value` as JSON with every object's keys sorted.
fn canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                canonical(&map[k], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// Returns the store key of artefact `name` of the entry `key`.
pub fn entry_key(key: &str, name: &str) -> String {
    format!("{CACHE_PREFIX}{key}/{name}")
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Fetches `spec.url` through the cache in `store` (see the module
/// documentation); with `max_age_ms` 0 or no store it is [`fetch_page`].
pub async fn fetch_cached(
    engine: &dyn BrowserEngine,
    policy: &Arc<UrlPolicy>,
    store: Option<&dyn ArtifactStore>,
    spec: &FetchSpec,
) -> Result<FetchOutput, JobError> {
    let Some(store) = store.filter(|_| spec.max_age_ms > 0) else {
        return fetch_page(engine, policy, spec).await;
    };
    let started = Instant::now();
    let Some(key) = key_in(store, spec).await else {
        return fetch_page(engine, policy, spec).await;
    };
    let cached = match lookup(policy, store, spec, &key, started).await? {
        Lookup::Fresh(out) => return Ok(*out),
        Lookup::Stale(entry) => entry.map(|e| *e),
    };
    let validators = cached.as_ref().map(|e| e.validators.clone()).unwrap_or_default();
    let fetched = if validators.is_empty() {
        Some(fetch_page(engine, policy, spec).await?)
    } else {
        fetch_page_if(engine, policy, spec, &validators).await?
    };
    let mut out = match (fetched, cached) {
        (Some(out), _) => out,
        (None, Some(mut entry)) => {
            entry.stored_at_ms = now_ms();
            if let Some(out) = answer(store, &key, &entry, CacheStatus::Revalidated, started).await {
                write_entry(store, &key, &entry).await;
                tracing::debug!(url = %spec.url, key, "fetch cache revalidated");
                return Ok(out);
            }
            // The entry's artefacts went missing: fetch in full.
            fetch_page(engine, policy, spec).await?
        }
        (None, None) => unreachable!("a conditional request needs a cached entry"),
    };
    out.result.cache = Some(CacheStatus::Miss);
    store_output(store, &key, spec, &out).await;
    Ok(out)
}

/// What the cache holds for a request.
enum Lookup {
    /// A fresh entry's output.
    Fresh(Box<FetchOutput>),
    /// An entry past its age (to revalidate), or none.
    Stale(Option<Box<Entry>>),
}

/// Refuses what a fetch would refuse (the spec, its actions, the URL
/// policy), then reads the cache entry of `spec`.
async fn lookup(
    policy: &Arc<UrlPolicy>,
    store: &dyn ArtifactStore,
    spec: &FetchSpec,
    key: &str,
    started: Instant,
) -> Result<Lookup, JobError> {
    spec.validate().map_err(|e| e.with_url(spec.url.as_str()))?;
    parse_actions(spec).map_err(|e| e.with_url(spec.url.as_str()))?;
    if let Err(source) = policy.check(&spec.url).await {
        return Err(EngineError::policy(spec.url.as_str(), &source).into());
    }
    let cached = read_entry(store, key).await;
    if let Some(entry) = &cached
        && now_ms().saturating_sub(entry.stored_at_ms) < spec.max_age_ms
        && let Some(out) = answer(store, key, entry, CacheStatus::Hit, started).await
    {
        tracing::debug!(url = %spec.url, key, "fetch cache hit");
        return Ok(Lookup::Fresh(Box::new(out)));
    }
    Ok(Lookup::Stale(cached.map(Box::new)))
}

/// Answers `spec` from the cache in `store` without a browser: the fresh
/// entry's output (`cache: hit`), or `None` when a fetch is needed (no
/// entry, a stale one, `max_age_ms` 0, or a request a fetch would refuse,
/// which [`fetch_cached`] then refuses with its typed error). A caller
/// that finds every page here need not start a browser at all.
pub async fn fresh_from_cache(
    policy: &Arc<UrlPolicy>,
    store: &dyn ArtifactStore,
    spec: &FetchSpec,
) -> Option<FetchOutput> {
    if spec.max_age_ms == 0 {
        return None;
    }
    let key = key_in(store, spec).await?;
    match lookup(policy, store, spec, &key, Instant::now()).await {
        Ok(Lookup::Fresh(out)) => Some(*out),
        _ => None,
    }
}

/// Reads the entry `key`; a missing or unreadable one is `None` (a read
/// the store failed is logged: the fetch goes on as a miss).
async fn read_entry(store: &dyn ArtifactStore, key: &str) -> Option<Entry> {
    let body = match store.get(&entry_key(key, "entry.json")).await {
        Ok(body) => body,
        Err(ArtifactError::NotFound { .. }) => return None,
        Err(err) => {
            tracing::warn!(key, error = %err, "fetch cache unreadable; fetching the page");
            return None;
        }
    };
    serde_json::from_slice(&body)
        .map_err(|err| tracing::warn!(key, error = %err, "fetch cache entry unreadable; fetching the page"))
        .ok()
}

/// Reads `name` of the entry, when `present`; `Err` when it should be there and is not.
async fn artefact(
    store: &dyn ArtifactStore,
    key: &str,
    name: &str,
    present: bool,
) -> Result<Option<Bytes>, ()> {
    if !present {
        return Ok(None);
    }
    store.get(&entry_key(key, name)).await.map(Some).map_err(|err| {
        tracing::warn!(key, name, error = %err, "fetch cache artefact unreadable; fetching the page");
    })
}

/// The output a cached `entry` answers with, or `None` when its
/// artefacts cannot be read.
async fn answer(
    store: &dyn ArtifactStore,
    key: &str,
    entry: &Entry,
    status: CacheStatus,
    started: Instant,
) -> Option<FetchOutput> {
    let html = artefact(store, key, "page.html", entry.html).await.ok()?;
    let screenshot = artefact(store, key, "screenshot.png", entry.screenshot)
        .await
        .ok()?;
    let mut result = entry.result.clone();
    result.cache = Some(status);
    result.attempts = u32::from(status == CacheStatus::Revalidated);
    result.timings = FetchTimings {
        total_ms: ms(started.elapsed()),
        ..FetchTimings::default()
    };
    Some(FetchOutput {
        result,
        html: html.map(|b| String::from_utf8_lossy(&b).into_owned()),
        screenshot: screenshot.map(|b| b.to_vec()),
        validators: entry.validators.clone(),
    })
}

/// Keeps `out` as the entry `key`: its artefacts first, the entry last,
/// so an entry never names an artefact that is not there yet.
async fn store_output(store: &dyn ArtifactStore, key: &str, spec: &FetchSpec, out: &FetchOutput) {
    let mut result = out.result.clone();
    result.artifacts.clear();
    result.cache = None;
    let entry = Entry {
        url: spec.url.to_string(),
        stored_at_ms: now_ms(),
        validators: out.validators.clone(),
        html: out.html.is_some(),
        screenshot: out.screenshot.is_some(),
        result,
    };
    let parts = [
        (
            "page.html",
            out.html.as_ref().map(|h| Bytes::from(h.clone())),
            "text/html; charset=utf-8",
        ),
        (
            "screenshot.png",
            out.screenshot.as_ref().map(|p| Bytes::from(p.clone())),
            "image/png",
        ),
    ];
    for (name, body, content_type) in parts {
        if let Some(body) = body
            && let Err(err) = store.put(&entry_key(key, name), body, content_type).await
        {
            tracing::warn!(key, name, error = %err, "fetch cache not written");
            return;
        }
    }
    write_entry(store, key, &entry).await;
}

async fn write_entry(store: &dyn ArtifactStore, key: &str, entry: &Entry) {
    let Ok(body) = serde_json::to_vec(entry) else {
        return;
    };
    if let Err(err) = store
        .put(
            &entry_key(key, "entry.json"),
            Bytes::from(body),
            "application/json",
        )
        .await
    {
        tracing::warn!(key, error = %err, "fetch cache not written");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxwright_jobs::ContentMode;

    const SECRET: &[u8] = b"a secret of the store, 32 bytes.";

    fn spec() -> FetchSpec {
        FetchSpec::new("https://a.example/page".parse().unwrap())
    }

    #[test]
    fn key_ignores_what_does_not_change_the_output() {
        let base = cache_key(SECRET, &spec());
        assert_eq!(base.len(), 64);
        let mut s = spec();
        s.timeout_ms = 5_000;
        s.retry_count = 0;
        s.retry_delay_ms = 10;
        s.max_age_ms = 60_000;
        s.headless = false;
        assert_eq!(cache_key(SECRET, &s), base, "{NOT_IN_KEY:?} are not in the key");
    }

    #[test]
    fn key_changes_with_the_url_and_what_changes_the_output() {
        let base = cache_key(SECRET, &spec());
        let mut s = spec();
        s.content = ContentMode::Full;
        assert_ne!(cache_key(SECRET, &s), base);
        let mut s = spec();
        s.url = "https://a.example/other".parse().unwrap();
        assert_ne!(cache_key(SECRET, &s), base);
        let mut s = spec();
        s.actions = vec!["scroll: bottom".into()];
        assert_ne!(cache_key(SECRET, &s), base);
        let mut s = spec();
        s.headers.insert("Authorization".into(), "Bearer a".into());
        let a = cache_key(SECRET, &s);
        s.headers.insert("Authorization".into(), "Bearer b".into());
        assert_ne!(cache_key(SECRET, &s), a, "another user's view is another entry");
    }

    #[test]
    fn key_depends_on_the_stores_secret() {
        let a = cache_key(SECRET, &spec());
        assert_eq!(a.len(), 64);
        assert_ne!(cache_key(b"another store's secret, 32 bytes", &spec()), a);
        // Not the plain digest one could recompute from a guessed request.
        let mut text = String::new();
        canonical(&serde_json::to_value(spec()).unwrap(), &mut text);
        use sha2::Digest;
        let plain = hex::encode(Sha256::digest(format!("{KEY_SALT}\0{text}").as_bytes()));
        assert_ne!(a, plain);
    }

    #[tokio::test]
    async fn the_secret_is_made_once_and_read_back() {
        let store = oxwright_artifacts::MemoryStore::new();
        let first = cache_secret(&store).await.unwrap();
        assert_eq!(first.len(), 32);
        assert_eq!(cache_secret(&store).await.unwrap(), first);
        let other = oxwright_artifacts::MemoryStore::new();
        assert_ne!(cache_secret(&other).await.unwrap(), first);
    }

    #[test]
    fn canonical_json_sorts_keys() {
        let mut out = String::new();
        canonical(
            &serde_json::json!({"b": [1, {"d": 1, "c": 2}], "a": "x"}),
            &mut out,
        );
        assert_eq!(out, r#"{"a":"x","b":[1,{"c":2,"d":1}]}"#);
    }
}
