//! Workflow files: plain-language instructions (the LLM path) or structured
//! steps, one per line (the deterministic path, no LLM):
//!
//! ```text
//! goto: /app/login
//! fill: textbox "Username" = {{LOGIN_ID}}
//! click: button "Sign in"
//! select: combobox "Country" = Japan
//! click: testid "add-main"
//! wait: button "Download report"
//! wait: 500ms
//! expect: text "Ships to Japan"
//! ```
//!
//! A target is `ROLE "NAME"`, `text "TEXT"` or `testid "ID"`, optionally
//! followed by `exact`. A file is structured when any line starts with
//! `word:` where the word is a verb or a near miss of one (`clik:`), so a
//! typo is reported as an unknown verb instead of sending the file to the
//! LLM as plain language; then every line must parse.

use std::time::Duration;

use crate::decision::{Action, ActionValue};
use crate::{Locator, WorkflowError};

/// Longest explicit `wait: N` accepted.
const MAX_SLEEP: Duration = Duration::from_secs(60);

const VERBS: &[&str] = &["goto", "click", "fill", "select", "wait", "expect"];

/// What one structured step does.
#[derive(Debug, Clone, PartialEq)]
pub enum StepAction {
    /// Act on exactly one element.
    Act {
        /// The target.
        locator: Locator,
        /// The action.
        action: Action,
        /// The value for fill and select.
        value: Option<ActionValue>,
    },
    /// Navigate (absolute URL, or relative to the start URL).
    Goto(String),
    /// Pause.
    Sleep(Duration),
    /// Check that exactly one element matches (waits up to the action deadline).
    Expect(Locator),
}

/// One structured step with its source line.
#[derive(Debug, Clone, PartialEq)]
pub struct StructuredStep {
    /// 1-based line in the file.
    pub line: usize,
    /// The line as written (placeholders only).
    pub text: String,
    /// What it does.
    pub action: StepAction,
}

/// The body of a workflow.
#[derive(Debug, Clone, PartialEq)]
pub enum WorkflowBody {
    /// Plain-language instructions for the LLM.
    Plain(String),
    /// Explicit steps.
    Structured(Vec<StructuredStep>),
}

/// A parsed workflow file.
#[derive(Debug, Clone, PartialEq)]
pub struct Workflow {
    /// Its body.
    pub body: WorkflowBody,
}

impl Workflow {
    /// Returns the `{{NAME}}` placeholders the workflow uses, in order, without repeats.
    pub fn placeholders(&self) -> Vec<String> {
        match &self.body {
            WorkflowBody::Plain(text) => crate::placeholders(text),
            WorkflowBody::Structured(steps) => {
                let text: Vec<&str> = steps.iter().map(|s| s.text.as_str()).collect();
                crate::placeholders(&text.join("\n"))
            }
        }
    }

    /// Parses a workflow file's text. `#` lines are comments.
    pub fn parse(text: &str) -> Result<Self, WorkflowError> {
        let lines: Vec<(usize, &str)> = text
            .lines()
            .enumerate()
            .map(|(i, l)| (i + 1, l.trim()))
            .filter(|(_, l)| !l.is_empty() && !l.starts_with('#'))
            .collect();
        if lines.is_empty() {
            return Err(WorkflowError::Parse {
                line: 1,
                message: "the workflow is empty".into(),
            });
        }
        let structured = lines.iter().any(|(_, l)| looks_structured(l));
        if !structured {
            let body: Vec<&str> = lines.iter().map(|(_, l)| *l).collect();
            return Ok(Self {
                body: WorkflowBody::Plain(body.join("\n")),
            });
        }
        let steps = lines
            .iter()
            .map(|(n, l)| {
                parse_step(l)
                    .map(|action| StructuredStep {
                        line: *n,
                        text: l.to_string(),
                        action,
                    })
                    .map_err(|message| WorkflowError::Parse { line: *n, message })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            body: WorkflowBody::Structured(steps),
        })
    }
}

/// Tells whether `line` starts `word:` with a verb or a near miss of one.
fn looks_structured(line: &str) -> bool {
    line.split_once(':').is_some_and(|(word, _)| {
        let word = word.trim().to_ascii_lowercase();
        !word.is_empty()
            && word.chars().all(|c| c.is_ascii_alphabetic())
            && (VERBS.contains(&word.as_str()) || nearest_verb(&word).is_some())
    })
}

/// Returns the verb `word` is a near miss of: one letter added, dropped,
/// changed or two neighbours swapped (`clik`, `clcik`, `slect`). Two edits
/// would catch words people write in plain language (`expected:`).
fn nearest_verb(word: &str) -> Option<&'static str> {
    VERBS.iter().copied().find(|v| edit_distance(word, v) == 1)
}

/// Returns the optimal-string-alignment distance between `a` and `b` (by
/// characters): insertions, deletions, substitutions and adjacent swaps.
pub(crate) fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[i - 1][j] + 1).min(d[i][j - 1] + 1).min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = best;
        }
    }
    d[a.len()][b.len()]
}

/// Parses one structured line.
pub(crate) fn parse_step(line: &str) -> Result<StepAction, String> {
    let (verb, rest) = line
        .split_once(':')
        .ok_or_else(|| format!("expected `verb: …`, one of {}", VERBS.join(", ")))?;
    let verb = verb.trim().to_ascii_lowercase();
    let rest = rest.trim();
    match verb.as_str() {
        "goto" => {
            if rest.is_empty() {
                return Err("goto needs a URL".into());
            }
            Ok(StepAction::Goto(rest.to_string()))
        }
        "click" => Ok(StepAction::Act {
            locator: parse_target(rest)?,
            action: Action::Click,
            value: None,
        }),
        "fill" | "select" => {
            let (target, value) =
                split_value(rest).ok_or_else(|| format!("{verb} needs `TARGET = VALUE`"))?;
            Ok(StepAction::Act {
                locator: parse_target(target)?,
                action: if verb == "fill" {
                    Action::Fill
                } else {
                    Action::Select
                },
                value: Some(ActionValue::from_text(&unquote(value))),
            })
        }
        "wait" => {
            if let Some(d) = parse_duration(rest) {
                if d > MAX_SLEEP {
                    return Err(format!("wait longer than {} s", MAX_SLEEP.as_secs()));
                }
                return Ok(StepAction::Sleep(d));
            }
            Ok(StepAction::Act {
                locator: parse_target(rest)?,
                action: Action::Wait,
                value: None,
            })
        }
        "expect" => Ok(StepAction::Expect(parse_target(rest)?)),
        other => Err(match nearest_verb(other) {
            Some(verb) => format!(
                "unknown verb {other:?}: did you mean `{verb}:`? (verbs: {})",
                VERBS.join(", ")
            ),
            None => format!("unknown verb {other:?}; expected one of {}", VERBS.join(", ")),
        }),
    }
}

/// Splits `TARGET = VALUE` at the first `=` after the target's closing quote.
fn split_value(rest: &str) -> Option<(&str, &str)> {
    let close = rest.rfind('"').filter(|_| rest.matches('"').count() >= 2);
    let search_from = match close {
        // The value itself may be quoted: the target's quote pair is the first two quotes.
        Some(_) => {
            let first = rest.find('"')?;
            let second = first + 1 + rest[first + 1..].find('"')?;
            second + 1
        }
        None => 0,
    };
    let eq = search_from + rest[search_from..].find('=')?;
    Some((rest[..eq].trim(), rest[eq + 1..].trim()))
}

fn unquote(v: &str) -> String {
    let v = v.trim();
    if v.len() >= 2 && v.starts_with('"') && v.ends_with('"') {
        serde_json::from_str::<String>(v).unwrap_or_else(|_| v[1..v.len() - 1].to_string())
    } else {
        v.to_string()
    }
}

fn parse_duration(s: &str) -> Option<Duration> {
    let s = s.trim();
    if let Some(ms) = s.strip_suffix("ms") {
        return ms.trim().parse().ok().map(Duration::from_millis);
    }
    if let Some(secs) = s.strip_suffix('s') {
        return secs
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|v| *v >= 0.0)
            .map(Duration::from_secs_f64);
    }
    None
}

/// Parses `ROLE "NAME" [exact]`, `text "TEXT" [exact]` or `testid "ID"`.
fn parse_target(s: &str) -> Result<Locator, String> {
    let s = s.trim();
    let (kind, rest) = match s.find(|c: char| c.is_whitespace() || c == '"') {
        Some(i) => (&s[..i], s[i..].trim()),
        None => (s, ""),
    };
    if kind.is_empty() || !kind.chars().all(|c| c.is_ascii_alphabetic()) {
        return Err(format!("expected a target like button \"Sign in\", got {s:?}"));
    }
    let (name, tail) = if rest.starts_with('"') {
        let mut escaped = false;
        let mut end = None;
        for (i, c) in rest.char_indices().skip(1) {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => {
                    end = Some(i);
                    break;
                }
                _ => {}
            }
        }
        let end = end.ok_or("unterminated quote in target")?;
        let name =
            serde_json::from_str::<String>(&rest[..=end]).map_err(|e| format!("bad quoted name: {e}"))?;
        (Some(name), rest[end + 1..].trim())
    } else {
        (None, rest)
    };
    let exact = match tail {
        "" => false,
        "exact" => true,
        other => return Err(format!("unexpected {other:?} after the target")),
    };
    match kind.to_ascii_lowercase().as_str() {
        "text" => Ok(Locator::Text {
            text: name.ok_or("text needs a quoted text")?,
            exact,
        }),
        "testid" => Ok(Locator::TestId {
            test_id: name.ok_or("testid needs a quoted id")?,
        }),
        role => Ok(Locator::Role {
            role: role.to_string(),
            name,
            exact,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_structured_files() {
        let wf = Workflow::parse(
            "# login\nfill: textbox \"Username\" = {{LOGIN_ID}}\nclick: button \"Sign in\" exact\n\
             select: combobox \"Country\" = \"Japan\"\nwait: 250ms\nclick: testid \"add-main\"\ngoto: /app/late\n\
             expect: text \"Ships to Japan\"",
        )
        .unwrap();
        let WorkflowBody::Structured(steps) = wf.body else {
            panic!("not structured")
        };
        assert_eq!(steps.len(), 7);
        assert_eq!(steps[0].line, 2);
        assert_eq!(
            steps[0].action,
            StepAction::Act {
                locator: Locator::Role {
                    role: "textbox".into(),
                    name: Some("Username".into()),
                    exact: false
                },
                action: Action::Fill,
                value: Some(ActionValue::Placeholder("{{LOGIN_ID}}".into())),
            }
        );
        assert!(matches!(
            &steps[1].action,
            StepAction::Act {
                locator: Locator::Role { exact: true, .. },
                ..
            }
        ));
        assert!(
            matches!(&steps[2].action, StepAction::Act { value: Some(ActionValue::Literal(v)), .. } if v == "Japan")
        );
        assert_eq!(steps[3].action, StepAction::Sleep(Duration::from_millis(250)));
    }

    #[test]
    fn plain_text_is_for_the_llm_and_bad_lines_are_typed_errors() {
        let wf = Workflow::parse("1. Log in\n2. Search for rust").unwrap();
        assert_eq!(
            wf.body,
            WorkflowBody::Plain("1. Log in\n2. Search for rust".into())
        );
        let err = Workflow::parse("click: button \"Sign in\"\nfill: textbox \"Name\"").unwrap_err();
        assert!(matches!(err, WorkflowError::Parse { line: 2, .. }), "{err}");
        assert!(Workflow::parse("  \n# only comments\n").is_err());
        assert!(Workflow::parse("click: button \"unterminated").is_err());
        // Words before a colon that are no verb's near miss stay plain language.
        let wf = Workflow::parse("Note: log in first\nExpected: the plan says Pro").unwrap();
        assert!(matches!(wf.body, WorkflowBody::Plain(_)));
    }

    #[test]
    fn a_typo_in_the_first_verb_is_an_unknown_verb() {
        let err = Workflow::parse("clik: button \"Sign in\"\nexpect: text \"Welcome\"").unwrap_err();
        let WorkflowError::Parse { line, message } = &err else {
            panic!("{err}")
        };
        assert_eq!(*line, 1);
        assert!(message.contains("unknown verb \"clik\""), "{message}");
        assert!(message.contains("did you mean `click:`"), "{message}");
        // A near miss alone (no correct verb anywhere) is still structured.
        let err = Workflow::parse("slect: combobox \"Country\" = Japan").unwrap_err();
        assert!(err.to_string().contains("did you mean `select:`"), "{err}");
        assert_eq!(edit_distance("expct", "expect"), 1);
        assert_eq!(nearest_verb("clcik"), Some("click"));
        assert_eq!(nearest_verb("note"), None);
    }
}
