//! Replaying a plain-language step from the action cache, and healing it
//! with the LLM when the cached action no longer fits the page.
//!
//! A cached action runs only when its locator matches exactly one element
//! **and** that element's neighbourhood (role, name, landmarks) is the one
//! recorded: a look-alike elsewhere on the page is refused, never clicked.
//! After the action the URL pattern must be the recorded one; below the
//! trust count the completion judge confirms the step too. Anything else
//! sends the step to the LLM (self-heal); the cache learns the healed
//! action only once that step verifiably completed.

use std::time::{Duration, Instant};

use oxwright_engine::Target;
use oxwright_jobs::{StepDurations as Durations, StepSource, WorkflowMode};
use serde_json::json;

use super::Run;
use super::attempt::{AttemptLine, act_decision, ms};
use super::failure::StepKind;
use crate::cache::{CacheEvent, EntryKey, EventFile, Fingerprint, Resolved, relative_to, url_pattern_on};
use crate::prompts::{self, JUDGE_MAX_TOKENS};
use crate::{ActionCache, WorkflowError};
use oxwright_steps::{ActError, AttemptError};

/// How long a replayed step waits for its element to appear.
const REPLAY_WAIT: Duration = Duration::from_secs(5);

impl Run<'_> {
    /// One plain-language step: from the cache when replaying and it
    /// fits, else decided by the LLM; records what completed.
    pub(super) async fn plain_step(&mut self, index: usize) -> Result<(), WorkflowError> {
        self.resolved = None;
        self.source = StepSource::Llm;
        if self.cache.is_some() {
            match self.cached_step(index).await? {
                Cached::Done => return Ok(()),
                Cached::Missing => {}
                Cached::Refused(reason) => {
                    self.source = StepSource::Healed;
                    if self.llm.is_none() {
                        return self.no_fallback(index, reason).await;
                    }
                }
            }
            if self.llm.is_none() {
                return self
                    .no_fallback(index, "no cached action for this step on this page".into())
                    .await;
            }
        }
        let outcome = self.llm_step(index).await;
        if outcome.is_ok() {
            if self.source == StepSource::Healed {
                self.totals.healed += 1;
            }
            if let Some((key, resolved)) = self.resolved.take() {
                self.events.push(CacheEvent::Success { key, resolved });
            }
        }
        outcome
    }

    /// A step that needed the LLM when there is none: it fails with
    /// `LLM_FALLBACK_DISABLED` and its usual artefacts.
    async fn no_fallback(&mut self, index: usize, reason: String) -> Result<(), WorkflowError> {
        let number = index as u32 + 1;
        let err = AttemptError::Unusable(format!(
            "step {number} cannot be replayed ({reason}) and no LLM is configured to decide it"
        ));
        self.kind = StepKind::Llm;
        let snapshot = self.exec.snapshot().await.map(|s| s.text).unwrap_or_default();
        self.tried.push(super::failure::Tried {
            attempt: 1,
            code: Some(err.code().to_string()),
            precheck: None,
            locator: None,
            action: String::new(),
            success: false,
            duration_ms: 0.0,
            message: Some(err.to_string()),
        });
        let started = Instant::now();
        self.close_step(index, false, 0, vec![err.to_string()], 0, 0, started, &snapshot)
            .await
    }

    /// Tries the cached action of step `index`.
    async fn cached_step(&mut self, index: usize) -> Result<Cached, WorkflowError> {
        let number = index as u32 + 1;
        let instruction = self.checklist[index].clone();
        let step = instruction.trim_start_matches("[]").trim().to_string();
        let url = match self.exec.page().url().await {
            Ok(u) => u,
            Err(e) if e.is_fatal() => return Err(e.into()),
            Err(_) => return Ok(Cached::Missing),
        };
        let key = EntryKey::on(&self.opts.start_url, &url, &step);
        // A cache recorded before keys were relative to the start URL.
        let legacy = EntryKey::new(&url, &step);
        let found = self.cache.as_ref().and_then(|c| match c.get(&key) {
            Some(entry) => Some(entry.clone()),
            None => c.get(&legacy).cloned().map(|mut entry| {
                entry.resolved.url_after = relative_to(entry.resolved.url_after, &self.opts.start_url);
                entry
            }),
        });
        let Some(entry) = found else {
            self.log.say(&format!(
                "step {number}/{}: {step} (no cached action)",
                self.checklist.len()
            ));
            return Ok(Cached::Missing);
        };
        self.log.say(&format!(
            "step {number}/{}: {step} (cached)",
            self.checklist.len()
        ));
        let started = Instant::now();
        self.kind = StepKind::Llm;
        self.tried.clear();
        let r = &entry.resolved;
        let meta = json!({ "id": format!("step_{number}_cache"), "originalInstruction": step, "attempt": 1, "source": "cache" });
        let mut line = AttemptLine::new(number, 1, &step, &meta, &["cache"], 0, &url);
        line.decision = Some(act_decision(&r.locator, r.action, r.value.as_ref()));
        let mut d = Durations::default();
        let trusted = entry.successes >= self.trust_after();
        let (mut p_tokens, mut c_tokens) = (0u64, 0u64);
        let verdict = self
            .replay_action(&key, r, trusted, &mut line, &mut d, &mut p_tokens, &mut c_tokens)
            .await?;
        match verdict {
            Ok(()) => {
                line.completed = true;
                self.finish_attempt(line, d, started).await?;
                self.events.push(CacheEvent::Success {
                    key,
                    resolved: r.clone(),
                });
                self.source = StepSource::Cache;
                self.totals.cache_hits += 1;
                self.close_step(index, true, 1, Vec::new(), p_tokens, c_tokens, started, "")
                    .await?;
                Ok(Cached::Done)
            }
            Err(err) => {
                let reason = err.to_string();
                self.log
                    .say(&format!("  cached action refused: {reason}; asking the LLM"));
                line.fail(&err);
                self.finish_attempt(line, d, started).await?;
                self.events.push(CacheEvent::Failure {
                    key,
                    refused: r.clone(),
                    reason: reason.clone(),
                });
                Ok(Cached::Refused(reason))
            }
        }
    }

    /// Runs a cached action: precheck (one match, same neighbourhood),
    /// action, effect check (URL pattern; the judge below the trust count).
    #[allow(clippy::too_many_arguments)]
    async fn replay_action(
        &mut self,
        key: &EntryKey,
        r: &Resolved,
        trusted: bool,
        line: &mut AttemptLine,
        d: &mut Durations,
        p_tokens: &mut u64,
        c_tokens: &mut u64,
    ) -> Result<Result<(), AttemptError>, WorkflowError> {
        let t = Instant::now();
        let found = self.replay_locate(&r.locator).await;
        d.precheck_ms = ms(t.elapsed());
        let element = match found {
            Ok(e) => {
                line.precheck = Some(1);
                e
            }
            Err(err) => {
                line.precheck = Some(super::attempt::precheck_count::<()>(&Err(err.clone())));
                return Ok(Err(refused(err.to_string())));
            }
        };
        let target = Target::Element(element);
        let now = match self.exec.page().inspect(&target).await {
            Ok(state) => Fingerprint::of(&state),
            Err(e) if e.is_fatal() => return Err(e.into()),
            Err(e) => return Ok(Err(refused(format!("its element could not be read: {e}")))),
        };
        if let Some(why) = r.fingerprint.differs(&now) {
            return Ok(Err(refused(format!(
                "{} found another element ({why})",
                r.locator
            ))));
        }
        self.checkpoint_acting(line.step_number as usize - 1, Some(r.action))
            .await;
        let acted = match self.exec.perform(&target, r.action, r.value.as_ref()).await {
            Ok(a) => a,
            Err(ActError::Fatal(e)) => return Err(e.into()),
            Err(ActError::Engine(e)) => return Err(e.into()),
            Err(e) => return Ok(Err(refused(e.attempt().to_string()))),
        };
        d.action_ms = ms(acted.action);
        d.settle_ms = ms(acted.settle);
        line.succeeded(Some(acted.navigated));
        let after = self.exec.page().url().await.unwrap_or_default();
        line.url_after = Some(after.clone());
        // A legacy entry's after-URL was made relative when it was found.
        let reached = url_pattern_on(&after, &self.opts.start_url);
        if reached != r.url_after {
            return Ok(Err(refused(format!(
                "after it the page is {reached}, the recorded run reached {}",
                r.url_after
            ))));
        }
        if trusted {
            return Ok(Ok(()));
        }
        // Not trusted yet: the judge confirms the step (no decision call).
        let t = Instant::now();
        let fresh = self.exec.snapshot().await?;
        d.snapshot_ms = ms(t.elapsed());
        let action_text = format!("{} {}", r.locator, r.action.as_str());
        let t = Instant::now();
        let answer = self
            .ask_model(
                "judge",
                Some(line.step_number),
                prompts::judge(&key.instruction, &action_text, &fresh.text),
                JUDGE_MAX_TOKENS,
                false,
            )
            .await;
        d.judge_ms = ms(t.elapsed());
        let (text, usage) = match answer {
            Ok(a) => a,
            Err(e) => return Ok(Err(AttemptError::Llm(e.to_string()))),
        };
        *p_tokens += usage.prompt_tokens;
        *c_tokens += usage.completion_tokens;
        line.tokens(&usage);
        match prompts::parse_judgement(&text) {
            Ok(true) => Ok(Ok(())),
            Ok(false) => Ok(Err(refused("the completion judge answered false".into()))),
            Err(reason) => Ok(Err(AttemptError::Unusable(reason))),
        }
    }

    /// Finds the one element `locator` matches, waiting a moment for one
    /// to appear; several matches are refused at once.
    async fn replay_locate(
        &self,
        locator: &crate::Locator,
    ) -> Result<oxwright_engine::ElementId, AttemptError> {
        let deadline = tokio::time::Instant::now() + REPLAY_WAIT.min(self.exec.timeout());
        loop {
            let found = self
                .exec
                .locate(locator)
                .await
                .map_err(|e| AttemptError::from_engine(&e, self.sanitizer.clean(&e.to_string())))?;
            match found.len() {
                1 => return Ok(found.into_iter().next().expect("one element")),
                0 if tokio::time::Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                0 => return Err(self.exec.no_match(locator).await),
                n => {
                    return Err(AttemptError::NotUnique {
                        locator: locator.to_string(),
                        count: n,
                    });
                }
            }
        }
    }

    fn trust_after(&self) -> u32 {
        self.opts
            .replay
            .as_ref()
            .map(|r| r.trust_after)
            .unwrap_or(u32::MAX)
    }

    /// Writes this run's cache events (a failure to is logged: the run's
    /// result does not depend on it).
    pub(super) async fn save_cache(&mut self, mode: WorkflowMode) {
        let Some(id) = self.opts.workflow_id.clone() else {
            return;
        };
        if mode != WorkflowMode::Llm || self.events.is_empty() {
            return;
        }
        let file = EventFile {
            workflow_id: id,
            session_id: self.opts.session_id.clone(),
            at: chrono::Utc::now(),
            start_url: self.opts.start_url.to_string(),
            checklist: self.checklist.clone(),
            events: std::mem::take(&mut self.events),
        };
        // Secrets and credentials never stored; the page's own names (a
        // link called support@shop.example) kept, or they could not match
        // again. A literal the sanitiser masks makes that step heal each time.
        let file = match serde_json::to_value(&file)
            .map(|v| self.sanitizer.clean_page_json(&v))
            .and_then(serde_json::from_value::<EventFile>)
        {
            // Ours, not the page's: kept as they are (the key is built from them).
            Ok(clean) => EventFile {
                workflow_id: file.workflow_id,
                session_id: file.session_id,
                ..clean
            },
            Err(e) => {
                tracing::warn!(error = %e, "action cache events not serialisable");
                return;
            }
        };
        if let Err(e) = ActionCache::save(&self.log.store(), &file).await {
            tracing::warn!(error = %e, "action cache not saved");
            self.log
                .say(&format!("warning: the action cache was not saved: {e}"));
        }
    }

    /// Keeps a screenshot for the report under `screenshots/<name>`
    /// (secret fields blacked out); a failure is logged.
    pub(super) async fn keep_step_screenshot(&mut self, name: &str) {
        if !self.opts.step_screenshots {
            return;
        }
        match self.exec.screenshot().await {
            Ok(png) => {
                self.last_shot = Some(png.clone());
                if let Err(e) = self
                    .log
                    .put_bytes(&format!("screenshots/{name}"), png, "image/png")
                    .await
                {
                    tracing::warn!(error = %e, "step screenshot not stored");
                }
            }
            Err(e) => tracing::debug!(error = %e, "step screenshot failed"),
        }
    }
}

/// What the cache did for a step.
enum Cached {
    /// The cached action completed the step.
    Done,
    /// Nothing cached for it.
    Missing,
    /// The cached action was refused (why).
    Refused(String),
}

fn refused(why: String) -> AttemptError {
    AttemptError::CacheRefused(why)
}
