//! The structured path: a step's precheck and action with no LLM, up to
//! three attempts, each one JSONL line. What an attempt does is
//! `oxwright-steps`' (shared with a fetch's `actions`).

use std::time::Instant;

use serde_json::json;

use super::attempt::{AttemptLine, structured_meta};
use super::failure::StepKind;
use super::{MAX_ATTEMPTS, Run};
use crate::WorkflowError;
use oxwright_steps::{AttemptError, StepAction, StepTrace, StructuredStep, attempt_step, attempt_wait};

impl Run<'_> {
    /// Runs one structured step; `Ok(true)` when it ends the workflow
    /// (`if present then stop`, and it ran).
    pub(super) async fn structured_step(
        &mut self,
        index: usize,
        step: &StructuredStep,
    ) -> Result<bool, WorkflowError> {
        let number = index as u32 + 1;
        self.log
            .say(&format!("step {number}/{}: {}", self.checklist.len(), step.text));
        let step_started = Instant::now();
        self.kind = step_kind(&step.action);
        self.tried.clear();
        if step.may_act_twice() {
            self.checkpoint_acting(index, None).await;
        }
        let mut reasons = Vec::new();
        let mut completed = false;
        let mut attempt = 0;
        let mut give_up = false;
        let mut stop = false;
        let mut else_reason = None;
        let mut output = None;
        let mut step_tokens = (0, 0);
        // Auto-waits share the action deadline across the attempts.
        let wait = attempt_wait(self.exec.timeout());
        let (keys, meta) = structured_meta(step, number);
        // `expect: output` reads what the steps before read, those of a
        // run continued from its checkpoint included.
        self.exec
            .set_outputs(oxwright_jobs::WorkflowResult::outputs_of(&self.outcomes));
        while attempt < MAX_ATTEMPTS && !completed && !give_up {
            attempt += 1;
            let attempt_started = Instant::now();
            let mut meta = meta.clone();
            meta["id"] = json!(format!("step_{number}_{attempt}"));
            meta["attempt"] = json!(attempt);
            let hint_keys: Vec<&str> = keys.iter().map(String::as_str).collect();
            let mut line = AttemptLine::new(number, attempt, &step.text, &meta, &hint_keys, 0, "");
            let mut trace = StepTrace::default();
            let outcome = self.attempt(step, wait, &mut trace, &mut line).await?;
            step_tokens.0 += line.tokens.prompt;
            step_tokens.1 += line.tokens.completion;
            line.decision = trace.decision;
            line.precheck = trace.precheck;
            if let Some(navigated) = trace.acted {
                line.succeeded(navigated);
            }
            line.reason = trace.skipped;
            // The attempt that ended the step says why its `else` ran.
            else_reason = trace.else_reason;
            match outcome {
                Ok(()) => {
                    completed = true;
                    stop = trace.stop;
                    output = trace.output;
                    line.completed = true;
                    if line.result.is_none() {
                        line.succeeded(None);
                    }
                }
                Err(err) => {
                    reasons.push(err.to_string());
                    line.fail(&err);
                    // Drawn on a canvas: another attempt cannot find elements
                    // either. A model's reading made its own repairs.
                    give_up = matches!(err, AttemptError::Canvas(_))
                        || matches!(step.action, StepAction::ExtractSchema(_));
                }
            }
            self.finish_attempt(line, trace.durations, attempt_started)
                .await?;
        }
        let snapshot = if completed {
            String::new()
        } else {
            self.exec.snapshot().await.map(|s| s.text).unwrap_or_default()
        };
        let closed = self
            .close_step(
                index,
                completed,
                attempt,
                reasons,
                step_tokens.0,
                step_tokens.1,
                step_started,
                &snapshot,
            )
            .await;
        if let Some(outcome) = self.outcomes.last_mut().filter(|o| o.step_number == number) {
            outcome.else_reason = else_reason;
            outcome.output = output;
        }
        closed?;
        Ok(stop)
    }

    /// One attempt of `step`: a model's reading into a schema, or what
    /// `oxwright-steps` does; the model's tokens go on `line`.
    async fn attempt(
        &mut self,
        step: &StructuredStep,
        wait: std::time::Duration,
        trace: &mut StepTrace,
        line: &mut AttemptLine,
    ) -> Result<Result<(), AttemptError>, WorkflowError> {
        if let StepAction::ExtractSchema(e) = &step.action {
            let (outcome, tokens) = self.read_by_schema(e, trace).await;
            line.tokens.prompt += tokens.0;
            line.tokens.completion += tokens.1;
            return Ok(outcome);
        }
        Ok(attempt_step(
            &mut self.exec,
            step,
            &self.opts.start_url,
            wait,
            &self.sanitizer,
            trace,
        )
        .await?)
    }
}

/// What kind of step an action is, for its failure's type.
fn step_kind(action: &StepAction) -> StepKind {
    match action {
        StepAction::Goto(_) => StepKind::Goto,
        StepAction::Sleep(_) => StepKind::Sleep,
        StepAction::Expect(_) => StepKind::Expect,
        StepAction::Act { .. }
        | StepAction::Else { .. }
        | StepAction::PressKey(_)
        | StepAction::Dialog { .. }
        | StepAction::ScrollPage(_)
        | StepAction::Extract(_)
        | StepAction::ExtractSchema(_) => StepKind::Act,
    }
}
