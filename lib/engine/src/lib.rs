//! The browser-engine seam. Everything above it — the workflow runner, the
//! page fetch, the MCP server — drives a browser only through [`Page`] and
//! [`BrowserEngine`]; Chromium (`oxwright-browser`) and an external
//! Playwright MCP server implement them. Nothing here speaks DevTools.
//!
//! The seam sits at the level of actions (`locate`, `act`, `snapshot`),
//! like Playwright's page delegate, because one backend only speaks at that
//! level. [`ScriptedPage`] is an in-memory implementation for unit tests;
//! `test_suite` (feature `testsuite`) is the one suite every implementation
//! passes.

mod act;
pub mod aria;
mod error;
mod isolation;
mod locator;
mod page;
pub mod scripted;
pub mod scripts;
mod snapshot;
mod storage;
#[cfg(feature = "testsuite")]
pub mod test_suite;

pub use error::{EngineError, EngineErrorKind};
pub use isolation::{DEFAULT_CONTEXT_REUSE, DEFAULT_JOB_DOM_NODES, DEFAULT_JOB_MEMORY_MB, Isolation};
pub use locator::{Locator, name_matches, normalize};
pub use page::{
    Act, ActOptions, Acted, BrowserEngine, ConsoleMessage, DialogAction, DialogRecord, Element, ElementId,
    ElementState, GotoOptions, MAX_STORAGE_STATE_BYTES, MemoryLimit, Modifier, MouseButton, NameValue,
    Navigated, OpenOptions, OriginStorage, Page, PageMemory, RequestRecord, ScreenshotOptions,
    ServedDocument, StorageState, TabInfo, Target, WaitCondition,
};
pub use scripted::{ScriptedEngine, ScriptedPage, ScriptedSite};
pub use snapshot::{
    DEFAULT_MAX_CHARS, Snapshot, SnapshotElement, SnapshotLine, SnapshotOptions, interactive_role,
    render_capped,
};

pub use oxwright_jobs::{BlockResource, WaitUntil};
pub use oxwright_policy::UrlPolicy;
