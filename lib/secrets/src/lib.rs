//! Secrets and the sanitiser, below everything that types a secret or
//! writes a line: workflows, fetch actions, the MCP server, reports and
//! generated specs.
//!
//! - [`SecretStore`] resolves a `{{NAME}}` placeholder to its value only at
//!   the moment of typing ([`resolve`]); environment variables
//!   ([`EnvSecrets`]), a file ([`FileSecrets`]) or memory ([`MemorySecrets`]);
//!   `{{totp:NAME}}` types the current RFC 6238 code of the seed `NAME` holds.
//! - [`Sanitizer`] is the one filter every outgoing line passes through: it
//!   puts the placeholder back for every value resolved, and masks e-mail
//!   addresses, phone and card numbers, tokens, cookies and credentials.
//! - [`CheckpointKey`] seals checkpoints and saved login states.

mod sanitize;
mod seal;
mod store;
mod totp;

pub use sanitize::Sanitizer;
pub use seal::CheckpointKey;
pub use store::{
    EnvSecrets, FileSecrets, MemorySecrets, ResolveError, Secret, SecretError, SecretStore, missing,
    placeholders, resolve,
};
pub use totp::{TotpError, code as totp_code};
