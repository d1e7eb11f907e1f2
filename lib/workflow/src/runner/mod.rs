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
use crate::executor::{ActError, Executor};
use crate::log::SessionLog;
use crate::prompts::{self, DECISION_MAX_TOKENS, JUDGE_MAX_TOKENS, STEP_TOKEN_BUDGET, prompt_tokens};
use crate::steps::{Workflow, WorkflowBody};
use crate::{AttemptError, Locator, Sanitizer, SecretStore, WorkflowError};
use oxwright_engine::{DEFAULT_MAX_CHARS, Snapshot, Target};

mod ask;
mod attempt;
mod emergency;
mod failure;
mod record;
mod replay;
mod resume;
mod structured;
#[cfg(test)]
mod tests;

use failure::{StepKind, Tried};

use attempt::{AttemptLine, llm_decision, ms};
use oxwright_jobs::{StepDurations as Durations, StepEmergency};

pub use crate::step_run::MAX_ATTEMPTS;

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
    let mut run = Run {
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
        source: match mode {
            WorkflowMode::Llm => StepSource::Llm,
            WorkflowMode::Structured => StepSource::Structured,
        },
    };
    let outcome = run.run(workflow).await;
    if let Err(e @ WorkflowError::HandedOver { .. }) = outcome {
        // Not the end: the checkpoint stays for the invocation that goes on.
        run.save_cache(mode).await;
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
    run.totals.steps = run.checklist.len() as u32;
    run.totals.steps_ok = run
        .outcomes
        .iter()
        .filter(|o| o.status == RunStatus::Completed)
        .count() as u32;
    run.totals.total_tokens = run.totals.prompt_tokens + run.totals.completion_tokens;
    let prior_ms = run.cp.as_ref().map_or(0.0, |c| c.prior_ms);
    run.totals.duration_ms = prior_ms + started.elapsed().as_secs_f64() * 1000.0;
    for i in run.outcomes.len()..run.checklist.len() {
        run.outcomes.push(StepOutcome {
            step_number: i as u32 + 1,
            instruction: run.checklist[i].clone(),
            status: RunStatus::Skipped,
            attempts: 0,
            reasons: run
                .stopped_at
                .map(|n| vec![format!("not run: step {n} ran and said `then stop`")])
                .unwrap_or_default(),
            prompt_tokens: 0,
            completion_tokens: 0,
            duration_ms: 0.0,
            screenshot: None,
            source: None,
        });
    }
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

/// `failure` and, for each quoted text of `step` ("Load more"), the page's
/// lines that hold it with the lines they sit under (from the whole
/// snapshot, not only the capped text the prompt shows).
fn found_in_page(failure: &str, step: &str, snap: &Snapshot) -> String {
    let mut out = failure.to_string();
    for quoted in quoted_texts(step) {
        let (lines, hits) = snap.find(&quoted, 1_500);
        if hits > 0 {
            out.push_str(&format!(
                "\nThe snapshot was cut to fit; the page's lines holding {quoted:?}:\n{lines}"
            ));
        }
    }
    out
}

/// The texts `step` quotes ("…", “…”, '…').
fn quoted_texts(step: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (open, close) in [('"', '"'), ('\u{201c}', '\u{201d}'), ('\'', '\'')] {
        let mut rest = step;
        while let Some(i) = rest.find(open) {
            let after = &rest[i + open.len_utf8()..];
            let Some(j) = after.find(close) else { break };
            let text = after[..j].trim();
            if text.len() >= 2 && !out.iter().any(|t| t == text) {
                out.push(text.to_string());
            }
            rest = &after[j + close.len_utf8()..];
        }
    }
    out
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
                if let Err(e) = self.exec.goto(&start).await {
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

    /// Fits the decision prompt into the token budget: the snapshot shrinks
    /// first (down to [`SNAPSHOT_FLOOR`] characters), then the sitemap's
    /// URL list, which goes when it is down to a few lines.
    #[allow(clippy::too_many_arguments)]
    fn decision_prompt(
        &self,
        index: usize,
        step: &str,
        meta: &Value,
        failure: Option<&str>,
        snap: &Snapshot,
        sitemap: Option<&[String]>,
    ) -> Vec<Message> {
        let mut text = snap.text.clone();
        let mut cap = self.opts.snapshot_max_chars;
        let mut url_chars = crate::SITEMAP_MAX_CHARS;
        loop {
            let urls = sitemap.and_then(|u| crate::url_block(u, crate::SITEMAP_MAX_URLS, url_chars));
            let msgs = prompts::decision(
                &self.checklist,
                index,
                step,
                Some(meta),
                failure,
                &text,
                urls.as_deref(),
            );
            let tokens = prompt_tokens(&msgs) + DECISION_MAX_TOKENS as usize;
            if tokens <= STEP_TOKEN_BUDGET || (cap < 500 && urls.is_none()) {
                return msgs;
            }
            let over = tokens - STEP_TOKEN_BUDGET;
            if cap > SNAPSHOT_FLOOR || urls.is_none() {
                cap = (cap * STEP_TOKEN_BUDGET / tokens * 9 / 10).max(SNAPSHOT_FLOOR.min(cap / 2));
                text = self.exec.within(snap, cap);
            } else {
                // ~4 characters a token; a list under 200 characters goes.
                url_chars = url_chars.saturating_sub(over * 4 + 200);
                if url_chars < 200 {
                    url_chars = 0;
                }
            }
        }
    }

    /// The sitemap URLs of the site `url` is on (once per origin per run).
    async fn sitemap_urls(&mut self, url: &str) -> Option<Vec<String>> {
        let source = self.opts.hints.sitemaps.clone()?;
        let page = url::Url::parse(url).ok()?;
        let origin = page.origin().ascii_serialization();
        if !self.sitemaps.contains_key(&origin) {
            let urls = source.urls(&page).await;
            self.sitemaps.insert(origin.clone(), urls);
        }
        self.sitemaps.get(&origin).filter(|u| !u.is_empty()).cloned()
    }

    async fn llm_step(&mut self, index: usize) -> Result<(), WorkflowError> {
        let number = index as u32 + 1;
        let instruction = self.checklist[index].clone();
        let step = instruction.trim_start_matches("[]").trim().to_string();
        self.log
            .say(&format!("step {number}/{}: {step}", self.checklist.len()));
        let step_started = Instant::now();
        self.kind = StepKind::Llm;
        self.tried.clear();
        let (mut p_tokens, mut c_tokens) = (0u64, 0u64);
        let mut reasons: Vec<String> = Vec::new();
        let mut cached: Option<Snapshot> = None;
        let mut last_snapshot = String::new();
        let mut completed = false;
        let mut attempt = 0;
        let mut limit = MAX_ATTEMPTS;
        let mut emergency: Option<StepEmergency> = None;
        // The last successful action (or the step's start), for the stall trigger.
        let mut progress = tokio::time::Instant::now();
        // Where the step started, and the action about to run with its
        // element's fingerprint (for the action cache).
        let mut step_url: Option<String> = None;
        let recording = self.opts.workflow_id.is_some();
        while !completed {
            // Every attempt so far failed (a completed one ends the loop).
            if emergency.is_none()
                && let Some((trigger, reason)) =
                    emergency::trigger(attempt, progress.elapsed(), &self.confidence)
            {
                emergency = Some(self.emergency_on(number, trigger, reason));
                limit = attempt + emergency::EMERGENCY_ATTEMPTS;
            }
            if attempt >= limit {
                break;
            }
            attempt += 1;
            let large = emergency.is_some();
            let attempt_started = Instant::now();
            let mut d = Durations::default();
            let t = Instant::now();
            let snap = match cached.take() {
                Some(s) => s,
                None => self.exec.snapshot().await?,
            };
            d.snapshot_ms = ms(t.elapsed());
            last_snapshot = snap.text.clone();
            if step_url.is_none() {
                step_url = Some(snap.url.clone());
            }
            // Step meta is rebuilt every attempt; phase 1 derives no hints.
            let mut meta = json!({ "id": format!("step_{number}_{attempt}"), "originalInstruction": step, "attempt": attempt });
            let mut hint_keys: Vec<&str> = Vec::new();
            // The site's profile, when `sites.yaml` has one for this page.
            if let Some(site) = self.opts.hints.sites.as_ref().and_then(|s| s.matching(&snap.url)) {
                meta["site"] = site.hint();
                hint_keys.push("site");
            }
            let sitemap = if large {
                None
            } else {
                self.sitemap_urls(&snap.url).await
            };
            if sitemap.is_some() {
                hint_keys.push("sitemap");
            }
            let failure = reasons.last().cloned();
            // The cap cut the snapshot and the target was not seen: what the
            // step quotes is searched for in the whole page and shown.
            let failure = match failure {
                Some(f) if snap.pruned > 0 => Some(found_in_page(&f, &step, &snap)),
                f => f,
            };
            let (messages, max_tokens) = if large {
                let html = self.exec.page().html().await.unwrap_or_default();
                let dom = emergency::light_dom(&html, emergency::LIGHT_DOM_MAX_CHARS);
                (
                    prompts::emergency_decision(&self.checklist, index, &step, &reasons, &dom),
                    prompts::EMERGENCY_MAX_TOKENS,
                )
            } else {
                (
                    self.decision_prompt(index, &step, &meta, failure.as_deref(), &snap, sitemap.as_deref()),
                    DECISION_MAX_TOKENS,
                )
            };
            let t = Instant::now();
            let answer = self
                .ask_model("decision", Some(number), messages, max_tokens, large)
                .await;
            d.decision_ms = ms(t.elapsed());
            let mut line = AttemptLine::new(
                number,
                attempt,
                &step,
                &meta,
                &hint_keys,
                snap.text.len(),
                &snap.url,
            );
            line.emergency = emergency.clone();
            let decision = match answer {
                Err(e) => Err(AttemptError::Llm(e.to_string())),
                Ok((text, usage)) => {
                    p_tokens += usage.prompt_tokens;
                    c_tokens += usage.completion_tokens;
                    line.tokens(&usage);
                    match parse_decision_in(&text, large) {
                        Ok(DecisionAnswer::Act(decision)) => Ok(*decision),
                        Ok(DecisionAnswer::TargetNotFound) => Err(AttemptError::TargetNotFound),
                        Err(reason) => Err(AttemptError::Unusable(reason)),
                    }
                }
            };
            let decision = match decision {
                Ok(dec) => dec,
                Err(err) => {
                    reasons.push(err.to_string());
                    line.fail(&err);
                    self.finish_attempt(line, d, attempt_started).await?;
                    continue;
                }
            };
            if !large && let Some(c) = decision.confidence {
                self.confidence.push(c);
            }
            let t = Instant::now();
            let cacheable = recording && decision.near().is_none();
            let (target, locator) = match decision.near() {
                Some((text, role)) => {
                    // Proximity resolves on this attempt's snapshot, to a ref.
                    let text_locator = Locator::Text {
                        text: text.clone(),
                        exact: false,
                    };
                    line.decision = Some(llm_decision(&decision, &text_locator));
                    let found = emergency::near_ref(&snap.text, &text, role.as_deref());
                    (
                        found.map(|r| (Target::Ref(r), 1)).ok_or(AttemptError::NotUnique {
                            locator: format!("near {text:?}"),
                            count: 0,
                        }),
                        text_locator,
                    )
                }
                None => {
                    let locator = decision
                        .locator()
                        .map_err(|e| WorkflowError::Config(e.to_string()))?;
                    line.decision = Some(llm_decision(&decision, &locator));
                    (self.llm_target(&locator, decision.action).await?, locator)
                }
            };
            d.precheck_ms = ms(t.elapsed());
            let target = match target {
                Ok((target, count)) => {
                    line.precheck = Some(count);
                    target
                }
                Err(err) => {
                    match &err {
                        AttemptError::NotUnique { count, .. } => line.precheck = Some(*count),
                        AttemptError::NoMatch { .. } => line.precheck = Some(0),
                        _ => {}
                    }
                    reasons.push(err.to_string());
                    line.fail(&err);
                    self.finish_attempt(line, d, attempt_started).await?;
                    continue;
                }
            };
            // The element's neighbourhood before the action changes the page.
            let fingerprint = match cacheable {
                true => self
                    .exec
                    .page()
                    .inspect(&target)
                    .await
                    .ok()
                    .map(|s| Fingerprint::of(&s)),
                false => None,
            };
            self.checkpoint_acting(index, Some(decision.action)).await;
            match self
                .exec
                .perform(&target, decision.action, decision.value.as_ref())
                .await
            {
                Ok(acted) => {
                    progress = tokio::time::Instant::now();
                    d.action_ms = ms(acted.action);
                    d.settle_ms = ms(acted.settle);
                    line.succeeded(Some(acted.navigated));
                }
                Err(ActError::Workflow(e)) => return Err(e),
                Err(ActError::Engine(e)) => return Err(e.into()),
                Err(e) => {
                    let err = e.attempt();
                    reasons.push(err.to_string());
                    line.fail(&err);
                    self.finish_attempt(line, d, attempt_started).await?;
                    continue;
                }
            }
            let t = Instant::now();
            let fresh = self.exec.snapshot().await?;
            d.snapshot_ms += ms(t.elapsed());
            last_snapshot = fresh.text.clone();
            let action_text = format!("{} {}", locator, decision.action.as_str());
            let t = Instant::now();
            let verdict = self
                .ask_model(
                    "judge",
                    Some(number),
                    prompts::judge(&step, &action_text, &fresh.text),
                    JUDGE_MAX_TOKENS,
                    large,
                )
                .await;
            d.judge_ms = ms(t.elapsed());
            let verdict = match verdict {
                Ok((text, usage)) => {
                    p_tokens += usage.prompt_tokens;
                    c_tokens += usage.completion_tokens;
                    line.tokens(&usage);
                    prompts::parse_judgement(&text).map_err(AttemptError::Unusable)
                }
                Err(e) => Err(AttemptError::Llm(e.to_string())),
            };
            match verdict {
                Ok(true) => {
                    completed = true;
                    line.completed = true;
                    if let (Some(fingerprint), Some(url)) = (fingerprint, &step_url) {
                        self.resolved = Some((
                            EntryKey::on(&self.opts.start_url, url, &step),
                            Resolved {
                                locator: locator.clone(),
                                action: decision.action,
                                value: decision.value.clone(),
                                fingerprint,
                                url_after: crate::cache::url_pattern_on(&fresh.url, &self.opts.start_url),
                            },
                        ));
                    }
                }
                Ok(false) => {
                    let err = AttemptError::NotCompleted;
                    reasons.push(err.to_string());
                    line.reason = Some(err.to_string());
                }
                Err(err) => {
                    reasons.push(err.to_string());
                    line.reason = Some(err.to_string());
                }
            }
            cached = Some(fresh);
            self.finish_attempt(line, d, attempt_started).await?;
        }
        if let Some(e) = &emergency {
            self.emergency_off(number, e);
        }
        self.close_step(
            index,
            completed,
            attempt,
            reasons,
            p_tokens,
            c_tokens,
            step_started,
            &last_snapshot,
        )
        .await
    }
}
