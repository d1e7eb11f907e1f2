//! Finding the JSON in an LLM answer: code fences, prose before and after,
//! and trailing commentary are tolerated; the first complete JSON value of
//! the wanted shape wins.

use serde_json::Value;

use crate::LlmError;

/// Returns the first JSON object in `text`.
pub fn extract_json_object(text: &str) -> Result<Value, LlmError> {
    find(text, '{').ok_or_else(|| LlmError::BadAnswer(format!("no JSON object in answer: {}", preview(text))))
}

/// Returns the first JSON array in `text`.
pub fn extract_json_array(text: &str) -> Result<Value, LlmError> {
    find(text, '[').ok_or_else(|| LlmError::BadAnswer(format!("no JSON array in answer: {}", preview(text))))
}

/// Returns the first JSON object or array in `text`, whichever comes first.
pub fn extract_json(text: &str) -> Result<Value, LlmError> {
    let obj = text.find('{');
    let arr = text.find('[');
    let first = match (obj, arr) {
        (Some(o), Some(a)) if a < o => ['[', '{'],
        (None, Some(_)) => ['[', '{'],
        _ => ['{', '['],
    };
    first
        .iter()
        .find_map(|open| find(text, *open))
        .ok_or_else(|| LlmError::BadAnswer(format!("no JSON in answer: {}", preview(text))))
}

fn preview(text: &str) -> String {
    let t: String = text.chars().take(120).collect();
    format!("{t:?}")
}

/// Tries every `open` bracket in order; returns the first balanced span that parses.
fn find(text: &str, open: char) -> Option<Value> {
    let whole = text.trim();
    if whole.starts_with(open)
        && let Ok(v) = serde_json::from_str::<Value>(whole)
    {
        return Some(v);
    }
    let mut from = 0;
    while let Some(pos) = text[from..].find(open) {
        let start = from + pos;
        if let Some(end) = balanced_end(&text[start..])
            && let Ok(v) = serde_json::from_str::<Value>(&text[start..start + end])
        {
            return Some(v);
        }
        from = start + open.len_utf8();
    }
    None
}

/// Returns the byte length of the balanced bracket span at the start of
/// `s`, skipping brackets inside strings.
fn balanced_end(s: &str) -> Option<usize> {
    let mut depth = 0i32;
    let mut in_str = false;
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        if in_str {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_str = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_str = true,
            '{' | '[' => depth += 1,
            '}' | ']' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tolerates_fences_and_prose() {
        let text = "Sure! Here it is:\n```json\n{\"a\": \"x}\", \"b\": [1, 2]}\n```\nHope that helps.";
        assert_eq!(extract_json_object(text).unwrap()["a"], "x}");
        let arr = "```\n[\"[] Log in\", \"[] Search\"]\n```";
        assert_eq!(extract_json_array(arr).unwrap().as_array().unwrap().len(), 2);
        assert!(extract_json(arr).unwrap().is_array());
        assert!(extract_json("{\"ok\":true}").unwrap().is_object());
    }

    #[test]
    fn skips_brackets_that_are_not_json() {
        let text = "Step [1] done. {not json} then {\"error\": \"TARGET_NOT_FOUND\"}";
        assert_eq!(extract_json_object(text).unwrap()["error"], "TARGET_NOT_FOUND");
    }

    #[test]
    fn refuses_answers_without_json() {
        let err = extract_json_object("I clicked the button.").unwrap_err();
        assert!(matches!(err, LlmError::BadAnswer(_)), "{err}");
        assert!(extract_json_array("{\"a\":1}").is_err());
    }
}
