//! `extract: FILE.json as NAME`: the page, as Markdown cleaned of the
//! run's secrets, read through the workflow's LLM into the shape of the
//! JSON Schema the job carries under that file name — the same reading
//! (parts, repairs, validation) as a fetch's `extract`.

use std::time::Instant;

use oxwright_extract::llm::{LlmExtractError, LlmRequest, extract_llm};
use oxwright_jobs::{StepDecision, StepOutput, StepValue};
use oxwright_steps::{AttemptError, SchemaExtraction, StepTrace};

use super::Run;
use super::attempt::ms;

impl Run<'_> {
    /// Reads the page into `e`'s schema; the outcome and the prompt and
    /// completion tokens spent. The value (cleaned of secrets) is left in
    /// `trace.output`.
    pub(super) async fn read_by_schema(
        &mut self,
        e: &SchemaExtraction,
        trace: &mut StepTrace,
    ) -> (Result<(), AttemptError>, (u64, u64)) {
        trace.decision = Some(StepDecision {
            locator: None,
            action: "extract".into(),
            value: Some(StepValue::Literal(e.schema.clone())),
            confidence: None,
            rationale: None,
            url: None,
        });
        let (Some(schema), Ok(model)) = (self.opts.schemas.get(&e.schema), self.llm()) else {
            // Checked before the run started; a replay's checklist may differ.
            return (
                Err(AttemptError::Action(format!(
                    "extract: {} needs its schema and an LLM",
                    e.schema
                ))),
                (0, 0),
            );
        };
        let model = model.clone();
        let t = Instant::now();
        let markdown = match self.page_markdown().await {
            Ok(markdown) => markdown,
            Err(why) => return (Err(AttemptError::Action(why)), (0, 0)),
        };
        trace.durations.precheck_ms = ms(t.elapsed());
        // What the page shows may hold a secret typed earlier: the model
        // sees it masked, as every prompt does.
        let markdown = self.sanitizer.clean_page_text(&markdown);
        let url = self.exec.page().url().await.unwrap_or_default();
        let t = Instant::now();
        let read = extract_llm(
            model.as_ref(),
            LlmRequest {
                schema: schema.as_value(),
                prompt: None,
                url: &url,
                markdown: &markdown,
            },
        )
        .await;
        trace.durations.action_ms = ms(t.elapsed());
        let cost = match &read {
            Ok(r) => r.cost,
            Err(err) => err.cost(),
        };
        self.totals.llm_calls += cost.calls;
        self.totals.prompt_tokens += cost.prompt_tokens;
        self.totals.completion_tokens += cost.completion_tokens;
        let tokens = (cost.prompt_tokens, cost.completion_tokens);
        match read {
            Ok(read) => {
                trace.acted = Some(None);
                let value = self.sanitizer.clean_json(&read.value);
                self.exec.keep_output(&e.name, value.clone());
                trace.output = Some(StepOutput {
                    name: e.name.clone(),
                    value,
                });
                (Ok(()), tokens)
            }
            Err(LlmExtractError::Model { error, .. }) => (
                Err(AttemptError::Llm(self.sanitizer.clean(&format!(
                    "extract: {}: the LLM endpoint failed: {error}",
                    e.schema
                )))),
                tokens,
            ),
            // The message names what did not fit.
            Err(LlmExtractError::Invalid { message, .. }) => (
                Err(AttemptError::Assertion(
                    self.sanitizer.clean(&format!("extract: {}: {message}", e.schema)),
                )),
                tokens,
            ),
        }
    }

    /// The page as Markdown, whole (an app's data is not always its main
    /// content): what a model reads and the run's last page.
    pub(super) async fn page_markdown(&self) -> Result<String, String> {
        let html = self
            .exec
            .page()
            .html()
            .await
            .map_err(|e| self.sanitizer.clean(&format!("reading the page: {}", e.message)))?;
        let base = self
            .exec
            .page()
            .url()
            .await
            .ok()
            .and_then(|u| url::Url::parse(&u).ok());
        let converted = tokio::task::spawn_blocking(move || {
            oxwright_markdown::html_to_markdown(&html, base.as_ref(), oxwright_markdown::ContentMode::Full)
        })
        .await;
        match converted {
            Ok(Ok(c)) => Ok(c.markdown),
            Ok(Err(e)) => Err(format!("converting the page to Markdown: {e}")),
            Err(e) => Err(format!("converting the page to Markdown: {e}")),
        }
    }
}
