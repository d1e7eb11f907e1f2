//! The browser engine: a warm pool of Chromium processes that oxwright owns,
//! pages in fresh browser contexts, navigation under the URL policy with
//! resource blocking, content extraction and screenshots. Every DevTools call
//! has a deadline.

mod admission;
mod config;
mod error;
mod handle;
mod intercept;
mod navigate;
mod page;
mod pool;
pub mod process;
mod ready;
mod tab;

use std::sync::Arc;
use std::time::Duration;

pub use admission::Admission;
pub use config::{Isolation, PoolConfig};
pub use error::BrowserError;
pub use page::ChromiumPage;
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

/// What a navigation ended on (the engine seam's [`oxwright_engine::Navigated`]).
pub type Navigation = oxwright_engine::Navigated;
