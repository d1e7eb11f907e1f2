//! Job intake, batches and manifests.
