//! The browser engine: a warm pool of Chromium processes that oxwright owns,
//! pages in fresh browser contexts, navigation under the URL policy with
//! resource blocking, content extraction and screenshots. Every DevTools call
//! has a deadline.

mod config;
mod error;
mod extract;
mod handle;
mod intercept;
mod navigate;
mod pool;
pub mod process;
mod tab;

use std::sync::Arc;
use std::time::Duration;

pub use config::{Isolation, PoolConfig};
pub use error::BrowserError;
pub use extract::Extracted;
pub use pool::{BrowserPool, Lease, PoolStats};
pub use tab::Tab;

pub use oxwright_jobs::{BlockResource, WaitUntil};
pub use oxwright_policy::UrlPolicy;

/// How to navigate.
#[derive(Debug, Clone)]
pub struct NavigateOptions {
    /// The lifecycle state to wait for.
    pub wait_until: WaitUntil,
    /// A CSS selector that must appear before navigation counts as done.
    pub wait_for: Option<String>,
    /// Resource types refused.
    pub block: Vec<BlockResource>,
    /// The URL policy applied to every request.
    pub policy: Arc<UrlPolicy>,
    /// Deadline for the whole navigation, waits included.
    pub timeout: Duration,
}

impl NavigateOptions {
    /// Waits for `load`, no selector, nothing blocked.
    pub fn load(policy: Arc<UrlPolicy>, timeout: Duration) -> Self {
        Self {
            wait_until: WaitUntil::Load,
            wait_for: None,
            block: Vec::new(),
            policy,
            timeout,
        }
    }
}

/// What a navigation ended on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Navigation {
    /// The main document's URL after redirects.
    pub final_url: String,
    /// Its HTTP status.
    pub status: u16,
    /// Its content type.
    pub content_type: Option<String>,
    /// Redirect targets followed, in order.
    pub redirects: Vec<String>,
    /// Requests refused by `block`.
    pub blocked: usize,
    /// Sub-requests refused by the URL policy.
    pub refused: Vec<String>,
}
