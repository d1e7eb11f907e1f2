//! Checkpoints and resume: after each completed step the run records
//! where it is (`checkpoint.json`); before a step that may act twice it
//! marks that step in flight. A run that starts from a checkpoint opens
//! the document its last steps ran on again with the browser state
//! restored, replays the steps run on that document (fills, selects …),
//! and then decides the step that was in flight from the page: done when
//! its effect is visible, otherwise `resume_uncertain`, never run twice.

use std::time::{Duration, Instant};

use bytes::Bytes;
use chrono::Utc;
use oxwright_engine::GotoOptions;
use oxwright_jobs::{ResumeMark, RunStatus, StepOutcome, keys};

use super::Run;
use crate::WorkflowError;
use crate::checkpoint::{CHECKPOINT, Checkpoint, Checkpoints, Sealed, workflow_digest};
use crate::prompts;
use crate::steps::{Workflow, WorkflowBody};
use oxwright_steps::Action;
use oxwright_steps::{StepAction, StepTrace, StructuredStep, attempt_step, attempt_wait};

/// Where the page's document came from: a new document (a navigation, a
/// reload) or a new URL (an app's own route change) starts a new one.
const DOCUMENT: &str = "[String(performance.timeOrigin), location.href.split('#')[0]]";

/// Time a step may need beyond its attempts' action deadlines (the LLM's
/// answers, settling, writing its checkpoint).
const HAND_OVER_MARGIN: Duration = Duration::from_secs(5);

/// A run's checkpointing.
pub(super) struct CpState {
    cfg: Checkpoints,
    digest: String,
    /// The last checkpoint written.
    last: Option<Checkpoint>,
    /// The page's URLs and state as last seen: sealed again with every
    /// checkpoint, since the seal binds the progress that changes.
    inner: Option<Sealed>,
    /// The current document: its identity, URL and first step.
    document: Option<(String, String)>,
    document_step: u32,
    /// Resumes so far, this one included.
    pub(super) resumed: Vec<ResumeMark>,
    /// When the run first started, and how long it ran before this worker.
    pub(super) started_at: Option<chrono::DateTime<Utc>>,
    pub(super) prior_ms: f64,
    /// The step (0-based) marked in flight by this worker.
    acting: Option<u32>,
    /// When this worker's part of the run began.
    begun: Instant,
    /// The run handed itself over (its checkpoint says so).
    handed_over: bool,
}

impl CpState {
    pub(super) fn new(cfg: Checkpoints, workflow: &Workflow) -> Self {
        Self {
            cfg,
            digest: workflow_digest(workflow),
            last: None,
            inner: None,
            document: None,
            document_step: 0,
            resumed: Vec::new(),
            started_at: None,
            prior_ms: 0.0,
            acting: None,
            begun: Instant::now(),
            handed_over: false,
        }
    }
}

impl Run<'_> {
    fn checkpoint_key(&self) -> String {
        keys::session_artifact(&self.opts.session_id, CHECKPOINT)
    }

    /// The page's document identity and URL.
    async fn document(&self) -> Option<(String, String)> {
        let v = self
            .exec
            .page()
            .evaluate(DOCUMENT, Duration::from_secs(5))
            .await
            .ok()?;
        let origin = v.get(0)?.as_str()?.to_owned();
        let url = v.get(1)?.as_str()?.to_owned();
        Some((origin, url))
    }

    /// Records that steps up to `next` (0-based, exclusive) completed.
    /// A checkpoint that cannot be written is logged: the run goes on.
    pub(super) async fn checkpoint_done(&mut self, next: usize) {
        let Some(cp) = self.cp.as_mut() else { return };
        cp.acting = None;
        let now = self.document().await;
        let Some(cp) = self.cp.as_mut() else { return };
        if let Some(now) = now {
            let moved = cp
                .document
                .as_ref()
                .is_none_or(|(origin, url)| *origin != now.0 || *url != now.1);
            if moved {
                cp.document_step = next as u32;
                cp.document = Some(now);
            }
        }
        let state = match self.exec.page().storage_state().await {
            Ok(s) => Some(s),
            Err(e) => {
                tracing::debug!(error = %e, "browser state not exported");
                None
            }
        };
        let url = self.exec.page().url().await.unwrap_or_default();
        if let Err(e) = self.write_checkpoint(next as u32, None, Some((url, state))).await {
            tracing::warn!(error = %e, "checkpoint not written");
        }
    }

    /// Marks step `index` in flight before an action that may act twice
    /// (`action`; any action of a step marked `once`).
    pub(super) async fn checkpoint_acting(&mut self, index: usize, action: Option<Action>) {
        let once = self.step_once(index);
        let risky = once
            || matches!(
                action,
                Some(Action::Click | Action::DoubleClick | Action::Press) | None
            );
        let Some(cp) = self.cp.as_mut() else { return };
        if !risky || cp.acting == Some(index as u32) {
            return;
        }
        cp.acting = Some(index as u32);
        if let Err(e) = self
            .write_checkpoint(index as u32, Some(index as u32), None)
            .await
        {
            tracing::warn!(error = %e, "in-flight mark not written");
        }
    }

    /// Says whether step `index` is marked `once:` (structured) or flagged
    /// `once:` in the LLM's checklist.
    pub(super) fn step_once(&self, index: usize) -> bool {
        self.once.get(index).copied().unwrap_or(false)
    }

    /// Writes the checkpoint; `page` (URL and state) when they changed.
    async fn write_checkpoint(
        &mut self,
        next: u32,
        acting: Option<u32>,
        page: Option<(String, Option<oxwright_engine::StorageState>)>,
    ) -> Result<(), String> {
        let key = self.checkpoint_key();
        let artifacts = self.log.written();
        let Some(cp) = self.cp.as_mut() else { return Ok(()) };
        let mut doc = cp.last.clone().unwrap_or_else(|| Checkpoint {
            version: Checkpoint::current_version(),
            session_id: self.opts.session_id.clone(),
            job_id: cp.cfg.job_id.clone(),
            workflow_digest: cp.digest.clone(),
            next_step: 0,
            document_step: 0,
            acting: None,
            checklist: Vec::new(),
            outcomes: Vec::new(),
            totals: Default::default(),
            artifacts: Vec::new(),
            started_at: Utc::now(),
            resumed: Vec::new(),
            handed_over: false,
            worker: String::new(),
            written_at: Utc::now(),
            sealed: None,
            open: None,
        });
        doc.job_id = cp.cfg.job_id.clone().or(doc.job_id);
        doc.next_step = next;
        doc.document_step = cp.document_step.min(next);
        doc.acting = acting;
        doc.checklist = self.checklist.clone();
        doc.outcomes = self.outcomes.clone();
        doc.totals = self.totals.clone();
        doc.totals.duration_ms = cp.prior_ms + cp.begun.elapsed().as_secs_f64() * 1000.0;
        doc.handed_over = cp.handed_over;
        doc.artifacts = artifacts;
        doc.started_at = cp.started_at.unwrap_or(doc.started_at);
        cp.started_at = Some(doc.started_at);
        doc.resumed = cp.resumed.clone();
        doc.worker = cp.cfg.worker.clone();
        doc.written_at = Utc::now();
        doc.sealed = None;
        doc.open = None;
        if let Some((url, state)) = page {
            let document_url = cp
                .document
                .as_ref()
                .map(|d| d.1.clone())
                .unwrap_or_else(|| url.clone());
            cp.inner = Some(match cp.cfg.key {
                Some(_) => Sealed {
                    url,
                    document_url,
                    state,
                },
                None => Sealed {
                    url: self.sanitizer.clean(&url),
                    document_url: self.sanitizer.clean(&document_url),
                    state: None,
                },
            });
        }
        // Before any step completed the page is still the start page.
        let inner = cp.inner.clone().unwrap_or_else(|| {
            let start = self.sanitizer.clean(self.opts.start_url.as_str());
            Sealed {
                url: start.clone(),
                document_url: start,
                state: None,
            }
        });
        let body = stored(&doc, inner, cp.cfg.key.as_ref(), &self.sanitizer)?;
        self.log
            .store()
            .put(&key, Bytes::from(body), "application/json")
            .await
            .map_err(|e| e.to_string())?;
        if let Some(cp) = self.cp.as_mut() {
            cp.last = Some(doc);
        }
        Ok(())
    }

    /// Says whether the run must hand over before step `index` (not the
    /// first it runs here, `from`): less time is left before its
    /// `stop_by` than a step may take (its attempts' action deadlines and
    /// a margin for the LLM's answers).
    pub(super) fn hand_over_due(&self, index: usize, from: usize) -> bool {
        let Some(stop_by) = self.cp.as_ref().and_then(|c| c.cfg.stop_by) else {
            return false;
        };
        let step = self.exec.timeout() * oxwright_steps::MAX_ATTEMPTS + HAND_OVER_MARGIN;
        index > from && Instant::now() + step >= stop_by
    }

    /// Stops the run before step `index`, keeping its checkpoint marked
    /// as handed over, for the invocation that continues it.
    pub(super) async fn hand_over(&mut self, index: usize) -> WorkflowError {
        if let Some(cp) = self.cp.as_mut() {
            cp.handed_over = true;
        }
        if let Err(e) = self.write_checkpoint(index as u32, None, None).await {
            tracing::warn!(error = %e, "hand-over checkpoint not written");
        }
        self.log.say(&format!(
            "handing over before step {} of {}: the invocation's time is nearly up",
            index + 1,
            self.checklist.len()
        ));
        WorkflowError::HandedOver {
            next: index as u32 + 1,
        }
    }

    /// Removes the checkpoint: the run ended (completed or failed), so
    /// nothing continues it.
    pub(super) async fn drop_checkpoint(&mut self) {
        if self.cp.is_none() {
            return;
        }
        if let Err(e) = self.log.store().delete(&self.checkpoint_key()).await {
            tracing::warn!(error = %e, "checkpoint not removed");
        }
    }

    /// Continues from the checkpoint given: restores the browser state,
    /// reopens the document, replays its steps and settles the step that
    /// was in flight. Returns the step (0-based) to run next, or `None`
    /// when there is no checkpoint to continue.
    pub(super) async fn resume(&mut self, workflow: &Workflow) -> Result<Option<usize>, WorkflowError> {
        let Some((saved, inner, reason)) = self.open_checkpoint(workflow)? else {
            return Ok(None);
        };
        let worker = self
            .cp
            .as_ref()
            .map(|cp| cp.cfg.worker.clone())
            .unwrap_or_default();
        let next = saved.next_step as usize;
        let from = (saved.document_step as usize).min(next);
        // A resume that fails before it settles is still one: its mark
        // goes into the result with the error.
        let state_restored = match self.reopen(&inner).await {
            Ok(restored) => restored,
            Err(e) => {
                self.mark_resumed(next, &reason, &worker, None, false);
                return Err(e);
            }
        };
        if let Err(e) = self.replay_since(workflow, &saved, from, next).await {
            self.mark_resumed(next, &reason, &worker, None, state_restored);
            return Err(e);
        }
        // Where the document now is, so the next checkpoint knows.
        if let Some(now) = self.document().await
            && let Some(cp) = self.cp.as_mut()
        {
            cp.document = Some(now);
        }
        let (at, in_flight) = match saved.acting {
            Some(step) if step as usize == next && next < self.checklist.len() => {
                match self.in_flight(workflow, next).await? {
                    Ok(how) => {
                        self.outcomes.push(StepOutcome {
                            step_number: next as u32 + 1,
                            instruction: oxwright_jobs::step_text(&self.checklist[next]).to_string(),
                            status: RunStatus::Completed,
                            attempts: 0,
                            reasons: vec![format!("resumed: it ran before the run moved on, and {how}")],
                            prompt_tokens: 0,
                            completion_tokens: 0,
                            duration_ms: 0.0,
                            screenshot: None,
                            source: Some(self.source),
                            else_reason: None,
                            output: None,
                        });
                        let done = format!("step {} was in flight and counts as done: {how}", next + 1);
                        (next + 1, Some(done))
                    }
                    Err(why) => {
                        let note = format!("step {} was in flight: {why}", next + 1);
                        self.mark_resumed(next, &reason, &worker, Some(note), state_restored);
                        return Err(self.uncertain(next, why).await);
                    }
                }
            }
            _ => (next, None),
        };
        self.mark_resumed(at, &reason, &worker, in_flight, state_restored);
        Ok(Some(at))
    }

    /// The checkpoint to continue from, checked (this workflow's, a
    /// version this build reads) and unsealed, with the run's progress
    /// taken from it; `None` when there is none.
    fn open_checkpoint(
        &mut self,
        workflow: &Workflow,
    ) -> Result<Option<(Checkpoint, Sealed, String)>, WorkflowError> {
        let Some(cp) = self.cp.as_mut() else {
            return Ok(None);
        };
        let Some((saved, reason)) = cp.cfg.resume.take() else {
            return Ok(None);
        };
        let at = format!("sessions/{}/{CHECKPOINT}", self.opts.session_id);
        if saved.version > Checkpoint::current_version() {
            return Err(WorkflowError::Checkpoint(format!(
                "{at}: version {} is newer than this build reads",
                saved.version
            )));
        }
        // Whether it was edited comes first: a digest set to another
        // workflow's is an edit, not another workflow's run.
        let inner = saved
            .unseal(cp.cfg.key.as_ref())
            .map_err(|e| WorkflowError::Checkpoint(format!("{at}: {e}")))?;
        if saved.workflow_digest != cp.digest {
            return Err(WorkflowError::Checkpoint(format!(
                "{at} belongs to another workflow (digest {}, this one {})",
                saved.workflow_digest, cp.digest
            )));
        }
        cp.inner = Some(inner.clone());
        let next = saved.next_step as usize;
        let from = (saved.document_step as usize).min(next);
        cp.started_at = Some(saved.started_at);
        cp.prior_ms = saved.totals.duration_ms;
        cp.resumed = saved.resumed.clone();
        cp.document_step = from as u32;
        self.checklist = saved.checklist.clone();
        self.once = once_flags(workflow, &self.checklist);
        self.totals = saved.totals.clone();
        self.outcomes = saved.outcomes.iter().take(from).cloned().collect();
        self.log.noted(&saved.artifacts);
        self.log.say(&format!(
            "session {} resuming at step {} of {} ({reason}; checkpoint by {})",
            self.opts.session_id,
            next + 1,
            self.checklist.len(),
            saved.worker
        ));
        Ok(Some((saved, inner, reason)))
    }

    /// Reopens the checkpoint's document with its browser state; says
    /// whether the state was restored.
    async fn reopen(&mut self, inner: &Sealed) -> Result<bool, WorkflowError> {
        let url = url::Url::parse(&inner.document_url)
            .or_else(|_| url::Url::parse(&inner.url))
            .map_err(|e| WorkflowError::Checkpoint(format!("its URL does not parse: {e}")))?;
        let opts = GotoOptions::load(self.exec.timeout().max(Duration::from_secs(15)));
        let restored = match &inner.state {
            Some(state) => match self.exec.page().restore_state(state, &url, &opts).await {
                Ok(_) => true,
                Err(e) if e.kind == oxwright_engine::EngineErrorKind::Unsupported => {
                    self.log.say(&format!("  the browser state is not restored: {e}"));
                    self.exec.goto(&url).await?;
                    false
                }
                Err(e) => return Err(e.into()),
            },
            None => {
                self.log.say(&format!(
                    "  no browser state in the checkpoint (no {}): cookies and storage start empty",
                    crate::CheckpointKey::ENV
                ));
                self.exec.goto(&url).await?;
                false
            }
        };
        if let Some(cp) = self.cp.as_mut() {
            cp.document = None;
        }
        Ok(restored)
    }

    /// Runs the steps `from..next` again on the reopened document: their
    /// effects were the page's own (typed text, ticked boxes), gone with
    /// the browser. A `once:` step, a pause and a check are not run again.
    async fn replay_since(
        &mut self,
        workflow: &Workflow,
        saved: &Checkpoint,
        from: usize,
        next: usize,
    ) -> Result<(), WorkflowError> {
        for i in from..next {
            let kept = saved
                .outcomes
                .get(i)
                .cloned()
                .unwrap_or_else(|| skipped(i, &self.checklist));
            if self.step_once(i) {
                self.outcomes.push(kept);
                self.log.say(&format!(
                    "  step {} is marked once and already ran: not replayed",
                    i + 1
                ));
                continue;
            }
            // A pause or a check changed nothing on the page.
            if let WorkflowBody::Structured(steps) = &workflow.body
                && matches!(steps[i].action, StepAction::Sleep(_) | StepAction::Expect(_))
            {
                self.outcomes.push(kept);
                continue;
            }
            self.log
                .say(&format!("  replaying step {} on the reopened page", i + 1));
            self.run_step(workflow, i).await?;
        }
        Ok(())
    }

    fn mark_resumed(
        &mut self,
        at: usize,
        reason: &str,
        worker: &str,
        in_flight: Option<String>,
        state_restored: bool,
    ) {
        if let Some(cp) = self.cp.as_mut() {
            cp.resumed.push(ResumeMark {
                at_step: at as u32 + 1,
                reason: reason.to_owned(),
                worker: worker.to_owned(),
                in_flight,
                state_restored,
                at: Utc::now(),
            });
        }
    }

    /// Runs step `index` of `workflow` as the main loop does.
    pub(super) async fn run_step(
        &mut self,
        workflow: &Workflow,
        index: usize,
    ) -> Result<bool, WorkflowError> {
        match &workflow.body {
            WorkflowBody::Plain(_) => {
                self.plain_step(index).await?;
                Ok(false)
            }
            WorkflowBody::Structured(steps) => self.structured_step(index, &steps[index]).await,
        }
    }

    /// Decides the step that was in flight: `Ok(how it shows)` when its
    /// effect is visible, `Err(why not)` otherwise.
    async fn in_flight(
        &mut self,
        workflow: &Workflow,
        index: usize,
    ) -> Result<Result<String, String>, WorkflowError> {
        match &workflow.body {
            WorkflowBody::Structured(steps) => {
                // Its effect shows when the expectations right after it hold.
                let checks: Vec<&StructuredStep> = steps[index + 1..]
                    .iter()
                    .take_while(|s| matches!(s.action, StepAction::Expect(_)))
                    .collect();
                if checks.is_empty() {
                    return Ok(Err("no `expect:` follows it, so its effect cannot be seen".into()));
                }
                let wait = attempt_wait(self.exec.timeout());
                for check in &checks {
                    let mut trace = StepTrace::default();
                    let start = self.opts.start_url.clone();
                    if let Err(e) =
                        attempt_step(&mut self.exec, check, &start, wait, &self.sanitizer, &mut trace).await?
                    {
                        return Ok(Err(format!("its effect is not visible (`{}`: {e})", check.text)));
                    }
                }
                Ok(Ok(format!(
                    "its effect is visible ({})",
                    checks
                        .iter()
                        .map(|c| format!("`{}`", c.text))
                        .collect::<Vec<_>>()
                        .join(", ")
                )))
            }
            WorkflowBody::Plain(_) => {
                if self.llm.is_none() {
                    return Ok(Err("no LLM to judge whether its effect is visible".into()));
                }
                let step = self.checklist[index].trim_start_matches("[]").trim().to_string();
                let snap = self.exec.snapshot().await?;
                let answer = self
                    .ask_model(
                        "judge",
                        Some(index as u32 + 1),
                        prompts::judge(
                            &step,
                            "(unknown: the run stopped during this step and moved to another browser)",
                            &snap.text,
                        ),
                        prompts::JUDGE_MAX_TOKENS,
                        false,
                    )
                    .await;
                Ok(match answer.map(|(text, _)| prompts::parse_judgement(&text)) {
                    Ok(Ok(true)) => Ok("the judge sees its effect on the page".into()),
                    Ok(Ok(false)) => Err("the judge does not see its effect on the page".into()),
                    Ok(Err(e)) => Err(format!("the judge's answer is unusable: {e}")),
                    Err(e) => Err(format!("the judge could not be asked: {e}")),
                })
            }
        }
    }

    /// Ends the run at step `index` with `resume_uncertain`, keeping the
    /// page's artefacts.
    async fn uncertain(&mut self, index: usize, why: String) -> WorkflowError {
        let number = index as u32 + 1;
        let instruction = self.checklist[index].clone();
        let snapshot = self.exec.snapshot().await.map(|s| s.text).unwrap_or_default();
        let intent = instruction.trim_start_matches("[]").trim().to_string();
        let reasons = vec![format!("RESUME_UNCERTAIN: {why}")];
        let screenshot = match self.write_failure(number, &intent, &reasons, &snapshot).await {
            Ok(w) => w.screenshot,
            Err(e) => {
                tracing::warn!(error = %e, "failure artefacts not written");
                None
            }
        };
        self.log.say(&format!(
            "❌ step {number} may already have run and its effect is not visible: not run again ({why})"
        ));
        self.outcomes.push(StepOutcome {
            step_number: number,
            instruction: oxwright_jobs::step_text(&instruction).to_string(),
            status: RunStatus::Failed,
            attempts: 0,
            reasons,
            prompt_tokens: 0,
            completion_tokens: 0,
            duration_ms: 0.0,
            screenshot,
            source: Some(self.source),
            else_reason: None,
            output: None,
        });
        WorkflowError::ResumeUncertain {
            step: number,
            instruction,
            reason: why,
        }
    }
}

/// The checkpoint's bytes as stored: the record through the sanitiser
/// like every artefact, then sealed with `inner` so that the seal binds
/// the record as it is stored.
fn stored(
    doc: &Checkpoint,
    inner: Sealed,
    key: Option<&crate::CheckpointKey>,
    sanitizer: &crate::Sanitizer,
) -> Result<Vec<u8>, String> {
    let value = sanitizer.clean_json(&serde_json::to_value(doc).map_err(|e| e.to_string())?);
    let mut record: Checkpoint = serde_json::from_value(value).map_err(|e| e.to_string())?;
    record.seal(inner, key)?;
    let body = serde_json::to_vec(&record).map_err(|e| e.to_string())?;
    // One that would not open again would end the run that reads it: the
    // last one written stays instead.
    serde_json::from_slice::<Checkpoint>(&body)
        .map_err(|e| e.to_string())?
        .unseal(key)
        .map_err(|e| format!("it would not open again: {e}"))?;
    Ok(body)
}

fn skipped(i: usize, checklist: &[String]) -> StepOutcome {
    StepOutcome {
        step_number: i as u32 + 1,
        instruction: checklist
            .get(i)
            .map(|s| oxwright_jobs::step_text(s).to_string())
            .unwrap_or_default(),
        status: RunStatus::Completed,
        attempts: 0,
        reasons: Vec::new(),
        prompt_tokens: 0,
        completion_tokens: 0,
        duration_ms: 0.0,
        screenshot: None,
        source: None,
        else_reason: None,
        output: None,
    }
}

/// The `once` flags of a workflow's steps: structured steps marked
/// `once:`, checklist items the LLM (or the author) began with `once:`.
pub(super) fn once_flags(workflow: &Workflow, checklist: &[String]) -> Vec<bool> {
    match &workflow.body {
        WorkflowBody::Structured(steps) => steps.iter().map(|s| s.once).collect(),
        WorkflowBody::Plain(_) => checklist
            .iter()
            .map(|item| {
                item.trim_start_matches("[]")
                    .trim()
                    .get(..5)
                    .is_some_and(|p| p.eq_ignore_ascii_case("once:"))
            })
            .collect(),
    }
}
