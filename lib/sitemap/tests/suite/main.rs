//! Integration suite: every sitemap case served by an in-process fixture
//! server on 127.0.0.1, with a policy that allows exactly that address and a
//! fresh cache directory per test.

mod cache;
mod common;
mod discovery;
mod formats;
mod limits;
