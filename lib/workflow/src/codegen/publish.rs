//! A session's spec from the store to the store: generated, verified,
//! then published as `sessions/<id>/codegen/spec.ts`, or kept as
//! `codegen/failed.spec.ts` with the runner's output beside it.

use bytes::Bytes;
use oxwright_artifacts::ArtifactStore;
use oxwright_jobs::keys;

use super::{CodegenError, Spec, VerifyOptions, generate, verify};
use crate::report::load_session;
use crate::{Sanitizer, WorkflowError};

/// The published spec, under `sessions/<id>/`.
pub const SPEC_TS: &str = "codegen/spec.ts";
/// A spec that failed its run, under `sessions/<id>/`.
pub const FAILED_SPEC_TS: &str = "codegen/failed.spec.ts";
/// The failed run's output, beside it.
pub const FAILURE_TXT: &str = "codegen/failure.txt";

/// What `codegen_session` did.
#[derive(Debug)]
pub enum Published {
    /// The spec passed (or was not run) and is stored at `key`.
    Spec {
        /// `sessions/<id>/codegen/spec.ts`.
        key: String,
        /// The spec.
        spec: Spec,
        /// It was run and passed.
        verified: bool,
    },
    /// The spec failed its run; kept at `key`, not published.
    Failed {
        /// `sessions/<id>/codegen/failed.spec.ts`.
        key: String,
        /// `sessions/<id>/codegen/failure.txt`.
        output_key: String,
        /// The runner's output (sanitised).
        output: String,
    },
}

/// Why `codegen_session` made nothing.
#[derive(Debug, thiserror::Error)]
pub enum PublishError {
    /// The session cannot make a spec.
    #[error(transparent)]
    Codegen(#[from] CodegenError),
    /// The store or the runner failed.
    #[error(transparent)]
    Workflow(#[from] WorkflowError),
}

async fn put(store: &dyn ArtifactStore, key: &str, body: String, ty: &str) -> Result<(), WorkflowError> {
    store
        .put(key, Bytes::from(body), ty)
        .await
        .map_err(|e| WorkflowError::store(&e))
}

/// Generates the session's spec and, unless `run` is `None`, runs it
/// before publishing it.
pub async fn codegen_session(
    store: &dyn ArtifactStore,
    session_id: &str,
    sanitizer: &Sanitizer,
    run: Option<&VerifyOptions>,
) -> Result<Published, PublishError> {
    let session = load_session(store, session_id).await?;
    let result = session
        .result
        .ok_or_else(|| CodegenError::Unusable(format!("session {session_id} has no result.json")))?;
    let spec = generate(&result, &session.records, sanitizer)?;
    let key = |name: &str| keys::session_artifact(session_id, name);
    let ts = "text/plain; charset=utf-8";
    if let Some(opts) = run {
        let outcome = verify(&spec.code, opts, sanitizer).await?;
        if !outcome.passed {
            let (failed, output_key) = (key(FAILED_SPEC_TS), key(FAILURE_TXT));
            put(store, &failed, spec.code.clone(), ts).await?;
            put(store, &output_key, outcome.output.clone(), ts).await?;
            return Ok(Published::Failed {
                key: failed,
                output_key,
                output: outcome.output,
            });
        }
    }
    let published = key(SPEC_TS);
    put(store, &published, spec.code.clone(), ts).await?;
    Ok(Published::Spec {
        key: published,
        spec,
        verified: run.is_some(),
    })
}
