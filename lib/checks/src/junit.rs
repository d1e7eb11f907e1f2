//! The JUnit XML report CI reads: one `<testsuite>` with one `<testcase>`
//! per check run; a failed run carries a `<failure>` naming the failed step
//! and its error kind, a flaky one passes with a `<system-out>` note. Every
//! text goes through the run's sanitiser, then is XML-escaped.

use std::fmt::Write as _;

use oxwright_secrets::Sanitizer;

use crate::{CheckRun, CheckStatus};

/// The suite's name, and a test case's class name when its check has no tags.
pub const SUITE: &str = "oxwright.checks";

/// Returns the JUnit XML of `runs` as one test suite. `sanitizer` is the
/// runs' (it knows every secret value they typed).
pub fn report(runs: &[CheckRun], sanitizer: &Sanitizer) -> String {
    let failures = runs.iter().filter(|r| !r.status.is_pass()).count();
    let time: u64 = runs.iter().map(|r| r.duration_ms).sum();
    // When the first run started, in UTC with its offset (RFC 3339).
    let timestamp = runs
        .iter()
        .map(|r| r.started_at)
        .min()
        .map(|t| format!(" timestamp=\"{}\"", t.format("%Y-%m-%dT%H:%M:%SZ")))
        .unwrap_or_default();
    let clean = |s: &str| sanitizer.clean(s);
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites name=\"{SUITE}\" tests=\"{}\" failures=\"{failures}\" errors=\"0\" time=\"{}\">",
        runs.len(),
        seconds(time)
    );
    let _ = writeln!(
        out,
        "  <testsuite name=\"{SUITE}\" tests=\"{}\" failures=\"{failures}\" errors=\"0\" skipped=\"0\" \
         time=\"{}\"{timestamp}>",
        runs.len(),
        seconds(time)
    );
    for run in runs {
        let classname = if run.tags.is_empty() {
            SUITE.to_string()
        } else {
            run.tags.join(".")
        };
        let _ = write!(
            out,
            "    <testcase name=\"{}\" classname=\"{}\" time=\"{}\"",
            attr(&run.check),
            attr(&clean(&classname)),
            seconds(run.duration_ms)
        );
        match run.status {
            CheckStatus::Passed => out.push_str("/>\n"),
            CheckStatus::Flaky => {
                out.push_str(">\n");
                let _ = writeln!(
                    out,
                    "      <system-out>{}</system-out>",
                    text(&clean(&flaky_note(run)))
                );
                out.push_str("    </testcase>\n");
            }
            CheckStatus::Failed => {
                out.push_str(">\n");
                let (message, kind) = failure_message(run);
                let _ = writeln!(
                    out,
                    "      <failure message=\"{}\" type=\"{}\">{}</failure>",
                    attr(&clean(&message)),
                    attr(&clean(&kind)),
                    text(&clean(&failure_body(run)))
                );
                out.push_str("    </testcase>\n");
            }
        }
    }
    out.push_str("  </testsuite>\n</testsuites>\n");
    out
}

/// The failure's one-line message and its type (the error kind).
fn failure_message(run: &CheckRun) -> (String, String) {
    match (&run.failed_step, &run.error) {
        (Some(step), _) => (
            format!("step {} ({}) failed: {}", step.index, step.text, step.message),
            step.error_kind.clone(),
        ),
        (None, Some(error)) => (error.message.clone(), error.kind.as_str().to_string()),
        (None, None) => ("the check failed".into(), "failed".into()),
    }
}

/// The failure's body: the step, the message, the hint and where the artefacts are.
fn failure_body(run: &CheckRun) -> String {
    let mut body = String::new();
    if let Some(step) = &run.failed_step {
        let _ = writeln!(body, "step {}: {}", step.index, step.text);
        let _ = writeln!(body, "error: {}: {}", step.error_kind, step.message);
        if let Some(hint) = &step.hint {
            let _ = writeln!(body, "hint: {hint}");
        }
    } else if let Some(error) = &run.error {
        let _ = writeln!(body, "error: {}: {}", error.kind, error.message);
    }
    let _ = writeln!(body, "url: {}", run.url);
    for (i, attempt) in run.attempts.iter().enumerate() {
        let _ = writeln!(
            body,
            "attempt {}: sessions/{}/ ({} ms)",
            i + 1,
            attempt.session_id,
            attempt.duration_ms
        );
    }
    body
}

/// The note a flaky run's test case carries.
fn flaky_note(run: &CheckRun) -> String {
    let mut note = format!(
        "flaky: passed on attempt {} of {}",
        run.attempts.len(),
        run.attempts.len()
    );
    if let Some(step) = &run.failed_step {
        let _ = write!(
            note,
            "; the attempt before failed at step {} ({}): {}: {}",
            step.index, step.text, step.error_kind, step.message
        );
    } else if let Some(error) = &run.error {
        let _ = write!(
            note,
            "; the attempt before failed: {}: {}",
            error.kind, error.message
        );
    }
    let sessions: Vec<String> = run
        .attempts
        .iter()
        .map(|a| format!("sessions/{}/", a.session_id))
        .collect();
    let _ = write!(note, "\nsessions: {}", sessions.join(", "));
    note
}

fn seconds(ms: u64) -> String {
    format!("{}.{:03}", ms / 1000, ms % 1000)
}

/// Escapes element text; characters XML 1.0 cannot hold become U+FFFD.
fn text(s: &str) -> String {
    escape(s, false)
}

/// Escapes an attribute value; line breaks and tabs stay as character references.
fn attr(s: &str) -> String {
    escape(s, true)
}

fn escape(s: &str, attribute: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\n' if attribute => out.push_str("&#10;"),
            '\r' if attribute => out.push_str("&#13;"),
            '\t' if attribute => out.push_str("&#9;"),
            '\n' | '\r' | '\t' => out.push(c),
            c if xml_char(c) => out.push(c),
            _ => out.push('\u{FFFD}'),
        }
    }
    out
}

/// Tells whether XML 1.0 allows `c` in a document.
fn xml_char(c: char) -> bool {
    matches!(c, '\u{20}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}' | '\u{10000}'..='\u{10FFFF}')
}

#[cfg(test)]
#[path = "junit_tests.rs"]
mod tests;
