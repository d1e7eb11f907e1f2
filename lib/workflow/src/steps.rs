//! Workflow files: plain-language instructions (the LLM path) or
//! structured steps, one per line (the deterministic path, no LLM; the
//! grammar is `oxwright-steps`'). A file is structured when any line reads
//! as a step (a verb, or a near miss of one, before a colon); then every
//! line must parse.

use oxwright_steps::{StructuredStep, looks_structured};

use crate::WorkflowError;

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

    /// The JSON Schema files its `extract: FILE.json as NAME` steps name,
    /// once each, in order.
    pub fn schema_files(&self) -> Vec<String> {
        let mut files: Vec<String> = Vec::new();
        if let WorkflowBody::Structured(steps) = &self.body {
            for step in steps {
                if let oxwright_steps::StepAction::ExtractSchema(e) = &step.action
                    && !files.contains(&e.schema)
                {
                    files.push(e.schema.clone());
                }
            }
        }
        files
    }

    /// Reads the JSON Schemas its `extract: FILE.json` steps name, each
    /// relative to `dir` (the workflow's file), checked as a schema: an
    /// error names the file and what is wrong.
    pub fn read_schemas(
        &self,
        dir: &std::path::Path,
    ) -> Result<std::collections::BTreeMap<String, oxwright_jobs::JsonSchema>, String> {
        match &self.body {
            WorkflowBody::Plain(_) => Ok(std::collections::BTreeMap::new()),
            WorkflowBody::Structured(steps) => {
                oxwright_steps::read_schemas(steps, dir, &|path| std::fs::read_to_string(path))
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
            .map(|(n, l)| StructuredStep::parse(*n, l))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            body: WorkflowBody::Structured(steps),
        })
    }
}

#[cfg(test)]
mod tests;
