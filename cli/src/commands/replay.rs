//! `oxwright replay SESSION|WORKFLOW`: re-runs a recorded plain-language
//! workflow from its action cache (`workflows/<id>/`). Trusted cached
//! actions run with no LLM call; a step whose cached action no longer fits
//! the page goes to the LLM when one is configured (self-heal), else fails
//! with `LLM_FALLBACK_DISABLED`.

use clap::Args;
use oxwright_artifacts::ArtifactStore;
use oxwright_jobs::{WorkflowResult, keys};
use oxwright_workflow::{ActionCache, DEFAULT_TRUST_AFTER, ReplayOptions, Workflow};

use super::run::{Plan, RunArgs, execute};
use crate::exit::usage;

use oxwright_config::Setup;

const EXAMPLES: &str = "\
Examples:
  oxwright run profile.txt --url http://127.0.0.1:8765/app/profile --llm-base-url http://127.0.0.1:8000/v1 --model m
  oxwright replay profile                  # the workflow recorded from profile.txt
  oxwright replay 01J9Z…                   # the workflow a session ran
  oxwright replay profile --url https://staging.example/app/profile --trust-after 1";

/// Arguments of `oxwright replay`.
#[derive(Debug, Args)]
#[command(after_help = EXAMPLES)]
pub struct ReplayCmd {
    /// A session id (`sessions/<id>/result.json`) or a workflow id
    /// (`workflows/<id>/`).
    pub target: String,
    /// Start here instead of the recorded start URL (same site, another host).
    #[arg(long)]
    pub url: Option<url::Url>,
    /// Consecutive verified successes before a cached action runs with no
    /// LLM call; below it the completion judge confirms it (one call).
    #[arg(long, default_value_t = DEFAULT_TRUST_AFTER, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub trust_after: u32,
    #[command(flatten)]
    pub common: RunArgs,
}

/// Runs the command; returns the process exit code.
pub async fn run(setup: Setup, cmd: ReplayCmd) -> anyhow::Result<i32> {
    let store = setup.store().await?;
    let (workflow_id, recorded_url) = resolve(store.as_ref(), &cmd.target).await?;
    let cache = ActionCache::load(&store, &workflow_id).await?;
    if cache.runs == 0 || cache.checklist.is_empty() {
        return Err(usage(format!(
            "nothing is recorded for workflow {workflow_id:?} in {}: run it once with `oxwright run` \
             (plain-language steps and an LLM) first",
            store.describe()
        )));
    }
    let start_url = match (&cmd.url, recorded_url) {
        (Some(u), _) => u.clone(),
        (None, Some(u)) => u,
        (None, None) => cache
            .start_url
            .parse()
            .map_err(|e| usage(format!("the recorded start URL {:?}: {e}", cache.start_url)))?,
    };
    let text = cache
        .checklist
        .iter()
        .map(|s| s.trim_start_matches("[]").trim().to_string())
        .collect::<Vec<_>>()
        .join("\n");
    let workflow = Workflow::parse(&text).map_err(usage)?;
    let plan = Plan {
        workflow,
        start_url,
        name: Some(workflow_id.clone()),
        workflow_id,
        replay: Some(ReplayOptions {
            checklist: cache.checklist.clone(),
            trust_after: cmd.trust_after,
        }),
        schemas: Default::default(),
    };
    execute(setup, &cmd.common, plan).await
}

/// The workflow id (and start URL) of a session, or `target` itself as a
/// workflow id.
async fn resolve(store: &dyn ArtifactStore, target: &str) -> anyhow::Result<(String, Option<url::Url>)> {
    if target.is_empty() || target.contains("..") || target.contains('/') {
        return Err(usage(format!("{target:?} is not a session or workflow id")));
    }
    let key = keys::session_artifact(target, "result.json");
    if !store.exists(&key).await? {
        return Ok((target.to_string(), None));
    }
    let body = store.get(&key).await?;
    let result: WorkflowResult =
        serde_json::from_slice(&body).map_err(|e| usage(format!("{key} is not a workflow result: {e}")))?;
    let id = result.workflow_id.ok_or_else(|| {
        usage(format!(
            "session {target} recorded no actions (structured steps run without an LLM anyway; \
             replay them with `oxwright run`)"
        ))
    })?;
    Ok((id, result.start_url.parse().ok()))
}
