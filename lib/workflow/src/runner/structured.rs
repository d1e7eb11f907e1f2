//! The structured path: a step's precheck and action with no LLM, up to
//! three attempts, each one JSONL line.

use std::time::{Duration, Instant};

use serde_json::json;

use super::attempt::{AttemptLine, act_decision, ms, precheck_count, structured_meta};
use super::failure::StepKind;
use super::{MAX_ATTEMPTS, Run};

/// How long an `if present` step looks for its target before skipping.
const PRESENT_GRACE: Duration = Duration::from_secs(1);
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
            StepAction::Act { .. }
            | StepAction::PressKey(_)
            | StepAction::Dialog { .. }
            | StepAction::ScrollPage(_) => StepKind::Act,
        };
        self.tried.clear();
        let mut reasons = Vec::new();
        let mut completed = false;
        let mut attempt = 0;
        let mut give_up = false;
        // Auto-waits share the action deadline across the attempts.
        let wait = (self.exec.timeout() / MAX_ATTEMPTS).max(Duration::from_secs(1));
        let (keys, meta) = structured_meta(step, number);
        while attempt < MAX_ATTEMPTS && !completed && !give_up {
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
                StepAction::Expect(assertion) => {
                    let t = Instant::now();
                    let r = self.exec.check(assertion, wait).await;
                    d.precheck_ms = ms(t.elapsed());
                    line.decision = Some(StepDecision {
                        locator: assertion.locator().cloned(),
                        action: "expect".into(),
                        value: None,
                        confidence: None,
                        rationale: None,
                        url: None,
                    });
                    match r {
                        Ok(()) => {
                            line.precheck = assertion.locator().map(|_| 1);
                            Ok(())
                        }
                        Err(ActError::Workflow(e)) => return Err(e),
                        Err(ActError::Engine(e)) => return Err(e.into()),
                        Err(e) => {
                            let err = e.attempt();
                            if assertion.locator().is_some() {
                                line.precheck = Some(precheck_count::<()>(&Err(err.clone())));
                            }
                            Err(err)
                        }
                    }
                }
                StepAction::Act {
                    locator,
                    nth,
                    action,
                    value,
                    if_present,
                } => {
                    line.decision = Some(act_decision(locator, *action, value.as_ref()));
                    if *if_present && !self.present(locator, wait).await? {
                        line.precheck = Some(0);
                        line.succeeded(None);
                        line.reason = Some(format!("skipped: {locator} matched nothing (if present)"));
                        Ok(())
                    } else {
                        self.structured_act(locator, *nth, *action, value.as_ref(), wait, &mut d, &mut line)
                            .await?
                    }
                }
                StepAction::PressKey(key) => {
                    line.decision = Some(StepDecision {
                        locator: None,
                        action: "press".into(),
                        value: Some(oxwright_jobs::StepValue::Literal(key.clone())),
                        confidence: None,
                        rationale: None,
                        url: None,
                    });
                    let t = Instant::now();
                    // The focused element takes the key; with none, the body does.
                    let focused = Locator::css(":focus");
                    let target = match self.exec.locate(&focused).await {
                        Ok(found) if found.len() == 1 => Target::Element(found[0].clone()),
                        _ => Target::Locator {
                            locator: Locator::css("body"),
                            nth: None,
                        },
                    };
                    let r = self
                        .exec
                        .perform(&target, Action::Press, Some(&ActionValue::Literal(key.clone())))
                        .await;
                    d.action_ms = ms(t.elapsed());
                    match r {
                        Ok(acted) => {
                            d.settle_ms = ms(acted.settle);
                            line.succeeded(Some(acted.navigated));
                            Ok(())
                        }
                        Err(ActError::Workflow(e)) => return Err(e),
                        Err(ActError::Engine(e)) => return Err(e.into()),
                        Err(e) => Err(e.attempt()),
                    }
                }
                StepAction::Dialog { accept, text } => {
                    let how = if *accept {
                        oxwright_engine::DialogAction::Accept
                    } else {
                        oxwright_engine::DialogAction::Dismiss
                    };
                    line.decision = Some(StepDecision {
                        locator: None,
                        action: "dialog".into(),
                        value: Some(oxwright_jobs::StepValue::Literal(
                            if *accept { "accept" } else { "dismiss" }.into(),
                        )),
                        confidence: None,
                        rationale: None,
                        url: None,
                    });
                    match self.exec.page().answer_dialogs(how, text.clone()).await {
                        Ok(()) => Ok(()),
                        Err(e) if e.is_fatal() => return Err(e.into()),
                        Err(e) => Err(AttemptError::Action(self.sanitizer.clean(&e.message))),
                    }
                }
                StepAction::ScrollPage(to) => {
                    line.decision = Some(StepDecision {
                        locator: None,
                        action: "scroll".into(),
                        value: Some(oxwright_jobs::StepValue::Literal(
                            format!("{to:?}").to_lowercase(),
                        )),
                        confidence: None,
                        rationale: None,
                        url: None,
                    });
                    let t = Instant::now();
                    let r = self.exec.page().evaluate(to.script(), self.exec.timeout()).await;
                    d.action_ms = ms(t.elapsed());
                    match r {
                        Ok(_) => Ok(()),
                        Err(e) if e.is_fatal() => return Err(e.into()),
                        Err(e) => Err(AttemptError::from_engine(
                            &e,
                            self.sanitizer.clean(&e.to_string()),
                        )),
                    }
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
                    // Drawn on a canvas: another attempt cannot find elements either.
                    give_up = matches!(err, AttemptError::Canvas(_));
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

    /// Whether `locator` matches anything within a short grace (the page
    /// may still be drawing what an `if present` step looks for).
    async fn present(&self, locator: &Locator, wait: Duration) -> Result<bool, WorkflowError> {
        let deadline = Instant::now() + wait.min(PRESENT_GRACE);
        loop {
            match self.exec.locate(locator).await {
                Ok(found) if !found.is_empty() => return Ok(true),
                Ok(_) => {}
                Err(e) if e.is_fatal() => return Err(e.into()),
                Err(_) => {}
            }
            if Instant::now() >= deadline {
                return Ok(false);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) async fn structured_act(
        &mut self,
        locator: &Locator,
        nth: Option<usize>,
        action: Action,
        value: Option<&ActionValue>,
        wait: Duration,
        d: &mut Durations,
        line: &mut AttemptLine,
    ) -> Result<Result<(), AttemptError>, WorkflowError> {
        let t = Instant::now();
        let target = self.exec.wait_for_target(locator, nth, wait).await;
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
