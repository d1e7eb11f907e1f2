//! The page-fetch job over the engine seam, in one of three render modes
//! (`render`): `always` renders every page in a browser; `never` reads the
//! document the server sent over the policy-judged HTTP client
//! (`oxwright-http`) and converts it without running its scripts; `auto`
//! reads it and renders only when it does not hold the page ([`decide`]),
//! handing the browser the body it already has. A render opens a page,
//! navigate, wait until its content is ready (by default: the DOM's text
//! went quiet after `DOMContentLoaded`; or a lifecycle state, a selector,
//! a fixed extra wait), run the spec's `actions` (structured workflow
//! steps, with `oxwright_steps`' parser and executor), refuse what is not
//! HTML, read the DOM, convert it to Markdown,
//! and retry transient failures with exponential backoff (only those: a
//! `wait_for` selector that never appeared or an unsafe port fails at once,
//! and the message says why it was not retried). Any
//! [`BrowserEngine`] serves it (the Chromium pool in production).
//! [`cache`] answers from the artefact store when the spec allows.

mod attempt;
pub mod cache;
pub mod decide;
mod extract;
pub mod pdf;
mod served;

use std::sync::Arc;
use std::time::{Duration, Instant};

use oxwright_engine::{BrowserEngine, EngineError, UrlPolicy};
use oxwright_jobs::{
    CacheStatus, ContentMode, ErrorKind, FetchResult, FetchSpec, FetchTimings, Format, JobError, TokenCounts,
};
use oxwright_markdown::{count_tokens, trim_to_tokens};

use oxwright_steps::{StepsError, StructuredStep};

pub use attempt::outline_page;
pub use cache::{fetch_cached, fresh_from_cache};
pub use extract::{
    EXTRACT_JS, ExtractOptions, Extracted, extract, extract_script, extract_with, parse_extracted,
};
pub use served::{Outline, read_outline, read_served};

/// A fetch result plus the bulky outputs stored beside it.
#[derive(Debug, Clone)]
pub struct FetchOutput {
    /// The result.
    pub result: FetchResult,
    /// The rendered HTML, when `include_html` or `learn` was asked for.
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
    let mut renderer_crashes = 0u32;
    loop {
        attempt += 1;
        match attempt::fetch_once(engine, policy, spec, &actions, validators).await {
            Ok(None) => return Ok(None),
            Ok(Some(mut out)) => {
                out.result.attempts = attempt;
                out.result.timings.total_ms = ms(started.elapsed());
                return Ok(Some(out));
            }
            Err(mut err) => {
                if err.kind == ErrorKind::BrowserCrashed && err.message.contains("renderer crashed") {
                    renderer_crashes += 1;
                }
                if err.is_retryable() && attempt <= spec.retry_count {
                    let wait = backoff(spec.retry_delay_ms, attempt - 1);
                    tracing::debug!(attempt, error = %err, wait_ms = wait.as_millis() as u64, "fetch attempt failed; retrying");
                    tokio::time::sleep(wait).await;
                    continue;
                }
                // A page that crashed its renderer on every one of several
                // attempts crashes it of its own content.
                if attempt > 1 && renderer_crashes == attempt {
                    err = JobError::new(
                        ErrorKind::ResourceLimit,
                        format!(
                            "the page crashed its renderer on each of {attempt} attempts: its own content (a \
                             document too deep to lay out, memory outside JavaScript) is more than a renderer \
                             survives"
                        ),
                    );
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
/// How long a renderer may leave those reads unanswered before the page
/// is given up as stuck.
const UNRESPONSIVE: Duration = Duration::from_secs(8);
/// A renderer that crashes after leaving the reads unanswered this long
/// crashed of the page's own work (not retried), not of something passing.
const STUCK_BEFORE_CRASH: Duration = Duration::from_secs(2);

/// Runs `work` on `page` while its memory is read every [`MEMORY_EVERY`]:
/// a page over its engine's per-job limit ends the work with a
/// `resource_limit` error, as does a renderer that leaves the reads
/// unanswered for [`UNRESPONSIVE`], and a renderer that died of V8's heap
/// cap (a quarter above the limit) is one too, not a crash.
pub(crate) async fn within_memory<T, E>(
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
    let answered = std::sync::Mutex::new(Instant::now());
    let since_answer = || answered.lock().expect("answered").elapsed();
    let watch = async {
        loop {
            tokio::time::sleep(MEMORY_EVERY).await;
            // The renderer answers these reads even while a script runs; one
            // that stops answering is stuck in work that never yields.
            let wait = UNRESPONSIVE.saturating_sub(since_answer());
            if let Ok(Ok(m)) = tokio::time::timeout(wait, page.memory()).await {
                *answered.lock().expect("answered") = Instant::now();
                *last.lock().expect("memory") = m;
                if let Some(why) = limit.exceeded_by(&m) {
                    return JobError::new(ErrorKind::ResourceLimit, why);
                }
            }
            if since_answer() >= UNRESPONSIVE {
                return JobError::new(
                    ErrorKind::ResourceLimit,
                    format!(
                        "the page's renderer stopped answering for {} s: the page's own work never yields \
                         (a document too deep or too large to lay out, or a script stuck outside JavaScript)",
                        UNRESPONSIVE.as_secs()
                    ),
                );
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
    // How long the renderer was silent when the work ended, before the
    // cause of a crash is looked for.
    let silent = since_answer();
    let seen = *last.lock().expect("memory");
    if err.kind == ErrorKind::BrowserCrashed
        && let Some(mib) = page.renderer_killed_for_memory().await
    {
        return Err(JobError::new(
            ErrorKind::ResourceLimit,
            format!(
                "the page's renderer grew to {mib} MiB of memory and was stopped at the per-job ceiling of \
                 {} MiB (its proportional set size: canvases, images and layers count, not only the \
                 JavaScript heap; half again [browser] job_memory_mb and 256 MiB)",
                limit.renderer_bytes / (1024 * 1024)
            ),
        ));
    }
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
    if err.kind == ErrorKind::BrowserCrashed && silent >= STUCK_BEFORE_CRASH {
        return Err(JobError::new(
            ErrorKind::ResourceLimit,
            format!(
                "the page's renderer stopped answering for {:.1} s, then crashed: the page's own work \
                 (a document too deep or too large to lay out) is more than a renderer survives",
                silent.as_secs_f64()
            ),
        ));
    }
    Err(err)
}

/// The largest PDF read as a page's document.
pub const PDF_MAX_BYTES: usize = 50 * 1024 * 1024;

/// The options asked for that apply to HTML pages only (a PDF leaves them out).
fn page_only_options(spec: &FetchSpec) -> Vec<&'static str> {
    [
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
        (spec.scroll, "scroll"),
        (spec.extract_css.is_some(), "extract_css"),
    ]
    .into_iter()
    .filter_map(|(asked, name)| asked.then_some(name))
    .collect()
}

/// The result of a fetch whose main document was a PDF: its text as
/// Markdown (see [`pdf`]), the formats that apply to a document.
pub(crate) async fn pdf_output(
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
    let page_only = page_only_options(spec);
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
            rendered: true,
            render_reason: None,
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
            extract: None,
            extraction: None,
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
pub(crate) fn fit_to_budget(markdown: &mut String, budget: Option<u64>) -> (usize, Option<(usize, usize)>) {
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
pub(crate) fn budget_warning(spec: &FetchSpec, kept: usize, full: usize) -> String {
    format!(
        "the Markdown was trimmed to the token budget of {}: {kept} of {full} tokens kept, cut at a block boundary",
        spec.max_tokens.unwrap_or_default()
    )
}

/// Copies the response headers the spec asked for into `metadata`
/// (lowercase names; repeated headers joined with `, `).
pub(crate) fn asked_headers(
    spec: &FetchSpec,
    headers: &[(String, String)],
    metadata: &mut oxwright_jobs::PageMetadata,
) {
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
pub(crate) const EXTRACT_LIMIT: Duration = Duration::from_secs(20);

pub(crate) fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Parses the spec's `actions` (and `scroll`, a last `scroll: through`)
/// with the structured-workflow grammar; a bad
/// step is an `invalid_input` error naming it.
pub fn parse_actions(spec: &FetchSpec) -> Result<Vec<StructuredStep>, JobError> {
    // `scroll` is a last step of its own, after the actions.
    let mut items = spec.actions.clone();
    if spec.scroll {
        items.push("scroll: through".to_owned());
    }
    oxwright_steps::parse_steps(&items).map_err(|e| {
        let (n, message) = (e.line, e.message);
        let text = items.get(n.saturating_sub(1)).map_or("", |a| a.trim());
        JobError::new(
            ErrorKind::InvalidInput,
            format!("action {n} ({text}) is not a structured step: {message}"),
        )
    })
}

/// The deadline of one action (its auto-wait, input and settle): a
/// workflow's default, within the attempt's deadline.
pub(crate) fn action_timeout(spec: &FetchSpec) -> Duration {
    Duration::from_millis(spec.timeout_ms.clamp(1_000, 10_000))
}

/// The job error of an action that failed: it names the step (number and
/// text) and what went wrong; the browser's own failures keep their kind.
pub(crate) fn action_error(err: StepsError) -> JobError {
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
