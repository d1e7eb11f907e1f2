//! Where oxwright keeps what jobs produce: the [`ArtifactStore`] trait, its
//! filesystem and in-memory implementations, key validation, and the one
//! test suite every implementation must pass.

mod error;
mod fs;
pub mod key;
mod memory;
mod store;
pub mod test_suite;

pub use error::ArtifactError;
pub use fs::FsStore;
pub use key::{validate_key, validate_prefix};
pub use memory::MemoryStore;
pub use store::ArtifactStore;
