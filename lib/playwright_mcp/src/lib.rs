//! An external Playwright MCP server (`@playwright/mcp` from npm) as a
//! second implementation of the engine seam (seed 004). [`McpClient`]
//! owns one server child and follows the seed's connection state machine
//! with reconnects and 2/4/8 s retries; [`McpPage`] maps [`oxwright_engine::Page`]
//! onto the server's tools (snapshot refs, Playwright selectors as element
//! ids); [`PlaywrightMcpEngine`] opens one child per page behind its own
//! egress proxy. `design.md` beside this crate says what the protocol
//! cannot express.

mod client;
mod config;
mod engine;
mod page;
mod parse;
mod process;
mod selector;

pub use client::{ConnState, McpClient, Retry, ToolOutput};
pub use config::{NODE_DIR, PwMcpConfig, default_cli};
pub use engine::PlaywrightMcpEngine;
pub use page::McpPage;
