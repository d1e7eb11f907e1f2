//! The page-fetch job (seed 002) over the engine seam: open a page,
//! navigate, wait until its content is ready (by default: the DOM's text
//! went quiet after `DOMContentLoaded`; or a lifecycle state, a selector,
//! a fixed extra wait), run the spec's `actions` (structured workflow
//! steps, with `oxwright_workflow`'s parser and engine), refuse what is not
//! HTML, read the DOM, convert it to Markdown,
//! and retry transient failures with exponential backoff (only those: a
//! `wait_for` selector that never appeared or an unsafe port fails at once,
//! and the message says why it was not retried). Any
//! [`BrowserEngine`] serves it (the Chromium pool in production).
//! [`cache`] answers from the artefact store when the spec allows.

pub mod cache;
mod extract;
pub mod pdf;

use std::sync::Arc;
use std::time::{Duration, Instant};

use oxwright_engine::{
    BrowserEngine, EngineError, GotoOptions, OpenOptions, ScreenshotOptions, UrlPolicy, WaitCondition,
};
use oxwright_jobs::{
    CacheStatus, ContentMode, ErrorKind, FetchResult, FetchSpec, FetchTimings, Format, JobError, TokenCounts,
};
use oxwright_markdown::{count_tokens, html_to_markdown, trim_to_tokens};

use oxwright_workflow::{StepsError, StructuredStep, run_steps};

pub use cache::{fetch_cached, fresh_from_cache};
pub use extract::{
    EXTRACT_JS, ExtractOptions, Extracted, extract, extract_script, extract_with, parse_extracted,
};

/// A fetch result plus the bulky outputs stored beside it.
#[derive(Debug, Clone)]
pub struct FetchOutput {
    /// The result.
    pub result: FetchResult,
    /// The rendered HTML, when `include_html` was asked for.
    pub html: Option<String>,
    /// A PNG screenshot, when asked for.
    pub screenshot: Option<Vec<u8>>,
    /// The request headers that would revalidate this result later
    /// (`If-None-Match` from the main document's `ETag`,
    /// `If-Modified-Since` from its `Last-Modified`); empty when the
    /// server gave neither.
    pub validators: Vec<(String, String)>,
}

/// Returns the validators of a main document's response `headers`: the
/// conditional request headers that ask whether it changed.
pub fn validators(headers: &[(String, String)]) -> Vec<(String, String)> {
    let find = |name: &str| {
        headers
            .iter()
            .find(|(n, v)| n.eq_ignore_ascii_case(name) && !v.trim().is_empty())
            .map(|(_, v)| v.trim().to_string())
    };
    let mut out = Vec::new();
    if let Some(etag) = find("etag") {
        out.push(("If-None-Match".to_string(), etag));
    }
    if let Some(date) = find("last-modified") {
        out.push(("If-Modified-Since".to_string(), date));
    }
    out
}

/// Returns the backoff before retry `n` (0-based): `base × 2^n`, capped at a minute.
pub fn backoff(base_ms: u64, n: u32) -> Duration {
    let factor = 1u64.checked_shl(n.min(20)).unwrap_or(u64::MAX);
    Duration::from_millis(base_ms.saturating_mul(factor).min(60_000))
}

/// Fetches `spec.url`, retrying transient failures up to `spec.retry_count` times.
pub async fn fetch_page(
    engine: &dyn BrowserEngine,
    policy: &Arc<UrlPolicy>,
    spec: &FetchSpec,
) -> Result<FetchOutput, JobError> {
    fetch_page_if(engine, policy, spec, &[])
        .await?
        .ok_or_else(|| JobError::new(ErrorKind::Internal, "a 304 answered an unconditional request"))
}

/// Fetches `spec.url` like [`fetch_page`], its main document's request
/// made conditional by `validators` (see [`validators`]): `None` when the
/// server answered `304 Not Modified` (nothing was rendered).
#[tracing::instrument(skip_all, fields(url = %spec.url))]
pub async fn fetch_page_if(
    engine: &dyn BrowserEngine,
    policy: &Arc<UrlPolicy>,
    spec: &FetchSpec,
    validators: &[(String, String)],
) -> Result<Option<FetchOutput>, JobError> {
    let started = Instant::now();
    // Out-of-range durations are refused before anything waits on them.
    spec.validate().map_err(|e| e.with_url(spec.url.as_str()))?;
    // Actions are parsed before any navigation: a bad step is bad input.
    let actions = parse_actions(spec).map_err(|e| e.with_url(spec.url.as_str()))?;
    // The input URL is checked before any browser work (no page is leased for it).
    if let Err(source) = policy.check(&spec.url).await {
        return Err(EngineError::policy(spec.url.as_str(), &source).into());
    }
    let mut attempt = 0u32;
    loop {
        attempt += 1;
        match fetch_once(engine, policy, spec, &actions, validators).await {
            Ok(None) => return Ok(None),
            Ok(Some(mut out)) => {
                out.result.attempts = attempt;
                out.result.timings.total_ms = ms(started.elapsed());
                return Ok(Some(out));
            }
            Err(mut err) => {
                if err.is_retryable() && attempt <= spec.retry_count {
                    let wait = backoff(spec.retry_delay_ms, attempt - 1);
                    tracing::debug!(attempt, error = %err, wait_ms = wait.as_millis() as u64, "fetch attempt failed; retrying");
                    tokio::time::sleep(wait).await;
                    continue;
                }
                err.attempts = attempt;
                // Retries were asked for and not made: the message says why.
                if spec.retry_count > 0 && !err.is_retryable() {
                    err = err.explain_no_retry();
                }
                if err.url.is_none() {
                    err.url = Some(spec.url.to_string());
                }
                return Err(err);
            }
        }
    }
}

/// How often a page's memory is read while a fetch waits on it.
const MEMORY_EVERY: Duration = Duration::from_millis(100);

/// Runs `work` on `page` while its memory is read every [`MEMORY_EVERY`]:
/// a page over its engine's per-job limit ends the work with a
/// `resource_limit` error, and a renderer that died of V8's heap cap (a
/// quarter above the limit) is one too, not a crash.
async fn within_memory<T, E>(
    page: &dyn oxwright_engine::Page,
    work: impl std::future::Future<Output = Result<T, E>>,
) -> Result<T, JobError>
where
    JobError: From<E>,
{
    let work = async { work.await.map_err(JobError::from) };
    let Some(limit) = page.memory_limit() else {
        return work.await;
    };
    let last = std::sync::Mutex::new(oxwright_engine::PageMemory::default());
    let watch = async {
        loop {
            tokio::time::sleep(MEMORY_EVERY).await;
            if let Ok(m) = page.memory().await {
                *last.lock().expect("memory") = m;
                if let Some(why) = limit.exceeded_by(&m) {
                    return JobError::new(ErrorKind::ResourceLimit, why);
                }
            }
        }
    };
    let done = tokio::select! {
        done = work => done,
        over = watch => return Err(over),
    };
    let Err(err) = done else {
        return done;
    };
    let seen = *last.lock().expect("memory");
    if err.kind == ErrorKind::BrowserCrashed
        && (seen.heap_bytes >= limit.heap_bytes / 2 || page.crashed_out_of_memory().await)
    {
        return Err(JobError::new(
            ErrorKind::ResourceLimit,
            format!(
                "the page's renderer ran out of JavaScript heap ({} MiB last read) and V8's heap cap stopped \
                 it: the page needs more memory than a job may use ([browser] job_memory_mb is {} MiB; V8's \
                 cap is a quarter above unless --js-flags set it)",
                seen.heap_bytes / (1024 * 1024),
                limit.heap_bytes / (1024 * 1024)
            ),
        ));
    }
    Err(err)
}

/// The largest PDF read as a page's document.
pub const PDF_MAX_BYTES: usize = 50 * 1024 * 1024;

/// The result of a fetch whose main document was a PDF: its text as
/// Markdown (see [`pdf`]), the formats that apply to a document.
async fn pdf_output(
    spec: &FetchSpec,
    nav: oxwright_engine::Navigated,
    bytes: Vec<u8>,
    acquire_ms: f64,
    navigate_ms: f64,
) -> Result<FetchOutput, JobError> {
    let t2 = Instant::now();
    let budget = spec.max_tokens;
    let read = tokio::task::spawn_blocking(move || {
        let mut pdf = pdf::pdf_to_markdown(&bytes)?;
        let (tokens, trimmed) = fit_to_budget(&mut pdf.markdown, budget);
        Ok::<_, JobError>((pdf, tokens, trimmed))
    })
    .await
    .map_err(|e| JobError::new(ErrorKind::Internal, format!("PDF task: {e}")))??;
    let (pdf, markdown_tokens, trimmed) = read;
    let extract_ms = ms(t2.elapsed());
    let mut metadata = oxwright_jobs::PageMetadata {
        published: pdf.created.clone(),
        modified: pdf.modified.clone(),
        ..Default::default()
    };
    metadata.meta.insert("pdf:pages".into(), pdf.pages.to_string());
    if let Some(author) = &pdf.author {
        metadata.meta.insert("author".into(), author.clone());
    }
    if let Some(producer) = &pdf.producer {
        metadata.meta.insert("pdf:producer".into(), producer.clone());
    }
    asked_headers(spec, &nav.headers, &mut metadata);
    let mut warnings = Vec::new();
    if let Some((kept, full)) = trimmed {
        warnings.push(budget_warning(spec, kept, full));
    }
    let page_only: Vec<&str> = [
        (spec.include_html || spec.formats.contains(&Format::Html), "html"),
        (spec.formats.contains(&Format::RawHtml), "raw_html"),
        (
            spec.screenshot
                || spec.formats.contains(&Format::Screenshot)
                || spec.formats.contains(&Format::ScreenshotFullPage),
            "screenshot",
        ),
        (
            !spec.include.is_empty() || !spec.exclude.is_empty(),
            "include/exclude",
        ),
        (!spec.actions.is_empty(), "actions"),
    ]
    .into_iter()
    .filter_map(|(asked, name)| asked.then_some(name))
    .collect();
    if !page_only.is_empty() {
        warnings.push(format!(
            "the document is a PDF ({} page(s)): {} apply only to HTML pages and were left out",
            pdf.pages,
            page_only.join(", ")
        ));
    }
    let text = spec
        .formats
        .contains(&Format::Text)
        .then(|| oxwright_markdown::markdown_to_text(&pdf.markdown));
    Ok(FetchOutput {
        result: FetchResult {
            url: spec.url.to_string(),
            final_url: nav.final_url,
            status: nav.status,
            content_type: nav.content_type,
            title: pdf.title.unwrap_or_default(),
            metadata,
            links: Default::default(),
            images: Vec::new(),
            markdown: pdf.markdown,
            truncated: trimmed.is_some(),
            html: None,
            raw_html: None,
            text,
            content_mode: ContentMode::Full,
            tokens: TokenCounts {
                html: 0,
                markdown: markdown_tokens,
            },
            timings: FetchTimings {
                acquire_ms,
                navigate_ms,
                extract_ms,
                convert_ms: 0.0,
                total_ms: 0.0,
            },
            attempts: 1,
            warnings,
            artifacts: Vec::new(),
            cache: Some(CacheStatus::Miss),
        },
        html: None,
        screenshot: None,
        validators: Vec::new(),
    })
}

/// Trims `markdown` to `budget` tokens (the spec's `max_tokens`) at a
/// block boundary; returns its token count and, when it was cut, (kept,
/// full) tokens.
fn fit_to_budget(markdown: &mut String, budget: Option<u64>) -> (usize, Option<(usize, usize)>) {
    let budget = budget.map(|m| usize::try_from(m).unwrap_or(usize::MAX));
    match budget.and_then(|max| trim_to_tokens(markdown, max)) {
        Some(t) => {
            *markdown = t.markdown;
            (t.kept_tokens, Some((t.kept_tokens, t.full_tokens)))
        }
        None => (count_tokens(markdown), None),
    }
}

/// The warning of a Markdown cut to the spec's token budget.
fn budget_warning(spec: &FetchSpec, kept: usize, full: usize) -> String {
    format!(
        "the Markdown was trimmed to the token budget of {}: {kept} of {full} tokens kept, cut at a block boundary",
        spec.max_tokens.unwrap_or_default()
    )
}

/// Copies the response headers the spec asked for into `metadata`
/// (lowercase names; repeated headers joined with `, `).
fn asked_headers(spec: &FetchSpec, headers: &[(String, String)], metadata: &mut oxwright_jobs::PageMetadata) {
    for wanted in &spec.response_headers {
        let name = wanted.to_ascii_lowercase();
        let values: Vec<&str> = headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case(&name))
            .map(|(_, v)| v.as_str())
            .collect();
        if !values.is_empty() {
            metadata.response_headers.insert(name, values.join(", "));
        }
    }
}

/// Deadline of reading a rendered page (huge DOMs take seconds).
const EXTRACT_LIMIT: Duration = Duration::from_secs(20);

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Parses the spec's `actions` with the structured-workflow grammar; a bad
/// step is an `invalid_input` error naming it.
pub fn parse_actions(spec: &FetchSpec) -> Result<Vec<StructuredStep>, JobError> {
    oxwright_workflow::parse_steps(&spec.actions).map_err(|e| {
        let (n, message) = match &e {
            oxwright_workflow::WorkflowError::Parse { line, message } => (*line, message.clone()),
            other => (0, other.to_string()),
        };
        let text = spec.actions.get(n.saturating_sub(1)).map_or("", |a| a.trim());
        JobError::new(
            ErrorKind::InvalidInput,
            format!("action {n} ({text}) is not a structured step: {message}"),
        )
    })
}

/// The deadline of one action (its auto-wait, input and settle): a
/// workflow's default, within the attempt's deadline.
fn action_timeout(spec: &FetchSpec) -> Duration {
    Duration::from_millis(spec.timeout_ms.clamp(1_000, 10_000))
}

/// The job error of an action that failed: it names the step (number and
/// text) and what went wrong; the browser's own failures keep their kind.
fn action_error(err: StepsError) -> JobError {
    match err {
        StepsError::Failed {
            number,
            text,
            attempts,
            reason,
        } => JobError::new(
            ErrorKind::StepFailed,
            format!("action {number} ({text}) failed after {attempts} attempt(s): {reason}"),
        ),
        StepsError::Fatal { number, text, error } => {
            let mut job = JobError::from(error);
            job.message = format!("action {number} ({text}): {}", job.message);
            job
        }
    }
}

async fn fetch_once(
    engine: &dyn BrowserEngine,
    policy: &Arc<UrlPolicy>,
    spec: &FetchSpec,
    actions: &[StructuredStep],
    validators: &[(String, String)],
) -> Result<Option<FetchOutput>, JobError> {
    let t0 = Instant::now();
    let mut open = OpenOptions::new(policy.clone());
    open.headless = spec.headless;
    open.shape = Arc::new(spec.shape());
    open.dialogs = spec.dialogs;
    let tab = engine.open(&open).await?;
    let acquire_ms = ms(t0.elapsed());
    let opts = GotoOptions {
        wait_until: spec.wait_until,
        wait_for: spec.wait_for.clone(),
        block: spec.block_resources.clone(),
        timeout: Duration::from_millis(spec.timeout_ms.max(1)),
        capture_pdf: Some(PDF_MAX_BYTES),
        conditional: validators.to_vec(),
        skip_frames: spec.frames.skipped(),
    };
    let t1 = Instant::now();
    let page = tab.as_ref();
    let mut nav = within_memory(page, page.goto(&spec.url, &opts)).await?;
    if !validators.is_empty() && nav.status == 304 {
        return Ok(None);
    }
    // What actions lead to is more than the first document: a result they
    // made is not revalidated by its validators (it is fetched again).
    let validators = if actions.is_empty() {
        self::validators(&nav.headers)
    } else {
        Vec::new()
    };
    if let Some(bytes) = nav.document.take() {
        drop(tab);
        let mut out = pdf_output(spec, nav, bytes, acquire_ms, ms(t1.elapsed())).await?;
        out.validators = validators;
        return Ok(Some(out));
    }
    if spec.wait_ms > 0 {
        // A fixed extra wait, within what is left of the attempt's deadline.
        let wait = Duration::from_millis(spec.wait_ms).min(opts.timeout.saturating_sub(t1.elapsed()));
        within_memory(page, page.wait_for(&WaitCondition::Time(wait), wait)).await?;
    }
    let navigate_ms = ms(t1.elapsed());
    // The actions run on the ready page; a click that opened a tab leads
    // the read there, and the page's own navigations are followed.
    let exec = if actions.is_empty() {
        None
    } else {
        let run = async {
            run_steps(page, actions, &spec.url, action_timeout(spec))
                .await
                .map_err(action_error)
        };
        let exec = within_memory(page, run).await?;
        if let Ok(url) = exec.page().url().await {
            nav.final_url = url;
        }
        Some(exec)
    };
    let page: &dyn oxwright_engine::Page = exec.as_ref().map_or(page, |e| e.page());
    let full_page = spec.formats.contains(&Format::ScreenshotFullPage);
    let screenshot = if spec.screenshot || full_page || spec.formats.contains(&Format::Screenshot) {
        let opts = ScreenshotOptions {
            full_page,
            ..ScreenshotOptions::default()
        };
        Some(page.screenshot(&opts).await?)
    } else {
        None
    };
    let t2 = Instant::now();
    let read = ExtractOptions {
        include: spec.include.clone(),
        exclude: spec.exclude.clone(),
        overlays: spec.content == ContentMode::Main && !spec.keep_overlays,
    };
    let read = within_memory(page, extract_with(page, &read, EXTRACT_LIMIT)).await?;
    let extract_ms = ms(t2.elapsed());
    let dialogs = page.dialogs().await;
    // The wait's outcome, and navigations the page started after it had rendered.
    let navigation_warnings = page.navigation_warnings().await;
    // What the page tried after its load event (popups, workers, a script's navigation).
    nav.refused.extend(page.policy_refusals().await);
    // The browser is done: give the page back before the CPU-bound part.
    drop(exec);
    drop(tab);
    let page = read;

    let t3 = Instant::now();
    let base = url::Url::parse(&nav.final_url).ok();
    // `include` replaces main-content detection: what it selected is converted whole.
    let mode = if spec.include.is_empty() {
        spec.content
    } else {
        ContentMode::Full
    };
    let page_html = Arc::new(page.html);
    // Counting the raw HTML's tokens (4–8 ms, more than the conversion) runs
    // beside the conversion rather than after it.
    let html_tokens = {
        let html = page_html.clone();
        tokio::task::spawn_blocking(move || count_tokens(&html))
    };
    let visible_html = page.visible_html;
    let budget = spec.max_tokens;
    let converted = tokio::task::spawn_blocking(move || {
        let mut conv = html_to_markdown(&visible_html, base.as_ref(), mode);
        let (markdown_tokens, trimmed) = match &mut conv {
            Ok(c) => fit_to_budget(&mut c.markdown, budget),
            Err(_) => (0, None),
        };
        (conv, markdown_tokens, trimmed)
    });
    let task_err =
        |e: tokio::task::JoinError| JobError::new(ErrorKind::Internal, format!("conversion task: {e}"));
    let (conv, markdown_tokens, trimmed) = converted.await.map_err(task_err)?;
    let html_tokens = html_tokens.await.map_err(task_err)?;
    let conv = conv.map_err(|e| JobError::new(ErrorKind::Extraction, e.to_string()))?;
    let convert_ms = ms(t3.elapsed());
    let tokens = TokenCounts {
        html: html_tokens,
        markdown: markdown_tokens,
    };
    let raw_html = spec
        .formats
        .contains(&Format::RawHtml)
        .then(|| page_html.as_ref().clone());
    let html = spec.include_html.then(|| Arc::unwrap_or_clone(page_html));
    let cleaned_html = spec.formats.contains(&Format::Html).then(|| conv.html.clone());
    let text = spec
        .formats
        .contains(&Format::Text)
        .then(|| oxwright_markdown::markdown_to_text(&conv.markdown));
    let (title, mut metadata, links, images) = (page.title, page.metadata, page.links, page.images);
    asked_headers(spec, &nav.headers, &mut metadata);

    let mut warnings = conv.warnings;
    if let Some((kept, full)) = trimmed {
        warnings.push(budget_warning(spec, kept, full));
    }
    if page.included == Some(0) {
        warnings.push(format!(
            "no element matched include {:?}: the Markdown is empty",
            spec.include
        ));
    }
    warnings.extend(navigation_warnings);
    for d in &dialogs {
        warnings.push(format!(
            "the page opened a {} dialog ({:?}); it was {}",
            d.kind,
            d.message.chars().take(200).collect::<String>(),
            match d.action {
                oxwright_engine::DialogAction::Accept => "accepted",
                oxwright_engine::DialogAction::Dismiss => "dismissed",
            }
        ));
    }
    if !nav.refused.is_empty() {
        warnings.push(format!(
            "url policy refused {} sub-request(s), first: {}",
            nav.refused.len(),
            nav.refused[0]
        ));
    }
    Ok(Some(FetchOutput {
        result: FetchResult {
            url: spec.url.to_string(),
            final_url: nav.final_url,
            status: nav.status,
            content_type: nav.content_type,
            title,
            metadata,
            links,
            images,
            markdown: conv.markdown,
            truncated: trimmed.is_some(),
            html: cleaned_html,
            raw_html,
            text,
            content_mode: mode,
            tokens,
            timings: FetchTimings {
                acquire_ms,
                navigate_ms,
                extract_ms,
                convert_ms,
                total_ms: 0.0,
            },
            attempts: 1,
            warnings,
            artifacts: Vec::new(),
            cache: Some(CacheStatus::Miss),
        },
        html,
        screenshot,
        validators,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles() {
        assert_eq!(backoff(100, 0), Duration::from_millis(100));
        assert_eq!(backoff(100, 1), Duration::from_millis(200));
        assert_eq!(backoff(100, 2), Duration::from_millis(400));
        assert_eq!(backoff(1000, 30), Duration::from_secs(60));
    }
}
