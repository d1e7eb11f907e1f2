//! The result of a page fetch: its Markdown and what was read beside it,
//! token counts and timings, how structured data was extracted, and
//! whether it came from the cache.

use serde::{Deserialize, Serialize};

use crate::{ContentMode, PageImage, PageLinks, PageMetadata};

fn default_rendered() -> bool {
    true
}

/// Token counts (cl100k) before and after conversion.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenCounts {
    /// Tokens in the rendered HTML.
    pub html: usize,
    /// Tokens in the Markdown.
    pub markdown: usize,
}

impl TokenCounts {
    /// Returns the reduction of Markdown versus HTML, 0.0–1.0.
    pub fn reduction(&self) -> f64 {
        if self.html == 0 {
            return 0.0;
        }
        1.0 - self.markdown as f64 / self.html as f64
    }
}

/// Where the time of a fetch went, in milliseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct FetchTimings {
    /// Waiting for a browser from the pool.
    pub acquire_ms: f64,
    /// Navigation until the requested state, then `wait_for` and `wait_ms`.
    pub navigate_ms: f64,
    /// Reading the DOM and metadata out of the page.
    pub extract_ms: f64,
    /// HTML → Markdown and token counting.
    pub convert_ms: f64,
    /// The whole job including retries and backoff.
    pub total_ms: f64,
}

/// A successful page fetch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FetchResult {
    /// The URL that was asked for.
    pub url: String,
    /// The URL after redirects.
    pub final_url: String,
    /// HTTP status of the final main document.
    pub status: u16,
    /// Content type of the final main document.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
    /// Whether the page was rendered in a browser (`false`: read from the
    /// HTML the server sent, without running its scripts).
    #[serde(default = "default_rendered")]
    pub rendered: bool,
    /// Why the page was (or was not) rendered, when the spec's `render`
    /// left it to a decision (`auto`) or a render mode was overruled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub render_reason: Option<String>,
    /// The document title.
    pub title: String,
    /// Page metadata.
    pub metadata: PageMetadata,
    /// The page's links, internal and external (always written, empty lists included).
    #[serde(default)]
    pub links: PageLinks,
    /// The page's images.
    #[serde(default)]
    pub images: Vec<PageImage>,
    /// The Markdown.
    pub markdown: String,
    /// The cleaned HTML that became the Markdown, when `formats` asked for `html`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub html: Option<String>,
    /// The HTML as rendered, when `formats` asked for `raw_html`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_html: Option<String>,
    /// The Markdown as plain text, when `formats` asked for `text`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// The Markdown was cut to `max_tokens` at a block boundary
    /// (`tokens.markdown` counts what was kept; a warning gives both counts).
    #[serde(default)]
    pub truncated: bool,
    /// Which content mode produced the Markdown.
    pub content_mode: ContentMode,
    /// Token counts before and after conversion.
    pub tokens: TokenCounts,
    /// Timings of the successful attempt (total covers all).
    pub timings: FetchTimings,
    /// Attempts made, 1 when the first one succeeded.
    pub attempts: u32,
    /// Things worth knowing that did not fail the fetch.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// What the page gave: the records `extract_css` read, in page
    /// order, or the value the model read by `extract`'s schema (absent
    /// when the spec asked for neither).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extract: Option<serde_json::Value>,
    /// How `extract` was read, and what the model cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extraction: Option<Extraction>,
    /// Artefact keys written for this job (page.md, page.html, screenshot.png).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<String>,
    /// Where the result came from: the page (`miss`), the cache with no
    /// request (`hit`), or the cache after the server answered a
    /// conditional request with 304 (`revalidated`). Absent only in
    /// results written before the cache existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<CacheStatus>,
}

/// How a page's `extract` was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExtractionMethod {
    /// By the CSS selectors of `extract_css`; no model was asked.
    Css,
    /// By the model, under `extract`'s JSON Schema.
    Llm,
    /// By the selectors of a CSS schema learned from the model's reading
    /// of an earlier page of the same URL pattern; no model was asked.
    Learned,
}

/// How a page's `extract` was read, and what it cost.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Extraction {
    /// Selectors or the model.
    pub method: ExtractionMethod,
    /// Parts of the page sent to the model, one or more (0 for CSS).
    #[serde(default)]
    pub parts: u32,
    /// Model calls made, repairs included.
    #[serde(default)]
    pub llm_calls: u32,
    /// Prompt tokens of those calls, as the endpoint reported them.
    #[serde(default)]
    pub prompt_tokens: u64,
    /// Completion tokens of those calls.
    #[serde(default)]
    pub completion_tokens: u64,
    /// The store key of the learned CSS schemas that read the page
    /// (`learned`), or that its reading by the model was kept under (`llm`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub learned_schema: Option<String>,
}

impl Extraction {
    /// A reading by selectors: no model call.
    pub fn css() -> Self {
        Self {
            method: ExtractionMethod::Css,
            parts: 0,
            llm_calls: 0,
            prompt_tokens: 0,
            completion_tokens: 0,
            learned_schema: None,
        }
    }
}

/// Where a fetch result came from (see [`FetchResult::cache`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CacheStatus {
    /// Served from the cache within `max_age_ms`; no request was made.
    Hit,
    /// The cached entry was older than `max_age_ms`; the server answered
    /// the conditional request with 304, so it was served again and its
    /// age reset.
    Revalidated,
    /// Fetched from the page (nothing cached, stale with no validator, or changed).
    Miss,
}
