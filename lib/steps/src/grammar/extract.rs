//! `extract:` steps: read a text, a control's value or a table off the
//! page into the run's outputs, under a name.
//!
//! ```text
//! extract: text heading "Order" as order_title
//! extract: text each listitem as items
//! extract: value textbox "Email" as email
//! extract: table "Orders" as orders
//! extract: product.json as product
//! ```
//!
//! The last reads the page through the workflow's LLM into the shape of
//! the JSON Schema the job carries under that file name.

use oxwright_engine::Locator;

use super::{StepAction, parse_target, word_prefix};

/// What an `extract:` step reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExtractKind {
    /// The element's rendered text (`each`: a list, one per match).
    Text,
    /// A form control's value (never a password field's).
    Value,
    /// A table's rows: one object per body row, keyed by the header
    /// cells (a list of cell texts when the table has no header).
    Table,
}

impl ExtractKind {
    /// The kind as written.
    pub fn as_str(self) -> &'static str {
        match self {
            ExtractKind::Text => "text",
            ExtractKind::Value => "value",
            ExtractKind::Table => "table",
        }
    }
}

/// One `extract:` step.
#[derive(Debug, Clone, PartialEq)]
pub struct Extraction {
    /// What it reads.
    pub kind: ExtractKind,
    /// The element read.
    pub locator: Locator,
    /// Which match, when several are expected.
    pub nth: Option<i64>,
    /// Every match in turn (text only): the output is a list.
    pub each: bool,
    /// The name the value goes under in the run's outputs.
    pub name: String,
}

/// An `extract:` step that reads the page through the workflow's LLM
/// into a JSON Schema's shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaExtraction {
    /// The schema's file name as written; the job carries the schema
    /// under it.
    pub schema: String,
    /// The name the value goes under in the run's outputs.
    pub name: String,
}

/// Reads the JSON Schemas the `extract: FILE.json` steps among `steps`
/// name, once each, through `read` relative to `dir` (the file the steps
/// are in), each checked as a schema: an error names the step's file,
/// the path read and what is wrong.
pub fn read_schemas<'a>(
    steps: impl IntoIterator<Item = &'a super::StructuredStep>,
    dir: &std::path::Path,
    read: &dyn Fn(&std::path::Path) -> std::io::Result<String>,
) -> Result<std::collections::BTreeMap<String, oxwright_jobs::JsonSchema>, String> {
    let mut schemas = std::collections::BTreeMap::new();
    for step in steps {
        let StepAction::ExtractSchema(e) = &step.action else {
            continue;
        };
        if schemas.contains_key(&e.schema) {
            continue;
        }
        let path = dir.join(&e.schema);
        let text =
            read(&path).map_err(|err| format!("extract: {}: reading {}: {err}", e.schema, path.display()))?;
        let value: serde_json::Value = serde_json::from_str(&text)
            .map_err(|err| format!("extract: {}: {} is not JSON: {err}", e.schema, path.display()))?;
        let schema = oxwright_jobs::JsonSchema::from_value(value)
            .map_err(|err| format!("extract: {}: {}: {err}", e.schema, path.display()))?;
        schemas.insert(e.schema.clone(), schema);
    }
    Ok(schemas)
}

/// Parses what follows `extract:`.
pub(super) fn extract_step(rest: &str) -> Result<StepAction, String> {
    let (what, name) = rest
        .rsplit_once(" as ")
        .ok_or("extract needs `… as NAME` (the name its value goes under in the run's outputs)")?;
    let file = super::unquote(what);
    if file.to_ascii_lowercase().ends_with(".json") && !file.contains(char::is_whitespace) {
        return Ok(StepAction::ExtractSchema(SchemaExtraction {
            schema: file,
            name: output_name(name)?,
        }));
    }
    element_step(what, name).map(StepAction::Extract)
}

/// The name an output goes under: letters, digits and `_`.
fn output_name(name: &str) -> Result<String, String> {
    let name = name.trim();
    let valid = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !valid {
        return Err(format!(
            "extract names its value with letters, digits and `_` (starting with a letter), not {name:?}"
        ));
    }
    Ok(name.to_owned())
}

/// `text TARGET`, `value TARGET` or `table …`, read under `name`.
fn element_step(what: &str, name: &str) -> Result<Extraction, String> {
    let name = output_name(name)?;
    let what = what.trim();
    let (kind, target) = if let Some(after) = word_prefix(what, "text") {
        (ExtractKind::Text, after)
    } else if let Some(after) = word_prefix(what, "value") {
        (ExtractKind::Value, after)
    } else if word_prefix(what, "table").is_some() {
        // `table "Orders"` is itself the target: the table of that name.
        (ExtractKind::Table, what)
    } else {
        return Err(format!(
            "extract reads `text TARGET`, `value TARGET`, `table [\"NAME\"]` or `SCHEMA.json`, not {what:?}"
        ));
    };
    let (each, target) = match word_prefix(target, "each") {
        Some(after) => (true, after),
        None => (false, target),
    };
    if each && kind != ExtractKind::Text {
        return Err("`each` reads the text of every match: `extract: text each TARGET as NAME`".into());
    }
    if target.is_empty() {
        return Err(format!(
            "extract {} needs a target: `{} heading`",
            kind.as_str(),
            kind.as_str()
        ));
    }
    let (locator, nth, tail) = parse_target(target)?;
    if !tail.trim().is_empty() {
        return Err(format!("unexpected {:?} after the target", tail.trim()));
    }
    if each && nth.is_some() {
        return Err("`each` reads every match: it takes no nth".into());
    }
    Ok(Extraction {
        kind,
        locator,
        nth,
        each,
        name,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{StepAction, StructuredStep};

    fn parsed(line: &str) -> Extraction {
        match StructuredStep::parse(1, line).unwrap().action {
            StepAction::Extract(e) => e,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn extract_reads_text_values_and_tables_under_a_name() {
        let e = parsed(r#"extract: text heading "Order #42" as title"#);
        assert_eq!(
            (e.kind, e.name.as_str(), e.each, e.nth),
            (ExtractKind::Text, "title", false, None)
        );
        assert_eq!(e.locator, Locator::role("heading", Some("Order #42")));
        let e = parsed("extract: text each listitem as items");
        assert!(e.each);
        let e = parsed(r#"extract: value textbox "Email" as email"#);
        assert_eq!(e.kind, ExtractKind::Value);
        let e = parsed(r#"extract: table "Orders" as orders"#);
        assert_eq!(
            (e.kind, e.locator.clone()),
            (ExtractKind::Table, Locator::role("table", Some("Orders")))
        );
        let e = parsed("extract: table nth 1 as second");
        assert_eq!((e.nth, e.locator), (Some(1), Locator::role("table", None)));
        // A name with " as " in it stays the target's.
        let e = parsed(r#"extract: text button "Save as draft" as label"#);
        assert_eq!(e.locator, Locator::role("button", Some("Save as draft")));
        assert!(
            !StructuredStep::parse(1, "extract: table as t")
                .unwrap()
                .may_act_twice()
        );
    }

    #[test]
    fn a_json_file_is_read_through_the_llm() {
        for line in [
            "extract: product.json as product",
            r#"extract: "schemas/Product.JSON" as product"#,
        ] {
            match StructuredStep::parse(1, line).unwrap().action {
                StepAction::ExtractSchema(e) => {
                    assert!(e.schema.ends_with(".json") || e.schema.ends_with(".JSON"));
                    assert_eq!(e.name, "product");
                }
                other => panic!("{line}: {other:?}"),
            }
        }
        let err = StructuredStep::parse(1, "extract: product.json as 1x").unwrap_err();
        assert!(err.to_string().contains("letters, digits"), "{err}");
    }

    #[test]
    fn a_bad_extract_says_what_it_takes() {
        for (line, says) in [
            ("extract: text heading", "as NAME"),
            ("extract: text heading as 2nd", "letters, digits"),
            ("extract: heading as h", "extract reads `text TARGET`"),
            ("extract: value each textbox as v", "`each` reads the text"),
            ("extract: text as t", "needs a target"),
            (r#"extract: text heading "A" if present as t"#, "unexpected"),
        ] {
            let err = StructuredStep::parse(1, line).unwrap_err().to_string();
            assert!(err.contains(says), "{line}: {err}");
        }
    }
}
