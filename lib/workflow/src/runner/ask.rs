//! The runner's LLM calls: every prompt passes the sanitiser before it is
//! sent, every exchange is logged to `llm.jsonl`, tokens are counted, and
//! emergency mode's calls go to the larger model.

use oxwright_llm::{Message, Usage};

use super::Run;

impl Run<'_> {
    /// Sends `messages` (sanitised) to the small model and logs the exchange.
    pub(super) async fn ask(
        &mut self,
        kind: &str,
        step: Option<u32>,
        messages: Vec<Message>,
        max_tokens: u32,
    ) -> Result<(String, Usage), oxwright_llm::LlmError> {
        self.ask_model(kind, step, messages, max_tokens, false).await
    }

    /// [`Run::ask`], to the larger model when `large`.
    pub(super) async fn ask_model(
        &mut self,
        kind: &str,
        step: Option<u32>,
        messages: Vec<Message>,
        max_tokens: u32,
        large: bool,
    ) -> Result<(String, Usage), oxwright_llm::LlmError> {
        let messages: Vec<Message> = messages
            .into_iter()
            .map(|m| Message {
                role: m.role,
                // Secrets and credentials never go out; the page's own
                // e-mail addresses do, so what shows them stays targetable.
                content: self.sanitizer.clean_page_text(&m.content),
            })
            .collect();
        let client = self
            .llm()
            .map_err(|e| oxwright_llm::LlmError::Config(e.to_string()))?
            .clone();
        let answer = if large {
            client.chat_large(&messages, max_tokens).await
        } else {
            client.chat(&messages, max_tokens).await
        };
        self.totals.llm_calls += 1;
        match answer {
            Ok(c) => {
                self.totals.prompt_tokens += c.usage.prompt_tokens;
                self.totals.completion_tokens += c.usage.completion_tokens;
                let _ = self
                    .log
                    .llm(kind, step, &messages, Ok(&c.text), Some(&c.usage))
                    .await;
                Ok((self.sanitizer.clean_page_text(&c.text), c.usage))
            }
            Err(e) => {
                let _ = self
                    .log
                    .llm(kind, step, &messages, Err(&e.to_string()), None)
                    .await;
                Err(e)
            }
        }
    }
}
