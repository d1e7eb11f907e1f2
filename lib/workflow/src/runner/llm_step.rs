//! The LLM path of one step: snapshot → decision → precheck → action →
//! settle → judgement, up to three attempts (emergency mode adds more on
//! the larger model), with the decision prompt fitted to the step's
//! token budget.

use super::*;
use crate::ActionDecision;

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

    pub(super) async fn llm_step(&mut self, index: usize) -> Result<(), WorkflowError> {
        let number = index as u32 + 1;
        let step = self.checklist[index].trim_start_matches("[]").trim().to_string();
        self.log
            .say(&format!("step {number}/{}: {step}", self.checklist.len()));
        let step_started = Instant::now();
        self.kind = StepKind::Llm;
        self.tried.clear();
        let mut s = LlmStep {
            index,
            number,
            step,
            recording: self.opts.workflow_id.is_some(),
            p_tokens: 0,
            c_tokens: 0,
            reasons: Vec::new(),
            cached: None,
            last_snapshot: String::new(),
            completed: false,
            attempt: 0,
            limit: MAX_ATTEMPTS,
            emergency: None,
            progress: tokio::time::Instant::now(),
            step_url: None,
        };
        while !s.completed && self.next_attempt(&mut s) {
            self.llm_attempt(&mut s).await?;
        }
        if let Some(e) = &s.emergency {
            self.emergency_off(number, e);
        }
        self.close_step(
            index,
            s.completed,
            s.attempt,
            s.reasons,
            s.p_tokens,
            s.c_tokens,
            step_started,
            &s.last_snapshot,
        )
        .await
    }

    /// Counts the next attempt, turning emergency mode on when a trigger
    /// fires (every attempt so far failed); `false` once none is left.
    fn next_attempt(&mut self, s: &mut LlmStep) -> bool {
        if s.emergency.is_none()
            && let Some((trigger, reason)) =
                emergency::trigger(s.attempt, s.progress.elapsed(), &self.confidence)
        {
            s.emergency = Some(self.emergency_on(s.number, trigger, reason));
            s.limit = s.attempt + emergency::EMERGENCY_ATTEMPTS;
        }
        if s.attempt >= s.limit {
            return false;
        }
        s.attempt += 1;
        true
    }

    /// One attempt: decide, check the target, act, judge, and record it.
    async fn llm_attempt(&mut self, s: &mut LlmStep) -> Result<(), WorkflowError> {
        let started = Instant::now();
        let mut d = Durations::default();
        let t = Instant::now();
        let snap = match s.cached.take() {
            Some(snap) => snap,
            None => self.exec.snapshot().await?,
        };
        d.snapshot_ms = ms(t.elapsed());
        s.last_snapshot = snap.text.clone();
        s.step_url.get_or_insert_with(|| snap.url.clone());
        let (mut line, decision) = self.decide(s, &snap, &mut d).await;
        let decision = match decision {
            Ok(decision) => decision,
            Err(err) => return self.attempt_failed(s, line, &err, d, started).await,
        };
        if s.emergency.is_none()
            && let Some(c) = decision.confidence
        {
            self.confidence.push(c);
        }
        let (target, locator) = match self.check(&snap, &decision, &mut line, &mut d).await? {
            Ok(found) => found,
            Err(err) => return self.attempt_failed(s, line, &err, d, started).await,
        };
        // The element's neighbourhood before the action changes the page.
        let fingerprint = match s.recording && decision.near().is_none() {
            true => self
                .exec
                .page()
                .inspect(&target)
                .await
                .ok()
                .map(|st| Fingerprint::of(&st)),
            false => None,
        };
        if let Err(err) = self.act(s, &target, &decision, &mut line, &mut d).await? {
            return self.attempt_failed(s, line, &err, d, started).await;
        }
        let t = Instant::now();
        let fresh = self.exec.snapshot().await?;
        d.snapshot_ms += ms(t.elapsed());
        s.last_snapshot = fresh.text.clone();
        let action_text = format!("{} {}", locator, decision.action.as_str());
        match self.judge(s, &action_text, &fresh, &mut line, &mut d).await {
            Ok(true) => {
                s.completed = true;
                line.completed = true;
                if let (Some(fingerprint), Some(url)) = (fingerprint, &s.step_url) {
                    self.resolved = Some((
                        EntryKey::on(&self.opts.start_url, url, &s.step),
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
                s.reasons.push(err.to_string());
                line.reason = Some(err.to_string());
            }
            Err(err) => {
                s.reasons.push(err.to_string());
                line.reason = Some(err.to_string());
            }
        }
        s.cached = Some(fresh);
        self.finish_attempt(line, d, started).await
    }

    /// Records a failed attempt and why.
    async fn attempt_failed(
        &mut self,
        s: &mut LlmStep,
        mut line: AttemptLine,
        err: &AttemptError,
        d: Durations,
        started: Instant,
    ) -> Result<(), WorkflowError> {
        s.reasons.push(err.to_string());
        line.fail(err);
        self.finish_attempt(line, d, started).await
    }

    /// Asks the model what to do on `snap` (the light DOM in emergency
    /// mode); the attempt's line, and the decision or why there is none.
    async fn decide(
        &mut self,
        s: &mut LlmStep,
        snap: &Snapshot,
        d: &mut Durations,
    ) -> (AttemptLine, Result<ActionDecision, AttemptError>) {
        let (number, attempt, large) = (s.number, s.attempt, s.emergency.is_some());
        // Step meta is rebuilt every attempt; phase 1 derives no hints.
        let mut meta = json!({ "id": format!("step_{number}_{attempt}"), "originalInstruction": s.step, "attempt": attempt });
        let mut hint_keys: Vec<&str> = Vec::new();
        // The site's profile, when `sites.yaml` has one for this page.
        if let Some(site) = self.opts.hints.sites.as_ref().and_then(|p| p.matching(&snap.url)) {
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
        // The cap cut the snapshot and the target was not seen: what the
        // step quotes is searched for in the whole page and shown.
        let failure = match s.reasons.last().cloned() {
            Some(f) if snap.pruned > 0 => Some(found_in_page(&f, &s.step, snap)),
            f => f,
        };
        let (messages, max_tokens) = if large {
            let html = self.exec.page().html().await.unwrap_or_default();
            let dom = emergency::light_dom(&html, emergency::LIGHT_DOM_MAX_CHARS);
            (
                prompts::emergency_decision(&self.checklist, s.index, &s.step, &s.reasons, &dom),
                prompts::EMERGENCY_MAX_TOKENS,
            )
        } else {
            (
                self.decision_prompt(
                    s.index,
                    &s.step,
                    &meta,
                    failure.as_deref(),
                    snap,
                    sitemap.as_deref(),
                ),
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
            &s.step,
            &meta,
            &hint_keys,
            snap.text.len(),
            &snap.url,
        );
        line.emergency = s.emergency.clone();
        let decision = match answer {
            Err(e) => Err(AttemptError::Llm(e.to_string())),
            Ok((text, usage)) => {
                s.p_tokens += usage.prompt_tokens;
                s.c_tokens += usage.completion_tokens;
                line.tokens(&usage);
                match parse_decision_in(&text, large) {
                    Ok(DecisionAnswer::Act(decision)) => Ok(*decision),
                    Ok(DecisionAnswer::TargetNotFound) => Err(AttemptError::TargetNotFound),
                    Err(reason) => Err(AttemptError::Unusable(reason)),
                }
            }
        };
        (line, decision)
    }

    /// The precheck: the decision's target, exactly one element now (a
    /// proximity decision resolves on `snap`, to a ref), and its locator.
    async fn check(
        &self,
        snap: &Snapshot,
        decision: &ActionDecision,
        line: &mut AttemptLine,
        d: &mut Durations,
    ) -> Result<Result<(Target, Locator), AttemptError>, WorkflowError> {
        let t = Instant::now();
        let (target, locator) = match decision.near() {
            Some((text, role)) => {
                let text_locator = Locator::Text {
                    text: text.clone(),
                    exact: false,
                };
                line.decision = Some(llm_decision(decision, &text_locator));
                let found = emergency::near_ref(&snap.text, &text, role.as_deref());
                let target = found.map(|r| (Target::Ref(r), 1)).ok_or(AttemptError::NotUnique {
                    locator: format!("near {text:?}"),
                    count: 0,
                });
                (target, text_locator)
            }
            None => {
                let locator = decision
                    .locator()
                    .map_err(|e| WorkflowError::Config(e.to_string()))?;
                line.decision = Some(llm_decision(decision, &locator));
                (self.llm_target(&locator, decision.action).await?, locator)
            }
        };
        d.precheck_ms = ms(t.elapsed());
        Ok(match target {
            Ok((target, count)) => {
                line.precheck = Some(count);
                Ok((target, locator))
            }
            Err(err) => {
                match &err {
                    AttemptError::NotUnique { count, .. } => line.precheck = Some(*count),
                    AttemptError::NoMatch { .. } => line.precheck = Some(0),
                    _ => {}
                }
                Err(err)
            }
        })
    }

    /// Performs the decision on `target` (an in-flight mark first, for a
    /// resume); an engine or workflow failure ends the run.
    async fn act(
        &mut self,
        s: &mut LlmStep,
        target: &Target,
        decision: &ActionDecision,
        line: &mut AttemptLine,
        d: &mut Durations,
    ) -> Result<Result<(), AttemptError>, WorkflowError> {
        self.checkpoint_acting(s.index, Some(decision.action)).await;
        match self
            .exec
            .perform(target, decision.action, decision.value.as_ref())
            .await
        {
            Ok(acted) => {
                s.progress = tokio::time::Instant::now();
                d.action_ms = ms(acted.action);
                d.settle_ms = ms(acted.settle);
                line.succeeded(Some(acted.navigated));
                Ok(Ok(()))
            }
            Err(ActError::Fatal(e)) => Err(e.into()),
            Err(ActError::Engine(e)) => Err(e.into()),
            Err(e) => Ok(Err(e.attempt())),
        }
    }

    /// Asks the judge whether the step is done on `fresh`.
    async fn judge(
        &mut self,
        s: &mut LlmStep,
        action_text: &str,
        fresh: &Snapshot,
        line: &mut AttemptLine,
        d: &mut Durations,
    ) -> Result<bool, AttemptError> {
        let t = Instant::now();
        let verdict = self
            .ask_model(
                "judge",
                Some(s.number),
                prompts::judge(&s.step, action_text, &fresh.text),
                JUDGE_MAX_TOKENS,
                s.emergency.is_some(),
            )
            .await;
        d.judge_ms = ms(t.elapsed());
        match verdict {
            Ok((text, usage)) => {
                s.p_tokens += usage.prompt_tokens;
                s.c_tokens += usage.completion_tokens;
                line.tokens(&usage);
                prompts::parse_judgement(&text).map_err(AttemptError::Unusable)
            }
            Err(e) => Err(AttemptError::Llm(e.to_string())),
        }
    }
}

/// What one plain-language step carries from attempt to attempt.
struct LlmStep {
    index: usize,
    number: u32,
    /// The instruction without its checkbox.
    step: String,
    /// Whether completed actions go to the action cache.
    recording: bool,
    p_tokens: u64,
    c_tokens: u64,
    /// Why each failed attempt failed.
    reasons: Vec<String>,
    /// The snapshot the judge saw, for the next attempt.
    cached: Option<Snapshot>,
    last_snapshot: String,
    completed: bool,
    attempt: u32,
    limit: u32,
    emergency: Option<StepEmergency>,
    /// The last successful action (or the step's start), for the stall trigger.
    progress: tokio::time::Instant,
    /// Where the step started (the action cache's key).
    step_url: Option<String>,
}
