//! `oxwright check run PATH…`: runs UI checks (`NAME.check.toml`) once on
//! this machine, each through the same embedded workflow path as
//! `oxwright run` (artefacts under `sessions/<id>/`), retrying a failed run
//! as a new session when the check allows it. Each run's record goes to
//! `checks/<name>/runs/<run-id>.json`; `--junit` writes the JUnit report CI
//! reads. Exit 0 when every check passed (flaky counts as passed), 1 when
//! any failed, 2 for a bad check file.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use clap::{Args, Subcommand};
use oxwright_artifacts::ArtifactStore;
use oxwright_checks::{AttemptOutcome, Check, CheckRun, CheckStatus, RunContext, Trigger};
use oxwright_config::Setup;
use oxwright_engine::{BrowserEngine as _, OpenOptions};
use oxwright_jobs::{ErrorKind, JobError, JobId};
use oxwright_secrets::{Sanitizer, SecretStore};
use oxwright_telemetry::printable;
use oxwright_worker::BrowserSetup;
use oxwright_workflow::{RunDeps, Workflow, WorkflowBody, WorkflowOptions, run_workflow};

use crate::exit::{self, usage};

const EXAMPLES: &str = "\
A check file, login.check.toml:
  url = \"https://shop.example/app/login\"
  steps = '''
  fill: textbox \"Username\" = {{LOGIN_ID}}
  fill: textbox \"Password\" = {{PASSWORD}}
  click: button \"Sign in\"
  expect: text \"Plan: Pro\"
  '''
  retries = 1

Examples:
  oxwright check run checks/ --junit checks.xml --secrets secrets.env
  oxwright check run checks/login.check.toml --url https://pr-42.preview.shop.example";

/// Arguments of `oxwright check`.
#[derive(Debug, Args)]
#[command(after_help = EXAMPLES)]
pub struct CheckCmd {
    #[command(subcommand)]
    pub what: CheckWhat,
}

/// What `oxwright check` does.
#[derive(Debug, Subcommand)]
pub enum CheckWhat {
    /// Run checks once on this machine; exit 0 when all passed (flaky
    /// counts as passed), 1 when any failed, 2 for a bad check file.
    #[command(after_help = EXAMPLES)]
    Run(CheckRunCmd),
}

/// Arguments of `oxwright check run`.
#[derive(Debug, Args)]
pub struct CheckRunCmd {
    /// Check files (`NAME.check.toml`), or directories whose check files
    /// (subdirectories too) all run, in name order.
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Write a JUnit XML report here: one test case per check, a failure
    /// naming the failed step and its error kind.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Run against another deployment (a preview): replaces the scheme, host
    /// and port of each check's start URL, keeping its path and query.
    #[arg(long, value_name = "BASE", value_parser = base_url)]
    pub url: Option<url::Url>,
    #[command(flatten)]
    pub llm: crate::options::LlmArgs,
    /// File of NAME=value secrets for {{NAME}} placeholders (default:
    /// OXWRIGHT_SECRET_<NAME> environment variables).
    #[arg(long)]
    pub secrets: Option<PathBuf>,
    /// Deadline of one action (auto-wait, input, settle), in milliseconds.
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(
        oxwright_jobs::limits::MIN_ACTION_TIMEOUT_MS..=oxwright_jobs::limits::MAX_ACTION_TIMEOUT_MS))]
    pub action_timeout_ms: u64,
    /// Run a visible browser (needs a display).
    #[arg(long)]
    pub headed: bool,
}

fn base_url(text: &str) -> Result<url::Url, String> {
    oxwright_checks::parse_base_url(text)
}

/// Runs the command; returns the process exit code.
pub async fn run(setup: Setup, cmd: CheckCmd) -> anyhow::Result<i32> {
    match cmd.what {
        CheckWhat::Run(cmd) => run_checks(setup, cmd).await,
    }
}

/// A check ready to run: its file, its parsed workflow and the saved
/// login state it starts with.
struct Ready {
    check: Check,
    workflow: Workflow,
    state: Option<oxwright_engine::StorageState>,
}

/// What every run shares.
struct Runner {
    pool: oxwright_browser::BrowserPool,
    open: OpenOptions,
    deps: RunDeps,
    action_timeout: Duration,
    url: Option<url::Url>,
    trigger: Trigger,
}

async fn run_checks(setup: Setup, cmd: CheckRunCmd) -> anyhow::Result<i32> {
    // Everything a check needs is read before a browser starts: a bad file
    // or a missing secret is a usage error, and no check has run.
    let ready = read_checks(&cmd.paths, &setup.policy)?;
    if let Some(base) = &cmd.url {
        setup
            .policy
            .parse_input(base.as_str())
            .map_err(|e| usage(format!("--url {base}: {e}")))?;
    }
    let secrets = super::run::secret_store(&setup, cmd.secrets.as_deref())?;
    let sanitizer = Sanitizer::new();
    register_secrets(&ready, secrets.as_ref(), &sanitizer).await?;
    let llm = cmd.llm.model(&setup.env, &setup.config.llm)?;
    if llm.is_none()
        && let Some(r) = ready
            .iter()
            .find(|r| matches!(r.workflow.body, WorkflowBody::Plain(_)))
    {
        return Err(usage(format!(
            "{}: plain-language steps need an LLM (--llm-base-url and --model)",
            r.check.path.display()
        )));
    }
    let store = setup.store().await?;
    let mut open = OpenOptions::new(setup.policy.clone());
    open.headless = !cmd.headed;
    let runner = Runner {
        pool: setup.pool().await?,
        open,
        deps: RunDeps {
            llm,
            secrets,
            store: store.clone(),
            sanitizer: sanitizer.clone(),
        },
        action_timeout: Duration::from_millis(cmd.action_timeout_ms),
        url: cmd.url.clone(),
        trigger: trigger(&setup.env),
    };
    let mut runs = Vec::new();
    for r in &ready {
        let run = runner.run(r).await;
        let run = match run {
            Ok(run) => run.sanitized(&sanitizer),
            Err(err) => {
                runner.pool.shutdown().await;
                return Err(err);
            }
        };
        println!("{}", printable(&summary_line(&run)));
        save_record(store.as_ref(), &run).await?;
        runs.push(run);
    }
    runner.pool.shutdown().await;
    if let Some(path) = &cmd.junit {
        std::fs::write(path, oxwright_checks::junit::report(&runs, &sanitizer))
            .with_context(|| format!("writing {}", path.display()))?;
    }
    let failed = runs.iter().filter(|r| !r.status.is_pass()).count();
    println!(
        "{} checks: {} passed, {} flaky, {failed} failed; records in the {} (checks/<name>/runs/)",
        runs.len(),
        runs.iter().filter(|r| r.status == CheckStatus::Passed).count(),
        runs.iter().filter(|r| r.status == CheckStatus::Flaky).count(),
        printable(&sanitizer.clean(&store.describe()))
    );
    Ok(exit::of_outcome(failed, false))
}

/// Reads every check named on the command line (files, or directories of
/// them); two checks with one name are refused.
fn read_checks(paths: &[PathBuf], policy: &oxwright_policy::UrlPolicy) -> anyhow::Result<Vec<Ready>> {
    let mut checks: Vec<Check> = Vec::new();
    for path in paths {
        let found = if path.is_dir() {
            oxwright_checks::load_dir(path)
        } else {
            oxwright_checks::load(path).map(|c| vec![c])
        }
        .map_err(usage)?;
        if path.is_dir() && found.is_empty() {
            return Err(usage(format!("{}: no *.check.toml file in it", path.display())));
        }
        for check in found {
            check.admit(policy).map_err(usage)?;
            if let Some(first) = checks.iter().find(|c| c.name == check.name) {
                return Err(usage(format!(
                    "{}: check name `{}` is taken by {}",
                    check.path.display(),
                    check.name,
                    first.path.display()
                )));
            }
            checks.push(check);
        }
    }
    checks
        .into_iter()
        .map(|check| {
            let workflow = Workflow::parse(&check.steps).map_err(|e| {
                let at = check.steps_file.as_deref().unwrap_or(&check.path);
                usage(format!("{}: steps: {e}", at.display()))
            })?;
            let state = match &check.storage_state {
                Some(path) => Some(read_state(&check, path)?),
                None => None,
            };
            Ok(Ready {
                check,
                workflow,
                state,
            })
        })
        .collect()
}

/// The saved login state a check names; a missing or malformed file is
/// refused naming the check file, the key and its line.
fn read_state(check: &Check, path: &std::path::Path) -> anyhow::Result<oxwright_engine::StorageState> {
    oxwright_engine::StorageState::read_file(path)
        .map(|(state, _)| state)
        .map_err(|e| usage(check.storage_state_error(e)))
}

/// Refuses missing secrets before a browser starts, and registers every
/// value the checks will type with the sanitiser, so nothing written
/// (records, the JUnit file) can hold one, whichever step failed.
async fn register_secrets(
    ready: &[Ready],
    secrets: &dyn SecretStore,
    sanitizer: &Sanitizer,
) -> anyhow::Result<()> {
    let mut names: Vec<String> = Vec::new();
    for r in ready {
        for name in r.workflow.placeholders() {
            if !names.contains(&name) {
                names.push(name);
            }
        }
    }
    let mut missing = Vec::new();
    for name in &names {
        match secrets.get(name).await.map_err(usage)? {
            Some(value) => sanitizer.register(name, value.expose()),
            None => missing.push(name.clone()),
        }
    }
    if !missing.is_empty() {
        return Err(usage(super::run::missing_secrets_message(
            &missing,
            &secrets.describe(),
        )));
    }
    Ok(())
}

/// `ci` when the `CI` variable says so (as CI services set it), else `manual`.
fn trigger(env: &BTreeMap<String, String>) -> Trigger {
    match env.get("CI").map(|v| v.trim().to_ascii_lowercase()) {
        Some(v) if !v.is_empty() && v != "false" && v != "0" => Trigger::Ci,
        _ => Trigger::Manual,
    }
}

impl Runner {
    /// Runs `r` once, and again as a new session after a growing wait
    /// while it fails and its retries allow (never for a check with a
    /// `once:` step).
    async fn run(&self, r: &Ready) -> anyhow::Result<CheckRun> {
        let check = &r.check;
        let spec = check.workflow_spec(self.url.as_ref());
        let ctx = RunContext {
            run_id: JobId::new().to_string(),
            trigger: self.trigger,
            metadata: BTreeMap::new(),
            url: spec.start_url.clone(),
            started_at: chrono::Utc::now(),
        };
        let started = Instant::now();
        let tries = if check.may_retry() { check.retries + 1 } else { 1 };
        let mut attempts: Vec<AttemptOutcome> = Vec::new();
        for n in 1..=tries {
            if n > 1 {
                tokio::time::sleep(check.retry_wait(n - 1)).await;
            }
            let attempt = self.attempt(r, &spec).await?;
            let passed = attempt.passed();
            attempts.push(attempt);
            if passed {
                break;
            }
        }
        Ok(CheckRun::from_attempts(check, ctx, &attempts, started.elapsed()))
    }

    /// One workflow run in its own session and page, within the check's timeout.
    async fn attempt(&self, r: &Ready, spec: &oxwright_jobs::WorkflowSpec) -> anyhow::Result<AttemptOutcome> {
        let check = &r.check;
        let session = JobId::new().to_string();
        let started = Instant::now();
        let page = self.pool.open(&self.open).await.context("opening a page")?;
        let mut opts = WorkflowOptions::new(session.clone(), spec.start_url.clone());
        opts.name = spec.name.clone();
        opts.workflow_id = Some(oxwright_workflow::workflow_id(
            spec.name.as_deref(),
            spec.start_url.as_str(),
            &spec.workflow,
        ));
        opts.action_timeout = self.action_timeout;
        opts.storage_state = r.state.clone();
        let run = run_workflow(page.as_ref(), &r.workflow, self.deps.clone(), opts);
        let outcome = tokio::time::timeout(check.timeout, run).await;
        drop(page);
        let (result, error) = match outcome {
            Ok(Ok(result)) => (Some(result), None),
            Ok(Err(err)) => (None, Some(JobError::from(err))),
            Err(_) => (
                None,
                Some(JobError::new(
                    ErrorKind::Timeout,
                    format!(
                        "the run took longer than the check's timeout ({})",
                        secs(check.timeout)
                    ),
                )),
            ),
        };
        let error_artefact = match &result {
            Some(r) => error_artefact(self.deps.store.as_ref(), &r.artifacts).await,
            None => None,
        };
        Ok(AttemptOutcome {
            session_id: session,
            duration: started.elapsed(),
            result,
            error,
            error_artefact,
        })
    }
}

/// `90s`, `1.5s`: a duration as the check file may write it.
fn secs(d: Duration) -> String {
    format!("{}s", d.as_secs_f64())
}

/// Reads the failed step's error artefact (`errors/step-<n>-….json`), the
/// last one written, for its error type and hint.
async fn error_artefact(store: &dyn ArtifactStore, keys: &[String]) -> Option<serde_json::Value> {
    let key = keys
        .iter()
        .rev()
        .find(|k| k.contains("/errors/step-") && k.ends_with(".json"))?;
    match store.get(key).await {
        Ok(body) => serde_json::from_slice(&body).ok(),
        Err(error) => {
            tracing::warn!(%key, %error, "error artefact not read");
            None
        }
    }
}

/// Writes the run's record to `checks/<name>/runs/<run-id>.json`.
async fn save_record(store: &dyn ArtifactStore, run: &CheckRun) -> anyhow::Result<()> {
    let key = oxwright_checks::run_key(&run.check, &run.run_id);
    let body = serde_json::to_vec_pretty(run)?;
    store
        .put(&key, body.into(), "application/json")
        .await
        .with_context(|| format!("writing {key}"))
}

/// One line a person reads: status, name, duration, and the failed step.
fn summary_line(run: &CheckRun) -> String {
    let secs = run.duration_ms as f64 / 1000.0;
    let mut line = format!("{:<6}  {}  {secs:.1}s", run.status.as_str(), run.check);
    let at = |line: &mut String, lead: &str| {
        if let Some(step) = &run.failed_step {
            line.push_str(&format!(
                "  {lead}step {} ({}): {}: {}",
                step.index, step.text, step.error_kind, step.message
            ));
        } else if let Some(error) = &run.error {
            line.push_str(&format!("  {lead}{}: {}", error.kind, error.message));
        }
    };
    match run.status {
        CheckStatus::Passed => {}
        CheckStatus::Failed => at(&mut line, ""),
        CheckStatus::Flaky => at(
            &mut line,
            &format!("passed on attempt {}; before: ", run.attempts.len()),
        ),
    }
    if let Some(session) = run.last_session() {
        line.push_str(&format!("  (sessions/{session}/)"));
    }
    line
}
