//! The LLM path of one step: snapshot → decision → precheck → action →
//! settle → judgement, up to three attempts (emergency mode adds more on
//! the larger model), with the decision prompt fitted to the step's
//! token budget.

use super::*;

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
