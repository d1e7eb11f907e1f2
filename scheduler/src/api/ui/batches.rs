//! Batches: the list with live progress, a batch's jobs filtered by
//! status and error kind, cancelling, and submitting the failed jobs again.

use std::collections::{BTreeSet, HashMap};
use std::fmt::Write as _;
use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Redirect, Response};
use bytes::Bytes;
use chrono::{DateTime, Utc};
use futures::StreamExt;
use oxwright_jobs::{Job, JobReport, JobSpec, ReportStatus, keys};
use serde::Serialize;

use super::html::{self, Nav, enc, esc, link, short};
use super::{form, page, refusal};
use crate::api::error::{ApiError, conflict, unavailable};
use crate::api::state::AppState;
use crate::batch::check_batch_id;
use crate::submit::{BatchRecord, RESUBMIT_SOURCE, StoredJob, read_batch_record, submit_batch};
use crate::tracker::BatchStatus;

/// Batches on one page of the list.
const BATCHES_PER_PAGE: usize = 25;
/// Jobs on one page of a batch.
pub(crate) const JOBS_PER_PAGE: usize = 100;
/// Batches one progress request may ask about.
const MAX_PROGRESS_IDS: usize = 100;

/// Every batch id in the store, newest first (by the submission time in
/// the id; ids without one last, by name).
async fn batch_ids(state: &AppState) -> Result<Vec<String>, ApiError> {
    let keys = state.store.list("batches/").await.map_err(unavailable)?;
    let ids: BTreeSet<String> = keys
        .iter()
        .filter_map(|k| k.strip_prefix("batches/")?.split_once('/'))
        .map(|(id, _)| id.to_owned())
        .collect();
    let mut ids: Vec<String> = ids.into_iter().collect();
    ids.sort_by(|a, b| stamp(b).cmp(stamp(a)).then_with(|| b.cmp(a)));
    Ok(ids)
}

/// The `YYYYMMDDTHHMMSSZ` part of a batch id.
fn stamp(id: &str) -> &str {
    id.split('-')
        .find(|part| {
            let b = part.as_bytes();
            b.len() == 16
                && b[8] == b'T'
                && b[15] == b'Z'
                && b[..8].iter().chain(&b[9..15]).all(u8::is_ascii_digit)
        })
        .unwrap_or("")
}

/// What the list and a batch page show of one batch.
struct Batch {
    id: String,
    status: BatchStatus,
    state: &'static str,
    record: Option<BatchRecord>,
}

/// Live counts of one batch, as the script reads them.
#[derive(Debug, Serialize)]
pub(crate) struct Progress {
    total: usize,
    done: usize,
    ok: usize,
    failed: usize,
    kinds: String,
    state: &'static str,
    rate: String,
    eta: String,
}

impl Batch {
    async fn load(state: &AppState, id: &str) -> Result<Option<Self>, ApiError> {
        let record = read_batch_record(state.store.as_ref(), id)
            .await
            .map_err(unavailable)?;
        let status = state.batches().status(id, record.as_ref()).await?;
        let Some(status) = status else {
            return Ok(None);
        };
        let state_name = if state.batches().is_cancelled(id).await? {
            "cancelled"
        } else if status.complete {
            "completed"
        } else {
            "running"
        };
        Ok(Some(Self {
            id: id.to_owned(),
            status,
            state: state_name,
            record,
        }))
    }

    fn created_at(&self) -> Option<DateTime<Utc>> {
        self.record.as_ref().map(|r| r.created_at)
    }

    fn progress(&self) -> Progress {
        let s = &self.status;
        let (rate, eta) = match (self.state, self.created_at()) {
            ("running", Some(created)) => {
                let secs = (Utc::now() - created).num_milliseconds().max(1) as f64 / 1000.0;
                let rate = s.done as f64 / secs;
                let left = s.total.saturating_sub(s.done) as f64;
                let eta = if rate > 0.0 {
                    html::ms(left / rate * 1000.0)
                } else {
                    "—".to_owned()
                };
                (format!("{rate:.2}/s"), eta)
            }
            _ => ("—".to_owned(), "—".to_owned()),
        };
        Progress {
            total: s.total,
            done: s.done,
            ok: s.ok,
            failed: s.failed,
            kinds: kinds(&s.failed_by_kind),
            state: self.state,
            rate,
            eta,
        }
    }
}

fn kinds(by_kind: &std::collections::BTreeMap<String, usize>) -> String {
    by_kind
        .iter()
        .map(|(k, n)| format!("{k} {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The live fields of a batch, marked for the script.
fn live_cells(p: &Progress) -> String {
    format!(
        "<td><progress max=\"{total}\" value=\"{done}\" data-f=\"bar\"></progress> \
         <span data-f=\"done\">{done}</span>/<span data-f=\"total\">{total}</span></td>\
         <td data-f=\"ok\">{ok}</td><td data-f=\"failed\">{failed}</td><td data-f=\"kinds\">{kinds}</td>\
         <td data-f=\"rate\">{rate}</td><td data-f=\"eta\">{eta}</td><td data-f=\"state\">{state}</td>",
        total = p.total,
        done = p.done,
        ok = p.ok,
        failed = p.failed,
        kinds = esc(&p.kinds),
        rate = esc(&p.rate),
        eta = esc(&p.eta),
        state = p.state,
    )
}

fn when(at: Option<DateTime<Utc>>) -> String {
    at.map_or_else(
        || "—".to_owned(),
        |t| t.format("%Y-%m-%d %H:%M:%S UTC").to_string(),
    )
}

fn number(query: &HashMap<String, String>, name: &str) -> usize {
    query.get(name).and_then(|v| v.parse().ok()).unwrap_or(0)
}

/// `GET /ui`: the batches, newest first, a page at a time.
pub(super) async fn list(
    State(state): State<Arc<AppState>>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let ids = match batch_ids(&state).await {
        Ok(ids) => ids,
        Err(err) => return err.page(&state),
    };
    let page_no = number(&query, "page");
    let mut body = String::new();
    if ids.is_empty() {
        body.push_str("<p>No batch yet: submit one with <code>oxwright submit</code> or <code>POST /v1/batches</code>.</p>");
        return page(&state, "Batches", Nav::Batches, &body);
    }
    body.push_str(
        "<table class=\"batches\"><thead><tr><th>Batch</th><th>Source</th><th>Submitted</th>\
         <th>Progress</th><th>OK</th><th>Failed</th><th>Failed by kind</th><th>Rate</th><th>ETA</th>\
         <th>State</th></tr></thead><tbody>",
    );
    let start = page_no * BATCHES_PER_PAGE;
    for id in ids.iter().skip(start).take(BATCHES_PER_PAGE) {
        let batch = match Batch::load(&state, id).await {
            Ok(Some(batch)) => batch,
            Ok(None) => continue,
            Err(err) => return err.page(&state),
        };
        let source = batch.record.as_ref().map_or("", |r| r.source.as_str());
        let _ = write!(
            body,
            "<tr data-batch=\"{}\" data-state=\"{}\"><td>{}</td><td>{}</td><td>{}</td>{}</tr>",
            esc(id),
            batch.state,
            link(&format!("/ui/batches/{}", enc(id)), id),
            esc(source),
            when(batch.created_at()),
            live_cells(&batch.progress()),
        );
    }
    body.push_str("</tbody></table>");
    pager(
        &mut body,
        "/ui?",
        page_no,
        start + BATCHES_PER_PAGE < ids.len(),
        "page",
    );
    page(&state, "Batches", Nav::Batches, &body)
}

fn pager(body: &mut String, base: &str, page_no: usize, more: bool, name: &str) {
    body.push_str("<nav class=\"pager\">");
    if page_no > 0 {
        let _ = write!(
            body,
            "<a href=\"{}{name}={}\">← newer</a>",
            esc(base),
            page_no - 1
        );
    }
    if more {
        let _ = write!(
            body,
            "<a href=\"{}{name}={}\">older →</a>",
            esc(base),
            page_no + 1
        );
    }
    body.push_str("</nav>");
}

/// `GET /ui/progress?ids=a,b`: live counts of the batches named.
pub(super) async fn progress(
    State(state): State<Arc<AppState>>,
    Query(query): Query<HashMap<String, String>>,
) -> Result<Json<HashMap<String, Progress>>, ApiError> {
    let mut out = HashMap::new();
    let ids = query.get("ids").map(String::as_str).unwrap_or("");
    for id in ids.split(',').filter(|i| !i.is_empty()).take(MAX_PROGRESS_IDS) {
        check_batch_id(id)?;
        if let Some(batch) = Batch::load(&state, id).await? {
            out.insert(id.to_owned(), batch.progress());
        }
    }
    Ok(Json(out))
}

/// A batch page's filters.
struct Filter {
    status: Option<ReportStatus>,
    kind: Option<String>,
    page: usize,
}

impl Filter {
    fn of(query: &HashMap<String, String>) -> Self {
        let status = match query.get("status").map(String::as_str) {
            Some("ok") => Some(ReportStatus::Ok),
            Some("failed") => Some(ReportStatus::Failed),
            _ => None,
        };
        let kind = query.get("kind").filter(|k| !k.is_empty()).cloned();
        Self {
            status,
            kind,
            page: number(query, "page"),
        }
    }

    fn keeps(&self, report: &JobReport) -> bool {
        let kind = report.error.as_ref().map(|e| e.kind.as_str());
        self.status.is_none_or(|s| s == report.status) && self.kind.as_deref().is_none_or(|k| Some(k) == kind)
    }

    /// The query string of these filters (without the page).
    fn query(&self) -> String {
        let status = match self.status {
            Some(ReportStatus::Ok) => "ok",
            Some(ReportStatus::Failed) => "failed",
            None => "",
        };
        format!("status={status}&kind={}", enc(self.kind.as_deref().unwrap_or("")))
    }
}

/// One job row of a batch page.
#[derive(Debug, Serialize)]
pub(crate) struct Row {
    href: String,
    url: String,
    final_url: String,
    status: &'static str,
    error_kind: String,
    message: String,
    duration: String,
    attempt: u32,
    warnings: String,
}

/// The jobs of batch `id` that pass `filter`, the page asked for, and
/// how many pass in all.
async fn matching_rows(state: &AppState, id: &str, filter: &Filter) -> Result<(Vec<Row>, usize), ApiError> {
    let lines = state.batches().manifest(id).await?;
    let matching: Vec<JobReport> = lines
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .filter_map(|l| serde_json::from_slice::<JobReport>(l).ok())
        .filter(|r| filter.keeps(r))
        .collect();
    let count = matching.len();
    let page: Vec<JobReport> = matching
        .into_iter()
        .skip(filter.page * JOBS_PER_PAGE)
        .take(JOBS_PER_PAGE)
        .collect();
    let rows = futures::stream::iter(page)
        .map(|report| row(state, report))
        .buffered(16)
        .collect()
        .await;
    Ok((rows, count))
}

async fn row(state: &AppState, report: JobReport) -> Row {
    let (final_url, warnings) = match report.status {
        ReportStatus::Ok => match state
            .store
            .get(&keys::job_result(report.kind, report.job_id))
            .await
        {
            Ok(body) => {
                let doc: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
                let final_url = doc["final_url"].as_str().unwrap_or("").to_owned();
                let warnings: Vec<&str> = doc["warnings"]
                    .as_array()
                    .map(|w| w.iter().filter_map(|w| w.as_str()).collect())
                    .unwrap_or_default();
                (final_url, warnings.join("; "))
            }
            Err(_) => (String::new(), String::new()),
        },
        ReportStatus::Failed => (String::new(), String::new()),
    };
    let (error_kind, message) = report
        .error
        .as_ref()
        .map(|e| (e.kind.as_str().to_owned(), e.message.clone()))
        .unwrap_or_default();
    Row {
        href: format!("/ui/jobs/{}/{}", report.kind.as_str(), report.job_id),
        url: report.url,
        final_url,
        status: match report.status {
            ReportStatus::Ok => "ok",
            ReportStatus::Failed => "failed",
        },
        error_kind,
        message: short(&message, 300),
        duration: html::ms(report.duration_ms),
        attempt: report.attempt,
        warnings: short(&warnings, 300),
    }
}

fn row_html(row: &Row) -> String {
    format!(
        "<tr class=\"{status}\"><td>{job}</td><td class=\"url\">{url}</td><td class=\"url\">{final_url}</td>\
         <td>{status}</td><td>{kind}</td><td>{message}</td><td>{duration}</td><td>{attempt}</td><td>{warnings}</td></tr>",
        status = row.status,
        job = link(&row.href, "job"),
        url = esc(&row.url),
        final_url = esc(&row.final_url),
        kind = esc(&row.error_kind),
        message = esc(&row.message),
        duration = esc(&row.duration),
        attempt = row.attempt,
        warnings = esc(&row.warnings),
    )
}

/// `GET /ui/batches/{id}?status&kind&page`: a batch and its jobs.
pub(super) async fn show(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    match show_batch(&state, &id, &Filter::of(&query)).await {
        Ok(body) => page(&state, &format!("Batch {id}"), Nav::Batches, &body),
        Err(err) => err.page(&state),
    }
}

async fn show_batch(state: &AppState, id: &str, filter: &Filter) -> Result<String, ApiError> {
    check_batch_id(id)?;
    let Some(batch) = Batch::load(state, id).await? else {
        return Err(crate::api::error::not_found(format!("no batch {id}")));
    };
    let progress = batch.progress();
    let mut body = String::new();
    let _ = write!(
        body,
        "<table class=\"batches\" data-batch=\"{}\" data-state=\"{}\" data-rows=\"/ui/batches/{}/rows?{}&amp;page={}\">\
         <thead><tr><th>Progress</th><th>OK</th><th>Failed</th><th>Failed by kind</th><th>Rate</th><th>ETA</th>\
         <th>State</th></tr></thead><tbody><tr>{}</tr></tbody></table>",
        esc(id),
        batch.state,
        enc(id),
        esc(&filter.query()),
        filter.page,
        live_cells(&progress),
    );
    if let Some(record) = &batch.record {
        let _ = write!(
            body,
            "<p class=\"meta\">Submitted {} by <code>{}</code>; {} jobs, {} input lines refused.",
            when(Some(record.created_at)),
            esc(&record.source),
            record.total - record.refused,
            record.refused
        );
        if let Some(of) = &record.resubmit_of {
            let _ = write!(
                body,
                " Submits again the failed jobs of {}.",
                link(&format!("/ui/batches/{}", enc(of)), of)
            );
        }
        body.push_str("</p>");
    }
    actions(state, &batch, &mut body);
    filters(&batch, filter, &mut body);
    let (rows, count) = matching_rows(state, id, filter).await?;
    let _ = write!(
        body,
        "<p class=\"meta\" id=\"matching\">{count} matching jobs</p>"
    );
    body.push_str(
        "<table class=\"jobs\" id=\"jobs\"><thead><tr><th></th><th>URL</th><th>Final URL</th><th>Status</th>\
         <th>Error</th><th>Message</th><th>Duration</th><th>Attempt</th><th>Warnings</th></tr></thead><tbody>",
    );
    for row in &rows {
        body.push_str(&row_html(row));
    }
    body.push_str("</tbody></table>");
    let base = format!("/ui/batches/{}?{}&", enc(id), filter.query());
    pager(
        &mut body,
        &base,
        filter.page,
        (filter.page + 1) * JOBS_PER_PAGE < count,
        "page",
    );
    Ok(body)
}

fn actions(state: &AppState, batch: &Batch, body: &mut String) {
    let csrf = html::csrf_field(state.ui.csrf());
    let acts = !state.opts.api.view_only;
    body.push_str("<div class=\"actions\">");
    if acts && batch.state == "running" {
        let _ = write!(
            body,
            "<form method=\"post\" action=\"/ui/batches/{}/cancel\">{csrf}<button>Cancel batch</button></form>",
            enc(&batch.id)
        );
    }
    if acts && batch.status.failed > 0 {
        let _ = write!(
            body,
            "<form method=\"post\" action=\"/ui/batches/{}/resubmit\">{csrf}<button>Submit the failed jobs again</button></form>",
            enc(&batch.id)
        );
    }
    let _ = write!(body, "<a href=\"/v1/batches/{}\">JSON</a></div>", enc(&batch.id));
}

fn filters(batch: &Batch, filter: &Filter, body: &mut String) {
    let selected = |on: bool| if on { " selected" } else { "" };
    let _ = write!(
        body,
        "<form method=\"get\" class=\"filters\" action=\"/ui/batches/{}\"><label>Status <select name=\"status\">\
         <option value=\"\">all</option><option value=\"ok\"{}>ok</option><option value=\"failed\"{}>failed</option>\
         </select></label> <label>Error <select name=\"kind\"><option value=\"\">any</option>",
        enc(&batch.id),
        selected(filter.status == Some(ReportStatus::Ok)),
        selected(filter.status == Some(ReportStatus::Failed)),
    );
    for (kind, n) in &batch.status.failed_by_kind {
        let _ = write!(
            body,
            "<option value=\"{}\"{}>{} ({n})</option>",
            esc(kind),
            selected(filter.kind.as_deref() == Some(kind)),
            esc(kind)
        );
    }
    body.push_str("</select></label> <button>Filter</button></form>");
}

/// `GET /ui/batches/{id}/rows?…`: a page of a batch's jobs, for the
/// script to redraw the table while the batch runs.
pub(super) async fn rows(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    Query(query): Query<HashMap<String, String>>,
) -> Result<Json<serde_json::Value>, ApiError> {
    check_batch_id(&id)?;
    let (rows, count) = matching_rows(&state, &id, &Filter::of(&query)).await?;
    Ok(Json(serde_json::json!({ "rows": rows, "matching": count })))
}

/// `POST /ui/batches/{id}/cancel`.
pub(super) async fn cancel(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    body: Bytes,
) -> Response {
    if let Some(refused) = refusal(&state, &form(&body)) {
        return refused;
    }
    match state.cancel_batch(&id).await.map_err(ApiError::from) {
        Ok(()) => Redirect::to(&format!("/ui/batches/{}", enc(&id))).into_response(),
        Err(err) => err.page(&state),
    }
}

/// `POST /ui/batches/{id}/resubmit`: the failed jobs as a new batch that
/// names this one; jobs whose credentials the store does not keep, and
/// input lines refused at submission, are left out and counted.
pub(super) async fn resubmit(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    body: Bytes,
) -> Response {
    if let Some(refused) = refusal(&state, &form(&body)) {
        return refused;
    }
    match resubmit_failed(&state, &id).await {
        Ok(done) if done.withheld == 0 && done.refused == 0 => {
            Redirect::to(&format!("/ui/batches/{}", enc(&done.batch_id))).into_response()
        }
        Ok(done) => {
            let body = format!(
                "<p>Batch {} submits {} failed jobs again.</p><p>Left out: {} jobs that carried credentials \
                 (headers, cookies, basic auth or a proxy), which the store does not keep; {} input lines \
                 refused at submission, which would be refused again. Submit those from their input.</p>",
                link(&format!("/ui/batches/{}", enc(&done.batch_id)), &done.batch_id),
                done.published,
                done.withheld,
                done.refused
            );
            page(&state, "Failed jobs submitted again", Nav::Batches, &body)
        }
        Err(err) => err.page(&state),
    }
}

struct Resubmitted {
    batch_id: String,
    published: usize,
    withheld: usize,
    refused: usize,
}

async fn resubmit_failed(state: &AppState, id: &str) -> Result<Resubmitted, ApiError> {
    check_batch_id(id)?;
    let lines = state.batches().manifest(id).await?;
    let failed: Vec<JobReport> = lines
        .split(|b| *b == b'\n')
        .filter_map(|l| serde_json::from_slice::<JobReport>(l).ok())
        .filter(|r| r.status == ReportStatus::Failed)
        .collect();
    let stored = match state.store.get(&keys::batch_jobs(id)).await {
        Ok(body) => body,
        Err(oxwright_artifacts::ArtifactError::NotFound { .. }) => {
            return Err(conflict(format!(
                "batch {id} was submitted before job specs were kept: submit its failed URLs again from its manifest"
            )));
        }
        Err(err) => return Err(unavailable(err)),
    };
    let specs: HashMap<_, StoredJob> = stored
        .split(|b| *b == b'\n')
        .filter_map(|l| serde_json::from_slice::<StoredJob>(l).ok())
        .map(|s| (s.job_id, s))
        .collect();
    let batch_id = crate::batch::new_batch_id();
    let (mut jobs, mut withheld, mut refused) = (Vec::new(), 0, 0);
    for report in &failed {
        match specs.get(&report.job_id) {
            None => refused += 1,
            Some(s) if !s.withheld.is_empty() => withheld += 1,
            Some(s) => match serde_json::from_value::<JobSpec>(s.spec.clone()) {
                Ok(spec) => jobs.push(Job::new(spec, Some(batch_id.clone()))),
                Err(_) => refused += 1,
            },
        }
    }
    if jobs.is_empty() {
        return Err(conflict(format!(
            "nothing to submit again: of {} failed jobs, {withheld} carried credentials the store does not keep \
                 and {refused} were input lines refused at submission",
            failed.len()
        )));
    }
    let published = jobs.len();
    submit_batch(
        state.queue.as_ref(),
        state.store.as_ref(),
        &batch_id,
        jobs,
        Vec::new(),
        &format!("{RESUBMIT_SOURCE}{id}"),
    )
    .await
    .map_err(unavailable)?;
    tracing::info!(batch_id = %batch_id, of = %id, jobs = published, "failed jobs submitted again");
    Ok(Resubmitted {
        batch_id,
        published,
        withheld,
        refused,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_sort_by_their_submission_time() {
        assert_eq!(stamp("20261129T194202Z-63c1a5c6"), "20261129T194202Z");
        assert_eq!(stamp("nightly-20261129T010000Z-0a1b2c3d"), "20261129T010000Z");
        assert_eq!(stamp("mine"), "");
    }
}
