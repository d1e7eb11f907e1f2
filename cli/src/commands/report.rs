//! `oxwright report SESSION`: writes `sessions/<id>/report.html` again from
//! the session's artefacts in the store (the file store under `--out`, or
//! S3) and prints where it is.

use anyhow::Context as _;
use clap::Args;
use oxwright_secrets::Sanitizer;
use oxwright_workflow::report::write_report;

use crate::exit;
use oxwright_config::Setup;

/// Arguments of `oxwright report`.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  oxwright --out ./oxwright-out report 01JD7Z4K2Q  # → ./oxwright-out/sessions/01JD7Z4K2Q/report.html\n  oxwright --s3 s3://bucket/prefix report 01JD7Z4K2Q  # the report of a worker's session"
)]
pub struct ReportCmd {
    /// The session id (`sessions/<id>/`).
    pub session: String,
}

/// Returns where `key` is for a person: the file's path in a file store,
/// else the key in the store described.
pub fn location(setup: &Setup, key: &str) -> String {
    match &setup.config.store.s3 {
        Some(s3) => format!("{}/{key}", s3.trim_end_matches('/')),
        None => setup.config.out_dir.join(key).display().to_string(),
    }
}

/// Checks a session id is one path segment (it names a store prefix).
pub fn session_id(id: &str) -> anyhow::Result<&str> {
    let ok = !id.is_empty()
        && id != "."
        && id != ".."
        && id.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
    if ok {
        Ok(id)
    } else {
        Err(exit::usage(format!(
            "{id:?} is not a session id (letters, digits, - _ .)"
        )))
    }
}

/// Runs the command; returns the process exit code.
pub async fn run(setup: Setup, cmd: ReportCmd) -> anyhow::Result<i32> {
    let session = session_id(&cmd.session)?;
    let store = setup.store().await?;
    let key = write_report(store.as_ref(), session, &Sanitizer::new())
        .await
        .with_context(|| format!("writing the report of session {session}"))
        .map_err(exit::usage)?;
    println!("{}", location(&setup, &key));
    Ok(exit::OK)
}
