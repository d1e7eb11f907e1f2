//! Where the HTTP API serves a stored artefact: the links that batch
//! results, `/v1/fetch` answers and batch webhooks carry.

use serde::Serialize;

/// An artefact key and the API path that serves it.
#[derive(Debug, Clone, Serialize)]
pub struct ArtifactLink {
    /// The key in the artefact store.
    pub key: String,
    /// `GET` it here (with the API's token).
    pub url: String,
}

/// Links to `keys` under `/v1/artifacts/`.
pub fn artifact_links(keys: &[String]) -> Vec<ArtifactLink> {
    keys.iter()
        .map(|key| ArtifactLink {
            key: key.clone(),
            url: format!("/v1/artifacts/{key}"),
        })
        .collect()
}
