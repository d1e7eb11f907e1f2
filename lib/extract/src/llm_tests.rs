use std::sync::Mutex;

use oxwright_llm::{Completion, Usage};
use serde_json::json;

use super::*;

/// Answers from a list, in order, and keeps every prompt.
struct Scripted {
    answers: Mutex<Vec<String>>,
    prompts: Mutex<Vec<Vec<Message>>>,
    schemas: Mutex<Vec<Value>>,
}

impl Scripted {
    fn new(answers: &[&str]) -> Self {
        Self {
            answers: Mutex::new(answers.iter().rev().map(|a| a.to_string()).collect()),
            prompts: Mutex::new(Vec::new()),
            schemas: Mutex::new(Vec::new()),
        }
    }

    fn calls(&self) -> Vec<Vec<Message>> {
        self.prompts.lock().unwrap().clone()
    }
}

#[async_trait::async_trait]
impl ChatModel for Scripted {
    async fn chat(&self, messages: &[Message], _: u32) -> Result<Completion, LlmError> {
        self.prompts.lock().unwrap().push(messages.to_vec());
        let text = self.answers.lock().unwrap().pop().expect("an answer is scripted");
        Ok(Completion {
            text,
            usage: Usage {
                prompt_tokens: 100,
                completion_tokens: 10,
                ..Usage::default()
            },
        })
    }

    async fn chat_json(
        &self,
        messages: &[Message],
        max_tokens: u32,
        schema: &Value,
    ) -> Result<Completion, LlmError> {
        self.schemas.lock().unwrap().push(schema.clone());
        self.chat(messages, max_tokens).await
    }
}

fn product() -> Value {
    json!({
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "price": {"type": "number"},
            "tags": {"type": "array", "items": {"type": "string"}}
        },
        "required": ["name", "price"]
    })
}

fn request<'a>(schema: &'a Value, markdown: &'a str) -> LlmRequest<'a> {
    LlmRequest {
        schema,
        prompt: Some("Prices in euros."),
        url: "https://shop.example/p/1",
        markdown,
    }
}

#[tokio::test]
async fn a_valid_answer_is_the_value() {
    let model = Scripted::new(&["```json\n{\"name\": \"Lamp\", \"price\": 12.5}\n```"]);
    let schema = product();
    let read = extract_llm(&model, request(&schema, "# Lamp\n\n12.50 €"))
        .await
        .unwrap();
    assert_eq!(read.value, json!({"name": "Lamp", "price": 12.5}));
    assert_eq!(
        (read.cost.parts, read.cost.calls, read.cost.prompt_tokens),
        (1, 1, 100)
    );
    let prompt = &model.calls()[0][1].content;
    assert!(prompt.contains("\"required\":[\"name\",\"price\"]"), "{prompt}");
    assert!(
        prompt.contains("Prices in euros.") && prompt.contains("# Lamp"),
        "{prompt}"
    );
}

#[tokio::test]
async fn a_broken_answer_is_sent_back_with_what_is_wrong() {
    let model = Scripted::new(&[
        r#"{"name": "Lamp", "price": "12.50"}"#,
        r#"{"name": "Lamp", "price": 12.5}"#,
    ]);
    let schema = product();
    let read = extract_llm(&model, request(&schema, "# Lamp")).await.unwrap();
    assert_eq!(read.value["price"], json!(12.5));
    assert_eq!(read.cost.calls, 2);
    let second = &model.calls()[1];
    assert_eq!(second.len(), 4, "system, page, the first answer, the repair");
    assert_eq!(second[2].role, "assistant");
    assert!(second[3].content.contains("/price"), "{}", second[3].content);
}

#[tokio::test]
async fn answers_that_never_fit_fail_after_three_calls() {
    let model = Scripted::new(&[
        "I cannot see a price.",
        "{\"name\": 3}",
        "still no JSON",
        "unused",
    ]);
    let schema = product();
    let err = extract_llm(&model, request(&schema, "# Lamp")).await.unwrap_err();
    assert_eq!(model.calls().len(), CALLS_PER_PART as usize);
    match err {
        LlmExtractError::Invalid {
            message,
            last_answer,
            errors,
            cost,
        } => {
            assert_eq!(last_answer, "still no JSON");
            assert!(errors[0].contains("no JSON"), "{errors:?}");
            assert!(message.contains("after 3 calls"), "{message}");
            assert_eq!(cost.calls, 3);
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_long_page_is_read_in_parts_and_merged() {
    let schema = json!({
        "type": "object",
        "properties": {
            "shop": {"type": "string"},
            "items": {"type": "array", "items": {"type": "string"}}
        },
        "required": ["shop", "items"]
    });
    // Ten blocks of some 1,300 tokens: four to a part, then four, then two.
    let para = "word ".repeat(1_300);
    let markdown = format!("# Shop\n\n{}", vec![para; 10].join("\n\n"));
    let model = Scripted::new(&[
        r#"{"shop": "Lamps", "items": ["a", "b"]}"#,
        r#"{"items": ["b", "c"]}"#,
        r#"{"shop": "Other"}"#,
    ]);
    let read = extract_llm(&model, request(&schema, &markdown)).await.unwrap();
    assert_eq!(
        read.cost.parts,
        3,
        "{} tokens",
        oxwright_markdown::count_tokens(&markdown)
    );
    assert_eq!(read.value, json!({"shop": "Lamps", "items": ["a", "b", "c"]}));
    assert!(model.calls()[1][1].content.contains("part 2 of 3"));
    let asked = model.schemas.lock().unwrap().clone();
    assert_eq!(asked.len(), 3);
    assert!(
        asked.iter().all(|s| s.get("required").is_none()),
        "a part is asked without required: {asked:?}"
    );
}

#[test]
fn parts_keep_to_the_budget_even_for_one_long_line() {
    let line = "x ".repeat(20_000);
    let parts = split_parts(&line, 1_000);
    assert!(parts.len() > 1);
    for p in &parts {
        assert!(
            oxwright_markdown::count_tokens(p) <= 1_000,
            "{}",
            oxwright_markdown::count_tokens(p)
        );
    }
    assert_eq!(split_parts("", 1_000), vec![String::new()]);
}
