//! One attempt of a fetch, in the spec's render mode: render the page in a
//! browser (`always`), read the document the server sent (`never`), or
//! read it and render only when it does not hold the page (`auto`, which
//! hands the browser the body already read). Both ways end in the same
//! conversion and result.

use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant};

use oxwright_engine::{
    BrowserEngine, GotoOptions, Navigated, OpenOptions, ScreenshotOptions, ServedDocument, UrlPolicy,
    WaitCondition,
};
use oxwright_http::{Document, DocumentRequest, HttpClient};
use oxwright_jobs::{
    CacheStatus, ContentMode, ErrorKind, FetchResult, FetchSpec, FetchTimings, Format, JobError, Render,
    TokenCounts,
};
use oxwright_markdown::{
    Conversion, count_tokens, document_to_markdown, html_to_markdown, html_to_markdown_links,
};
use oxwright_steps::{Executor, StructuredStep, run_steps};

use crate::decide::{self, Decision};
use crate::served::{ServedPage, read_served_page, visible_tree};
use crate::{
    EXTRACT_LIMIT, ExtractOptions, Extracted, FetchOutput, PDF_MAX_BYTES, action_error, action_timeout,
    asked_headers, budget_warning, extract_with, fit_to_budget, ms, pdf_output, within_memory,
};

/// The largest HTML document read over HTTP: the largest document a render reads (a PDF's cap).
pub const HTML_MAX_BYTES: usize = PDF_MAX_BYTES;

/// The process's HTTP client: one connection pool for every served read.
static HTTP: LazyLock<HttpClient> = LazyLock::new(HttpClient::new);

/// Runs one attempt in the spec's render mode.
pub(crate) async fn fetch_once(
    engine: &dyn BrowserEngine,
    policy: &Arc<UrlPolicy>,
    spec: &FetchSpec,
    actions: &[StructuredStep],
    validators: &[(String, String)],
) -> Result<Option<FetchOutput>, JobError> {
    match spec.render {
        Render::Always => render_once(engine, policy, spec, actions, validators, None).await,
        Render::Never => {
            if let Some(what) = decide::needs_browser(spec) {
                return Err(JobError::new(
                    ErrorKind::InvalidInput,
                    format!("{what} needs a browser, and render is never: use render auto or always"),
                ));
            }
            served_once(engine, policy, spec, validators, false).await
        }
        Render::Auto => match decide::needs_browser(spec) {
            Some(what) => {
                let why = Decision {
                    render: true,
                    reason: format!("the spec asks for {what}, which needs a browser"),
                };
                render_once(engine, policy, spec, actions, validators, Some((why, None))).await
            }
            None => served_once(engine, policy, spec, validators, true).await,
        },
    }
}

/// Reads the served document; with `auto`, renders it instead when it
/// does not hold the page.
async fn served_once(
    engine: &dyn BrowserEngine,
    policy: &Arc<UrlPolicy>,
    spec: &FetchSpec,
    validators: &[(String, String)],
    auto: bool,
) -> Result<Option<FetchOutput>, JobError> {
    let t1 = Instant::now();
    let mut doc = get_served(spec, policy, validators).await?;
    if doc.status == 304 && !validators.is_empty() {
        return Ok(None);
    }
    follow_meta_refreshes(spec, policy, &mut doc).await?;
    let nav = navigated(&doc);
    let fresh = crate::validators(&nav.headers);
    if doc.is_pdf() {
        let mut out = pdf_output(spec, nav, doc.body, 0.0, ms(t1.elapsed())).await?;
        out.result.rendered = false;
        out.validators = fresh;
        return Ok(Some(out));
    }
    refuse_non_html(&doc)?;
    let navigate_ms = ms(t1.elapsed());
    let (read, converted, extract_ms, convert_ms) = read_and_convert(spec, doc.text(), &doc.url).await?;
    let decision = decide::decide(&converted.signs, converted.main_words);
    if auto && decision.render {
        let served = ServedDocument {
            url: doc.url.to_string(),
            status: doc.status,
            headers: doc.headers.clone(),
            body: doc.body,
        };
        let why = Some((decision, Some(Arc::new(served))));
        return render_once(engine, policy, spec, &[], validators, why).await;
    }
    let mut warnings = Vec::new();
    if !auto && decision.render {
        warnings.push(format!(
            "read without a browser (render never), but {}: render auto or always would run its scripts",
            decision.reason
        ));
    }
    let timings = FetchTimings {
        acquire_ms: 0.0,
        navigate_ms,
        extract_ms,
        convert_ms,
        total_ms: 0.0,
    };
    let mut out = assemble(spec, nav, read, converted, timings, warnings, None);
    out.result.rendered = false;
    out.result.render_reason = auto.then_some(decision.reason);
    out.validators = fresh;
    Ok(Some(out))
}

/// GETs `url` over the policy-judged client (every redirect hop judged)
/// and reads its outline: the title, metadata and links, no Markdown.
/// A document that is not HTML has an empty outline. Returns the URL the
/// redirects ended at, with the outline.
pub async fn outline_page(
    url: &url::Url,
    policy: &UrlPolicy,
    shape: &oxwright_jobs::RequestShape,
    timeout: Duration,
) -> Result<(url::Url, crate::served::Outline), JobError> {
    let req = DocumentRequest::new(url, policy, shape, timeout, HTML_MAX_BYTES);
    let doc = HTTP.get(&req).await?;
    if !doc.is_html() || doc.attachment().is_some() {
        return Ok((doc.url, crate::served::Outline::default()));
    }
    let html = oxwright_http::decode_html(&doc.body, doc.content_type()).0;
    let outline = crate::served::read_outline(&html, &doc.url);
    Ok((doc.url, outline))
}

/// GETs the spec's URL over the policy-judged client, shaped as the spec asks.
async fn get_served(
    spec: &FetchSpec,
    policy: &UrlPolicy,
    validators: &[(String, String)],
) -> Result<Document, JobError> {
    let shape = spec.shape();
    let mut req = DocumentRequest::new(
        &spec.url,
        policy,
        &shape,
        Duration::from_millis(spec.timeout_ms.max(1)),
        HTML_MAX_BYTES,
    );
    req.conditional = validators;
    Ok(HTTP.get(&req).await?)
}

/// Follows the served document's prompt meta refreshes to pages on the
/// same host, as a browser would before the page is read (each hop judged
/// by the policy, at most [`decide::MAX_META_REFRESHES`]); the hops join
/// the redirects. A refresh to another host is left to the render (its
/// headers and credentials are the first host's).
async fn follow_meta_refreshes(
    spec: &FetchSpec,
    policy: &UrlPolicy,
    doc: &mut Document,
) -> Result<(), JobError> {
    for _ in 0..decide::MAX_META_REFRESHES {
        if !doc.is_html() || doc.attachment().is_some() {
            return Ok(());
        }
        // Only the head of the document can hold the refresh: the whole
        // body is decoded once, later, and not for this.
        let head = &doc.body[..doc.body.len().min(decide::REFRESH_SCAN_BYTES)];
        if !head.windows(7).any(|w| w.eq_ignore_ascii_case(b"refresh")) {
            return Ok(());
        }
        let head = oxwright_http::decode_html(head, doc.content_type()).0;
        let Some(target) = decide::meta_refresh_target(&head, &doc.url) else {
            return Ok(());
        };
        let same_host = target.host_str() == doc.url.host_str()
            && target.port_or_known_default() == doc.url.port_or_known_default()
            && target.host_str() == spec.url.host_str();
        if !same_host || oxwright_http::doc_key(&target) == oxwright_http::doc_key(&doc.url) {
            return Ok(());
        }
        let mut hop = spec.clone();
        hop.url = target;
        let next = get_served(&hop, policy, &[]).await?;
        let mut redirects = std::mem::take(&mut doc.redirects);
        redirects.push(next.url.to_string());
        redirects.extend(next.redirects.iter().cloned());
        *doc = Document { redirects, ..next };
    }
    Ok(())
}

/// The result of a render whose page stopped parsing its document for a
/// navigation of its own that failed (a script sending it to https on a
/// host without TLS): the document the server sent, read as served HTML,
/// with the page's warnings. `served` is the body already read, if any.
async fn stopped_page_output(
    spec: &FetchSpec,
    policy: &UrlPolicy,
    served: Option<&ServedDocument>,
    warnings: Vec<String>,
    acquire_ms: f64,
    navigate_ms: f64,
) -> Result<FetchOutput, JobError> {
    let doc = match served {
        Some(s) => Document {
            url: url::Url::parse(&s.url).unwrap_or_else(|_| spec.url.clone()),
            status: s.status,
            headers: s.headers.clone(),
            redirects: Vec::new(),
            body: s.body.clone(),
        },
        None => get_served(spec, policy, &[]).await?,
    };
    refuse_non_html(&doc)?;
    let (read, converted, extract_ms, convert_ms) = read_and_convert(spec, doc.text(), &doc.url).await?;
    let timings = FetchTimings {
        acquire_ms,
        navigate_ms,
        extract_ms,
        convert_ms,
        total_ms: 0.0,
    };
    let mut out = assemble(spec, navigated(&doc), read, converted, timings, warnings, None);
    out.result.rendered = false;
    out.result.render_reason = Some(
        "the page's own navigation stopped its rendering before it had loaded: read from the served HTML"
            .into(),
    );
    out.validators = crate::validators(&doc.headers);
    Ok(out)
}

/// The served document as a navigation's outcome.
fn navigated(doc: &Document) -> Navigated {
    Navigated {
        final_url: doc.url.to_string(),
        status: doc.status,
        content_type: doc.content_type().map(str::to_owned),
        redirects: doc.redirects.clone(),
        headers: doc.headers.clone(),
        ..Navigated::default()
    }
}

/// Refuses a served document a browser would not render as a page.
fn refuse_non_html(doc: &Document) -> Result<(), JobError> {
    let content_type = doc.content_type().unwrap_or_default().to_owned();
    if let Some(disposition) = doc.attachment() {
        return Err(JobError::new(
            ErrorKind::NonHtml,
            format!(
                "{} is sent as a download ({disposition}; {content_type}), not a page to read",
                doc.url
            ),
        )
        .with_content_type(content_type)
        .with_url(doc.url.as_str()));
    }
    if !doc.is_html() {
        return Err(JobError::new(
            ErrorKind::NonHtml,
            format!("{} is {content_type}, not HTML", doc.url),
        )
        .with_content_type(content_type)
        .with_url(doc.url.as_str()));
    }
    Ok(())
}

/// Reads the served document and converts it off the async threads (a
/// big document takes a while to parse), the page parsed once for the
/// reading, the signs and the conversion. Also gives the milliseconds the
/// reading and the conversion took.
async fn read_and_convert(
    spec: &FetchSpec,
    text: String,
    url: &url::Url,
) -> Result<(Extracted, Converted, f64, f64), JobError> {
    let opts = ExtractOptions {
        include: spec.include.clone(),
        exclude: spec.exclude.clone(),
        overlays: false,
        frames: false,
    };
    let mode = content_mode(spec);
    let side = SideTasks::start(spec, &text);
    let (url, budget, links) = (url.clone(), spec.max_tokens, spec.link_style);
    let task = tokio::task::spawn_blocking(move || {
        let t = Instant::now();
        let ServedPage {
            mut read,
            tree,
            signs,
        } = read_served_page(&text, &url, &opts)?;
        let extract_ms = ms(t.elapsed());
        let t = Instant::now();
        let extraction =
            |e: oxwright_markdown::MarkdownError| JobError::new(ErrorKind::Extraction, e.to_string());
        let base = Some(&url);
        let main_of = |conv: &Conversion| (decide::prose_words(&conv.html), conv.fell_back());
        let (mut conv, (main_words, fell_back)) = if opts.include.is_empty() {
            let reparse = || visible_tree(&text, &opts);
            let conv = document_to_markdown(tree, reparse, base, mode, links).map_err(extraction)?;
            let main = if mode == ContentMode::Main {
                main_of(&conv)
            } else {
                document_to_markdown(reparse(), reparse, base, ContentMode::Main, links)
                    .map_or((0, false), |c| main_of(&c))
            };
            (conv, main)
        } else {
            let mut page = ServedPage {
                read,
                tree,
                signs: decide::Signs::default(),
            };
            let visible = page.visible_html(&opts);
            read = page.read;
            let conv = html_to_markdown_links(&visible, base, mode, links).map_err(extraction)?;
            let main =
                html_to_markdown(&visible, base, ContentMode::Main).map_or((0, false), |c| main_of(&c));
            (conv, main)
        };
        let (markdown_tokens, trimmed) = fit_to_budget(&mut conv.markdown, budget);
        let signs = decide::Signs {
            no_article: fell_back,
            ..signs
        };
        Ok::<_, JobError>((
            read,
            conv,
            markdown_tokens,
            trimmed,
            main_words,
            signs,
            extract_ms,
            ms(t.elapsed()),
        ))
    });
    let (read, conv, markdown_tokens, trimmed, main_words, signs, extract_ms, convert_ms) =
        task.await.map_err(task_error)??;
    let (html_tokens, records) = side.finish().await?;
    let converted = Converted {
        conv,
        mode,
        markdown_tokens,
        trimmed,
        html_tokens,
        main_words,
        signs,
        records,
    };
    Ok((read, converted, extract_ms, convert_ms))
}

/// Renders the page in a browser. `auto` carries the decision that led
/// here and the served document to hand the browser.
async fn render_once(
    engine: &dyn BrowserEngine,
    policy: &Arc<UrlPolicy>,
    spec: &FetchSpec,
    actions: &[StructuredStep],
    validators: &[(String, String)],
    auto: Option<(Decision, Option<Arc<ServedDocument>>)>,
) -> Result<Option<FetchOutput>, JobError> {
    let (decision, served) = match auto {
        Some((d, s)) => (Some(d), s),
        None => (None, None),
    };
    let t0 = Instant::now();
    let mut open = OpenOptions::new(policy.clone());
    open.headless = spec.headless;
    open.shape = Arc::new(spec.shape());
    open.dialogs = spec.dialogs;
    let tab = engine.open(&open).await?;
    let acquire_ms = ms(t0.elapsed());
    let target = match &served {
        Some(s) => url::Url::parse(&s.url).unwrap_or_else(|_| spec.url.clone()),
        None => spec.url.clone(),
    };
    let opts = goto_options(spec, validators, served);
    let t1 = Instant::now();
    let page = tab.as_ref();
    let mut nav = within_memory(page, page.goto(&target, &opts)).await?;
    if !validators.is_empty() && nav.status == 304 {
        return Ok(None);
    }
    // What actions lead to is more than the first document: a result they
    // made is not revalidated by its validators (it is fetched again).
    let validators = if actions.is_empty() {
        crate::validators(&nav.headers)
    } else {
        Vec::new()
    };
    if let Some(bytes) = nav.document.take() {
        drop(tab);
        let mut out = pdf_output(spec, nav, bytes, acquire_ms, ms(t1.elapsed())).await?;
        out.validators = validators;
        out.result.render_reason = decision.map(|d| d.reason);
        return Ok(Some(out));
    }
    if nav.parse_stopped && actions.is_empty() {
        let warnings = page_warnings(page).await;
        drop(tab);
        let served = opts.served.as_deref();
        let out = stopped_page_output(spec, policy, served, warnings, acquire_ms, ms(t1.elapsed())).await?;
        return Ok(Some(out));
    }
    if spec.wait_ms > 0 {
        // A fixed extra wait, within what is left of the attempt's deadline.
        let wait = Duration::from_millis(spec.wait_ms).min(opts.timeout.saturating_sub(t1.elapsed()));
        within_memory(page, page.wait_for(&WaitCondition::Time(wait), wait)).await?;
    }
    let navigate_ms = ms(t1.elapsed());
    let exec = run_actions(page, spec, actions, &mut nav).await?;
    let page: &dyn oxwright_engine::Page = exec.as_ref().map_or(page, |e| e.page());
    let screenshot = screenshot(page, spec).await?;
    let t2 = Instant::now();
    let (read, warnings) = read_page(page, spec, &mut nav).await?;
    let extract_ms = ms(t2.elapsed());
    // The browser is done: give the page back before the CPU-bound part.
    drop(exec);
    drop(tab);
    let t3 = Instant::now();
    let base = url::Url::parse(&nav.final_url).unwrap_or_else(|_| spec.url.clone());
    let converted = convert(spec, &read, &base).await?;
    let timings = FetchTimings {
        acquire_ms,
        navigate_ms,
        extract_ms,
        convert_ms: ms(t3.elapsed()),
        total_ms: 0.0,
    };
    let mut out = assemble(spec, nav, read, converted, timings, warnings, screenshot);
    out.result.render_reason = decision.map(|d| d.reason);
    out.validators = validators;
    Ok(Some(out))
}

/// How a render navigates: the job's waits, blocking and deadline; a PDF
/// is taken whole; the validators make it conditional unless a served
/// document (which already answered them) is handed to the browser.
fn goto_options(
    spec: &FetchSpec,
    validators: &[(String, String)],
    served: Option<Arc<ServedDocument>>,
) -> GotoOptions {
    GotoOptions {
        wait_until: spec.wait_until,
        wait_for: spec.wait_for.clone(),
        block: spec.block_resources.clone(),
        timeout: Duration::from_millis(spec.timeout_ms.max(1)),
        capture_pdf: Some(PDF_MAX_BYTES),
        conditional: if served.is_some() {
            Vec::new()
        } else {
            validators.to_vec()
        },
        skip_frames: spec.frames.skipped(),
        served,
    }
}

/// Runs the job's actions on the ready page; a click that opened a tab
/// leads the read there, and the page's own navigations are followed
/// (`nav.final_url` is where they ended).
async fn run_actions<'p>(
    page: &'p dyn oxwright_engine::Page,
    spec: &FetchSpec,
    actions: &[StructuredStep],
    nav: &mut Navigated,
) -> Result<Option<Executor<'p>>, JobError> {
    if actions.is_empty() {
        return Ok(None);
    }
    let run = async {
        run_steps(page, actions, &spec.url, action_timeout(spec))
            .await
            .map_err(action_error)
    };
    let exec = within_memory(page, run).await?;
    if let Ok(url) = exec.page().url().await {
        nav.final_url = url;
    }
    Ok(Some(exec))
}

/// The screenshot the job asked for, if any.
async fn screenshot(page: &dyn oxwright_engine::Page, spec: &FetchSpec) -> Result<Option<Vec<u8>>, JobError> {
    let full_page = spec.formats.contains(&Format::ScreenshotFullPage);
    if !(spec.screenshot || full_page || spec.formats.contains(&Format::Screenshot)) {
        return Ok(None);
    }
    let opts = ScreenshotOptions {
        full_page,
        ..ScreenshotOptions::default()
    };
    Ok(Some(page.screenshot(&opts).await?))
}

/// Reads the rendered page, and the warnings it leaves (what the policy
/// refused, added to `nav`, among them).
async fn read_page(
    page: &dyn oxwright_engine::Page,
    spec: &FetchSpec,
    nav: &mut Navigated,
) -> Result<(Extracted, Vec<String>), JobError> {
    let read = ExtractOptions {
        include: spec.include.clone(),
        exclude: spec.exclude.clone(),
        overlays: spec.content == ContentMode::Main && !spec.keep_overlays,
        frames: spec.frames == oxwright_jobs::Frames::Inline,
    };
    let read = within_memory(page, extract_with(page, &read, EXTRACT_LIMIT)).await?;
    let mut warnings = page_warnings(page).await;
    // What the page tried after its load event (popups, workers, a script's navigation).
    nav.refused.extend(page.policy_refusals().await);
    if !nav.refused.is_empty() {
        warnings.push(format!(
            "url policy refused {} sub-request(s), first: {}",
            nav.refused.len(),
            nav.refused[0]
        ));
    }
    Ok((read, warnings))
}

/// The warnings a rendered page leaves: its wait's outcome, navigations it
/// started after it had rendered, the dialogs it opened.
async fn page_warnings(page: &dyn oxwright_engine::Page) -> Vec<String> {
    let mut warnings = page.navigation_warnings().await;
    for d in &page.dialogs().await {
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
    warnings
}

/// A page's HTML converted: the Markdown, its token counts, and (for a
/// served document) what `render: auto` decides on.
pub(crate) struct Converted {
    conv: Conversion,
    mode: ContentMode,
    markdown_tokens: usize,
    trimmed: Option<(usize, usize)>,
    html_tokens: usize,
    /// Words of the main content, before any token budget.
    main_words: usize,
    signs: decide::Signs,
    /// What `extract_css` read, when the spec has one.
    records: Option<oxwright_extract::Records>,
}

/// What a page's conversion runs beside itself on the page's whole HTML:
/// counting its tokens (more than the conversion costs) and reading the
/// records of `extract_css`.
struct SideTasks {
    html_tokens: tokio::task::JoinHandle<usize>,
    records: Option<tokio::task::JoinHandle<oxwright_extract::Records>>,
}

impl SideTasks {
    fn start(spec: &FetchSpec, html: &str) -> Self {
        let page_html = html.to_owned();
        let html_tokens = tokio::task::spawn_blocking(move || count_tokens(&page_html));
        let records = spec.extract_css.clone().map(|schema| {
            let page_html = html.to_owned();
            tokio::task::spawn_blocking(move || oxwright_extract::extract_css(&schema, &page_html))
        });
        Self { html_tokens, records }
    }

    async fn finish(self) -> Result<(usize, Option<oxwright_extract::Records>), JobError> {
        let html_tokens = self.html_tokens.await.map_err(task_error)?;
        let records = match self.records {
            Some(task) => Some(task.await.map_err(task_error)?),
            None => None,
        };
        Ok((html_tokens, records))
    }
}

fn task_error(e: tokio::task::JoinError) -> JobError {
    JobError::new(ErrorKind::Internal, format!("conversion task: {e}"))
}

/// How the page is converted: `include` replaces main-content detection,
/// what it selected converted whole.
fn content_mode(spec: &FetchSpec) -> ContentMode {
    if spec.include.is_empty() {
        spec.content
    } else {
        ContentMode::Full
    }
}

/// Converts a rendered page's `read` to Markdown off the async threads.
async fn convert(spec: &FetchSpec, read: &Extracted, base: &url::Url) -> Result<Converted, JobError> {
    let mode = content_mode(spec);
    let side = SideTasks::start(spec, &read.html);
    let visible = read.visible_html.clone();
    let base = base.clone();
    let budget = spec.max_tokens;
    let links = spec.link_style;
    let converted = tokio::task::spawn_blocking(move || {
        let mut conv = html_to_markdown_links(&visible, Some(&base), mode, links)?;
        let (markdown_tokens, trimmed) = fit_to_budget(&mut conv.markdown, budget);
        Ok::<_, oxwright_markdown::MarkdownError>((conv, markdown_tokens, trimmed))
    });
    let (conv, markdown_tokens, trimmed) = converted
        .await
        .map_err(task_error)?
        .map_err(|e| JobError::new(ErrorKind::Extraction, e.to_string()))?;
    let (html_tokens, records) = side.finish().await?;
    Ok(Converted {
        conv,
        mode,
        markdown_tokens,
        trimmed,
        html_tokens,
        main_words: 0,
        signs: decide::Signs::default(),
        records,
    })
}

/// The result of a read page: the conversion, the page's metadata, the
/// formats the spec asked for, and every warning.
fn assemble(
    spec: &FetchSpec,
    nav: Navigated,
    page: Extracted,
    converted: Converted,
    timings: FetchTimings,
    page_warnings: Vec<String>,
    screenshot: Option<Vec<u8>>,
) -> FetchOutput {
    let Converted {
        conv,
        mode,
        markdown_tokens,
        trimmed,
        html_tokens,
        records,
        ..
    } = converted;
    let raw_html = spec.formats.contains(&Format::RawHtml).then(|| page.html.clone());
    let cleaned_html = spec.formats.contains(&Format::Html).then(|| conv.html.clone());
    let text = spec
        .formats
        .contains(&Format::Text)
        .then(|| oxwright_markdown::markdown_to_text(&conv.markdown));
    let mut metadata = page.metadata;
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
    warnings.extend(page_warnings);
    let extract = records.map(|r| {
        warnings.extend(r.warnings);
        serde_json::Value::Array(r.records)
    });
    let extraction = extract.as_ref().map(|_| oxwright_jobs::Extraction::css());
    // A learned extraction reads the page's HTML after the fetch.
    let html = (spec.include_html || spec.learn).then_some(page.html);
    FetchOutput {
        result: FetchResult {
            url: spec.url.to_string(),
            final_url: nav.final_url,
            status: nav.status,
            content_type: nav.content_type,
            rendered: true,
            render_reason: None,
            title: page.title,
            metadata,
            links: page.links,
            images: page.images,
            markdown: conv.markdown,
            truncated: trimmed.is_some(),
            html: cleaned_html,
            raw_html,
            text,
            content_mode: mode,
            tokens: TokenCounts {
                html: html_tokens,
                markdown: markdown_tokens,
            },
            timings,
            attempts: 1,
            warnings,
            extract,
            extraction,
            artifacts: Vec::new(),
            cache: Some(CacheStatus::Miss),
        },
        html,
        screenshot,
        validators: Vec::new(),
    }
}
