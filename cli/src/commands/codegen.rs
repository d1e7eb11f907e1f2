//! `oxwright codegen SESSION [-o FILE]`: a `@playwright/test` spec from the
//! session's completed steps, run headless (Debian Chromium, `infra/node`'s
//! `@playwright/test`) before it is published to FILE and to
//! `sessions/<id>/codegen/spec.ts`. A spec that fails is kept as
//! `codegen/failed.spec.ts` with the output beside it, and the command
//! exits 1. Placeholders are read from `process.env`: the run gets their
//! values from `--secrets` or `OXWRIGHT_SECRET_<NAME>`.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context as _;
use clap::Args;
use oxwright_secrets::{EnvSecrets, FileSecrets, Sanitizer, SecretStore};
use oxwright_workflow::codegen::{Published, VerifyOptions, codegen_session};

use super::report::{location, session_id};
use crate::exit::{self, usage};
use oxwright_config::Setup;

/// Arguments of `oxwright codegen`.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  oxwright codegen 01JD7Z4K2Q -o tests/login.spec.ts --secrets secrets.env\n  oxwright codegen 01JD7Z4K2Q --no-verify  # sessions/<id>/codegen/spec.ts, not run first"
)]
pub struct CodegenCmd {
    /// The session id (`sessions/<id>/`).
    pub session: String,
    /// Where the spec goes (besides `sessions/<id>/codegen/spec.ts`).
    #[arg(short = 'o', long = "output")]
    pub output: Option<PathBuf>,
    /// Publish without running the spec first.
    #[arg(long)]
    pub no_verify: bool,
    /// File of NAME=value secrets the verification run gets as environment
    /// variables (default: OXWRIGHT_SECRET_<NAME> variables).
    #[arg(long)]
    pub secrets: Option<PathBuf>,
    /// The folder holding `node_modules/@playwright/test` [default: infra/node].
    #[arg(long)]
    pub node_dir: Option<PathBuf>,
}

fn node_dir() -> PathBuf {
    // …/infra/node/node_modules/@playwright/mcp/cli.js, found the same way.
    let cli = oxwright_playwright_mcp::default_cli();
    cli.ancestors()
        .nth(4)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(oxwright_playwright_mcp::NODE_DIR))
}

/// Runs the command; returns the process exit code.
pub async fn run(setup: Setup, cmd: CodegenCmd) -> anyhow::Result<i32> {
    let session = session_id(&cmd.session)?;
    let store = setup.store().await?;
    let sanitizer = Sanitizer::new();
    let verify = if cmd.no_verify {
        None
    } else {
        let secrets: Arc<dyn SecretStore> = match &cmd.secrets {
            Some(path) => Arc::new(FileSecrets::load(path).map_err(usage)?),
            None => Arc::new(EnvSecrets::new(setup.env.clone(), EnvSecrets::DEFAULT_PREFIX)),
        };
        let mut opts = VerifyOptions::new(cmd.node_dir.clone().unwrap_or_else(node_dir));
        opts.chromium = oxwright_worker::pool_config(&setup.config.browser, &setup.env).chrome_path;
        // Every placeholder of the session's steps; a missing one fails the run.
        for name in placeholder_names(store.as_ref(), session).await {
            if let Some(secret) = secrets.get(&name).await.map_err(usage)? {
                sanitizer.register(&name, secret.expose());
                opts.env.push((name, secret.expose().to_string()));
            }
        }
        Some(opts)
    };
    let published = codegen_session(store.as_ref(), session, &sanitizer, verify.as_ref())
        .await
        .with_context(|| format!("codegen of session {session}"))
        .map_err(usage)?;
    match published {
        Published::Spec { key, spec, verified } => {
            if let Some(path) = &cmd.output {
                std::fs::write(path, &spec.code).with_context(|| format!("writing {}", path.display()))?;
                println!("{}", path.display());
            }
            eprintln!(
                "spec {}: {}",
                if verified {
                    "passed"
                } else {
                    "not run (--no-verify)"
                },
                location(&setup, &key)
            );
            Ok(exit::OK)
        }
        Published::Failed {
            key,
            output_key,
            output,
        } => {
            eprintln!("{output}");
            eprintln!(
                "error: the generated spec failed its run; not published. Kept as {} (output: {})",
                location(&setup, &key),
                location(&setup, &output_key)
            );
            Ok(exit::JOBS_FAILED)
        }
    }
}

/// The `{{NAME}}`s of the session's recorded steps.
async fn placeholder_names(store: &dyn oxwright_artifacts::ArtifactStore, session: &str) -> Vec<String> {
    let key = oxwright_jobs::keys::session_steps(session);
    let body = store.get(&key).await.unwrap_or_default();
    oxwright_secrets::placeholders(&String::from_utf8_lossy(&body))
}
