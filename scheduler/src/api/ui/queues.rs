//! Schedules and queues: each cron schedule with its next and last run and
//! its last batch; the depth of each job queue; the dead letters with
//! their job and error, re-driven one at a time or all at once.

use std::fmt::Write as _;
use std::str::FromStr;
use std::sync::Arc;

use axum::extract::State;
use axum::response::{IntoResponse, Redirect, Response};
use bytes::Bytes;
use chrono::Utc;
use oxwright_jobs::{Job, JobKind};

use super::html::{Nav, csrf_field, enc, esc, link, short};
use super::{form, page, refusal};
use crate::api::error::unavailable;
use crate::api::state::AppState;

/// `GET /ui/queues`.
pub(super) async fn show(State(state): State<Arc<AppState>>) -> Response {
    let mut body = String::new();
    if state.opts.api.view_only {
        body.push_str(
            "<p>This dashboard reads the artefact store only: schedules, queues and dead letters are on the \
             dashboard of <code>oxwright scheduler</code>.</p>",
        );
        return page(&state, "Schedules and queues", Nav::Queues, &body);
    }
    schedules(&state, &mut body).await;
    body.push_str("<h2>Job queues</h2><table class=\"queues\"><thead><tr><th>Kind</th><th>Ready</th></tr></thead><tbody>");
    for kind in [JobKind::Fetch, JobKind::Sitemap, JobKind::Workflow] {
        let depth = match state.queue.depth(kind).await {
            Ok(n) => n.to_string(),
            Err(err) => format!("unknown: {err}"),
        };
        let _ = write!(
            body,
            "<tr><td>{}</td><td>{}</td></tr>",
            kind.as_str(),
            esc(&depth)
        );
    }
    body.push_str("</tbody></table>");
    if let Err(err) = dead_letters(&state, &mut body).await {
        let _ = write!(
            body,
            "<p class=\"error\">Dead letters unreadable: {}</p>",
            esc(&err)
        );
    }
    page(&state, "Schedules and queues", Nav::Queues, &body)
}

async fn schedules(state: &AppState, body: &mut String) {
    body.push_str("<h2>Schedules</h2>");
    if state.opts.schedules.is_empty() {
        body.push_str("<p>No schedule configured (<code>[[scheduler.schedules]]</code>).</p>");
        return;
    }
    let batches = state.store.list("batches/").await.unwrap_or_default();
    body.push_str(
        "<table class=\"schedules\"><thead><tr><th>Name</th><th>Cron (UTC)</th><th>Kind</th><th>Targets</th>\
         <th>Next run</th><th>Last batch</th></tr></thead><tbody>",
    );
    for schedule in &state.opts.schedules {
        let next = cron::Schedule::from_str(&schedule.cron)
            .ok()
            .and_then(|c| c.upcoming(Utc).next())
            .map_or_else(
                || "—".to_owned(),
                |t| t.format("%Y-%m-%d %H:%M:%S UTC").to_string(),
            );
        // Schedule batch ids are `<name>-<time>-<random>`: the greatest is the last.
        let prefix = format!("batches/{}-", schedule.name);
        let last = batches
            .iter()
            .filter_map(|k| k.strip_prefix(&prefix)?.split_once('/'))
            .map(|(rest, _)| rest)
            .max()
            .map(|rest| format!("{}-{rest}", schedule.name));
        let last = last.map_or_else(
            || "none yet".to_owned(),
            |id| link(&format!("/ui/batches/{}", enc(&id)), &id),
        );
        let _ = write!(
            body,
            "<tr><td>{}</td><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&schedule.name),
            esc(&schedule.cron),
            schedule.job.kind.as_str(),
            esc(&short(&schedule.job.urls.join(" "), 200)),
            esc(&next),
            last
        );
    }
    body.push_str("</tbody></table>");
}

async fn dead_letters(state: &AppState, body: &mut String) -> Result<(), String> {
    let letters = state.queue.dead_letters().await.map_err(|e| e.to_string())?;
    let csrf = csrf_field(state.ui.csrf());
    let acts = !state.opts.api.view_only;
    let _ = write!(body, "<h2>Dead letters ({})</h2>", letters.len());
    if letters.is_empty() {
        body.push_str("<p>None.</p>");
        return Ok(());
    }
    if acts {
        let _ = write!(
            body,
            "<form method=\"post\" action=\"/ui/queues/redrive\" class=\"actions\">{csrf}\
             <button>Re-drive all to their queues</button></form>"
        );
    }
    let _ = write!(
        body,
        "<table class=\"dead\"><thead><tr><th>Dead-lettered</th><th>Kind</th><th>Job</th><th>URL</th><th>Batch</th>\
         <th>Error</th><th>Message</th><th></th></tr></thead><tbody>"
    );
    for letter in &letters {
        let job: Option<Job> = serde_json::from_slice(&letter.message.body).ok();
        let id = letter.message.message_id.clone().unwrap_or_default();
        let batch = job
            .as_ref()
            .and_then(|j| j.batch_id.as_deref())
            .map_or_else(String::new, |b| link(&format!("/ui/batches/{}", enc(b)), b));
        let redrive = if id.is_empty() || !acts {
            String::new()
        } else {
            format!(
                "<form method=\"post\" action=\"/ui/queues/redrive\">{csrf}\
                 <input type=\"hidden\" name=\"message_id\" value=\"{}\"><button>Re-drive</button></form>",
                esc(&id)
            )
        };
        let _ = write!(
            body,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"url\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            letter.dead_lettered_at.format("%Y-%m-%d %H:%M:%S UTC"),
            letter.message.kind.as_str(),
            esc(&id),
            esc(job.as_ref().map_or("(undecodable body)", |j| j.url())),
            batch,
            esc(&letter.reason.kind),
            esc(&short(&letter.reason.message, 400)),
            redrive,
        );
    }
    body.push_str("</tbody></table>");
    Ok(())
}

/// `POST /ui/queues/redrive` (`message_id` for one, none for all).
pub(super) async fn redrive(State(state): State<Arc<AppState>>, body: Bytes) -> Response {
    let form = form(&body);
    if let Some(refused) = refusal(&state, &form) {
        return refused;
    }
    let one = form
        .get("message_id")
        .map(String::as_str)
        .filter(|id| !id.is_empty());
    match state.queue.redrive(one).await {
        Ok(moved) => {
            tracing::info!(moved, message_id = one.unwrap_or("all"), "dead letters re-driven");
            Redirect::to("/ui/queues").into_response()
        }
        Err(err) => unavailable(err).page(&state),
    }
}
