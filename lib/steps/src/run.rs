//! One attempt of a structured step on an [`Executor`], with no LLM and no
//! log: what the workflow runner records per attempt, and what a page fetch
//! runs as its `actions` before it reads the page ([`run_steps`]). One
//! engine for both, so a step means the same wherever it is written.

use std::sync::Arc;
use std::time::{Duration, Instant};

use oxwright_engine::{Locator, Page, Target};
use oxwright_jobs::{StepDecision, StepDurations as Durations, StepOutput, StepValue};
use oxwright_secrets::{MemorySecrets, Sanitizer};

use crate::executor::{ActError, Executor};
use crate::grammar::{Assertion, ExtractKind, Extraction, ScrollTo, StepAction, StructuredStep};
use crate::{Action, ActionValue, AttemptError, ParseError, StepError};

/// Attempts per structured step (seed: at most 3).
pub const MAX_ATTEMPTS: u32 = 3;

/// How long an `if present` step looks for its target before skipping.
const PRESENT_GRACE: Duration = Duration::from_secs(1);

/// What one attempt did, for its record.
#[derive(Debug, Default)]
pub struct StepTrace {
    /// The decision made (locator, action, value, URL).
    pub decision: Option<StepDecision>,
    /// Elements the precheck found.
    pub precheck: Option<usize>,
    /// Set once the action ran: whether it navigated, when known.
    pub acted: Option<Option<bool>>,
    /// Why the step was skipped (`if present` with nothing there), or
    /// why its `else` step ran.
    pub skipped: Option<String>,
    /// The step ran and ends the workflow (`if present then stop`).
    pub stop: bool,
    /// Why the step's `else` step ran: the failure of the step before it.
    pub else_reason: Option<String>,
    /// Where the attempt's time went.
    pub durations: Durations,
    /// What an `extract:` step read.
    pub output: Option<StepOutput>,
}

pub fn ms(d: Duration) -> f64 {
    (d.as_secs_f64() * 1000.0 * 100.0).round() / 100.0
}

pub fn precheck_count<T>(r: &Result<T, AttemptError>) -> usize {
    match r {
        Err(AttemptError::NotUnique { count, .. }) => *count,
        Err(AttemptError::NoMatch { .. }) => 0,
        Ok(_) => 1,
        Err(_) => 0,
    }
}

fn step_value(v: &ActionValue) -> StepValue {
    match v {
        ActionValue::Placeholder(t) => StepValue::Placeholder(t.clone()),
        ActionValue::Literal(t) => StepValue::Literal(t.clone()),
    }
}

/// The record of a structured action.
pub fn act_decision(locator: &Locator, action: Action, value: Option<&ActionValue>) -> StepDecision {
    StepDecision {
        locator: Some(locator.clone()),
        action: action.as_str().to_string(),
        value: value.map(step_value),
        confidence: None,
        rationale: None,
        url: None,
    }
}

/// A decision with no locator (`press`, `dialog`, `scroll`, `goto`).
fn plain_decision(action: &str, value: Option<String>, url: Option<String>) -> StepDecision {
    StepDecision {
        locator: None,
        action: action.into(),
        value: value.map(StepValue::Literal),
        confidence: None,
        rationale: None,
        url,
    }
}

/// Runs one attempt of `step` on `exec`. `Ok(Err(_))` is an attempt that
/// failed (the next one may succeed); `Err(_)` ends the run. `wait` bounds
/// the attempt's auto-waits; a `goto:` is resolved against `start_url`.
pub async fn attempt_step(
    exec: &mut Executor<'_>,
    step: &StructuredStep,
    start_url: &url::Url,
    wait: Duration,
    sanitizer: &Sanitizer,
    trace: &mut StepTrace,
) -> Result<Result<(), AttemptError>, StepError> {
    let engine_attempt =
        |e: &oxwright_engine::EngineError| AttemptError::from_engine(e, sanitizer.clean(&e.to_string()));
    Ok(match &step.action {
        StepAction::Goto(raw) => {
            let t = Instant::now();
            let url = start_url.join(raw).map_err(|e| ParseError {
                line: step.line,
                message: format!("goto URL: {e}"),
            })?;
            trace.decision = Some(plain_decision("goto", None, Some(url.to_string())));
            let r = match exec.goto(&url).await {
                Ok(()) => Ok(()),
                Err(e) if e.is_fatal() => return Err(e.into()),
                Err(e) => Err(engine_attempt(&e)),
            };
            trace.durations.action_ms = ms(t.elapsed());
            r
        }
        StepAction::Sleep(dur) => {
            tokio::time::sleep(*dur).await;
            Ok(())
        }
        StepAction::Expect(assertion) => expect_step(exec, assertion, wait, trace).await?,
        StepAction::Act {
            locator,
            nth,
            action,
            value,
            if_present,
            each,
            then_stop,
        } => {
            trace.decision = Some(act_decision(locator, *action, value.as_ref()));
            if *if_present && !present(exec, locator, wait).await? {
                trace.precheck = Some(0);
                trace.acted = Some(None);
                trace.skipped = Some(format!("skipped: {locator} matched nothing (if present)"));
                Ok(())
            } else {
                let done = if *each {
                    act_each(exec, locator, *action, value.as_ref(), wait, trace).await?
                } else {
                    act(exec, locator, *nth, *action, value.as_ref(), wait, trace).await?
                };
                trace.stop = *then_stop && done.is_ok();
                done
            }
        }
        StepAction::Else { first, otherwise } => {
            else_step(exec, step, first, otherwise, start_url, wait, sanitizer, trace).await?
        }
        StepAction::PressKey(key) => press_step(exec, key, trace).await?,
        StepAction::Dialog { accept, text } => {
            let how = if *accept {
                oxwright_engine::DialogAction::Accept
            } else {
                oxwright_engine::DialogAction::Dismiss
            };
            let word = if *accept { "accept" } else { "dismiss" };
            trace.decision = Some(plain_decision("dialog", Some(word.into()), None));
            match exec.page().answer_dialogs(how, text.clone()).await {
                Ok(()) => Ok(()),
                Err(e) if e.is_fatal() => return Err(e.into()),
                Err(e) => Err(AttemptError::Action(sanitizer.clean(&e.message))),
            }
        }
        StepAction::ScrollPage(to) => scroll_step(exec, *to, sanitizer, trace).await?,
        StepAction::Extract(extraction) => extract_step(exec, extraction, wait, sanitizer, trace).await?,
        StepAction::ExtractSchema(e) => {
            return Err(ParseError {
                line: step.line,
                message: format!(
                    "extract: {} reads through a workflow's LLM, on a line of its own (not in a fetch's actions or after else)",
                    e.schema
                ),
            }
            .into());
        }
    })
}

/// An `extract:` step: waits for its element as an action does, reads
/// it, and leaves the value (cleaned of secrets) in `trace.output`.
async fn extract_step(
    exec: &mut Executor<'_>,
    e: &Extraction,
    wait: Duration,
    sanitizer: &Sanitizer,
    trace: &mut StepTrace,
) -> Result<Result<(), AttemptError>, StepError> {
    trace.decision = Some(StepDecision {
        locator: Some(e.locator.clone()),
        ..plain_decision("extract", Some(e.kind.as_str().to_owned()), None)
    });
    let t = Instant::now();
    let first = exec
        .wait_for_target(&e.locator, e.nth.or(e.each.then_some(0)), wait)
        .await;
    trace.durations.precheck_ms = ms(t.elapsed());
    trace.precheck = Some(precheck_count(&first));
    let id = match first {
        Ok(id) => id,
        Err(err) => return Ok(Err(err)),
    };
    let t = Instant::now();
    let engine_attempt = |e: oxwright_engine::EngineError| -> Result<AttemptError, StepError> {
        if e.is_fatal() {
            return Err(e.into());
        }
        Ok(AttemptError::from_engine(&e, sanitizer.clean(&e.to_string())))
    };
    let page = exec.page();
    let read = match (e.kind, e.each) {
        (ExtractKind::Text, true) => {
            let mut texts = Vec::new();
            let found = match exec.locate(&e.locator).await {
                Ok(found) => found,
                Err(err) => return Ok(Err(engine_attempt(err)?)),
            };
            for id in found {
                match page.inspect(&Target::Element(id)).await {
                    Ok(state) => texts.push(serde_json::Value::String(state.text)),
                    Err(err) => return Ok(Err(engine_attempt(err)?)),
                }
            }
            Ok(serde_json::Value::Array(texts))
        }
        (ExtractKind::Text, false) => page
            .inspect(&Target::Element(id))
            .await
            .map(|state| serde_json::Value::String(state.text)),
        (ExtractKind::Value, _) => match page.inspect(&Target::Element(id)).await {
            Ok(state) if state.secret => {
                return Ok(Err(AttemptError::Action(format!(
                    "{} is a password field: its value is never read",
                    e.locator
                ))));
            }
            Ok(state) => Ok(state
                .value
                .map_or(serde_json::Value::Null, serde_json::Value::String)),
            Err(err) => Err(err),
        },
        (ExtractKind::Table, _) => page.table_rows(&Target::Element(id)).await,
    };
    trace.durations.action_ms = ms(t.elapsed());
    let value = match read {
        Ok(value) => value,
        Err(err) => return Ok(Err(engine_attempt(err)?)),
    };
    // What the page shows may hold a secret typed earlier; personal data
    // is masked as in every artefact.
    let value = sanitizer.clean_json(&value);
    exec.keep_output(&e.name, value.clone());
    trace.acted = Some(None);
    trace.output = Some(StepOutput {
        name: e.name.clone(),
        value,
    });
    Ok(Ok(()))
}

/// A page scroll (`scroll: through`, a screen at a time to the bottom):
/// each screen waits, as an action settles, for what it set off.
async fn scroll_step(
    exec: &mut Executor<'_>,
    to: ScrollTo,
    sanitizer: &Sanitizer,
    trace: &mut StepTrace,
) -> Result<Result<(), AttemptError>, StepError> {
    trace.decision = Some(plain_decision(
        "scroll",
        Some(format!("{to:?}").to_lowercase()),
        None,
    ));
    let screens = if to == ScrollTo::Through {
        ScrollTo::MAX_SCREENS
    } else {
        1
    };
    let mut r = Ok(());
    for _ in 0..screens {
        let t = Instant::now();
        let script = if to == ScrollTo::Through {
            ScrollTo::THROUGH_STEP
        } else {
            to.script()
        };
        let scrolled = exec.page().evaluate(script, exec.timeout()).await;
        trace.durations.action_ms += ms(t.elapsed());
        // What the scroll set off (a section loaded as it comes into
        // view) is waited for, as an action's settle waits for what
        // it started: the page's pending work done, its text quiet.
        let at_bottom = match scrolled {
            Ok(v) => v.as_bool().unwrap_or(true),
            Err(e) => {
                r = Err(e);
                break;
            }
        };
        let t = Instant::now();
        let ready = oxwright_engine::WaitCondition::LoadState(oxwright_engine::WaitUntil::Ready);
        r = exec.page().wait_for(&ready, exec.timeout()).await;
        trace.durations.settle_ms += ms(t.elapsed());
        if r.is_err() || at_bottom {
            break;
        }
    }
    match r {
        Ok(()) => Ok(Ok(())),
        Err(e) if e.is_fatal() => Err(e.into()),
        Err(e) => Ok(Err(AttemptError::from_engine(
            &e,
            sanitizer.clean(&e.to_string()),
        ))),
    }
}

/// An `expect:` step: the assertion holds within `wait`.
async fn expect_step(
    exec: &mut Executor<'_>,
    assertion: &Assertion,
    wait: Duration,
    trace: &mut StepTrace,
) -> Result<Result<(), AttemptError>, StepError> {
    let t = Instant::now();
    let r = exec.check(assertion, wait).await;
    trace.durations.precheck_ms = ms(t.elapsed());
    trace.decision = Some(StepDecision {
        locator: assertion.locator().cloned(),
        ..plain_decision("expect", None, None)
    });
    Ok(match r {
        Ok(()) => {
            trace.precheck = assertion.locator().map(|_| 1);
            Ok(())
        }
        Err(ActError::Fatal(e)) => return Err(e),
        Err(ActError::Engine(e)) => return Err(e.into()),
        Err(e) => {
            let err = e.attempt();
            if assertion.locator().is_some() {
                trace.precheck = Some(precheck_count::<()>(&Err(err.clone())));
            }
            Err(err)
        }
    })
}

/// `STEP else STEP`: the second runs when the first fails, and says why.
#[allow(clippy::too_many_arguments)]
async fn else_step(
    exec: &mut Executor<'_>,
    step: &StructuredStep,
    first: &StepAction,
    otherwise: &StepAction,
    start_url: &url::Url,
    wait: Duration,
    sanitizer: &Sanitizer,
    trace: &mut StepTrace,
) -> Result<Result<(), AttemptError>, StepError> {
    let tried = StructuredStep {
        action: first.clone(),
        ..step.clone()
    };
    match Box::pin(attempt_step(exec, &tried, start_url, wait, sanitizer, trace)).await? {
        Ok(()) => Ok(Ok(())),
        Err(failed) => {
            let fallback = StructuredStep {
                action: otherwise.clone(),
                ..step.clone()
            };
            *trace = StepTrace::default();
            let done = Box::pin(attempt_step(exec, &fallback, start_url, wait, sanitizer, trace)).await?;
            trace.skipped = Some(format!("the first step failed ({failed}); its `else` step ran"));
            trace.else_reason = Some(format!("the step before `else` failed: {failed}"));
            Ok(done)
        }
    }
}

/// `press: KEY` on the focused element (the body when none is).
async fn press_step(
    exec: &mut Executor<'_>,
    key: &str,
    trace: &mut StepTrace,
) -> Result<Result<(), AttemptError>, StepError> {
    trace.decision = Some(plain_decision("press", Some(key.to_owned()), None));
    let t = Instant::now();
    let focused = Locator::css(":focus");
    let target = match exec.locate(&focused).await {
        Ok(found) if found.len() == 1 => Target::Element(found[0].clone()),
        _ => Target::Locator {
            locator: Locator::css("body"),
            nth: None,
        },
    };
    let r = exec
        .perform(
            &target,
            Action::Press,
            Some(&ActionValue::Literal(key.to_owned())),
        )
        .await;
    trace.durations.action_ms = ms(t.elapsed());
    Ok(match r {
        Ok(acted) => {
            trace.durations.settle_ms = ms(acted.settle);
            trace.acted = Some(Some(acted.navigated));
            Ok(())
        }
        Err(ActError::Fatal(e)) => return Err(e),
        Err(ActError::Engine(e)) => return Err(e.into()),
        Err(e) => Err(e.attempt()),
    })
}

/// Whether `locator` matches anything within a short grace (the page
/// may still be drawing what an `if present` step looks for).
async fn present(exec: &Executor<'_>, locator: &Locator, wait: Duration) -> Result<bool, StepError> {
    let deadline = Instant::now() + wait.min(PRESENT_GRACE);
    loop {
        match exec.locate(locator).await {
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

/// Waits for at least one match of `locator` and acts on every match in
/// turn (`each`), in document order.
async fn act_each(
    exec: &mut Executor<'_>,
    locator: &Locator,
    action: Action,
    value: Option<&ActionValue>,
    wait: Duration,
    trace: &mut StepTrace,
) -> Result<Result<(), AttemptError>, StepError> {
    let t = Instant::now();
    let deadline = t + wait;
    let found = loop {
        match exec.locate(locator).await {
            Ok(found) if !found.is_empty() => break found,
            Ok(_) => {}
            Err(e) if e.is_fatal() => return Err(e.into()),
            Err(e) => return Ok(Err(AttemptError::from_engine(&e, e.to_string()))),
        }
        if Instant::now() >= deadline {
            trace.precheck = Some(0);
            return Ok(Err(exec.no_match(locator).await));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    trace.durations.precheck_ms = ms(t.elapsed());
    trace.precheck = Some(found.len());
    let mut navigated = false;
    for id in found {
        match exec.perform(&Target::Element(id), action, value).await {
            Ok(acted) => {
                trace.durations.action_ms += ms(acted.action);
                trace.durations.settle_ms += ms(acted.settle);
                navigated |= acted.navigated;
            }
            Err(ActError::Fatal(e)) => return Err(e),
            Err(ActError::Engine(e)) => return Err(e.into()),
            Err(e) => return Ok(Err(e.attempt())),
        }
    }
    trace.acted = Some(Some(navigated));
    Ok(Ok(()))
}

/// Waits for exactly one match of `locator` (or its `nth`) and acts on it.
pub(crate) async fn act(
    exec: &mut Executor<'_>,
    locator: &Locator,
    nth: Option<i64>,
    action: Action,
    value: Option<&ActionValue>,
    wait: Duration,
    trace: &mut StepTrace,
) -> Result<Result<(), AttemptError>, StepError> {
    let t = Instant::now();
    let target = exec.wait_for_target(locator, nth, wait).await;
    trace.durations.precheck_ms = ms(t.elapsed());
    let target = match target {
        Ok(t) => {
            trace.precheck = Some(1);
            t
        }
        Err(err) => {
            trace.precheck = Some(precheck_count::<()>(&Err(err.clone())));
            return Ok(Err(err));
        }
    };
    match exec.perform(&Target::Element(target), action, value).await {
        Ok(acted) => {
            trace.durations.action_ms = ms(acted.action);
            trace.durations.settle_ms = ms(acted.settle);
            trace.acted = Some(Some(acted.navigated));
            Ok(Ok(()))
        }
        Err(ActError::Fatal(e)) => Err(e),
        Err(ActError::Engine(e)) => Err(e.into()),
        Err(e) => Ok(Err(e.attempt())),
    }
}

/// The auto-wait of one attempt: the action deadline shared across the
/// attempts, at least a second.
pub fn attempt_wait(action_timeout: Duration) -> Duration {
    (action_timeout / MAX_ATTEMPTS).max(Duration::from_secs(1))
}

/// Why a list of steps stopped.
#[derive(Debug, Clone, thiserror::Error)]
pub enum StepsError {
    /// A step did not complete within its attempts.
    #[error("step {number} ({text}) failed after {attempts} attempt(s): {reason}")]
    Failed {
        /// 1-based position in the list.
        number: usize,
        /// The step as written.
        text: String,
        /// Attempts made.
        attempts: u32,
        /// The last attempt's failure.
        reason: AttemptError,
    },
    /// Something ended the run (the browser, a secret, a bad `goto:`).
    #[error("step {number} ({text}): {error}")]
    Fatal {
        /// 1-based position in the list.
        number: usize,
        /// The step as written.
        text: String,
        /// What ended it.
        error: StepError,
    },
}

/// Runs `steps` in order on `page` (no LLM, no log), each with up to
/// [`MAX_ATTEMPTS`] attempts as in a workflow run; `action_timeout` bounds
/// each action and its settle. A click that opens a tab is followed: the
/// returned executor's [`Executor::page`] is the page the steps ended on.
pub async fn run_steps<'a>(
    page: &'a dyn Page,
    steps: &[StructuredStep],
    start_url: &url::Url,
    action_timeout: Duration,
) -> Result<Executor<'a>, StepsError> {
    let sanitizer = Sanitizer::default();
    let mut exec = Executor::new(
        page,
        sanitizer.clone(),
        Arc::new(MemorySecrets::default()),
        action_timeout,
        oxwright_engine::DEFAULT_MAX_CHARS,
    );
    let wait = attempt_wait(action_timeout);
    for (i, step) in steps.iter().enumerate() {
        let mut last = None;
        let mut stop = false;
        for attempt in 1..=MAX_ATTEMPTS {
            let mut trace = StepTrace::default();
            match attempt_step(&mut exec, step, start_url, wait, &sanitizer, &mut trace).await {
                Ok(Ok(())) => {
                    last = None;
                    stop = trace.stop;
                    break;
                }
                Ok(Err(reason)) => {
                    let canvas = matches!(reason, AttemptError::Canvas(_));
                    last = Some((attempt, reason));
                    if canvas {
                        break;
                    }
                }
                Err(error) => {
                    return Err(StepsError::Fatal {
                        number: i + 1,
                        text: step.text.clone(),
                        error,
                    });
                }
            }
        }
        if let Some((attempts, reason)) = last {
            return Err(StepsError::Failed {
                number: i + 1,
                text: step.text.clone(),
                attempts,
                reason,
            });
        }
        if stop {
            // `if present then stop`: the rest is not run.
            break;
        }
    }
    Ok(exec)
}
