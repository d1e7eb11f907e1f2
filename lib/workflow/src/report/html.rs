//! The report's markup: inline CSS, no script, no request leaves the page;
//! screenshots and artefacts are linked by paths relative to the session
//! folder the report sits in.

use std::fmt::Write as _;

use oxwright_jobs::{StepRecord, StepValue};
use serde_json::Value;

use super::SessionArtefacts;
use crate::Sanitizer;

const STYLE: &str = "\
body{font:14px/1.45 system-ui,sans-serif;margin:0 auto;max-width:1100px;padding:16px;color:#1d1d1f}\
h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:24px 0 8px}h3{font-size:15px;margin:0}\
.status{display:inline-block;padding:4px 12px;border-radius:4px;font-weight:600;color:#fff}\
.status.completed{background:#1a7f37}.status.failed{background:#cf222e}.status.skipped{background:#6e7781}.status.unknown{background:#6e7781}\
.badge{display:inline-block;padding:1px 8px;border-radius:10px;background:#ddf4ff;font-size:12px;margin-left:6px}\
dl{display:grid;grid-template-columns:max-content 1fr;gap:2px 12px;margin:8px 0}dt{color:#57606a}dd{margin:0}\
section.step{border:1px solid #d0d7de;border-radius:6px;padding:10px 12px;margin:10px 0}\
section.step.failed{border-color:#cf222e;border-width:2px}\
table{border-collapse:collapse;width:100%;margin-top:8px;font-size:13px}\
th,td{border:1px solid #d0d7de;padding:3px 6px;text-align:left;vertical-align:top}th{background:#f6f8fa}\
code{font:12px ui-monospace,monospace;background:#f6f8fa;padding:0 3px;word-break:break-all}\
.shots{display:flex;gap:12px;flex-wrap:wrap;margin-top:8px}figure{margin:0}\
figcaption{font-size:12px;color:#57606a}img.thumb{display:block;width:240px;height:150px;object-fit:cover;object-position:top;border:1px solid #d0d7de}\
.error{color:#cf222e}.muted{color:#57606a}";

/// Escapes text for HTML element content and quoted attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Sanitises, then escapes.
struct Text<'a>(&'a Sanitizer);

impl Text<'_> {
    fn show(&self, text: &str) -> String {
        escape(&self.0.clean(text))
    }
}

fn str_of<'v>(v: &'v Value, key: &str) -> Option<&'v str> {
    v.get(key).and_then(Value::as_str)
}

fn num(v: &Value, key: &str) -> Option<f64> {
    v.get(key).and_then(Value::as_f64)
}

/// A link to a file of the session folder (a path we listed, escaped).
fn link(name: &str, label: &str) -> String {
    format!("<a href=\"{}\">{}</a>", escape(name), escape(label))
}

fn thumb(name: &str, caption: &str) -> String {
    let n = escape(name);
    format!(
        "<figure><a href=\"{n}\"><img class=\"thumb\" src=\"{n}\" alt=\"{c}\"></a><figcaption>{c}</figcaption></figure>",
        c = escape(caption)
    )
}

pub(super) fn render(s: &SessionArtefacts, sanitizer: &Sanitizer) -> String {
    let t = Text(sanitizer);
    let empty = Value::Null;
    let result = s.result.as_ref().unwrap_or(&empty);
    let status = str_of(result, "status").unwrap_or(if s.records.is_empty() { "failed" } else { "unknown" });
    let name = str_of(result, "name").unwrap_or("workflow");
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width\"><title>{} — {}</title><style>{STYLE}</style></head><body>\n",
        t.show(name),
        escape(status)
    );
    let _ = write!(
        h,
        "<header><span class=\"status {cls}\" id=\"status\">{st}</span> <h1>{n}</h1>",
        cls = escape(status),
        st = escape(&status.to_uppercase()),
        n = t.show(name)
    );
    if let Some(err) = result.get("error").filter(|e| !e.is_null()) {
        let kind = str_of(err, "kind").unwrap_or("error");
        let msg = str_of(err, "message").unwrap_or_default();
        let _ = write!(
            h,
            "<p class=\"error\"><b>{}</b>: {}</p>",
            t.show(kind),
            t.show(msg)
        );
    }
    h.push_str("<dl>");
    facts(&mut h, &t, s, result);
    h.push_str("</dl></header>\n");
    if let Some(list) = result.get("checklist").and_then(Value::as_array) {
        h.push_str("<h2>Checklist</h2><ol id=\"checklist\">");
        for item in list.iter().filter_map(Value::as_str) {
            let _ = write!(h, "<li>{}</li>", t.show(item.trim_start_matches("[]").trim()));
        }
        h.push_str("</ol>\n");
    }
    h.push_str("<h2>Steps</h2>\n");
    for (number, outcome) in steps(s, result) {
        step(&mut h, &t, s, number, &outcome);
    }
    h.push_str("<h2>Artefacts</h2><ul id=\"artefacts\">");
    for f in &s.files {
        let _ = write!(h, "<li>{}</li>", link(f, f));
    }
    h.push_str("</ul>\n</body></html>\n");
    h
}

/// The run's facts: session, mode, URLs, times, where it was resumed, totals.
fn facts(h: &mut String, t: &Text<'_>, s: &SessionArtefacts, result: &Value) {
    let mut row = |k: &str, v: String| {
        let _ = write!(h, "<dt>{}</dt><dd>{v}</dd>", escape(k));
    };
    row("Session", escape(&s.session_id));
    if let Some(m) = str_of(result, "mode") {
        row("Mode", escape(m));
    }
    if let Some(u) = str_of(result, "start_url") {
        row("Start URL", format!("<code>{}</code>", t.show(u)));
    }
    if let Some(u) = str_of(result, "final_url") {
        row("Final URL", format!("<code>{}</code>", t.show(u)));
    }
    for (label, key) in [("Started", "started_at"), ("Finished", "finished_at")] {
        if let Some(v) = str_of(result, key) {
            row(label, t.show(v));
        }
    }
    // A run continued from its checkpoint reads as one run, with where it
    // moved on.
    for mark in result
        .get("resumed")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let mut line = format!(
            "at step {} ({}) on {}",
            num(mark, "at_step").unwrap_or(0.0),
            str_of(mark, "reason").unwrap_or("?"),
            str_of(mark, "worker").unwrap_or("?")
        );
        if let Some(f) = str_of(mark, "in_flight") {
            let _ = write!(line, "; {f}");
        }
        if mark.get("state_restored").and_then(Value::as_bool) == Some(false) {
            line.push_str("; cookies and storage not carried over");
        }
        row("Resumed", t.show(&line));
    }
    if let Some(tot) = result.get("totals") {
        let g = |k: &str| num(tot, k).unwrap_or(0.0);
        let mut line = format!(
            "{} / {} steps, {} attempts, {} LLM calls, {} tokens ({} prompt + {} completion), {:.0} ms",
            g("steps_ok"),
            g("steps"),
            g("attempts"),
            g("llm_calls"),
            g("total_tokens"),
            g("prompt_tokens"),
            g("completion_tokens"),
            g("duration_ms")
        );
        for (k, label) in [("cache_hits", "cache hits"), ("healed", "healed")] {
            if let Some(n) = num(tot, k) {
                let _ = write!(line, ", {n} {label}");
            }
        }
        row("Totals", escape(&line));
    }
}

/// The steps to show: the result's outcomes, else one per recorded step.
fn steps(s: &SessionArtefacts, result: &Value) -> Vec<(u32, Value)> {
    if let Some(list) = result.get("steps").and_then(Value::as_array)
        && !list.is_empty()
    {
        return list
            .iter()
            .enumerate()
            .map(|(i, o)| {
                let n = o
                    .get("step_number")
                    .and_then(Value::as_u64)
                    .unwrap_or(i as u64 + 1);
                (n as u32, o.clone())
            })
            .collect();
    }
    let mut numbers: Vec<u32> = s.records.iter().map(|r| r.step_number).collect();
    numbers.dedup();
    numbers
        .into_iter()
        .map(|n| {
            let rec = s.records.iter().rfind(|r| r.step_number == n);
            let status = if rec.is_some_and(|r| r.completed) {
                "completed"
            } else {
                "failed"
            };
            let instruction = rec.map(|r| r.original_instruction.clone()).unwrap_or_default();
            (
                n,
                serde_json::json!({ "status": status, "instruction": instruction }),
            )
        })
        .collect()
}

fn value_text(v: &StepValue) -> String {
    match v {
        StepValue::Placeholder(p) => p.clone(),
        StepValue::Literal(l) => format!("{l:?}"),
    }
}

fn decision_text(r: &StepRecord) -> String {
    let Some(d) = &r.decision else {
        return "no decision".into();
    };
    let mut out = match (&d.locator, &d.url) {
        (Some(l), _) => format!("{l} → {}", d.action),
        (None, Some(u)) => format!("{} {u}", d.action),
        (None, None) => d.action.clone(),
    };
    if let Some(v) = &d.value {
        let _ = write!(out, " = {}", value_text(v));
    }
    out
}

fn step(h: &mut String, t: &Text<'_>, s: &SessionArtefacts, n: u32, o: &Value) {
    let status = str_of(o, "status").unwrap_or("unknown");
    let _ = write!(
        h,
        "<section class=\"step {cls}\" id=\"step-{n}\"><h3>Step {n}: {ins} <span class=\"status {cls}\">{cls}</span>",
        cls = escape(status),
        ins = t.show(
            str_of(o, "instruction")
                .unwrap_or_default()
                .trim_start_matches("[]")
                .trim()
        )
    );
    if let Some(src) = str_of(o, "source") {
        let label = match src {
            "cache" => "cache hit",
            "healed" => "healed",
            "llm" => "LLM",
            other => other,
        };
        let _ = write!(h, "<span class=\"badge source\">{}</span>", escape(label));
    }
    h.push_str("</h3>");
    let _ = write!(
        h,
        "<p class=\"muted\">{} attempts · {:.0} ms · {} prompt + {} completion tokens</p>",
        num(o, "attempts").unwrap_or(0.0),
        num(o, "duration_ms").unwrap_or(0.0),
        num(o, "prompt_tokens").unwrap_or(0.0),
        num(o, "completion_tokens").unwrap_or(0.0)
    );
    if let Some(reasons) = o.get("reasons").and_then(Value::as_array)
        && !reasons.is_empty()
    {
        h.push_str("<ul class=\"error\">");
        for r in reasons.iter().filter_map(Value::as_str) {
            let _ = write!(h, "<li>{}</li>", t.show(r));
        }
        h.push_str("</ul>");
    }
    step_pictures(h, s, n);
    attempts_table(h, t, s, n);
    let error_prefix = format!("errors/step-{n}-");
    let errors: Vec<&String> = s.files.iter().filter(|f| f.starts_with(&error_prefix)).collect();
    if !errors.is_empty() {
        h.push_str("<p class=\"error\">Failure artefacts: ");
        let links: Vec<String> = errors.iter().map(|f| link(f, f)).collect();
        h.push_str(&links.join(", "));
        h.push_str("</p>");
    }
    h.push_str("</section>\n");
}

/// The page before and after step `n`, and at its failure.
fn step_pictures(h: &mut String, s: &SessionArtefacts, n: u32) {
    // Before: the previous step's screenshot, or the first page's.
    let before = if n <= 1 {
        "screenshots/start.png".to_string()
    } else {
        format!("screenshots/step_{}.png", n - 1)
    };
    let after = format!("screenshots/step_{n}.png");
    let mut shots = Vec::new();
    if s.has(&before) {
        shots.push(thumb(&before, "before"));
    }
    if s.has(&after) {
        shots.push(thumb(&after, "after"));
    }
    let failure_prefix = format!("screenshots/step-{n}-");
    for f in s.files.iter().filter(|f| f.starts_with(&failure_prefix)) {
        shots.push(thumb(f, "at the failure"));
    }
    if !shots.is_empty() {
        let _ = write!(h, "<div class=\"shots\">{}</div>", shots.join(""));
    }
}

/// One row per attempt of step `n`: decision, matches, result, tokens, time.
fn attempts_table(h: &mut String, t: &Text<'_>, s: &SessionArtefacts, n: u32) {
    let records: Vec<&StepRecord> = s.records.iter().filter(|r| r.step_number == n).collect();
    if !records.is_empty() {
        h.push_str(
            "<table><tr><th>#</th><th>Decision</th><th>Matches</th><th>Result</th><th>Tokens</th><th>Time (ms)</th></tr>",
        );
        for r in records {
            let mut result = if r.completed {
                "completed".to_string()
            } else if r.result.success {
                "acted, not completed".to_string()
            } else {
                "failed".to_string()
            };
            if let Some(e) = &r.result.error {
                let _ = write!(result, " ({e})");
            }
            if let Some(reason) = &r.reason {
                let _ = write!(result, ": {reason}");
            }
            if let Some(e) = &r.emergency {
                let _ = write!(result, " [emergency: {} on {}]", e.trigger, e.model);
            }
            let d = &r.durations;
            let _ = write!(
                h,
                "<tr><td>{}</td><td><code>{}</code>{}</td><td>{}</td><td>{}</td><td>{} + {}</td>\
                 <td title=\"snapshot {:.0}, decision {:.0}, precheck {:.0}, action {:.0}, settle {:.0}, judge {:.0}\">{:.0}</td></tr>",
                r.attempt,
                t.show(&decision_text(r)),
                r.decision
                    .as_ref()
                    .and_then(|d| d.rationale.as_deref())
                    .map(|why| format!("<br><span class=\"muted\">{}</span>", t.show(why)))
                    .unwrap_or_default(),
                r.precheck_count
                    .map(|c| c.to_string())
                    .unwrap_or_else(|| "–".into()),
                t.show(&result),
                r.tokens.prompt,
                r.tokens.completion,
                d.snapshot_ms,
                d.decision_ms,
                d.precheck_ms,
                d.action_ms,
                d.settle_ms,
                d.judge_ms,
                d.total_ms
            );
        }
        h.push_str("</table>");
    }
}
