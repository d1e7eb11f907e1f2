//! Checks: a status board with each check's state and a strip of its
//! recent runs, and a check's page with its pass rates, its durations as a
//! small chart, the step that fails most, and each run linked to its
//! sessions. Checks come from the daemon's check files and from the store
//! (the runs `oxwright check run` recorded), so a view-only dashboard over
//! a local output directory shows them too.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::sync::Arc;

use axum::extract::{Path, State};
use axum::response::Response;
use chrono::Utc;
use oxwright_checks::{AttemptStatus, CheckRun};

use super::html::{Nav, enc, esc, link, ms, short};
use super::page;
use crate::api::error::{ApiError, not_found, unavailable};
use crate::api::state::AppState;
use crate::checks::{CheckState, Health, history};

/// Runs a board row reads: its strip and its recent pass rate.
const BOARD_RUNS: usize = 30;
/// Runs a check's page reads: its chart, table and rates.
const PAGE_RUNS: usize = 500;

/// `GET /ui/checks`.
pub(super) async fn list(State(state): State<Arc<AppState>>) -> Response {
    match board(&state).await {
        Ok(body) => page(&state, "Checks", Nav::Checks, &body),
        Err(err) => err.page(&state),
    }
}

async fn names(state: &AppState) -> Result<BTreeSet<String>, ApiError> {
    let mut names: BTreeSet<String> = state.checks.checks().keys().cloned().collect();
    names.extend(
        history::stored_names(state.store.as_ref())
            .await
            .map_err(unavailable)?,
    );
    Ok(names)
}

async fn board(state: &AppState) -> Result<String, ApiError> {
    let names = names(state).await?;
    let mut body = String::new();
    if names.is_empty() {
        body.push_str(
            "<p>No check yet: run check files with <code>oxwright check run</code>, or give \
             <code>oxwright scheduler --checks DIR</code>.</p>",
        );
        return Ok(body);
    }
    body.push_str(
        "<table class=\"checks\"><thead><tr><th>Check</th><th>State</th><th>Last run</th>\
         <th>Passed (recent runs)</th><th>Recent runs, oldest first</th><th>Schedule</th><th>Tags</th></tr></thead><tbody>",
    );
    for name in &names {
        let runs = state.checks.runs(name, BOARD_RUNS).await.map_err(unavailable)?;
        let check_state = state.checks.state(name).await;
        let health = health_of(&check_state, &runs);
        let last = runs.first().map_or_else(
            || "—".to_string(),
            |r| {
                format!(
                    "{} {}",
                    r.status.as_str(),
                    esc(&r.started_at.format("%Y-%m-%d %H:%M:%S UTC").to_string())
                )
            },
        );
        let rate = percent(history::pass_rate(&runs, chrono::DateTime::<Utc>::MIN_UTC));
        let loaded = state.checks.checks().get(name);
        let schedule = loaded
            .and_then(|c| c.schedule.as_ref())
            .map_or_else(|| "—".to_string(), |s| esc(&s.to_string()));
        let tags = loaded.map_or_else(
            || runs.first().map(|r| r.tags.join(", ")).unwrap_or_default(),
            |c| c.tags.join(", "),
        );
        let _ = write!(
            body,
            "<tr class=\"{health}\"><td>{link}</td><td><span class=\"health {health}\">{health}</span>{running}</td>\
             <td>{last}</td><td>{rate}</td><td>{strip}</td><td>{schedule}</td><td>{tags}</td></tr>",
            link = link(&format!("/ui/checks/{}", enc(name)), name),
            running = if state.checks.running(name).await {
                " <span class=\"meta\">running</span>"
            } else {
                ""
            },
            strip = strip(&runs),
            tags = esc(&tags),
        );
    }
    body.push_str("</tbody></table>");
    Ok(body)
}

/// The state to show: the daemon's, or for a check only `oxwright check
/// run` ran (no state stored), its last run's outcome.
fn health_of(state: &CheckState, runs: &[CheckRun]) -> &'static str {
    match (state.health, runs.first()) {
        (Health::Unknown, Some(run)) if run.status.is_pass() => "passing",
        (Health::Unknown, Some(_)) => "failing",
        (Health::Unknown, None) => "unknown",
        (Health::Passing, _) => "passing",
        (Health::Failing, _) => "failing",
        (Health::Recovered, _) => "recovered",
    }
}

fn percent(rate: Option<f64>) -> String {
    rate.map_or_else(|| "—".to_string(), |r| format!("{:.0} %", r * 100.0))
}

/// One square per run, oldest first, each linked to the session of its
/// last attempt.
fn strip(runs: &[CheckRun]) -> String {
    let mut out = String::from("<span class=\"strip\">");
    for run in runs.iter().rev() {
        let title = format!(
            "{} · {} · {}",
            run.status.as_str(),
            run.started_at.format("%Y-%m-%d %H:%M:%S UTC"),
            ms(run.duration_ms as f64)
        );
        let _ = match run.last_session() {
            Some(session) => write!(
                out,
                "<a class=\"run {}\" href=\"/ui/sessions/{}\" title=\"{}\" aria-label=\"{}\"></a>",
                run.status.as_str(),
                enc(session),
                esc(&title),
                esc(&title)
            ),
            None => write!(
                out,
                "<span class=\"run {}\" title=\"{}\"></span>",
                run.status.as_str(),
                esc(&title)
            ),
        };
    }
    out.push_str("</span>");
    out
}

/// `GET /ui/checks/{name}`.
pub(super) async fn show(State(state): State<Arc<AppState>>, Path(name): Path<String>) -> Response {
    match check_page(&state, &name).await {
        Ok(body) => page(&state, &format!("Check {name}"), Nav::Checks, &body),
        Err(err) => err.page(&state),
    }
}

async fn check_page(state: &AppState, name: &str) -> Result<String, ApiError> {
    if oxwright_checks::validate_name(name).is_err() || !names(state).await?.contains(name) {
        return Err(not_found(format!("no check is named {name:?}")));
    }
    let runs = state.checks.runs(name, PAGE_RUNS).await.map_err(unavailable)?;
    let check_state = state.checks.state(name).await;
    let (day, week) = history::pass_rates(&runs, Utc::now());
    let mut body = String::from("<dl class=\"meta\">");
    let mut row = |term: &str, value: String| {
        let _ = write!(body, "<dt>{term}</dt><dd>{value}</dd>");
    };
    let health = health_of(&check_state, &runs);
    row(
        "State",
        format!("<span class=\"health {health}\">{health}</span>"),
    );
    if check_state.consecutive_failures > 0 {
        row("Failed in a row", check_state.consecutive_failures.to_string());
    }
    if let Some(check) = state.checks.checks().get(name) {
        row("Start URL", esc(check.url.as_str()));
        if let Some(schedule) = &check.schedule {
            row("Schedule", esc(&schedule.to_string()));
        }
        let file = check.path.file_name().unwrap_or(check.path.as_os_str());
        row("File", esc(&file.to_string_lossy()));
    }
    row("Passed, last 24 h", percent(day));
    row("Passed, last 7 days", percent(week));
    if runs.len() == PAGE_RUNS {
        row("Read", format!("the last {PAGE_RUNS} runs"));
    }
    if check_state.skipped_ticks > 0 {
        row(
            "Ticks skipped (last run still going)",
            check_state.skipped_ticks.to_string(),
        );
    }
    if let Some((index, text, count)) = history::most_failing_step(&runs) {
        row(
            "Fails most at",
            format!(
                "step {index} <code>{}</code> ({count} {})",
                esc(&text),
                if count == 1 { "run" } else { "runs" }
            ),
        );
    }
    body.push_str("</dl>");
    if runs.is_empty() {
        body.push_str("<p>No run yet.</p>");
        return Ok(body);
    }
    body.push_str("<h2>Duration</h2>");
    body.push_str(&chart(&runs));
    body.push_str(
        "<h2>Runs</h2><table class=\"runs\"><thead><tr><th>Started</th><th>Status</th><th>Duration</th>\
         <th>Trigger</th><th>Failed step</th><th>Error</th><th>Metadata</th><th>Sessions</th></tr></thead><tbody>",
    );
    for run in &runs {
        let failed = run.failed_step.as_ref().map_or_else(String::new, |s| {
            format!("{} <code>{}</code>", s.index, esc(&short(&s.text, 80)))
        });
        let error = match (&run.failed_step, &run.error) {
            (Some(step), _) => format!("{}: {}", esc(&step.error_kind), esc(&short(&step.message, 160))),
            (None, Some(e)) => format!("{}: {}", e.kind.as_str(), esc(&short(&e.message, 160))),
            (None, None) => String::new(),
        };
        let metadata = run
            .metadata
            .iter()
            .map(|(k, v)| format!("{}={}", esc(k), esc(&short(v, 60))))
            .collect::<Vec<_>>()
            .join("<br>");
        let sessions = run
            .attempts
            .iter()
            .enumerate()
            .map(|(i, a)| {
                link(
                    &format!("/ui/sessions/{}", enc(&a.session_id)),
                    &format!("attempt {} ({})", i + 1, attempt_word(a.status)),
                )
            })
            .collect::<Vec<_>>()
            .join("<br>");
        let status = run.status.as_str();
        let _ = write!(
            body,
            "<tr class=\"{status}\"><td>{}</td><td>{status}</td><td>{}</td><td>{}</td><td>{failed}</td>\
             <td>{error}</td><td>{metadata}</td><td>{sessions}</td></tr>",
            esc(&run.started_at.format("%Y-%m-%d %H:%M:%S UTC").to_string()),
            ms(run.duration_ms as f64),
            esc(&format!("{:?}", run.trigger).to_lowercase()),
        );
    }
    body.push_str("</tbody></table>");
    Ok(body)
}

/// The runs' durations, oldest first, as a small SVG chart: a line, and a
/// dot per run coloured by its status.
fn chart(runs: &[CheckRun]) -> String {
    const W: f64 = 640.0;
    const H: f64 = 120.0;
    const PAD: f64 = 6.0;
    let runs: Vec<&CheckRun> = runs.iter().rev().collect();
    let top = runs.iter().map(|r| r.duration_ms).max().unwrap_or(1).max(1) as f64;
    let step = if runs.len() > 1 {
        (W - 2.0 * PAD) / (runs.len() - 1) as f64
    } else {
        0.0
    };
    let point = |i: usize, r: &CheckRun| {
        (
            PAD + step * i as f64,
            H - PAD - (H - 2.0 * PAD) * r.duration_ms as f64 / top,
        )
    };
    let line = runs
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let (x, y) = point(i, r);
            format!("{x:.1},{y:.1}")
        })
        .collect::<Vec<_>>()
        .join(" ");
    let mut out = format!(
        "<figure class=\"chart\"><svg viewBox=\"0 0 {W} {H}\" width=\"{W}\" height=\"{H}\" role=\"img\" \
         aria-label=\"Duration of the last {} runs, longest {}\"><polyline class=\"line\" points=\"{line}\"/>",
        runs.len(),
        ms(top)
    );
    for (i, run) in runs.iter().enumerate() {
        let (x, y) = point(i, run);
        let _ = write!(
            out,
            "<circle class=\"{}\" cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"3\"><title>{}</title></circle>",
            run.status.as_str(),
            esc(&format!(
                "{} · {} · {}",
                run.started_at.format("%Y-%m-%d %H:%M:%S UTC"),
                run.status.as_str(),
                ms(run.duration_ms as f64)
            ))
        );
    }
    let _ = write!(
        out,
        "</svg><figcaption class=\"meta\">Duration per run, oldest left; the top is {}.</figcaption></figure>",
        ms(top)
    );
    out
}

fn attempt_word(status: AttemptStatus) -> &'static str {
    match status {
        AttemptStatus::Passed => "passed",
        AttemptStatus::Failed => "failed",
    }
}
