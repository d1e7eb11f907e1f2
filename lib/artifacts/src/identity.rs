//! A store's identity: a random id kept in the store itself under
//! [`STORE_ID_KEY`], so processes can tell whether they write to the same
//! store whatever each calls it (`http://localhost:9000` on a laptop,
//! `http://s3:9000` inside compose). Submitters create it on first use;
//! workers only read it.

use std::time::Duration;

use bytes::Bytes;

use crate::{ArtifactError, ArtifactStore};

/// The key of the store's identity.
pub const STORE_ID_KEY: &str = "store.json";

/// How long a creator waits before reading what it wrote back, so two
/// processes creating it at once both end with the one written last.
const SETTLE: Duration = Duration::from_millis(200);

/// Reads the JSON document at `key` through `parse`; `None` when there is
/// none, or `parse` finds nothing in it.
pub async fn read_json<T>(
    store: &dyn ArtifactStore,
    key: &str,
    parse: impl Fn(&serde_json::Value) -> Option<T>,
) -> Result<Option<T>, ArtifactError> {
    let body = match store.get(key).await {
        Ok(body) => body,
        Err(ArtifactError::NotFound { .. }) => return Ok(None),
        Err(err) => return Err(err),
    };
    Ok(serde_json::from_slice::<serde_json::Value>(&body)
        .ok()
        .and_then(|v| parse(&v)))
}

/// Returns what `parse` reads at `key`, first writing what `make` makes
/// there when the store has nothing readable: a value every process
/// sharing the store agrees on (the one written last when two create it
/// at once).
pub async fn read_or_create<T>(
    store: &dyn ArtifactStore,
    key: &str,
    parse: impl Fn(&serde_json::Value) -> Option<T>,
    make: impl FnOnce() -> serde_json::Value,
) -> Result<T, ArtifactError> {
    if let Some(value) = read_json(store, key, &parse).await? {
        return Ok(value);
    }
    let made = make();
    let body = Bytes::from(serde_json::to_vec_pretty(&made).expect("json serialises"));
    store.put(key, body, "application/json").await?;
    tokio::time::sleep(SETTLE).await;
    match read_json(store, key, &parse).await? {
        Some(value) => Ok(value),
        None => Ok(parse(&made).expect("the value made reads back")),
    }
}

fn parse_id(v: &serde_json::Value) -> Option<String> {
    v.get("store_id")?
        .as_str()
        .filter(|id| !id.is_empty())
        .map(str::to_owned)
}

/// Reads the store's id; `None` when the store has none yet (or what it
/// holds under [`STORE_ID_KEY`] is not one).
pub async fn read_store_id(store: &dyn ArtifactStore) -> Result<Option<String>, ArtifactError> {
    read_json(store, STORE_ID_KEY, parse_id).await
}

/// Returns the store's id, creating it when the store has none.
pub async fn store_id(store: &dyn ArtifactStore) -> Result<String, ArtifactError> {
    let make = || {
        serde_json::json!({
            "store_id": uuid::Uuid::new_v4().to_string(),
            "about": "oxwright's identity of this store: jobs carry it, and workers writing elsewhere refuse them",
        })
    };
    read_or_create(store, STORE_ID_KEY, parse_id, make).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MemoryStore;

    #[tokio::test]
    async fn created_once_then_read_back_by_everyone() {
        let store = MemoryStore::new();
        assert_eq!(read_store_id(&store).await.unwrap(), None);
        let id = store_id(&store).await.unwrap();
        assert_eq!(store_id(&store).await.unwrap(), id);
        assert_eq!(read_store_id(&store).await.unwrap(), Some(id.clone()));
        assert_ne!(store_id(&MemoryStore::new()).await.unwrap(), id);
        // Something that is not an identity is replaced by one.
        let other = MemoryStore::new();
        other
            .put(STORE_ID_KEY, Bytes::from_static(b"[]"), "application/json")
            .await
            .unwrap();
        assert_eq!(read_store_id(&other).await.unwrap(), None);
        assert!(!store_id(&other).await.unwrap().is_empty());
    }
}
