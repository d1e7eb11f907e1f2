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

/// How long a creator waits before reading its identity back, so two
/// processes creating it at once both end with the one written last.
const SETTLE: Duration = Duration::from_millis(200);

/// Reads the store's id; `None` when the store has none yet (or what it
/// holds under [`STORE_ID_KEY`] is not one).
pub async fn read_store_id(store: &dyn ArtifactStore) -> Result<Option<String>, ArtifactError> {
    let body = match store.get(STORE_ID_KEY).await {
        Ok(body) => body,
        Err(ArtifactError::NotFound { .. }) => return Ok(None),
        Err(err) => return Err(err),
    };
    Ok(serde_json::from_slice::<serde_json::Value>(&body)
        .ok()
        .and_then(|v| v.get("store_id")?.as_str().map(str::to_owned))
        .filter(|id| !id.is_empty()))
}

/// Returns the store's id, creating it when the store has none.
pub async fn store_id(store: &dyn ArtifactStore) -> Result<String, ArtifactError> {
    if let Some(id) = read_store_id(store).await? {
        return Ok(id);
    }
    let id = uuid::Uuid::new_v4().to_string();
    let body = serde_json::json!({
        "store_id": id,
        "about": "oxwright's identity of this store: jobs carry it, and workers writing elsewhere refuse them",
    });
    store
        .put(
            STORE_ID_KEY,
            Bytes::from(serde_json::to_vec_pretty(&body).expect("json serialises")),
            "application/json",
        )
        .await?;
    tokio::time::sleep(SETTLE).await;
    Ok(read_store_id(store).await?.unwrap_or(id))
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
