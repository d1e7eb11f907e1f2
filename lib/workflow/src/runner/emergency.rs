//! Emergency mode (seed 001): when a step keeps failing, stalls, or the
//! small model's confidence stays low, the rest of that step is decided by
//! the larger model from the light DOM (the body without scripts, styles
//! or inline styles, size-capped) with the wider selector set (label,
//! placeholder, CSS, nearness to a text). The next step is back on the small
//! model. The triggers and the light DOM live here; the switch is the
//! runner's.

use std::collections::VecDeque;
use std::sync::LazyLock;
use std::time::Duration;

use oxwright_jobs::StepEmergency;
use regex::Regex;

use super::Run;

/// Failed attempts that switch a step to emergency mode (seed: 3).
pub(super) const FAILURE_LIMIT: u32 = 3;
/// Time without a successful action that switches it (seed: 30 s).
pub(super) const STALL: Duration = Duration::from_secs(30);
/// Moving-average confidence under which it switches (seed: 0.3) …
pub(super) const CONFIDENCE_FLOOR: f64 = 0.3;
/// … over this many decisions (seed: the last 5).
pub(super) const CONFIDENCE_WINDOW: usize = 5;
/// Attempts the larger model gets once the step is in emergency mode.
pub(super) const EMERGENCY_ATTEMPTS: u32 = 2;
/// Cap on the light DOM, in characters.
pub(super) const LIGHT_DOM_MAX_CHARS: usize = 24_000;

/// What switched a step to emergency mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Trigger {
    Failures,
    Stall,
    LowConfidence,
}

impl Trigger {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Trigger::Failures => "failures",
            Trigger::Stall => "stall",
            Trigger::LowConfidence => "low_confidence",
        }
    }
}

/// The small model's last decision confidences, across steps.
#[derive(Debug, Default)]
pub(super) struct Confidence {
    window: VecDeque<f64>,
}

impl Confidence {
    pub(super) fn push(&mut self, c: f64) {
        self.window.push_back(c.clamp(0.0, 1.0));
        while self.window.len() > CONFIDENCE_WINDOW {
            self.window.pop_front();
        }
    }

    /// The average over a full window; none until there are five decisions.
    pub(super) fn average(&self) -> Option<f64> {
        (self.window.len() == CONFIDENCE_WINDOW)
            .then(|| self.window.iter().sum::<f64>() / CONFIDENCE_WINDOW as f64)
    }

    pub(super) fn clear(&mut self) {
        self.window.clear();
    }
}

/// Returns the trigger and its reason when the step should switch.
pub(super) fn trigger(
    failures: u32,
    since_progress: Duration,
    conf: &Confidence,
) -> Option<(Trigger, String)> {
    if failures >= FAILURE_LIMIT {
        return Some((Trigger::Failures, format!("{failures} failed attempts")));
    }
    if since_progress > STALL {
        return Some((
            Trigger::Stall,
            format!(
                "no successful action for {:.0} s (limit {} s)",
                since_progress.as_secs_f64(),
                STALL.as_secs()
            ),
        ));
    }
    match conf.average() {
        Some(avg) if avg < CONFIDENCE_FLOOR => Some((
            Trigger::LowConfidence,
            format!(
                "average confidence {avg:.2} over the last {CONFIDENCE_WINDOW} decisions (floor {CONFIDENCE_FLOOR})"
            ),
        )),
        _ => None,
    }
}

static BODY: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"(?is)<body\b[^>]*>(.*)</body>").expect("regex"));
static DROP: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?is)<script\b.*?</script\s*>|<style\b.*?</style\s*>|<noscript\b.*?</noscript\s*>|<template\b.*?</template\s*>|<link\b[^>]*>|<!--.*?-->")
        .expect("regex")
});
static SVG: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"(?is)<svg\b.*?</svg\s*>").expect("regex"));
/// Inline styles, event handlers, and input values (hidden tokens).
static ATTRS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?is)\s(?:style|on[a-z]+|value|nonce|integrity)\s*=\s*(?:"[^"]*"|'[^']*'|[^\s>]+)"#)
        .expect("regex")
});
static SPACE: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\s{2,}").expect("regex"));

/// The light DOM of `html`: the body with scripts, styles, stylesheets,
/// comments, inline styles, handlers and input values removed, SVG bodies
/// emptied, whitespace collapsed, cut at `max_chars` with a mark.
pub(super) fn light_dom(html: &str, max_chars: usize) -> String {
    let body = BODY
        .captures(html)
        .and_then(|c| c.get(1))
        .map(|m| m.as_str())
        .unwrap_or(html);
    let out = DROP.replace_all(body, "");
    let out = SVG.replace_all(&out, "<svg></svg>");
    let out = ATTRS.replace_all(&out, "");
    let out = SPACE.replace_all(out.trim(), " ");
    if out.chars().count() <= max_chars {
        return out.into_owned();
    }
    let cut: String = out.chars().take(max_chars).collect();
    format!("{cut}...<truncated>")
}

/// Roles a `near` decision without a role never lands on: they are not controls.
const NOT_CONTROLS: &[&str] = &["heading", "img", "text", "paragraph", "generic"];

/// The ref of the control (of `role`, else any control) nearest the first
/// snapshot line that contains `text`, in reading order (after it first on
/// a tie): the seed's proximity selector, resolved on the snapshot.
pub(super) fn near_ref(snapshot: &str, text: &str, role: Option<&str>) -> Option<String> {
    let lines: Vec<&str> = snapshot.lines().collect();
    let needle = text.trim().to_lowercase();
    let anchor = lines.iter().position(|l| l.to_lowercase().contains(&needle))?;
    let fits = |line: &str| -> Option<String> {
        let item = line.trim_start().strip_prefix("- ")?;
        let line_role = item.split([' ', ':']).next()?;
        let ok = match role {
            Some(r) => line_role.eq_ignore_ascii_case(r),
            None => !NOT_CONTROLS.contains(&line_role),
        };
        if !ok {
            return None;
        }
        let start = item.find("[ref=")? + 5;
        let end = item[start..].find(']')? + start;
        Some(item[start..end].to_string())
    };
    for d in 0..lines.len() {
        if let Some(r) = lines.get(anchor + d).and_then(|l| fits(l)) {
            return Some(r);
        }
        if d > 0
            && let Some(r) = anchor.checked_sub(d).and_then(|i| fits(lines[i]))
        {
            return Some(r);
        }
    }
    None
}

impl Run<'_> {
    /// Switches step `number` to emergency mode and says why.
    pub(super) fn emergency_on(&mut self, number: u32, trigger: Trigger, reason: String) -> StepEmergency {
        let model = self.llm.as_ref().map(|m| m.model_name(true)).unwrap_or_default();
        tracing::info!(step = number, trigger = trigger.as_str(), reason = %reason, model = %model, "emergency mode on");
        self.log.say(&format!(
            "  ⚠ emergency mode for step {number} ({}): {reason}; deciding with {model} from the light DOM",
            trigger.as_str()
        ));
        StepEmergency {
            trigger: trigger.as_str().to_string(),
            reason,
            model,
        }
    }

    /// Back to the small model after an emergency step.
    pub(super) fn emergency_off(&mut self, number: u32, e: &StepEmergency) {
        // The small model starts again with a clean slate.
        self.confidence.clear();
        let model = self.llm.as_ref().map(|m| m.model_name(false)).unwrap_or_default();
        tracing::info!(step = number, trigger = %e.trigger, model = %model, "emergency mode off");
        self.log.say(&format!(
            "  emergency mode off after step {number}: back to {model}"
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn triggers_in_seed_order() {
        let mut c = Confidence::default();
        assert!(trigger(2, Duration::from_secs(29), &c).is_none());
        assert_eq!(trigger(3, Duration::ZERO, &c).unwrap().0, Trigger::Failures);
        assert_eq!(trigger(0, Duration::from_secs(31), &c).unwrap().0, Trigger::Stall);
        for _ in 0..4 {
            c.push(0.1);
        }
        assert!(
            trigger(0, Duration::ZERO, &c).is_none(),
            "a window of four is not five"
        );
        c.push(0.1);
        assert_eq!(trigger(0, Duration::ZERO, &c).unwrap().0, Trigger::LowConfidence);
        for _ in 0..5 {
            c.push(0.9);
        }
        assert!(trigger(0, Duration::ZERO, &c).is_none(), "the average moves");
    }

    #[test]
    fn light_dom_keeps_structure_and_drops_the_rest() {
        let html = r#"<html><head><style>p{}</style></head><body class="b">
            <script>var token = "abc";</script><!-- note -->
            <form><label for="e">E-mail</label>  <input id="e" style="color:red" value="csrf-123" onclick="x()">
            <link rel="stylesheet" href="/s.css"><svg><path d="M0"/></svg></form></body></html>"#;
        let dom = light_dom(html, 10_000);
        assert!(dom.contains(r#"<label for="e">E-mail</label>"#), "{dom}");
        assert!(dom.contains(r#"<input id="e">"#), "{dom}");
        for gone in [
            "script",
            "token",
            "style",
            "note",
            "csrf-123",
            "onclick",
            "stylesheet",
            "path",
        ] {
            assert!(!dom.contains(gone), "{gone} in {dom}");
        }
        assert!(light_dom(&"<p>x</p>".repeat(100), 50).ends_with("...<truncated>"));
    }

    #[test]
    fn near_finds_the_control_beside_a_text() {
        let snap = "- heading \"Contact\" [level=1]\n- text: Your e-mail\n- textbox [ref=e4]\n- button \"Send\" [ref=e5]";
        assert_eq!(
            near_ref(snap, "your e-mail", Some("textbox")).as_deref(),
            Some("e4")
        );
        assert_eq!(near_ref(snap, "Contact", Some("button")).as_deref(), Some("e5"));
        assert_eq!(near_ref(snap, "Send", None).as_deref(), Some("e5"));
        assert_eq!(near_ref(snap, "nowhere", None), None);
    }
}
