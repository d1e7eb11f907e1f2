//! The subcommands, one file each.

pub mod batch;
pub mod fetch;
pub mod run;
pub mod sample_site;
pub mod sitemap;
