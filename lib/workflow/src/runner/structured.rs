//! The structured path: a step's precheck and action with no LLM, up to
//! three attempts, each one JSONL line.

use std::time::{Duration, Instant};

use serde_json::json;

use super::attempt::{AttemptLine, act_decision, ms, precheck_count, structured_meta};
use super::failure::StepKind;
use super::{MAX_ATTEMPTS, Run};
use crate::decision::{Action, ActionValue};
use crate::executor::ActError;
use crate::steps::{StepAction, StructuredStep};
use crate::{AttemptError, Locator, WorkflowError};
use oxwright_engine::Target;
use oxwright_jobs::{StepDecision, StepDurations as Durations};

impl Run<'_> {
    pub(super) async fn structured_step(
        &mut self,
        index: usize,
        step: &StructuredStep,
    ) -> Result<(), WorkflowError> {
        let number = index as u32 + 1;
        self.log
            .say(&format!("step {number}/{}: {}", self.checklist.len(), step.text));
        let step_started = Instant::now();
        self.kind = match &step.action {
            StepAction::Goto(_) => StepKind::Goto,
            StepAction::Sleep(_) => StepKind::Sleep,
            StepAction::Expect(_) => StepKind::Expect,
            StepAction::Act { .. } => StepKind::Act,
        };
        self.tried.clear();
        let mut reasons = Vec::new();
        let mut completed = false;
        let mut attempt = 0;
        // Auto-waits share the action deadline across the attempts.
        let wait = (self.exec.timeout() / MAX_ATTEMPTS).max(Duration::from_secs(1));
        let (keys, meta) = structured_meta(step, number);
        while attempt < MAX_ATTEMPTS && !completed {
            attempt += 1;
            let attempt_started = Instant::now();
            let mut d = Durations::default();
            let mut meta = meta.clone();
            meta["id"] = json!(format!("step_{number}_{attempt}"));
            meta["attempt"] = json!(attempt);
            let hint_keys: Vec<&str> = keys.iter().map(String::as_str).collect();
            let mut line = AttemptLine::new(number, attempt, &step.text, &meta, &hint_keys, 0, "");
            let outcome: Result<(), AttemptError> = match &step.action {
                StepAction::Goto(raw) => {
                    let t = Instant::now();
                    let r = match self.opts.start_url.join(raw) {
                        Ok(url) => {
                            line.decision = Some(StepDecision {
                                locator: None,
                                action: "goto".into(),
                                value: None,
                                confidence: None,
                                rationale: None,
                                url: Some(url.to_string()),
                            });
                            match self.exec.goto(&url).await {
                                Ok(()) => Ok(()),
                                Err(e) if e.is_fatal() => return Err(e.into()),
                                Err(e) => Err(AttemptError::from_engine(
                                    &e,
                                    self.sanitizer.clean(&e.to_string()),
                                )),
                            }
                        }
                        Err(e) => {
                            return Err(WorkflowError::Parse {
                                line: step.line,
                                message: format!("goto URL: {e}"),
                            });
                        }
                    };
                    d.action_ms = ms(t.elapsed());
                    r
                }
                StepAction::Sleep(dur) => {
                    tokio::time::sleep(*dur).await;
                    Ok(())
                }
                StepAction::Expect(locator) => {
                    let t = Instant::now();
                    let r = self.exec.wait_for_one(locator, wait).await.map(|_| ());
                    d.precheck_ms = ms(t.elapsed());
                    line.decision = Some(StepDecision {
                        locator: Some(locator.clone()),
                        action: "expect".into(),
                        value: None,
                        confidence: None,
                        rationale: None,
                        url: None,
                    });
                    line.precheck = Some(if r.is_ok() { 1 } else { precheck_count(&r) });
                    r
                }
                StepAction::Act {
                    locator,
                    action,
                    value,
                } => {
                    line.decision = Some(act_decision(locator, *action, value.as_ref()));
                    self.structured_act(locator, *action, value.as_ref(), wait, &mut d, &mut line)
                        .await?
                }
            };
            match outcome {
                Ok(()) => {
                    completed = true;
                    line.completed = true;
                    if line.result.is_none() {
                        line.succeeded(None);
                    }
                }
                Err(err) => {
                    reasons.push(err.to_string());
                    line.fail(&err);
                }
            }
            self.finish_attempt(line, d, attempt_started).await?;
        }
        let snapshot = if completed {
            String::new()
        } else {
            self.exec.snapshot().await.map(|s| s.text).unwrap_or_default()
        };
        self.close_step(index, completed, attempt, reasons, 0, 0, step_started, &snapshot)
            .await
    }

    pub(super) async fn structured_act(
        &mut self,
        locator: &Locator,
        action: Action,
        value: Option<&ActionValue>,
        wait: Duration,
        d: &mut Durations,
        line: &mut AttemptLine,
    ) -> Result<Result<(), AttemptError>, WorkflowError> {
        let t = Instant::now();
        let target = self.exec.wait_for_one(locator, wait).await;
        d.precheck_ms = ms(t.elapsed());
        let target = match target {
            Ok(t) => {
                line.precheck = Some(1);
                t
            }
            Err(err) => {
                line.precheck = Some(precheck_count::<()>(&Err(err.clone())));
                return Ok(Err(err));
            }
        };
        match self.exec.perform(&Target::Element(target), action, value).await {
            Ok(acted) => {
                d.action_ms = ms(acted.action);
                d.settle_ms = ms(acted.settle);
                line.succeeded(Some(acted.navigated));
                Ok(Ok(()))
            }
            Err(ActError::Workflow(e)) => Err(e),
            Err(ActError::Engine(e)) => Err(e.into()),
            Err(e) => Ok(Err(e.attempt())),
        }
    }
}
