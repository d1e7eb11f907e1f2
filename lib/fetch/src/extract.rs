//! Reads a rendered page in one script evaluation: the HTML as rendered,
//! the HTML with CSS-hidden elements removed, the title and the metadata.

use std::collections::BTreeMap;
use std::time::Duration;

use oxwright_engine::{EngineError, EngineErrorKind, Page};
use oxwright_jobs::PageMetadata;
use serde::Deserialize;

/// The content of a rendered page.
#[derive(Debug, Clone, Default)]
pub struct Extracted {
    /// `document.documentElement.outerHTML` as rendered.
    pub html: String,
    /// The same with every element that is not rendered (display:none,
    /// visibility:hidden, `hidden`) removed: the input of Markdown conversion.
    pub visible_html: String,
    /// `document.title`.
    pub title: String,
    /// Description, language, canonical URL and other meta tags.
    pub metadata: PageMetadata,
}

#[derive(Deserialize)]
struct Raw {
    html: String,
    visible: String,
    title: String,
    lang: Option<String>,
    canonical: Option<String>,
    meta: BTreeMap<String, String>,
}

/// Runs in the page. The page's document is left after the job, so
/// removing hidden elements from the live DOM is safe and cheaper than
/// cloning it.
pub const EXTRACT_JS: &str = r#"(() => {
  const d = document;
  const root = d.documentElement;
  const html = root ? root.outerHTML : '';
  const meta = {};
  for (const m of d.querySelectorAll('meta[name][content], meta[property][content]')) {
    const k = (m.getAttribute('name') || m.getAttribute('property')).toLowerCase();
    if (!(k in meta)) meta[k] = m.getAttribute('content');
  }
  const canon = d.querySelector('link[rel~="canonical"][href]');
  // checkVisibility is one native call on the laid-out tree; only the
  // elements it doubts (no box, e.g. display:contents or SVG defs) pay for
  // a computed style.
  const styleHidden = (n) => {
    const s = getComputedStyle(n);
    return s.display === 'none' || s.visibility === 'hidden' || s.visibility === 'collapse';
  };
  const hidden = [];
  if (d.body) {
    const walker = d.createTreeWalker(d.body, NodeFilter.SHOW_ELEMENT, { acceptNode(n) {
      const doubt = typeof n.checkVisibility !== 'function' || !n.checkVisibility({ visibilityProperty: true });
      if (n.hidden || (doubt && styleHidden(n))) {
        hidden.push(n);
        return NodeFilter.FILTER_REJECT;
      }
      return NodeFilter.FILTER_ACCEPT;
    }});
    while (walker.nextNode()) {}
  }
  for (const n of hidden) n.remove();
  return {
    html,
    visible: root ? root.outerHTML : '',
    title: d.title || '',
    lang: (root && root.getAttribute('lang')) || null,
    canonical: canon ? canon.href : null,
    meta,
  };
})()"#;

/// Parses what [`EXTRACT_JS`] returned.
pub fn parse_extracted(value: serde_json::Value) -> Result<Extracted, EngineError> {
    let raw: Raw = serde_json::from_value(value)
        .map_err(|e| EngineError::new(EngineErrorKind::Script, format!("unexpected page read: {e}")))?;
    let mut meta = raw.meta;
    let description = meta.remove("description");
    Ok(Extracted {
        html: raw.html,
        visible_html: raw.visible,
        title: raw.title,
        metadata: PageMetadata {
            description,
            lang: raw.lang,
            canonical: raw.canonical,
            meta,
        },
    })
}

/// Reads the page's HTML and metadata; see [`Extracted`].
pub async fn extract(page: &dyn Page, limit: Duration) -> Result<Extracted, EngineError> {
    parse_extracted(page.evaluate(EXTRACT_JS, limit).await?)
}
