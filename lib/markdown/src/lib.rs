//! HTML to Markdown: main-content and full-page modes, token counts.
//!
//! The pipeline parses the rendered document once with `dom_query`, strips
//! everything that is not visible content (`clean`), optionally narrows it to
//! the main content with `dom_smoothie` between our boilerplate rules
//! (`extract`, `extract/prune.rs`), converts with `htmd` plus
//! our own table, link, image and code handlers (`convert`), and tidies the
//! whitespace (`tidy`). `design.md` beside this crate records why.

mod clean;
mod convert;
mod extract;
mod text;
mod tidy;
mod tokens;

pub use clean::open_shadow_roots;
pub use oxwright_jobs::{ContentMode, LinkStyle};
pub use text::markdown_to_text;
pub use tokens::{Trimmed, count_tokens, trim_to_tokens};

/// Warning added when a page has no visible text at all.
pub const EMPTY_PAGE_WARNING: &str = "empty page: no visible text";

/// Warning prefix used when main-content extraction gave way to the full page.
pub const MAIN_FALLBACK_WARNING: &str = "main-content extraction fell back to full page";

/// The Markdown rendering of one page and what went wrong on the way.
#[derive(Debug, Clone, PartialEq)]
pub struct Conversion {
    /// The Markdown, trimmed, with no HTML left in it.
    pub markdown: String,
    /// Human-readable notes on degraded results (empty page, extraction fallback).
    pub warnings: Vec<String>,
    /// The cleaned HTML that became the Markdown: the main content's, or
    /// the visible page's `<body>` (scripts, styles, hidden and non-content
    /// elements gone, URLs absolute).
    pub html: String,
}

impl Conversion {
    /// Says whether main-content extraction found no article and the whole
    /// page was converted instead (the [`MAIN_FALLBACK_WARNING`]).
    pub fn fell_back(&self) -> bool {
        self.warnings.iter().any(|w| w.starts_with(MAIN_FALLBACK_WARNING))
    }
}

/// Why a page could not be converted at all.
#[derive(Debug, thiserror::Error)]
pub enum MarkdownError {
    /// The HTML could not be turned into a tree (html5ever reported an I/O error).
    #[error("html could not be converted: {0}")]
    Convert(#[source] std::io::Error),
}

impl MarkdownError {
    /// Tells whether retrying the same input could succeed; it never can.
    pub fn is_retryable(&self) -> bool {
        match self {
            MarkdownError::Convert(_) => false,
        }
    }
}

/// Converts a rendered document (the `outerHTML` of `<html>`) to Markdown.
///
/// `base_url` resolves relative links and images to absolute ones (a
/// `<base href>` in the page is honoured on top of it). In
/// [`ContentMode::Main`] only the readability-style main content is kept; if
/// that extraction fails or keeps almost nothing of a page that has text, the
/// whole page is converted instead and a warning says so.
pub fn html_to_markdown(
    html: &str,
    base_url: Option<&url::Url>,
    mode: ContentMode,
) -> Result<Conversion, MarkdownError> {
    html_to_markdown_with(html, base_url, mode, Extractor::default())
}

/// [`html_to_markdown`] with links written as `links` says.
pub fn html_to_markdown_links(
    html: &str,
    base_url: Option<&url::Url>,
    mode: ContentMode,
    links: LinkStyle,
) -> Result<Conversion, MarkdownError> {
    convert_page(html, base_url, mode, Extractor::default(), links)
}

/// The main-content extractors [`html_to_markdown_with`] can run; the
/// default is the one `html_to_markdown` uses. The others stay for the
/// quality benchmark (`oxwright-bench quality`), which compares them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Extractor {
    /// dom_smoothie's readability port after our chrome pre-strip, between
    /// furniture and link-density rules (`extract/prune.rs`), with a prose
    /// check that overrules a readability pick missing the page's prose and
    /// the lead put back (`extract/prose.rs`): the default
    /// (snippet F1 0.886 → 0.916 on trafilatura's set, BENCHMARKS.md §8).
    #[default]
    Pruned,
    /// dom_smoothie's readability port after our chrome pre-strip only (the
    /// earlier default; kept for the quality benchmark).
    Readability,
}

impl Extractor {
    /// Every extractor, default first.
    pub const ALL: &[Extractor] = &[Extractor::Pruned, Extractor::Readability];

    /// The extractor's short name.
    pub fn name(self) -> &'static str {
        match self {
            Extractor::Readability => "readability",
            Extractor::Pruned => "pruned",
        }
    }
}

/// [`html_to_markdown`] with a chosen main-content extractor (ignored in
/// [`ContentMode::Full`]).
pub fn html_to_markdown_with(
    html: &str,
    base_url: Option<&url::Url>,
    mode: ContentMode,
    extractor: Extractor,
) -> Result<Conversion, MarkdownError> {
    convert_page(html, base_url, mode, extractor, LinkStyle::Inline)
}

/// Converts a page its caller parsed already (the served-HTML reader's
/// tree, with what does not show taken out) as [`html_to_markdown_links`]
/// converts markup, so the page is parsed once. `reparse` gives a fresh
/// tree when main-content extraction, which takes the tree apart, gives way
/// to the whole page.
pub fn document_to_markdown(
    doc: dom_query::Document,
    reparse: impl FnOnce() -> dom_query::Document,
    base_url: Option<&url::Url>,
    mode: ContentMode,
    links: LinkStyle,
) -> Result<Conversion, MarkdownError> {
    convert_parsed(doc, reparse, base_url, mode, Extractor::default(), links)
}

fn convert_page(
    html: &str,
    base_url: Option<&url::Url>,
    mode: ContentMode,
    extractor: Extractor,
    links: LinkStyle,
) -> Result<Conversion, MarkdownError> {
    let parse = || clean::parse(html);
    convert_parsed(parse(), parse, base_url, mode, extractor, links)
}

fn convert_parsed(
    doc: dom_query::Document,
    reparse: impl FnOnce() -> dom_query::Document,
    base_url: Option<&url::Url>,
    mode: ContentMode,
    extractor: Extractor,
    links: LinkStyle,
) -> Result<Conversion, MarkdownError> {
    let mut warnings = Vec::new();
    let mut cleaned = String::new();
    let markdown = match mode {
        ContentMode::Full => full_page(doc, base_url, links, &mut cleaned)?,
        ContentMode::Main => {
            let doc = clean::clean(doc, base_url);
            let outcome = extract::main_content(doc, extractor == Extractor::Pruned);
            match outcome {
                extract::Outcome::Article { html, title } => {
                    let body = convert::to_markdown(&html, links)?;
                    cleaned = html;
                    tidy::tidy(&with_title(body, &title))
                }
                extract::Outcome::TooLittle {
                    page_chars,
                    kept_chars,
                } => {
                    warnings.push(format!(
                        "{MAIN_FALLBACK_WARNING}: main content kept {kept_chars} of {page_chars} characters"
                    ));
                    full_page(reparse(), base_url, links, &mut cleaned)?
                }
                extract::Outcome::Failed(reason) => {
                    warnings.push(format!("{MAIN_FALLBACK_WARNING}: {reason}"));
                    full_page(reparse(), base_url, links, &mut cleaned)?
                }
                extract::Outcome::EmptyPage => String::new(),
            }
        }
    };
    if markdown.is_empty() {
        // A fallback warning would only repeat what the empty-page one says.
        warnings.clear();
        warnings.push(EMPTY_PAGE_WARNING.to_owned());
    }
    Ok(Conversion {
        markdown,
        warnings,
        html: cleaned,
    })
}

/// Converts the whole visible page; `cleaned` receives the body's cleaned HTML.
fn full_page(
    doc: dom_query::Document,
    base_url: Option<&url::Url>,
    links: LinkStyle,
    cleaned: &mut String,
) -> Result<String, MarkdownError> {
    let doc = clean::clean(doc, base_url);
    let body = clean::body_html(&doc);
    let markdown = tidy::tidy(&convert::to_markdown(&body, links)?);
    *cleaned = body;
    Ok(markdown)
}

/// Puts the article title on top as the one `#` heading: an existing heading
/// with the same text is promoted (readability demotes `h1` to `h2`),
/// otherwise the title is prepended.
fn with_title(body: String, title: &str) -> String {
    let title = convert::one_line(title);
    if title.is_empty() {
        return body;
    }
    let mut lines: Vec<&str> = body.lines().collect();
    let heading = format!("# {title}");
    let mut in_fence = false;
    for line in lines.iter_mut() {
        if line.starts_with("```") || line.starts_with("~~~") {
            in_fence = !in_fence;
        }
        if !in_fence && line.starts_with('#') && line.trim_start_matches('#').trim() == title {
            *line = &heading;
            return lines.join("\n");
        }
    }
    format!("{heading}\n\n{body}")
}
