//! Where oxwright keeps what jobs produce: the [`ArtifactStore`] trait, its
//! S3, filesystem and in-memory implementations, key validation, and the one
//! test suite every implementation must pass.

mod error;
mod fs;
mod identity;
pub mod key;
mod memory;
mod patient;
mod s3;
mod section;
mod store;
pub mod test_suite;

pub use error::ArtifactError;
pub use fs::FsStore;
pub use identity::{STORE_ID_KEY, read_json, read_or_create, read_store_id, store_id};
pub use key::{validate_key, validate_prefix};
pub use memory::MemoryStore;
pub use patient::PatientStore;
pub use s3::{DEFAULT_MULTIPART_THRESHOLD, DEFAULT_PART_SIZE, S3Config, S3Credentials, S3Store};
pub use section::StoreSection;
pub use store::{ArtifactStore, Expect, Version};
