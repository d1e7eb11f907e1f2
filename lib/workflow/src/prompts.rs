//! The three prompts of phase 1 (checklist, decision, completion) and the
//! parsing of the checklist and judge answers. Prompts carry placeholders,
//! never secret values, and each step's call stays within
//! [`STEP_TOKEN_BUDGET`].

use oxwright_llm::{Message, extract_json_array};

/// Tokens one LLM call may use, prompt plus completion (seed: ≤ 3,000 per step).
pub const STEP_TOKEN_BUDGET: usize = 3_000;
/// `maxTokens` of the checklist call (seed: at most 3,000).
pub const CHECKLIST_MAX_TOKENS: u32 = 1_500;
/// `maxTokens` of a decision.
pub const DECISION_MAX_TOKENS: u32 = 300;
/// `maxTokens` of a completion judgement.
pub const JUDGE_MAX_TOKENS: u32 = 10;

/// Builds the checklist-conversion prompt.
pub(crate) fn checklist(text: &str) -> Vec<Message> {
    vec![
        Message::system("You turn workflow instructions into checklists. Answer with JSON only."),
        Message::user(format!(
            "You are converting natural-language workflow instructions into imperatively phrased checklist items.\n\n\
             Rules:\n\
             1. Output a JSON array of strings. No code fences.\n\
             2. Each string must be a single action rewritten in plain imperative form.\n\
             3. Do not invent steps that were not explicitly present in the input.\n\
             4. Remove any numbering/bullets such as \"1.\" or \"(1)\".\n\
             5. Keep the original order of actions.\n\
             6. Copy placeholders such as {{{{PASSWORD}}}} exactly; they stand for secrets you never see.\n\
             7. Begin an item with \"once: \" when doing it twice would do harm (placing an order, paying, sending a message).\n\n\
             Input instructions (Japanese may be included):\n{text}\n"
        )),
    ]
}

/// Parses the checklist answer into `[] `-prefixed items.
pub fn parse_checklist(answer: &str) -> Result<Vec<String>, String> {
    let v = extract_json_array(answer).map_err(|e| e.to_string())?;
    let items: Vec<String> = v
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|i| i.as_str())
        .map(|i| i.trim().trim_start_matches("[]").trim().to_string())
        .filter(|i| !i.is_empty())
        .map(|i| format!("[] {i}"))
        .collect();
    if items.is_empty() {
        return Err("the checklist is empty".into());
    }
    Ok(items)
}

/// Renders the checklist with progress: done items `[x]`, the current one `→`.
pub(crate) fn progress(checklist: &[String], current: usize) -> String {
    checklist
        .iter()
        .enumerate()
        .map(|(i, item)| {
            if i < current {
                item.replacen("[]", "[x]", 1)
            } else if i == current {
                format!("→ {item}")
            } else {
                item.clone()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Builds the decision prompt.
pub(crate) fn decision(
    checklist: &[String],
    index: usize,
    step: &str,
    meta: Option<&serde_json::Value>,
    previous_failure: Option<&str>,
    snapshot: &str,
    sitemap: Option<&str>,
) -> Vec<Message> {
    let mut user = format!(
        "Task progress:\n{}\n\nCurrent step: {}\n",
        progress(checklist, index),
        serde_json::to_string(step).unwrap_or_default()
    );
    if let Some(meta) = meta {
        user.push_str(&format!("currentStepMeta: {meta}\n"));
    } else {
        user.push_str("currentStepMeta: none. Decide from the step text and the snapshot only.\n");
    }
    if let Some(reason) = previous_failure {
        user.push_str(&format!("The previous attempt at this step failed: {reason}\n"));
    }
    if let Some(urls) = sitemap {
        user.push_str(&format!(
            "\nThe site's sitemap (pages you may navigate to):\n{urls}"
        ));
    }
    user.push_str(&format!(
        "\naria snapshot:\n{snapshot}\n\
         Decide the next action for the current step.\n\
         - Prefer getByRole with a role and name shown in the snapshot, then getByText, then getByTestId.\n\
         - The locator must match exactly one element on the page.\n\
         - action is click, fill, select or wait; fill and select need a value.\n\
         - Secrets are placeholders such as {{{{PASSWORD}}}}: give them as {{\"kind\":\"placeholder\",\"value\":\"{{{{PASSWORD}}}}\"}}; \
           other values as {{\"kind\":\"literal\",\"value\":\"...\"}}.\n\
         - confidence is 0.00-1.00 (a unique role and name match is high; fuzzy text or several candidates is low); rationale is one line.\n\
         - If you cannot identify the target, answer {{\"error\":\"TARGET_NOT_FOUND\"}}.\n\
         Answer with one JSON object and nothing else:\n\
         {{\"method\":\"getByRole\",\"selector\":{{\"role\":\"button\",\"name\":\"Sign in\"}},\"action\":\"click\",\
         \"value\":null,\"confidence\":0.9,\"rationale\":\"...\"}}\n"
    ));
    vec![
        Message::system("You operate a web page through its accessibility snapshot. Answer with JSON only."),
        Message::user(user),
    ]
}

/// `maxTokens` of an emergency-mode decision.
pub const EMERGENCY_MAX_TOKENS: u32 = 600;

/// Builds the emergency-mode decision prompt (seed 001): the larger model
/// sees the step, the failures so far and the light DOM, and may use the
/// wider selector set.
pub(crate) fn emergency_decision(
    checklist: &[String],
    index: usize,
    step: &str,
    failures: &[String],
    light_dom: &str,
) -> Vec<Message> {
    let failures = if failures.is_empty() {
        "none".to_string()
    } else {
        failures
            .iter()
            .map(|f| format!("- {f}"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let user = format!(
        "Analyse the situation and decide the next action.\n\n\
         Task progress:\n{}\n\nCurrent step: {}\n\n\
         Attempts at this step so far failed with:\n{failures}\n\n\
         Light DOM (the page's body, scripts and styles removed):\n{light_dom}\n\n\
         Usable methods: getByRole (selector.role, selector.name), getByLabel (selector.label), \
         getByPlaceholder (selector.placeholder), getByText (selector.text), getByTestId (selector.testId), \
         locator (selector.locator: a CSS selector), near (selector.text: a text on the page, selector.role: \
         the control's role; picks the control of that role closest to the text).\n\
         - The target must be exactly one element.\n\
         - action is click, fill, select or wait; fill and select need a value. Secrets are placeholders such as \
           {{{{PASSWORD}}}}: give them as {{\"kind\":\"placeholder\",\"value\":\"{{{{PASSWORD}}}}\"}}.\n\
         - If the target is not on the page, answer {{\"error\":\"TARGET_NOT_FOUND\"}}.\n\
         Answer with one JSON object and nothing else:\n\
         {{\"method\":\"getByLabel\",\"selector\":{{\"label\":\"E-mail\"}},\"action\":\"fill\",\
         \"value\":{{\"kind\":\"literal\",\"value\":\"...\"}},\"confidence\":0.8,\"rationale\":\"...\"}}\n",
        progress(checklist, index),
        serde_json::to_string(step).unwrap_or_default()
    );
    vec![
        Message::system(
            "You recover a web automation step that failed, from the page's DOM. Answer with JSON only.",
        ),
        Message::user(user),
    ]
}

/// Builds the completion-judge prompt.
pub(crate) fn judge(step: &str, action: &str, snapshot: &str) -> Vec<Message> {
    vec![
        Message::system("You judge whether a web automation step is complete. Answer true or false."),
        Message::user(format!(
            "Step performed: {}\nAction taken: {action}\n\nCurrent aria snapshot:\n{snapshot}\n\
             Is this step complete?\nAnswer with \"true\" or \"false\" only.\n",
            serde_json::to_string(step).unwrap_or_default()
        )),
    ]
}

/// Reads the judge's answer: `true`/`false`, tolerating case, punctuation and JSON.
pub(crate) fn parse_judgement(answer: &str) -> Result<bool, String> {
    let t = answer
        .trim()
        .trim_matches(|c: char| c == '`' || c == '"' || c == '.')
        .trim()
        .to_lowercase();
    if t == "true" || t == "yes" {
        return Ok(true);
    }
    if t == "false" || t == "no" {
        return Ok(false);
    }
    if let Ok(v) = oxwright_llm::extract_json_object(answer) {
        for key in ["completed", "complete", "done", "result"] {
            if let Some(b) = v.get(key).and_then(|b| b.as_bool()) {
                return Ok(b);
            }
        }
    }
    let first = t
        .split(|c: char| !c.is_alphabetic())
        .find(|w| !w.is_empty())
        .unwrap_or("");
    match first {
        "true" | "yes" => Ok(true),
        "false" | "no" => Ok(false),
        _ => Err(format!(
            "the judge answered neither true nor false: {:?}",
            answer.chars().take(80).collect::<String>()
        )),
    }
}

/// Counts tokens of `messages` as cl100k sees them, with per-message overhead.
pub(crate) fn prompt_tokens(messages: &[Message]) -> usize {
    messages
        .iter()
        .map(|m| oxwright_markdown::count_tokens(&m.content) + 4)
        .sum::<usize>()
        + 3
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checklist_answers_get_prefixes_and_keep_order() {
        let items =
            parse_checklist("```json\n[\"Log in as {{LOGIN_ID}}\", \"[] Search for rust\", \" \"]\n```")
                .unwrap();
        assert_eq!(items, ["[] Log in as {{LOGIN_ID}}", "[] Search for rust"]);
        assert!(parse_checklist("[]").is_err());
        assert!(parse_checklist("Sure, I will").is_err());
    }

    #[test]
    fn progress_marks_done_and_current() {
        let c = vec!["[] a".to_string(), "[] b".to_string(), "[] c".to_string()];
        assert_eq!(progress(&c, 1), "[x] a\n→ [] b\n[] c");
    }

    #[test]
    fn judgements_tolerate_noise() {
        assert_eq!(parse_judgement("True."), Ok(true));
        assert_eq!(parse_judgement("false"), Ok(false));
        assert_eq!(parse_judgement("{\"completed\": true}"), Ok(true));
        assert_eq!(parse_judgement("No, the dialog is still open"), Ok(false));
        assert!(parse_judgement("maybe").is_err());
    }

    #[test]
    fn checklist_call_stays_under_the_seed_cap() {
        const { assert!(CHECKLIST_MAX_TOKENS <= 3_000) };
        let msgs = decision(
            &["[] a".into()],
            0,
            "a",
            None,
            None,
            "- button \"Go\" [ref=e1]",
            None,
        );
        assert!(prompt_tokens(&msgs) + (DECISION_MAX_TOKENS as usize) < STEP_TOKEN_BUDGET);
    }
}
