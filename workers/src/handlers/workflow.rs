//! The workflow-run handler: parses the workflow, leases a page, runs it
//! through `oxwright-workflow` and stores the result. Session artefacts
//! (`steps.jsonl`, `llm.jsonl`, screenshots, errors) go under
//! `sessions/<id>/`; the result also under `jobs/workflow/<job-id>/`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use oxwright_engine::{BrowserEngine, EngineError, OpenOptions, StorageState};
use oxwright_jobs::{ErrorKind, Job, JobError, RunStatus, WorkflowSpec, keys};
use oxwright_llm::{LlmClient, LlmConfig};
use oxwright_secrets::{EnvSecrets, Sanitizer, SecretStore};
use oxwright_workflow::{
    CHECKPOINT, Checkpoint, CheckpointKey, Checkpoints, RunDeps, Workflow, WorkflowOptions, run_workflow,
};

use super::HandlerContext;

tokio::task_local! {
    /// When the invocation running the job must have answered (an AWS
    /// Lambda invocation's deadline, less its margin): a workflow hands
    /// the rest of its run to a fresh invocation before it.
    pub static STOP_BY: std::time::Instant;
}

/// What workflow jobs need beyond the pool: secrets and the environment
/// holding LLM API keys.
#[derive(Debug, Clone)]
pub struct WorkflowContext {
    /// Resolves `{{NAME}}` placeholders.
    pub secrets: Arc<dyn SecretStore>,
    /// Environment read for `api_key_env`.
    pub env: BTreeMap<String, String>,
    /// Seals the browser state in checkpoints (`OXWRIGHT_CHECKPOINT_KEY`);
    /// every worker that may continue another's run needs the same key.
    pub checkpoint_key: Option<CheckpointKey>,
}

impl WorkflowContext {
    /// Secrets from `OXWRIGHT_SECRET_<NAME>`, API keys and the checkpoint
    /// key from `env`; a malformed checkpoint key is an error.
    pub fn from_env(env: &BTreeMap<String, String>) -> Result<Self, String> {
        Ok(Self {
            secrets: Arc::new(EnvSecrets::new(env.clone(), EnvSecrets::DEFAULT_PREFIX)),
            env: env.clone(),
            checkpoint_key: CheckpointKey::from_env(env)?,
        })
    }
}

impl Default for WorkflowContext {
    /// No secrets, no API keys, no checkpoint key: a context built
    /// without an environment.
    fn default() -> Self {
        Self {
            secrets: Arc::new(EnvSecrets::new(BTreeMap::new(), EnvSecrets::DEFAULT_PREFIX)),
            env: BTreeMap::new(),
            checkpoint_key: None,
        }
    }
}

/// The saved login the job starts from, opened with the worker's
/// checkpoint key: a job that carries one to a worker without the key, or
/// one sealed with another key or edited, is refused as `invalid_input`.
fn login_state(ctx: &HandlerContext, spec: &WorkflowSpec) -> Result<Option<StorageState>, JobError> {
    let Some(sealed) = &spec.sealed_storage_state else {
        return Ok(None);
    };
    let refused = |why: String| {
        JobError::new(
            ErrorKind::InvalidInput,
            format!("the job's saved login state: {why}"),
        )
    };
    let Some(key) = &ctx.workflow.checkpoint_key else {
        return Err(refused(format!(
            "it is sealed and this worker has no key ({})",
            CheckpointKey::ENV
        )));
    };
    let plain = key
        .open(sealed, oxwright_jobs::STORAGE_STATE_BOUND)
        .map_err(refused)?;
    StorageState::from_json(&plain).map(Some).map_err(refused)
}

/// The checkpoint an earlier delivery of `job` left under its session,
/// if any. A checkpoint of another job under the same session (a session
/// id given twice) is not continued: that run is written over.
async fn earlier_run(ctx: &HandlerContext, session: &str, job: &Job) -> Result<Option<Checkpoint>, JobError> {
    let key = keys::session_artifact(session, CHECKPOINT);
    let body = match ctx.store.get(&key).await {
        Ok(body) => body,
        Err(oxwright_artifacts::ArtifactError::NotFound { .. }) => return Ok(None),
        Err(e) => return Err(super::store_error(&e)),
    };
    // Unusable like a checkpoint whose seal does not open: the same kind,
    // and the job is not started afresh (its effects would happen twice).
    let checkpoint: Checkpoint = serde_json::from_slice(&body).map_err(|e| {
        JobError::new(
            ErrorKind::InvalidInput,
            format!("checkpoint: {key}: not a usable checkpoint (cut short or not one): {e}"),
        )
    })?;
    let id = job.id.to_string();
    if checkpoint.job_id.as_deref() != Some(id.as_str()) {
        tracing::info!(
            session,
            "a checkpoint of another job is under this session: starting afresh"
        );
        return Ok(None);
    }
    Ok(Some(checkpoint))
}

/// Runs a workflow job and returns the artefact keys written.
pub async fn run_workflow_job(
    ctx: &HandlerContext,
    job: &Job,
    spec: &WorkflowSpec,
) -> Result<Vec<String>, JobError> {
    spec.validate()?;
    let workflow_id = spec.workflow_id.clone().unwrap_or_else(|| {
        oxwright_workflow::workflow_id(spec.name.as_deref(), spec.start_url.as_str(), &spec.workflow)
    });
    let replay = replay_options(ctx, spec, &workflow_id).await?;
    let text = match &replay {
        Some(r) => r
            .checklist
            .iter()
            .map(|s| s.trim_start_matches("[]").trim())
            .collect::<Vec<_>>()
            .join("\n"),
        None => spec.workflow.clone(),
    };
    let workflow = Workflow::parse(&text).map_err(JobError::from)?;
    let session = session_id(spec, job)?;
    if let Err(source) = ctx.policy.check(&spec.start_url).await {
        return Err(EngineError::policy(spec.start_url.as_str(), &source).into());
    }
    let llm = llm_client(ctx, spec)?;
    let state = login_state(ctx, spec)?;
    let mut open = OpenOptions::new(ctx.policy.clone());
    open.headless = spec.headless;
    let page = ctx.pool.open(&open).await.map_err(JobError::from)?;
    let deps = RunDeps {
        llm,
        secrets: ctx.workflow.secrets.clone(),
        store: ctx.store.clone(),
        sanitizer: Sanitizer::new(),
    };
    let mut opts = WorkflowOptions::new(session.clone(), spec.start_url.clone());
    opts.name = spec.name.clone();
    opts.workflow_id = Some(workflow_id);
    opts.replay = replay;
    // In range: `spec.validate` refused anything else.
    opts.action_timeout = Duration::from_millis(spec.action_timeout_ms);
    if !spec.sites.is_empty() {
        opts.hints.sites = Some(Arc::new(oxwright_workflow::SiteProfiles {
            sites: spec.sites.clone(),
        }));
    }
    if spec.sitemap_hints {
        opts.hints.sitemaps = Some(Arc::new(oxwright_workflow::SitemapHints::new(ctx.policy.clone())));
    }
    let mut checkpoints = Checkpoints::new(
        ctx.workflow.checkpoint_key.clone(),
        oxwright_workflow::this_worker(),
    );
    checkpoints.job_id = Some(job.id.to_string());
    checkpoints.resume = earlier_run(ctx, &session, job).await?.map(|c| {
        let why = c.continued_because().to_string();
        (c, why)
    });
    checkpoints.stop_by = STOP_BY.try_with(|t| *t).ok();
    opts.checkpoints = Some(checkpoints);
    opts.storage_state = state;
    opts.schemas = spec.schemas.clone();
    let result = run_workflow(page.as_ref(), &workflow, deps, opts)
        .await
        .map_err(JobError::from)?;
    drop(page);
    let result_key = keys::job_result(job.kind(), job.id);
    let body =
        serde_json::to_vec_pretty(&result).map_err(|e| JobError::new(ErrorKind::Internal, e.to_string()))?;
    ctx.store
        .put(&result_key, Bytes::from(body), "application/json")
        .await
        .map_err(|e| super::store_error(&e))?;
    if result.status != RunStatus::Completed {
        let mut err = result
            .error
            .clone()
            .unwrap_or_else(|| JobError::new(ErrorKind::StepFailed, "the workflow did not complete"));
        err.message = format!("{} (session artefacts under sessions/{session}/)", err.message);
        return Err(err);
    }
    let mut written = result.artifacts.clone();
    written.push(result_key);
    Ok(written)
}

/// With `replay`, the checklist the workflow's runs recorded and the trust
/// count; a workflow never run is refused.
async fn replay_options(
    ctx: &HandlerContext,
    spec: &WorkflowSpec,
    workflow_id: &str,
) -> Result<Option<oxwright_workflow::ReplayOptions>, JobError> {
    if !spec.replay {
        return Ok(None);
    }
    let cache = oxwright_workflow::ActionCache::load(&ctx.store, workflow_id)
        .await
        .map_err(JobError::from)?;
    if cache.checklist.is_empty() {
        return Err(JobError::new(
            ErrorKind::InvalidInput,
            format!("replay: nothing is recorded for workflow {workflow_id:?}; run it once first"),
        ));
    }
    Ok(Some(oxwright_workflow::ReplayOptions {
        checklist: cache.checklist,
        trust_after: spec.trust_after.unwrap_or(oxwright_workflow::DEFAULT_TRUST_AFTER),
    }))
}

/// The run's session id: the spec's, else the job's; a safe key segment.
fn session_id(spec: &WorkflowSpec, job: &Job) -> Result<String, JobError> {
    let session = spec.session_id.clone().unwrap_or_else(|| job.id.to_string());
    if session.is_empty()
        || !session
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    {
        return Err(JobError::new(
            ErrorKind::InvalidInput,
            format!("session id {session:?}: use letters, digits, '-', '_' and '.'"),
        ));
    }
    Ok(session)
}

/// The job's LLM, when it names one.
fn llm_client(
    ctx: &HandlerContext,
    spec: &WorkflowSpec,
) -> Result<Option<Arc<dyn oxwright_llm::ChatModel>>, JobError> {
    let Some(l) = &spec.llm else {
        return Ok(None);
    };
    let mut cfg = LlmConfig::new(l.base_url.clone(), l.model.clone());
    cfg.model.api_key_env = l.api_key_env.clone();
    let cfg = cfg.with_large_model(l.large_model.clone());
    let client = LlmClient::new(cfg, &ctx.workflow.env)
        .map_err(|e| JobError::from(oxwright_workflow::WorkflowError::Llm(e)))?;
    Ok(Some(Arc::new(client) as Arc<dyn oxwright_llm::ChatModel>))
}
