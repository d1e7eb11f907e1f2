//! `expect: output …`: an assertion on what the run's `extract:` steps
//! read, not on the page.
//!
//! ```text
//! expect: output title                      (read, and not empty)
//! expect: output title = "Plan: Pro"        (its text is this)
//! expect: output title includes "Pro"      (its text contains this, case and spaces ignored)
//! expect: output total >= 10                (as a number)
//! expect: output orders count = 3           (a list's or table's items)
//! expect: output orders[0].Total = "9.99"   (a path into a list or table)
//! expect: output orders[-1]["Order date"] includes 2026
//! ```

use std::collections::BTreeMap;
use std::fmt;

use serde_json::Value;

/// A number comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compare {
    /// `=`
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

impl Compare {
    /// The operator as written.
    pub fn as_str(self) -> &'static str {
        match self {
            Compare::Eq => "=",
            Compare::Ne => "!=",
            Compare::Lt => "<",
            Compare::Le => "<=",
            Compare::Gt => ">",
            Compare::Ge => ">=",
        }
    }

    /// Whether `have OP want` holds.
    pub fn holds(self, have: f64, want: f64) -> bool {
        match self {
            Compare::Eq => have == want,
            Compare::Ne => have != want,
            Compare::Lt => have < want,
            Compare::Le => have <= want,
            Compare::Gt => have > want,
            Compare::Ge => have >= want,
        }
    }

    /// The operator at the start of `text`, and what follows it.
    fn split(text: &str) -> Option<(Compare, &str)> {
        // Two-character operators first: `<=` is not `<` then `=`.
        [
            ("!=", Compare::Ne),
            ("<=", Compare::Le),
            (">=", Compare::Ge),
            ("=", Compare::Eq),
            ("<", Compare::Lt),
            (">", Compare::Gt),
        ]
        .into_iter()
        .find_map(|(op, cmp)| text.strip_prefix(op).map(|rest| (cmp, rest.trim())))
    }
}

/// One step of a path into an output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathStep {
    /// An object's key (a table row's column).
    Key(String),
    /// A list's item, 0-based; negative counts from the end.
    Index(i64),
}

/// An output and the path into it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputPath {
    /// The name an `extract:` step gave it.
    pub name: String,
    /// Keys and indexes into it.
    pub steps: Vec<PathStep>,
}

impl fmt::Display for OutputPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)?;
        for step in &self.steps {
            match step {
                PathStep::Index(i) => write!(f, "[{i}]")?,
                PathStep::Key(k)
                    if !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') =>
                {
                    write!(f, ".{k}")?
                }
                PathStep::Key(k) => write!(f, "[{}]", serde_json::Value::String(k.clone()))?,
            }
        }
        Ok(())
    }
}

impl OutputPath {
    /// The value at this path among `outputs`, if there is one.
    pub fn find<'v>(&self, outputs: &'v BTreeMap<String, Value>) -> Option<&'v Value> {
        let mut at = outputs.get(&self.name)?;
        for step in &self.steps {
            at = match (step, at) {
                (PathStep::Key(k), Value::Object(map)) => map.get(k)?,
                (PathStep::Index(i), Value::Array(items)) => {
                    let n = items.len() as i64;
                    let i = if *i < 0 { n + i } else { *i };
                    items.get(usize::try_from(i).ok()?)?
                }
                _ => return None,
            };
        }
        Some(at)
    }
}

/// What an output must be.
#[derive(Debug, Clone, PartialEq)]
pub enum OutputCheck {
    /// It was read and is not empty (null, `""`, `[]`, `{}`).
    Present,
    /// Its text is this (spaces at the ends and runs of spaces ignored;
    /// numbers compare as numbers).
    Is(String),
    /// Its text contains this (case and spaces ignored).
    Includes(String),
    /// As a number (a number, or a text that reads as one), it compares so.
    Number(Compare, f64),
    /// A list (or object) has so many items.
    Count(Compare, usize),
}

/// `expect: output PATH [TEST]`.
#[derive(Debug, Clone, PartialEq)]
pub struct OutputAssertion {
    /// Where the value is.
    pub path: OutputPath,
    /// What it must be.
    pub check: OutputCheck,
}

impl OutputAssertion {
    /// `None` when it holds among `outputs`, else why not (the value
    /// shown at most 200 characters).
    pub fn verdict(&self, outputs: &BTreeMap<String, Value>) -> Option<String> {
        let path = &self.path;
        let Some(value) = path.find(outputs) else {
            return Some(if outputs.contains_key(&path.name) {
                format!("output {} has no {path}", path.name)
            } else if outputs.is_empty() {
                format!("no output {}: no extract: step has read anything", path.name)
            } else {
                let names: Vec<&str> = outputs.keys().map(String::as_str).collect();
                format!("no output {} (the outputs are {})", path.name, names.join(", "))
            });
        };
        let text = text_of(value);
        let shown = || {
            let mut cut: String = text.chars().take(200).collect();
            if cut.len() < text.len() {
                cut.push('…');
            }
            format!("{cut:?}")
        };
        match &self.check {
            OutputCheck::Present => empty(value).then(|| format!("output {path} is empty")),
            OutputCheck::Is(want) => {
                let same = match (number(value), want.trim().parse::<f64>()) {
                    (Some(have), Ok(want)) => have == want,
                    _ => oxwright_engine::normalize(&text) == oxwright_engine::normalize(want),
                };
                (!same).then(|| format!("output {path} is {}", shown()))
            }
            OutputCheck::Includes(want) => {
                let have = oxwright_engine::normalize(&text).to_lowercase();
                let want = oxwright_engine::normalize(want).to_lowercase();
                (!have.contains(&want)).then(|| format!("output {path} is {}", shown()))
            }
            OutputCheck::Number(cmp, want) => match number(value) {
                None => Some(format!("output {path} is {}, not a number", shown())),
                Some(have) if cmp.holds(have, *want) => None,
                Some(have) => Some(format!("output {path} is {have}, not {} {want}", cmp.as_str())),
            },
            OutputCheck::Count(cmp, want) => {
                let have = match value {
                    Value::Array(items) => items.len(),
                    Value::Object(map) => map.len(),
                    _ => return Some(format!("output {path} is {}, not a list", shown())),
                };
                (!cmp.holds(have as f64, *want as f64))
                    .then(|| format!("output {path} has {have} items, not {} {want}", cmp.as_str()))
            }
        }
    }
}

/// A value as text: a string as it is, anything else as JSON.
fn text_of(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

fn empty(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::String(s) => s.trim().is_empty(),
        Value::Array(items) => items.is_empty(),
        Value::Object(map) => map.is_empty(),
        Value::Bool(_) | Value::Number(_) => false,
    }
}

/// A number, or a text that reads as one once spaces and thousands
/// separators are taken out and a unit before or after it (`$1,299.00`,
/// `12.50 EUR`, `Total: 9`) is cut off.
fn number(value: &Value) -> Option<f64> {
    match value {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => {
            let plain: String = s.chars().filter(|c| !c.is_whitespace() && *c != ',').collect();
            plain
                .trim_start_matches(|c: char| !(c.is_ascii_digit() || matches!(c, '-' | '+' | '.')))
                .trim_end_matches(|c: char| !(c.is_ascii_digit() || c == '.'))
                .parse()
                .ok()
                .filter(|n: &f64| n.is_finite())
        }
        _ => None,
    }
}

/// Parses what follows `expect: output`.
pub(super) fn output_assertion(rest: &str) -> Result<OutputAssertion, String> {
    let (path, tail) = parse_path(rest.trim())?;
    let tail = tail.trim();
    let check = if tail.is_empty() {
        OutputCheck::Present
    } else if let Some(after) = super::word_prefix(tail, "includes") {
        let want = super::unquote(after);
        if want.is_empty() {
            return Err("expect: output … includes needs a text".into());
        }
        OutputCheck::Includes(want)
    } else if let Some(after) = super::word_prefix(tail, "count") {
        let (cmp, n) = Compare::split(after).ok_or("expect: output … count needs `= N`, `>= N` …")?;
        let n = super::unquote(n);
        let n = n
            .parse()
            .map_err(|_| format!("expect: output … count needs a whole number, got {n:?}"))?;
        OutputCheck::Count(cmp, n)
    } else if let Some((cmp, want)) = Compare::split(tail) {
        let want = super::unquote(want);
        match cmp {
            Compare::Eq => OutputCheck::Is(want),
            _ => OutputCheck::Number(
                cmp,
                want.parse::<f64>()
                    .ok()
                    .filter(|n| n.is_finite())
                    .ok_or_else(|| {
                        format!("expect: output … {} needs a number, got {want:?}", cmp.as_str())
                    })?,
            ),
        }
    } else {
        return Err(format!(
            "after `output {path}`: `= VALUE`, `includes TEXT`, `>= N` (or <, <=, >, !=) or `count = N`, not {tail:?}"
        ));
    };
    Ok(OutputAssertion { path, check })
}

/// `NAME`, then `.KEY`, `[N]` or `["KEY"]` any number of times.
fn parse_path(text: &str) -> Result<(OutputPath, &str), String> {
    let word_end = |s: &str| {
        s.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(s.len())
    };
    let end = word_end(text);
    let name = &text[..end];
    if !name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
    {
        return Err(
            "expect: output needs the name an extract: step gave (`expect: output title = …`)".into(),
        );
    }
    let mut rest = &text[end..];
    let mut steps = Vec::new();
    loop {
        if let Some(after) = rest.strip_prefix('.') {
            let end = word_end(after);
            if end == 0 {
                return Err(format!(
                    "expect: output {name}: a key after `.` (or [\"KEY\"] for one with spaces)"
                ));
            }
            steps.push(PathStep::Key(after[..end].to_owned()));
            rest = &after[end..];
        } else if let Some(after) = rest.strip_prefix("[\"") {
            let close = after
                .find("\"]")
                .ok_or_else(|| format!("expect: output {name}: `[\"` is not closed by `\"]`"))?;
            steps.push(PathStep::Key(after[..close].to_owned()));
            rest = &after[close + 2..];
        } else if let Some(after) = rest.strip_prefix('[') {
            let close = after
                .find(']')
                .ok_or_else(|| format!("expect: output {name}: `[` is not closed by `]`"))?;
            let index = after[..close].trim().parse().map_err(|_| {
                format!(
                    "expect: output {name}: [{}] is no index (a whole number, or [\"KEY\"] for a key)",
                    &after[..close]
                )
            })?;
            steps.push(PathStep::Index(index));
            rest = &after[close + 1..];
        } else {
            break;
        }
    }
    if !(rest.is_empty() || rest.starts_with(char::is_whitespace) || Compare::split(rest).is_some()) {
        return Err(format!("expect: output {name}: unexpected {rest:?} in the path"));
    }
    Ok((
        OutputPath {
            name: name.to_owned(),
            steps,
        },
        rest,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn outputs() -> BTreeMap<String, Value> {
        let mut o = BTreeMap::new();
        o.insert("title".into(), json!("  Plan:   Pro "));
        o.insert("total".into(), json!("$1,299.50"));
        o.insert("fee".into(), json!("12.50 EUR"));
        o.insert("day".into(), json!("2026-01-05"));
        o.insert("n".into(), json!(3));
        o.insert("none".into(), json!(""));
        o.insert(
            "orders".into(),
            json!([{"Id": "A-1", "Order date": "2026-11-02", "Total": "9.99"}, {"Id": "A-2", "Order date": "2026-12-01", "Total": "20"}]),
        );
        o
    }

    fn verdict(line: &str) -> Option<String> {
        output_assertion(line).unwrap().verdict(&outputs())
    }

    #[test]
    fn each_form_holds_or_says_why_not() {
        assert_eq!(verdict("title"), None);
        assert_eq!(verdict("none").as_deref(), Some("output none is empty"));
        assert_eq!(verdict("title = \"Plan: Pro\""), None);
        assert_eq!(
            verdict("title = \"plan: pro\"").as_deref(),
            Some("output title is \"  Plan:   Pro \"")
        );
        assert_eq!(verdict("title includes \"PLAN: pro\""), None);
        assert_eq!(verdict("total >= 1000"), None);
        assert_eq!(
            verdict("total < 1000").as_deref(),
            Some("output total is 1299.5, not < 1000")
        );
        assert_eq!(verdict("n = 3.0"), None);
        assert_eq!(verdict("fee < 13"), None);
        assert_eq!(verdict("fee = 12.5"), None);
        assert_eq!(
            verdict("day > 1").as_deref(),
            Some("output day is \"2026-01-05\", not a number")
        );
        assert_eq!(verdict("n != 3").as_deref(), Some("output n is 3, not != 3"));
        assert_eq!(
            verdict("title > 1").as_deref(),
            Some("output title is \"  Plan:   Pro \", not a number")
        );
        assert_eq!(verdict("orders count = 2"), None);
        assert_eq!(
            verdict("orders count >= 3").as_deref(),
            Some("output orders has 2 items, not >= 3")
        );
        assert_eq!(verdict("orders[0].Total = 9.99"), None);
        assert_eq!(verdict("orders[-1][\"Order date\"] includes 2026-12"), None);
        assert_eq!(
            verdict("orders[2].Total").as_deref(),
            Some("output orders has no orders[2].Total")
        );
        assert_eq!(
            verdict("title count = 1").as_deref(),
            Some("output title is \"  Plan:   Pro \", not a list")
        );
        let missing = verdict("price").unwrap();
        assert!(
            missing.contains("no output price") && missing.contains("orders, title, total"),
            "{missing}"
        );
        let none = output_assertion("price")
            .unwrap()
            .verdict(&BTreeMap::new())
            .unwrap();
        assert!(none.contains("no extract: step"), "{none}");
    }

    #[test]
    fn paths_print_as_written() {
        let a = output_assertion("orders[-1][\"Order date\"].x_1 = 2").unwrap();
        assert_eq!(a.path.to_string(), "orders[-1][\"Order date\"].x_1");
        assert_eq!(a.check, OutputCheck::Is("2".into()));
    }

    #[test]
    fn bad_forms_are_refused_with_what_is_wrong() {
        for (line, says) in [
            ("", "needs the name"),
            ("1st = 2", "needs the name"),
            ("orders[x] = 1", "is no index"),
            ("orders[0 = 1", "not closed"),
            ("orders.", "a key after"),
            ("title matches 3", "not \"matches 3\""),
            ("total > cheap", "needs a number"),
            ("orders count 3", "count needs"),
            ("orders count = many", "whole number"),
            ("title includes", "needs a text"),
            ("title-x = 1", "unexpected \"-x = 1\""),
        ] {
            let err = output_assertion(line).unwrap_err();
            assert!(err.contains(says), "{line:?}: {err}");
        }
    }
}
