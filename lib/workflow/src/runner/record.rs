//! What a step leaves behind: each attempt's record, the step's outcome
//! (with the failure artefact), and a completed run's final page.

use std::time::{Duration, Instant};

use oxwright_jobs::{RunStatus, StepOutcome};
use serde_json::json;

use super::attempt::{AttemptLine, describe_decision, ms};
use super::failure::{StepKind, Tried};
use super::{FINAL_MARKDOWN, FINAL_SCREENSHOT, Run};
use crate::WorkflowError;
use oxwright_jobs::StepDurations as Durations;

impl Run<'_> {
    /// Keeps the page a completed run ended on: `final.png` (viewport) and
    /// `final.md` (the whole page as Markdown, sanitised). Either failing
    /// is logged and does not fail the run.
    pub(super) async fn keep_final_page(&mut self) {
        // Nothing ran since the last step's screenshot: the page shows the same.
        let shot = match self.last_shot.take() {
            Some(png) => Ok(png),
            None => self.exec.screenshot().await,
        };
        match shot {
            Ok(png) => {
                if let Err(e) = self.log.put_bytes(FINAL_SCREENSHOT, png, "image/png").await {
                    tracing::warn!(error = %e, "final screenshot not stored");
                }
            }
            Err(e) => tracing::warn!(error = %e, "final screenshot failed"),
        }
        match self.page_markdown().await {
            Ok(markdown) => {
                if let Err(e) = self
                    .log
                    .put_text(FINAL_MARKDOWN, &markdown, "text/markdown; charset=utf-8")
                    .await
                {
                    tracing::warn!(error = %e, "final markdown not stored");
                }
            }
            Err(why) => tracing::warn!(error = %why, "final page markdown failed"),
        }
    }

    pub(super) async fn finish_attempt(
        &mut self,
        mut line: AttemptLine,
        d: Durations,
        started: Instant,
    ) -> Result<(), WorkflowError> {
        line.durations = d;
        line.durations.total_ms = ms(started.elapsed());
        if let Some(url) = self.exec.take_opened() {
            let url = self.sanitizer.clean(&url);
            self.log.say(&format!(
                "  the action opened a new tab ({url}); the next steps run there"
            ));
            line.url_after = Some(url);
        }
        if line.url_after.is_none() && line.result.is_some() {
            // Where the step left the page, so a navigating step (the last
            // one too) gets its check in a generated spec.
            match self.exec.page().url().await {
                Ok(url) => line.url_after = Some(self.sanitizer.clean(&url)),
                Err(e) => tracing::debug!(error = %e, "url after the step unknown"),
            }
        }
        let code = line.result.as_ref().and_then(|r| r.error.clone()).or_else(|| {
            line.reason
                .as_deref()
                .and_then(|r| r.split(':').next())
                .map(str::to_owned)
        });
        self.tried.push(Tried {
            attempt: line.attempt,
            code,
            precheck: line.precheck,
            locator: line.decision.as_ref().and_then(|d| d.locator.clone()),
            action: line
                .decision
                .as_ref()
                .map(|d| d.action.clone())
                .unwrap_or_default(),
            success: line.result.as_ref().is_some_and(|r| r.success),
            duration_ms: ms(Duration::from_secs_f64(
                (d.precheck_ms + d.action_ms + d.settle_ms).max(0.0) / 1000.0,
            )),
            message: line.reason.clone(),
        });
        let record = line.record(&self.opts.session_id);
        self.history.push(json!({
            "step": record.step_id, "decision": record.decision,
            "outcome": if line.completed { "success" } else { "retry" },
            "timestamp": record.timestamp,
        }));
        let value = serde_json::to_value(&record).map_err(|e| WorkflowError::Store(e.to_string()))?;
        self.totals.attempts += 1;
        let verdict = if line.completed {
            "completed".to_string()
        } else {
            line.reason.clone().unwrap_or_else(|| "not completed".into())
        };
        self.log.say(&format!(
            "  attempt {}: {} → {}",
            line.attempt,
            describe_decision(line.decision.as_ref()),
            verdict
        ));
        self.log.step(&value).await
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) async fn close_step(
        &mut self,
        index: usize,
        completed: bool,
        attempts: u32,
        reasons: Vec<String>,
        prompt_tokens: u64,
        completion_tokens: u64,
        started: Instant,
        snapshot: &str,
    ) -> Result<(), WorkflowError> {
        let number = index as u32 + 1;
        let instruction = self.checklist[index].clone();
        let mut outcome = StepOutcome {
            step_number: number,
            instruction: oxwright_jobs::step_text(&instruction).to_string(),
            status: if completed {
                RunStatus::Completed
            } else {
                RunStatus::Failed
            },
            attempts,
            reasons: reasons.clone(),
            prompt_tokens,
            completion_tokens,
            duration_ms: ms(started.elapsed()),
            screenshot: None,
            source: Some(self.source),
            else_reason: None,
            output: None,
        };
        if completed {
            self.keep_step_screenshot(&format!("step_{number}.png")).await;
            self.log.say(&format!("✅ step {number} done"));
            self.outcomes.push(outcome);
            return Ok(());
        }
        let intent = match self.tried.iter().rev().find(|t| !t.action.is_empty()) {
            Some(t) if self.kind == StepKind::Llm => {
                format!("{}: {}", t.action, instruction.trim_start_matches("[]").trim())
            }
            _ => instruction.trim_start_matches("[]").trim().to_string(),
        };
        let written = self.write_failure(number, &intent, &reasons, snapshot).await?;
        outcome.screenshot = written.screenshot;
        let reason = reasons.last().cloned().unwrap_or_default();
        self.log.say(&format!(
            "❌ step {number} failed after {attempts} attempts ({}): {reason}",
            written.error_type.as_str()
        ));
        self.outcomes.push(outcome);
        Err(WorkflowError::StepFailed {
            step: number,
            instruction,
            attempts,
            reason,
        })
    }
}
