//! Reading a page into a JSON Schema's shape through a chat model.
//!
//! The page's Markdown is cut at block boundaries into parts of at most
//! [`PART_TOKENS`] tokens. Each part goes to the model with the schema
//! (as the endpoint's structured output where it has one); an answer that
//! holds no JSON, or does not fit the schema, is sent back with what is
//! wrong, at most [`CALLS_PER_PART`] calls a part. The parts' answers are
//! merged (lists joined, missing properties filled) and the whole is
//! checked against the schema once more.

use oxwright_llm::{ChatModel, LlmError, Message};
use serde_json::Value;

/// The most Markdown tokens sent in one call.
pub const PART_TOKENS: usize = 6_000;

/// The most calls for one part: the first answer and two repairs.
pub const CALLS_PER_PART: u32 = 3;

/// The longest answer asked for.
const ANSWER_TOKENS: u32 = 4_096;

/// The most validation errors told back to the model or kept in an error.
const MAX_ERRORS: usize = 10;

/// What to read and from where.
#[derive(Debug, Clone, Copy)]
pub struct LlmRequest<'a> {
    /// The JSON Schema the answer must fit (checked as a schema already).
    pub schema: &'a Value,
    /// The user's instructions beside the schema.
    pub prompt: Option<&'a str>,
    /// The page's URL, named in the prompt.
    pub url: &'a str,
    /// The page's Markdown.
    pub markdown: &'a str,
}

/// What the model cost.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LlmCost {
    /// Parts of the page sent.
    pub parts: u32,
    /// Calls made, repairs included.
    pub calls: u32,
    /// Prompt tokens as the endpoint reported them.
    pub prompt_tokens: u64,
    /// Completion tokens likewise.
    pub completion_tokens: u64,
}

/// The value read, valid under the schema.
#[derive(Debug, Clone, PartialEq)]
pub struct LlmRead {
    /// The answer (the parts' answers merged).
    pub value: Value,
    /// What it cost.
    pub cost: LlmCost,
}

/// Why no valid value was read.
#[derive(Debug, thiserror::Error)]
pub enum LlmExtractError {
    /// The endpoint failed (after its own retries).
    #[error("the LLM endpoint failed: {error}")]
    Model {
        /// The client's error.
        error: LlmError,
        /// What was spent before it failed.
        cost: LlmCost,
    },
    /// The answers never fitted the schema.
    #[error("{message}")]
    Invalid {
        /// What went wrong, in words.
        message: String,
        /// The last answer, as the model wrote it.
        last_answer: String,
        /// Why it does not fit (JSON pointer: reason).
        errors: Vec<String>,
        /// What was spent.
        cost: LlmCost,
    },
}

impl LlmExtractError {
    /// What was spent before the failure.
    pub fn cost(&self) -> LlmCost {
        match self {
            Self::Model { cost, .. } | Self::Invalid { cost, .. } => *cost,
        }
    }
}

/// Reads `req.markdown` into `req.schema`'s shape through `model`.
pub async fn extract_llm(model: &dyn ChatModel, req: LlmRequest<'_>) -> Result<LlmRead, LlmExtractError> {
    let full = jsonschema::validator_for(req.schema).map_err(|e| LlmExtractError::Invalid {
        message: format!("the schema does not compile: {e}"),
        last_answer: String::new(),
        errors: Vec::new(),
        cost: LlmCost::default(),
    })?;
    let parts = split_parts(req.markdown, PART_TOKENS);
    let mut cost = LlmCost {
        parts: parts.len() as u32,
        ..LlmCost::default()
    };
    // A part holds only some of the page: what it lacks is no error
    // until the parts are merged.
    let relaxed = (parts.len() > 1).then(|| {
        let mut schema = req.schema.clone();
        drop_required(&mut schema);
        schema
    });
    let part_check = match &relaxed {
        Some(schema) => Some(
            jsonschema::validator_for(schema).map_err(|e| LlmExtractError::Invalid {
                message: format!("the schema does not compile: {e}"),
                last_answer: String::new(),
                errors: Vec::new(),
                cost,
            })?,
        ),
        None => None,
    };
    // The part's schema is also the structured output asked for: an
    // endpoint that enforces it would otherwise make a part invent what
    // another part holds.
    let check = (
        relaxed.as_ref().unwrap_or(req.schema),
        part_check.as_ref().unwrap_or(&full),
    );
    let mut merged: Option<Value> = None;
    for (i, part) in parts.iter().enumerate() {
        let which = (parts.len() > 1).then_some((i + 1, parts.len()));
        let value = read_part(model, &req, part, which, check, &mut cost).await?;
        merged = Some(match merged {
            Some(m) => merge(m, value),
            None => value,
        });
    }
    let value = merged.unwrap_or(Value::Null);
    let errors = violations(&full, &value);
    if !errors.is_empty() {
        return Err(LlmExtractError::Invalid {
            message: format!(
                "the {} parts' answers, merged, do not fit the schema: {}",
                parts.len(),
                errors.join("; ")
            ),
            last_answer: value.to_string(),
            errors,
            cost,
        });
    }
    Ok(LlmRead { value, cost })
}

/// Asks for one part until its answer fits, at most [`CALLS_PER_PART`] calls.
async fn read_part(
    model: &dyn ChatModel,
    req: &LlmRequest<'_>,
    part: &str,
    which: Option<(usize, usize)>,
    (schema, check): (&Value, &jsonschema::Validator),
    cost: &mut LlmCost,
) -> Result<Value, LlmExtractError> {
    let mut messages = vec![
        Message::system(SYSTEM),
        Message::user(user_prompt(req, part, which)),
    ];
    let mut last = (String::new(), Vec::new());
    for call in 1..=CALLS_PER_PART {
        let answer = model
            .chat_json(&messages, ANSWER_TOKENS, schema)
            .await
            .map_err(|error| LlmExtractError::Model { error, cost: *cost })?;
        cost.calls += 1;
        cost.prompt_tokens += answer.usage.prompt_tokens;
        cost.completion_tokens += answer.usage.completion_tokens;
        let errors = match oxwright_llm::extract_json(&answer.text) {
            Ok(value) => {
                let errors = violations(check, &value);
                if errors.is_empty() {
                    return Ok(value);
                }
                errors
            }
            Err(_) => vec!["(root): the answer holds no JSON value".to_string()],
        };
        if call < CALLS_PER_PART {
            messages.push(Message {
                role: "assistant".into(),
                content: answer.text.clone(),
            });
            messages.push(Message::user(format!(
                "That answer does not fit the schema:\n- {}\nAnswer again with the whole corrected JSON value only.",
                errors.join("\n- ")
            )));
        }
        last = (answer.text, errors);
    }
    let (last_answer, errors) = last;
    let part = which.map_or_else(String::new, |(i, n)| format!(" (part {i} of {n})"));
    Err(LlmExtractError::Invalid {
        message: format!(
            "the model's answer did not fit the schema after {CALLS_PER_PART} calls{part}: {}",
            errors.join("; ")
        ),
        last_answer,
        errors,
        cost: *cost,
    })
}

const SYSTEM: &str = "You read web pages into JSON. Answer with one JSON value valid under the JSON Schema \
the user gives, and nothing else: no prose, no code fence. Take every value from the page as written; \
leave out a property the page does not give unless the schema requires it, and never invent one.";

fn user_prompt(req: &LlmRequest<'_>, part: &str, which: Option<(usize, usize)>) -> String {
    let mut text = format!(
        "JSON Schema:\n{}\n\n",
        serde_json::to_string(req.schema).unwrap_or_default()
    );
    if let Some(prompt) = req.prompt {
        text.push_str(&format!("Instructions:\n{prompt}\n\n"));
    }
    match which {
        Some((i, n)) => text.push_str(&format!(
            "Page {} (part {i} of {n}; the other parts are read separately: answer from this part only):\n\n",
            req.url
        )),
        None => text.push_str(&format!("Page {}:\n\n", req.url)),
    }
    text.push_str(part);
    text
}

/// Why `value` does not fit: `pointer: reason`, at most [`MAX_ERRORS`].
fn violations(check: &jsonschema::Validator, value: &Value) -> Vec<String> {
    check
        .iter_errors(value)
        .take(MAX_ERRORS)
        .map(|e| {
            let at = e.instance_path().to_string();
            let at = if at.is_empty() { "(root)".to_string() } else { at };
            let text: String = e.to_string().chars().take(300).collect();
            format!("{at}: {text}")
        })
        .collect()
}

/// Removes every `required` list, so a part's answer may lack what
/// another part holds.
fn drop_required(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            if map.get("required").is_some_and(Value::is_array) {
                map.remove("required");
            }
            for v in map.values_mut() {
                drop_required(v);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(drop_required),
        _ => {}
    }
}

/// Merges a later part's answer into the earlier ones': lists are
/// joined (an item already there is not repeated), objects merged key by
/// key, and a value already read is kept over a later one.
pub fn merge(earlier: Value, later: Value) -> Value {
    match (earlier, later) {
        (Value::Array(mut a), Value::Array(b)) => {
            for item in b {
                if !a.contains(&item) {
                    a.push(item);
                }
            }
            Value::Array(a)
        }
        (Value::Object(mut a), Value::Object(b)) => {
            for (key, value) in b {
                let merged = match a.remove(&key) {
                    Some(old) => merge(old, value),
                    None => value,
                };
                a.insert(key, merged);
            }
            Value::Object(a)
        }
        (Value::Null, later) => later,
        (earlier, _) => earlier,
    }
}

/// Cuts `markdown` into parts of at most `budget` tokens, at blank lines
/// where it can, else at line ends, else inside a line.
pub fn split_parts(markdown: &str, budget: usize) -> Vec<String> {
    let mut parts = Vec::new();
    let mut current = String::new();
    let mut current_tokens = 0;
    for block in blocks(markdown, budget) {
        let tokens = oxwright_markdown::count_tokens(&block);
        if current_tokens > 0 && current_tokens + tokens > budget {
            parts.push(std::mem::take(&mut current));
            current_tokens = 0;
        }
        if !current.is_empty() {
            current.push_str("\n\n");
        }
        current.push_str(&block);
        current_tokens += tokens;
    }
    if !current.trim().is_empty() || parts.is_empty() {
        parts.push(current);
    }
    parts
}

/// The Markdown's blocks, each cut further when it alone is over `budget`.
fn blocks(markdown: &str, budget: usize) -> Vec<String> {
    let mut out = Vec::new();
    for block in markdown.split("\n\n").filter(|b| !b.trim().is_empty()) {
        if oxwright_markdown::count_tokens(block) <= budget {
            out.push(block.to_string());
            continue;
        }
        let (mut piece, mut piece_tokens) = (String::new(), 0);
        for line in block.lines() {
            for chunk in cut_line(line, budget) {
                let tokens = oxwright_markdown::count_tokens(chunk) + 1;
                if !piece.is_empty() && piece_tokens + tokens > budget {
                    out.push(std::mem::take(&mut piece));
                    piece_tokens = 0;
                }
                if !piece.is_empty() {
                    piece.push('\n');
                }
                piece.push_str(chunk);
                piece_tokens += tokens;
            }
        }
        if !piece.is_empty() {
            out.push(piece);
        }
    }
    out
}

/// A line over `budget` tokens cut at character boundaries, each piece
/// shortened until it is within the budget.
fn cut_line(line: &str, budget: usize) -> Vec<&str> {
    if oxwright_markdown::count_tokens(line) <= budget {
        return vec![line];
    }
    let mut pieces = Vec::new();
    let mut rest = line;
    while !rest.is_empty() {
        let mut len = rest.len().min(budget.max(1) * 4);
        loop {
            let mut cut = len;
            while !rest.is_char_boundary(cut) {
                cut -= 1;
            }
            let cut = cut.max(rest.chars().next().map_or(1, char::len_utf8));
            if cut <= 4 || oxwright_markdown::count_tokens(&rest[..cut]) <= budget {
                pieces.push(&rest[..cut]);
                rest = &rest[cut..];
                break;
            }
            len = cut * 3 / 4;
        }
    }
    pieces
}

/// The error of a fetch whose `extract` finds no LLM endpoint; `why`
/// says what is wrong with the one configured, when one is.
pub fn no_model(why: Option<&str>) -> oxwright_jobs::JobError {
    let why = why.map_or_else(String::new, |w| format!(" ({w})"));
    oxwright_jobs::JobError::new(
        oxwright_jobs::ErrorKind::InvalidInput,
        format!(
            "extract needs an LLM endpoint where the page is fetched: [llm] base_url and model \
             (or OXWRIGHT_LLM_BASE_URL and OXWRIGHT_LLM_MODEL){why}"
        ),
    )
}

/// Reads the `extract` of `spec` (when it has one) out of `result`'s
/// Markdown through `model`, into `result.extract` and
/// `result.extraction`. `model` is consulted only then: its error (no
/// endpoint, see [`no_model`]) is the fetch's. An endpoint that keeps
/// failing is `llm`; answers that never fit are `extraction_failed`,
/// with the reasons and the last answer (cut to 2,000 characters) in
/// the message.
pub async fn fill_result(
    model: Result<&dyn ChatModel, oxwright_jobs::JobError>,
    spec: &oxwright_jobs::FetchSpec,
    result: &mut oxwright_jobs::FetchResult,
) -> Result<(), oxwright_jobs::JobError> {
    let Some(schema) = &spec.extract else {
        return Ok(());
    };
    let model = model?;
    let req = LlmRequest {
        schema: schema.as_value(),
        prompt: spec.extract_prompt.as_deref(),
        url: &result.final_url,
        markdown: &result.markdown,
    };
    match extract_llm(model, req).await {
        Ok(read) => {
            result.extract = Some(read.value);
            result.extraction = Some(llm_extraction(read.cost));
            Ok(())
        }
        Err(err) => Err(job_error(err)),
    }
}

/// How a reading by the model is told in a result.
pub fn llm_extraction(cost: LlmCost) -> oxwright_jobs::Extraction {
    oxwright_jobs::Extraction {
        method: oxwright_jobs::ExtractionMethod::Llm,
        parts: cost.parts,
        llm_calls: cost.calls,
        prompt_tokens: cost.prompt_tokens,
        completion_tokens: cost.completion_tokens,
        learned_schema: None,
    }
}

/// The job error of a failed reading: `llm` for an endpoint that kept
/// failing, `extraction_failed` for answers that never fitted, with the
/// reasons and the last answer (cut to 2,000 characters).
pub fn job_error(err: LlmExtractError) -> oxwright_jobs::JobError {
    use oxwright_jobs::{ErrorKind, JobError};
    match err {
        LlmExtractError::Model { error, .. } => JobError::new(
            ErrorKind::Llm,
            format!("extract: the LLM endpoint failed: {error}"),
        ),
        LlmExtractError::Invalid {
            message, last_answer, ..
        } => {
            let mut answer: String = last_answer.chars().take(2_000).collect();
            if answer.len() < last_answer.len() {
                answer.push('…');
            }
            JobError::new(
                ErrorKind::ExtractionFailed,
                format!("extract: {message}; last answer: {answer}"),
            )
        }
    }
}

#[cfg(test)]
#[path = "llm_tests.rs"]
mod tests;
