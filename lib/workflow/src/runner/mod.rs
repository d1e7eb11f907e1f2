//! The run loop: checklist, then per step up to three attempts of snapshot →
//! decision → precheck → action → settle → judgement (LLM path), or
//! precheck → action (structured path). Every attempt is one JSONL line.

use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::Utc;
use oxwright_artifacts::ArtifactStore;
use oxwright_engine::Page;
use oxwright_jobs::{
    JobError, RunStatus, StepOutcome, StepSource, WorkflowMode, WorkflowResult, WorkflowTotals,
};
use oxwright_llm::{ChatModel, Message};
use serde_json::{Value, json};
use tracing::Instrument;

use crate::cache::{ActionCache, CacheEvent, EntryKey, Fingerprint, Resolved};
use crate::decision::{DecisionAnswer, parse_decision_in};
use crate::log::SessionLog;
use crate::prompts::{self, DECISION_MAX_TOKENS, JUDGE_MAX_TOKENS, STEP_TOKEN_BUDGET, prompt_tokens};
use crate::steps::{Workflow, WorkflowBody};
use crate::{Locator, Sanitizer, SecretStore, WorkflowError};
use oxwright_engine::{DEFAULT_MAX_CHARS, Snapshot, Target};
use oxwright_steps::{ActError, AttemptError, Executor};

mod ask;
mod attempt;
mod emergency;
mod failure;
mod llm_step;
mod record;
mod replay;
mod resume;
mod schema;
mod structured;
#[cfg(test)]
mod tests;

use failure::{StepKind, Tried};

use attempt::{AttemptLine, llm_decision, ms};
use oxwright_jobs::{StepDurations as Durations, StepEmergency};

pub use oxwright_steps::MAX_ATTEMPTS;

/// Characters of snapshot the budget keeps before it cuts the sitemap's URLs.
const SNAPSHOT_FLOOR: usize = 2_000;

/// The screenshot a completed run keeps of its last page (`sessions/<id>/…`).
pub const FINAL_SCREENSHOT: &str = "final.png";
/// The Markdown a completed run keeps of its last page (`sessions/<id>/…`).
pub const FINAL_MARKDOWN: &str = "final.md";

/// Receives console lines (already sanitised).
pub type ConsoleSink = Arc<dyn Fn(&str) + Send + Sync>;

/// What a run uses.
#[derive(Clone)]
pub struct RunDeps {
    /// The LLM; structured workflows need none.
    pub llm: Option<Arc<dyn ChatModel>>,
    /// Where placeholders get their values.
    pub secrets: Arc<dyn SecretStore>,
    /// Where `sessions/<id>/` goes.
    pub store: Arc<dyn ArtifactStore>,
    /// The sanitiser; share it with whatever else prints for this run.
    pub sanitizer: Sanitizer,
}

impl std::fmt::Debug for RunDeps {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunDeps")
            .field("llm", &self.llm.is_some())
            .field("secrets", &self.secrets.describe())
            .field("store", &self.store.describe())
            .finish()
    }
}

/// How a run behaves.
#[derive(Clone)]
pub struct WorkflowOptions {
    /// `sessions/<id>/`.
    pub session_id: String,
    /// A name for reports.
    pub name: Option<String>,
    /// The first page.
    pub start_url: url::Url,
    /// Deadline of each action (auto-wait, input, settle).
    pub action_timeout: Duration,
    /// Cap on the snapshot text.
    pub snapshot_max_chars: usize,
    /// Console lines go here.
    pub console: Option<ConsoleSink>,
    /// The workflow's id in the action cache (`workflows/<id>/`): a
    /// plain-language run records each verified step's action there.
    /// `None`: nothing is recorded.
    pub workflow_id: Option<String>,
    /// Replays the cached actions of `workflow_id` instead of asking the LLM.
    pub replay: Option<ReplayOptions>,
    /// Keeps a screenshot of the first page and after each completed step
    /// (`screenshots/start.png`, `screenshots/step_<n>.png`) for the report.
    pub step_screenshots: bool,
    /// Site profiles and sitemap URLs for the decision prompt.
    pub hints: crate::Hints,
    /// Writes `checkpoint.json` after each completed step, and continues
    /// from a checkpoint when it holds one. `None`: no checkpoints.
    pub checkpoints: Option<crate::Checkpoints>,
    /// A saved browser state (a login) the run starts with: its cookies are
    /// set and each origin's storage written before the first page opens.
    /// A run continued from a checkpoint takes the checkpoint's state instead.
    pub storage_state: Option<oxwright_engine::StorageState>,
    /// The JSON Schemas `extract: FILE.json as NAME` steps read into, by
    /// the file name as the steps write it.
    pub schemas: std::collections::BTreeMap<String, oxwright_jobs::JsonSchema>,
}

/// How a replay runs.
#[derive(Debug, Clone)]
pub struct ReplayOptions {
    /// The checklist to follow (from the recorded run): no LLM call makes it.
    pub checklist: Vec<String>,
    /// Successes before a cached action runs with no LLM call; below it,
    /// the completion judge confirms the replayed action.
    pub trust_after: u32,
}

impl std::fmt::Debug for WorkflowOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkflowOptions")
            .field("session_id", &self.session_id)
            .field("start_url", &self.start_url.as_str())
            .finish()
    }
}

impl WorkflowOptions {
    /// Options with defaults for `session_id` starting at `start_url`.
    pub fn new(session_id: impl Into<String>, start_url: url::Url) -> Self {
        Self {
            session_id: session_id.into(),
            name: None,
            start_url,
            action_timeout: Duration::from_secs(10),
            snapshot_max_chars: DEFAULT_MAX_CHARS,
            console: None,
            workflow_id: None,
            replay: None,
            step_screenshots: true,
            hints: crate::Hints::default(),
            checkpoints: None,
            storage_state: None,
            schemas: std::collections::BTreeMap::new(),
        }
    }
}

struct Run<'a> {
    exec: Executor<'a>,
    /// The step (1-based) that ended the run with `if present then stop`.
    stopped_at: Option<u32>,
    llm: Option<Arc<dyn ChatModel>>,
    log: SessionLog,
    sanitizer: Sanitizer,
    opts: WorkflowOptions,
    checklist: Vec<String>,
    outcomes: Vec<StepOutcome>,
    totals: WorkflowTotals,
    history: Vec<Value>,
    /// The current step's kind and attempts, for its error artefact.
    kind: StepKind,
    tried: Vec<Tried>,
    /// The small model's recent confidences (emergency mode's third trigger).
    confidence: emergency::Confidence,
    /// The cache a replay reads.
    cache: Option<ActionCache>,
    /// What this run adds to the cache.
    events: Vec<CacheEvent>,
    /// The current step's action, once it verifiably completed.
    resolved: Option<(EntryKey, Resolved)>,
    /// Where the current step's action comes from.
    source: StepSource,
    /// Sitemap URLs by origin, loaded once per run.
    sitemaps: std::collections::BTreeMap<String, Vec<String>>,
    /// Checkpoints, when the run writes them.
    cp: Option<resume::CpState>,
    /// Which steps are marked `once`.
    once: Vec<bool>,
    /// The last screenshot kept, while no step has run since: the final
    /// page's, when the run ends right after it.
    last_shot: Option<Vec<u8>>,
}

/// Refuses a run whose `extract: FILE.json` steps have no schema, or no
/// LLM to read through, before anything runs.
fn schemas_given(workflow: &Workflow, deps: &RunDeps, opts: &WorkflowOptions) -> Result<(), WorkflowError> {
    for file in workflow.schema_files() {
        if !opts.schemas.contains_key(&file) {
            return Err(WorkflowError::Config(format!(
                "extract: {file}: the job carries no schema of that name (the files the steps name are read beside the workflow, or given as the job's `schemas`)"
            )));
        }
        if deps.llm.is_none() {
            return Err(WorkflowError::Config(format!(
                "extract: {file} reads the page through an LLM (--llm-base-url and --model)"
            )));
        }
    }
    Ok(())
}

/// Runs `workflow` on `page` (any engine) and returns its result. A failed step or a fatal
/// error still yields a result (status failed, `error` set) with the
/// artefacts written so far; `Err` is returned only when nothing could run.
#[tracing::instrument(name = "workflow_run", skip_all, fields(session_id = %opts.session_id))]
pub async fn run_workflow(
    page: &dyn Page,
    workflow: &Workflow,
    deps: RunDeps,
    opts: WorkflowOptions,
) -> Result<WorkflowResult, WorkflowError> {
    let started_at = Utc::now();
    let started = Instant::now();
    let mode = match &workflow.body {
        WorkflowBody::Plain(_) => WorkflowMode::Llm,
        WorkflowBody::Structured(_) => WorkflowMode::Structured,
    };
    if mode == WorkflowMode::Llm && deps.llm.is_none() && opts.replay.is_none() {
        return Err(WorkflowError::Config(
            "plain-language steps need an LLM (--llm-base-url and --model)".into(),
        ));
    }
    schemas_given(workflow, &deps, &opts)?;
    let mut run = new_run(page, workflow, &deps, &opts, mode);
    let outcome = run.run(workflow).await;
    if let Err(e @ WorkflowError::HandedOver { .. }) = outcome {
        // Not the end: the checkpoint stays for the invocation that goes on.
        run.save_cache(mode).await;
        return Err(e);
    }
    if let Err(e @ WorkflowError::Checkpoint(_)) = outcome {
        // Nothing ran: the checkpoint cannot be continued, and stays.
        return Err(e);
    }
    let error = match outcome {
        Ok(()) => None,
        Err(err) => {
            run.log.say(&format!("error: {err}"));
            Some(JobError::from(err))
        }
    };
    let final_url = run.exec.snapshot().await.ok().map(|s| s.url);
    run.tally(started);
    // A run that stopped early completed every step it ran.
    let ran = run.stopped_at.unwrap_or(run.totals.steps);
    let status = if error.is_none() && run.totals.steps_ok == ran {
        RunStatus::Completed
    } else {
        RunStatus::Failed
    };
    if status == RunStatus::Completed {
        run.keep_final_page().await;
    }
    run.save_cache(mode).await;
    run.drop_checkpoint().await;
    let (started_at, resumed) = match &run.cp {
        Some(cp) => (cp.started_at.unwrap_or(started_at), cp.resumed.clone()),
        None => (started_at, Vec::new()),
    };
    let mut result = WorkflowResult {
        session_id: opts.session_id.clone(),
        name: opts.name.clone(),
        workflow_id: opts.workflow_id.clone().filter(|_| mode == WorkflowMode::Llm),
        mode,
        status,
        start_url: opts.start_url.to_string(),
        final_url,
        checklist: run.checklist.clone(),
        steps: run.outcomes.clone(),
        outputs: WorkflowResult::outputs_of(&run.outcomes),
        totals: run.totals.clone(),
        error,
        artifacts: Vec::new(),
        started_at,
        finished_at: Utc::now(),
        resumed,
    };
    let mut keys = run.log.written();
    keys.push(oxwright_jobs::keys::session_artifact(
        &opts.session_id,
        "result.json",
    ));
    result.artifacts = keys;
    let value = serde_json::to_value(&result).map_err(|e| WorkflowError::Store(e.to_string()))?;
    run.log.put_json("result.json", &value).await?;
    // For people: a report that cannot be written never fails the run.
    if let Err(e) = crate::report::write_report(deps.store.as_ref(), &opts.session_id, &deps.sanitizer).await
    {
        tracing::warn!(error = %e, "report not written");
    }
    // The result handed back is the sanitised one, like every other output.
    let clean: WorkflowResult = serde_json::from_value(deps.sanitizer.clean_json(&value))
        .map_err(|e| WorkflowError::Store(e.to_string()))?;
    run.log.say(&format!(
        "{} {}/{} steps, {} tokens, {:.0} ms",
        if clean.status == RunStatus::Completed {
            "completed:"
        } else {
            "failed:"
        },
        clean.totals.steps_ok,
        clean.totals.steps,
        clean.totals.total_tokens,
        clean.totals.duration_ms
    ));
    Ok(clean)
}

/// The run's state before its first step.
fn new_run<'a>(
    page: &'a dyn Page,
    workflow: &Workflow,
    deps: &RunDeps,
    opts: &WorkflowOptions,
    mode: WorkflowMode,
) -> Run<'a> {
    let log = SessionLog::new(
        deps.store.clone(),
        opts.session_id.clone(),
        deps.sanitizer.clone(),
        opts.console.clone(),
    );
    let exec = Executor::new(
        page,
        deps.sanitizer.clone(),
        deps.secrets.clone(),
        opts.action_timeout,
        opts.snapshot_max_chars,
    );
    Run {
        exec,
        llm: deps.llm.clone(),
        log,
        sanitizer: deps.sanitizer.clone(),
        opts: opts.clone(),
        checklist: Vec::new(),
        outcomes: Vec::new(),
        stopped_at: None,
        totals: WorkflowTotals::default(),
        history: Vec::new(),
        kind: StepKind::Llm,
        tried: Vec::new(),
        confidence: emergency::Confidence::default(),
        cache: None,
        events: Vec::new(),
        resolved: None,
        sitemaps: Default::default(),
        cp: opts
            .checkpoints
            .clone()
            .map(|c| resume::CpState::new(c, workflow)),
        once: Vec::new(),
        last_shot: None,
        source: match mode {
            WorkflowMode::Llm => StepSource::Llm,
            WorkflowMode::Structured => StepSource::Structured,
        },
    }
}

impl Run<'_> {
    /// The run's totals, and a skipped outcome for every step not run.
    fn tally(&mut self, started: Instant) {
        self.totals.steps = self.checklist.len() as u32;
        self.totals.steps_ok = self
            .outcomes
            .iter()
            .filter(|o| o.status == RunStatus::Completed)
            .count() as u32;
        self.totals.total_tokens = self.totals.prompt_tokens + self.totals.completion_tokens;
        let prior_ms = self.cp.as_ref().map_or(0.0, |c| c.prior_ms);
        self.totals.duration_ms = prior_ms + started.elapsed().as_secs_f64() * 1000.0;
        for i in self.outcomes.len()..self.checklist.len() {
            self.outcomes.push(StepOutcome {
                step_number: i as u32 + 1,
                instruction: oxwright_jobs::step_text(&self.checklist[i]).to_string(),
                status: RunStatus::Skipped,
                attempts: 0,
                reasons: self
                    .stopped_at
                    .map(|n| vec![format!("not run: step {n} ran and said `then stop`")])
                    .unwrap_or_default(),
                prompt_tokens: 0,
                completion_tokens: 0,
                duration_ms: 0.0,
                screenshot: None,
                source: None,
                else_reason: None,
                output: None,
            });
        }
    }
}

impl Run<'_> {
    async fn run(&mut self, workflow: &Workflow) -> Result<(), WorkflowError> {
        if let WorkflowBody::Plain(_) = &workflow.body
            && let Some(replay) = &self.opts.replay
        {
            let id = self
                .opts
                .workflow_id
                .clone()
                .ok_or_else(|| WorkflowError::Config("a replay needs the workflow's id".into()))?;
            let store = self.log.store();
            self.cache = Some(ActionCache::load(&store, &id).await?);
            self.checklist = replay.checklist.clone();
            self.once = resume::once_flags(workflow, &self.checklist);
        }
        if let WorkflowBody::Structured(steps) = &workflow.body {
            self.checklist = steps.iter().map(|s| format!("[] {}", s.text)).collect();
            self.once = resume::once_flags(workflow, &self.checklist);
        }
        let from = match self.resume_from(workflow).await? {
            Some(from) => from,
            None => {
                self.log.say(&format!(
                    "session {} starting at {}",
                    self.opts.session_id, self.opts.start_url
                ));
                let start = self.opts.start_url.clone();
                if let Err(e) = self.open_start(&start).await {
                    if !e.is_fatal() {
                        self.start_failed(&start, &e).await?;
                    }
                    return Err(e.into());
                }
                self.keep_step_screenshot("start.png").await;
                if let WorkflowBody::Plain(text) = &workflow.body
                    && self.opts.replay.is_none()
                {
                    self.checklist = self.convert(text).await?;
                    self.once = resume::once_flags(workflow, &self.checklist);
                }
                0
            }
        };
        match &workflow.body {
            WorkflowBody::Plain(_) => {
                for i in from..self.checklist.len() {
                    if self.hand_over_due(i, from) {
                        return Err(self.hand_over(i).await);
                    }
                    let step = self.checklist[i].clone();
                    self.last_shot = None;
                    let span = tracing::info_span!("workflow_step", step = i + 1, instruction = %self.sanitizer.clean(&step));
                    self.plain_step(i).instrument(span).await?;
                    self.checkpoint_done(i + 1).await;
                }
            }
            WorkflowBody::Structured(steps) => {
                for (i, step) in steps.iter().enumerate().skip(from) {
                    if self.hand_over_due(i, from) {
                        return Err(self.hand_over(i).await);
                    }
                    self.last_shot = None;
                    let span = tracing::info_span!("workflow_step", step = i + 1, instruction = %self.sanitizer.clean(&step.text));
                    let stop = self.structured_step(i, step).instrument(span).await?;
                    self.checkpoint_done(i + 1).await;
                    if stop {
                        self.stopped_at = Some(i as u32 + 1);
                        let left = steps.len() - i - 1;
                        if left > 0 {
                            self.log.say(&format!(
                                "step {} ran and says `then stop`: the {left} step(s) after it are not run",
                                i + 1
                            ));
                        }
                        break;
                    }
                }
            }
        }
        Ok(())
    }

    /// Opens the start page: with the saved browser state the options
    /// carry, its cookies and storage in place first. The state's cookie
    /// values are credentials: they are cleaned from every output like secrets.
    async fn open_start(&mut self, start: &url::Url) -> Result<(), oxwright_engine::EngineError> {
        let Some(state) = self.opts.storage_state.take() else {
            return self.exec.goto(start).await;
        };
        for (name, value) in state.secret_cookies() {
            self.sanitizer.register(&name, value);
        }
        self.log.say(&format!(
            "  starting with a saved browser state: {} cookie(s), the storage of {} origin(s)",
            state.cookies.len(),
            state.origins.len()
        ));
        let opts = oxwright_engine::GotoOptions::load(self.exec.timeout().max(Duration::from_secs(15)));
        self.exec
            .page()
            .restore_state(&state, start, &opts)
            .await
            .map(|_| ())
    }

    /// Continues from the checkpoint the options carry, if any: the step
    /// to run next.
    async fn resume_from(&mut self, workflow: &Workflow) -> Result<Option<usize>, WorkflowError> {
        let from = match self.resume(workflow).await {
            Ok(Some(from)) => from,
            Ok(None) => return Ok(None),
            Err(e @ WorkflowError::Checkpoint(_)) => {
                // Kept for a worker (or a run) that can use it.
                self.cp = None;
                return Err(e);
            }
            Err(e) => return Err(e),
        };
        self.once = resume::once_flags(workflow, &self.checklist);
        Ok(Some(from))
    }

    fn llm(&self) -> Result<&Arc<dyn ChatModel>, WorkflowError> {
        self.llm
            .as_ref()
            .ok_or_else(|| WorkflowError::Config("no LLM configured".into()))
    }

    async fn convert(&mut self, text: &str) -> Result<Vec<String>, WorkflowError> {
        let (answer, _) = self
            .ask(
                "checklist",
                None,
                prompts::checklist(text),
                prompts::CHECKLIST_MAX_TOKENS,
            )
            .await?;
        let checklist = prompts::parse_checklist(&answer)
            .map_err(|e| WorkflowError::Llm(oxwright_llm::LlmError::BadAnswer(format!("checklist: {e}"))))?;
        self.log.say(&format!("checklist: {} steps", checklist.len()));
        for item in &checklist {
            self.log.say(&format!("  {item}"));
        }
        Ok(checklist)
    }
}
