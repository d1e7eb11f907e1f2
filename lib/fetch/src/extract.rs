//! Reads a rendered page in one script evaluation: the HTML as rendered,
//! the HTML to convert (CSS-hidden elements, `exclude` matches and, in main
//! mode, overlays removed; or only the `include` matches), the title, the
//! metadata, the links and the images. The two HTML strings of a big page
//! come back in slices of at most [`SLICE`] code units each.

use std::collections::BTreeMap;
use std::time::Duration;

use oxwright_engine::{EngineError, EngineErrorKind, Page};
use oxwright_jobs::{PageImage, PageLinks, PageMetadata};
use serde::{Deserialize, Serialize};

/// The content of a rendered page.
#[derive(Debug, Clone, Default)]
pub struct Extracted {
    /// `document.documentElement.outerHTML` as rendered.
    pub html: String,
    /// The same with every element that is not rendered (display:none,
    /// visibility:hidden, `hidden`) removed, then what [`ExtractOptions`]
    /// asked: the input of Markdown conversion.
    pub visible_html: String,
    /// `document.title`.
    pub title: String,
    /// Description, language, canonical URL, cards, JSON-LD, dates, other meta tags.
    pub metadata: PageMetadata,
    /// The page's http(s) links (the whole page, before any removal).
    pub links: PageLinks,
    /// The page's images (the whole page, before any removal).
    pub images: Vec<PageImage>,
    /// Elements `include` selected (outermost ones, in document order);
    /// `None` when no `include` was given.
    pub included: Option<usize>,
    /// Overlays (cookie banners, consent walls, modals) removed.
    pub overlays_removed: usize,
}

/// What the page read keeps and drops.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ExtractOptions {
    /// CSS selectors: when any is given, only what they match is converted.
    pub include: Vec<String>,
    /// CSS selectors whose matches are removed first.
    pub exclude: Vec<String>,
    /// Removes cookie banners, consent walls and modal overlays.
    pub overlays: bool,
    /// Reads each same-origin frame's visible content in place of its
    /// frame element (`frames: inline`).
    pub frames: bool,
}

#[derive(Deserialize)]
struct Raw {
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    html: String,
    #[serde(default)]
    visible: String,
    #[serde(default)]
    title: String,
    lang: Option<String>,
    canonical: Option<String>,
    #[serde(default)]
    next: Option<String>,
    #[serde(default)]
    meta: BTreeMap<String, String>,
    #[serde(default)]
    og: BTreeMap<String, String>,
    #[serde(default)]
    twitter: BTreeMap<String, String>,
    #[serde(default)]
    json_ld: Vec<serde_json::Value>,
    published: Option<String>,
    modified: Option<String>,
    #[serde(default)]
    links: PageLinks,
    #[serde(default)]
    images: Vec<PageImage>,
    included: Option<usize>,
    #[serde(default)]
    overlays: usize,
    /// Fields left empty in the answer and kept page-side instead, with
    /// their lengths in UTF-16 code units (see [`SLICE`]).
    #[serde(default)]
    sliced: BTreeMap<String, usize>,
}

/// The page-side reader, a function of [`ExtractOptions`]. The page's
/// document is left after the job, so removing elements from the live DOM
/// is safe and cheaper than cloning it.
macro_rules! extract_fn {
    () => {
        r#"((o) => {
  const d = document;
  const root = d.documentElement;
  // The closed shadow roots the engine handed over at `o.closed` (see
  // `Page::expose_closed_shadow_roots`), by host; taken off the page at once.
  const closedOf = new Map();
  if (o.closed) {
    const given = globalThis[o.closed];
    delete globalThis[o.closed];
    if (Array.isArray(given)) for (const r of given) if (r && r.host) closedOf.set(r.host, r);
  }
  for (const sel of o.include.concat(o.exclude)) {
    try { d.createDocumentFragment().querySelector(sel); }
    catch (e) { return { error: 'selector ' + JSON.stringify(sel) + ' is not valid CSS' }; }
  }
  const html = root ? root.outerHTML : '';
  const one = (t) => (t || '').replace(/\s+/g, ' ').trim();
  const abs = (u) => { try { return new URL(u, d.baseURI).href; } catch (e) { return u; } };
  const meta = {}, og = {}, twitter = {};
  const URLISH = /(^|:)(image|url|video|audio|player)(:url|:secure_url|:src)?$/;
  for (const m of d.querySelectorAll('meta[content]')) {
    const k = one(m.getAttribute('property') || m.getAttribute('name') || m.getAttribute('itemprop')).toLowerCase();
    if (!k) continue;
    let v = one(m.getAttribute('content'));
    const social = /^(og|article|book|profile):/.test(k) ? og : k.startsWith('twitter:') ? twitter : null;
    if (social && v && URLISH.test(k)) v = abs(v);
    const into = social || meta;
    if (!(k in into)) into[k] = v;
  }
  const json_ld = [];
  for (const s of d.querySelectorAll('script[type="application/ld+json" i]')) {
    if (json_ld.length >= 20) break;
    try { json_ld.push(JSON.parse(s.textContent)); } catch (e) {}
  }
  const fromLd = (key) => {
    const seen = new Set();
    const walk = (v, depth) => {
      if (!v || typeof v !== 'object' || depth > 6 || seen.has(v)) return null;
      seen.add(v);
      if (!Array.isArray(v) && typeof v[key] === 'string') return v[key];
      for (const c of (Array.isArray(v) ? v : Object.values(v))) { const f = walk(c, depth + 1); if (f) return f; }
      return null;
    };
    return walk(json_ld, 0);
  };
  const timeOf = (prop) => { const t = d.querySelector('[itemprop=' + prop + ']'); return t ? (t.getAttribute('datetime') || t.getAttribute('content') || null) : null; };
  const first = (...vs) => vs.find((v) => typeof v === 'string' && v.trim()) || null;
  const published = first(og['article:published_time'], meta['datepublished'], meta['date'], meta['pubdate'],
    meta['publishdate'], meta['dc.date.issued'], meta['dc.date'], meta['dcterms.created'], fromLd('datePublished'), timeOf('datePublished'));
  const modified = first(og['article:modified_time'], og['og:updated_time'], meta['datemodified'], meta['last-modified'],
    meta['dc.date.modified'], meta['dcterms.modified'], fromLd('dateModified'), timeOf('dateModified'));
  const canon = d.querySelector('link[rel~="canonical" i][href]');
  const nextLink = d.querySelector('link[rel~="next" i][href]');
  const bare = (h) => h.toLowerCase().replace(/^www\./, '');
  const here = bare(location.hostname);
  const self = location.href.split('#')[0];
  const links = { internal: [], external: [] };
  const byUrl = new Map();
  for (const a of d.querySelectorAll('a[href], area[href]')) {
    if (byUrl.size >= 5000) break;
    let u;
    try { u = new URL(a.getAttribute('href'), d.baseURI); } catch (e) { continue; }
    if (u.protocol !== 'http:' && u.protocol !== 'https:') continue;
    u.hash = '';
    const url = u.href;
    if (url === self) continue;
    const text = one(a.textContent || a.getAttribute('aria-label') || a.getAttribute('title')).slice(0, 200);
    const known = byUrl.get(url);
    if (known) { if (!known.text && text) known.text = text; continue; }
    const link = { url, text };
    byUrl.set(url, link);
    (bare(u.hostname) === here ? links.internal : links.external).push(link);
  }
  const images = [];
  const imgSeen = new Set();
  const usable = (s) => s && !/^\s*data:/i.test(s);
  for (const img of d.querySelectorAll('img')) {
    if (images.length >= 2000) break;
    let src = usable(img.currentSrc) ? img.currentSrc : usable(img.getAttribute('src')) ? img.getAttribute('src') : null;
    for (const a of ['data-src', 'data-lazy-src', 'data-original']) if (!src && usable(img.getAttribute(a))) src = img.getAttribute(a);
    if (!src) { const set = img.getAttribute('srcset') || img.getAttribute('data-srcset') || ''; const f = set.split(',')[0].trim().split(/\s+/)[0]; if (usable(f)) src = f; }
    if (!src) continue;
    src = abs(src.trim());
    if (!/^https?:/i.test(src) || imgSeen.has(src)) continue;
    imgSeen.add(src);
    images.push({ src, alt: one(img.getAttribute('alt')) });
  }
  // checkVisibility is one native call on the laid-out tree; only the
  // elements it doubts (no box, e.g. display:contents or SVG defs) pay for
  // a computed style.
  const styleHidden = (n) => {
    const s = getComputedStyle(n);
    return s.display === 'none' || s.visibility === 'hidden' || s.visibility === 'collapse';
  };
  const hidden = [];
  let overlays = 0;
  const removeOverlays = () => {
    const fixedFrom = (n, sticky) => {
      for (let e = n; e && e !== d.body; e = e.parentElement) {
        const p = getComputedStyle(e).position;
        if (p === 'fixed' || (sticky && p === 'sticky')) return e;
      }
      return null;
    };
    const small = (e) => e !== d.body && e !== root && one(e.textContent).length < 2000
      && !e.querySelector('article, main, [role=main], h1') && !e.closest('article');
    const topLevel = (e) => e.parentElement === d.body || (e.parentElement && e.parentElement.parentElement === d.body);
    const doomed = new Set();
    const CONSENT = '[id*=cookie i], [class*=cookie i], [id*=consent i], [class*=consent i], [id*=gdpr i], [class*=gdpr i], '
      + '[aria-label*=cookie i], [aria-label*=consent i], [id^=onetrust i], [id^=CybotCookiebot], [id^=didomi], '
      + '[id=usercentrics-root], [class*=cc-window], [class*=cc-banner], [id^=sp_message], [id*=qc-cmp], [class*=fc-consent]';
    for (const n of d.body.querySelectorAll(CONSENT)) {
      const fixed = fixedFrom(n, true);
      const target = fixed || (topLevel(n) ? n : null);
      if (target && small(target)) doomed.add(target);
    }
    const vw = innerWidth, vh = innerHeight;
    const MODAL = '[role=dialog], [role=alertdialog], [aria-modal=true], dialog[open], body > *, body > * > *';
    for (const n of d.body.querySelectorAll(MODAL)) {
      const s = getComputedStyle(n);
      if (s.position !== 'fixed') continue;
      const r = n.getBoundingClientRect();
      const cover = Math.max(0, Math.min(r.right, vw) - Math.max(r.left, 0)) * Math.max(0, Math.min(r.bottom, vh) - Math.max(r.top, 0));
      const z = parseInt(s.zIndex, 10);
      const dialog = n.matches('[role=dialog], [role=alertdialog], [aria-modal=true], dialog');
      if ((dialog || (cover >= 0.5 * vw * vh && z >= 10)) && small(n)) doomed.add(n);
    }
    for (const n of doomed) if (n.isConnected) { n.remove(); overlays++; }
  };
  let included = null;
  let visible = '';
  // Same-origin frames (`frames: inline`): each frame element gives way to
  // a section holding its document's visible body, nested frames first.
  // A cross-origin frame's document is out of reach and stays out.
  const inlineFrames = (doc, depth) => {
    for (const f of [...doc.querySelectorAll('iframe, frame')]) {
      let fd = null;
      try { fd = f.contentDocument; } catch (e) { fd = null; }
      if (!fd || !fd.body) continue;
      if (depth < 3) inlineFrames(fd, depth + 1);
      const gone = [];
      const w = fd.createTreeWalker(fd.body, NodeFilter.SHOW_ELEMENT);
      for (let n = w.nextNode(); n; n = w.nextNode()) {
        if (/^(SCRIPT|STYLE|NOSCRIPT|TEMPLATE)$/.test(n.tagName)
          || (typeof n.checkVisibility === 'function' && !n.checkVisibility({ visibilityProperty: true }))) gone.push(n);
      }
      for (const n of gone) n.remove();
      const section = doc.createElement('section');
      section.setAttribute('data-frame', f.getAttribute('title') || f.getAttribute('src') || '');
      section.innerHTML = fd.body.innerHTML;
      f.replaceWith(section);
    }
  };
  if (o.frames && d.body) inlineFrames(d, 1);
  // Shadow roots (web components), open and handed-over closed ones,
  // nested ones included: their content shows on the page, so it is
  // walked and serialised too.
  const shadows = [];
  const findShadows = (r) => {
    const w = d.createTreeWalker(r, NodeFilter.SHOW_ELEMENT);
    for (let n = w.nextNode(); n && shadows.length < 1000; n = w.nextNode()) {
      const sr = n.shadowRoot || closedOf.get(n);
      if (sr) { shadows.push(sr); findShadows(sr); }
    }
  };
  if (d.body) findShadows(d.body);
  if (d.body) {
    // A page hidden whole (AMP's boilerplate, anti-flicker snippets: body
    // or html at visibility:hidden until a script shows it) is not hidden
    // content: when that script never runs (blocked, unreachable), every
    // element would read as hidden and the page as empty. Only the page
    // level is overridden; elements hidden on their own stay hidden.
    const pageHidden = (e) => getComputedStyle(e).visibility !== 'visible';
    if (pageHidden(d.body) || pageHidden(root)) {
      const unhide = d.createElement('style');
      unhide.textContent = 'html, body { visibility: visible !important; }';
      (d.head || root).appendChild(unhide);
    }
    // The same, one level down: a wrapper near the top (`.container
    // { visibility: hidden }`) that a script reveals, holding most of the
    // page's text. A hidden menu or dialog holds a small share and stays
    // hidden.
    const NOT_TEXT = /^(SCRIPT|STYLE|NOSCRIPT|TEMPLATE)$/;
    const textLen = (e) => {
      let n = 0;
      const w = d.createTreeWalker(e, NodeFilter.SHOW_TEXT);
      while (w.nextNode()) {
        const p = w.currentNode.parentElement;
        if (p && !NOT_TEXT.test(p.tagName)) n += w.currentNode.data.trim().length;
      }
      return n;
    };
    let total = -1;
    const revealWrappers = (e, depth) => {
      for (const c of e.children) {
        if (NOT_TEXT.test(c.tagName)) continue;
        // As in the walk below: a computed style only where
        // checkVisibility has a doubt.
        if (typeof c.checkVisibility === 'function' && c.checkVisibility({ visibilityProperty: true })) {
          if (depth < 4) revealWrappers(c, depth + 1);
          continue;
        }
        const s = getComputedStyle(c);
        if (s.display === 'none') continue;
        if (s.visibility !== 'visible') {
          if (total < 0) total = textLen(d.body);
          if (total > 0 && textLen(c) >= 0.6 * total) {
            // No transition: a fade-in would still read as hidden now.
            c.style.setProperty('transition', 'none', 'important');
            c.style.setProperty('visibility', 'visible', 'important');
          }
          continue;
        }
        if (depth < 4) revealWrappers(c, depth + 1);
      }
    };
    revealWrappers(d.body, 1);
    for (const top of [d.body, ...shadows]) {
      const walker = d.createTreeWalker(top, NodeFilter.SHOW_ELEMENT, { acceptNode(n) {
        const doubt = typeof n.checkVisibility !== 'function' || !n.checkVisibility({ visibilityProperty: true });
        if (n.hidden || (doubt && styleHidden(n))) {
          hidden.push(n);
          return NodeFilter.FILTER_REJECT;
        }
        return NodeFilter.FILTER_ACCEPT;
      }});
      while (walker.nextNode()) {}
    }
    if (o.overlays && !o.include.length) removeOverlays();
  }
  for (const n of hidden) n.remove();
  for (const sel of o.exclude) for (const n of d.querySelectorAll(sel)) n.remove();
  if (o.include.length) {
    const picked = [];
    for (const sel of o.include) for (const n of d.querySelectorAll(sel)) picked.push(n);
    picked.sort((a, b) => a === b ? 0 : (a.compareDocumentPosition(b) & Node.DOCUMENT_POSITION_FOLLOWING) ? -1 : 1);
    const kept = [];
    for (const n of picked) if (!kept.length || !kept[kept.length - 1].contains(n)) kept.push(n);
    included = kept.length;
    visible = '<html><head>' + (d.head ? d.head.innerHTML : '') + '</head><body>'
      + kept.map((n) => n.outerHTML).join('\n') + '</body></html>';
  } else if (root && shadows.length && typeof root.getHTML === 'function') {
    // Shadow roots as declarative `<template shadowrootmode>`, which the
    // conversion opens in place. Each slot first takes the light nodes
    // assigned to it, where the page shows them, in place of its fallback
    // (the assignments are all read before any node moves); a host's light
    // nodes no slot took are not painted, and go.
    const moves = [];
    for (const sr of shadows) {
      for (const slot of sr.querySelectorAll('slot')) {
        const assigned = slot.assignedNodes();
        if (assigned.length) moves.push([slot, assigned]);
      }
    }
    for (const [slot, assigned] of moves) slot.replaceChildren(...assigned);
    for (const sr of shadows) if (sr.host) sr.host.replaceChildren();
    visible = '<html>' + root.getHTML({ shadowRoots: shadows }) + '</html>';
  } else {
    visible = root ? root.outerHTML : '';
  }
  return {
    html, visible,
    title: d.title || '',
    lang: (root && root.getAttribute('lang')) || null,
    canonical: canon ? canon.href : null,
    next: nextLink ? nextLink.href : null,
    meta, og, twitter, json_ld, published, modified, links, images, included, overlays,
  };
})"#
    };
}

/// The page-side reader with every option off (no include, no exclude,
/// overlays kept): what benchmarks compare extractors on.
pub const EXTRACT_JS: &str = concat!(extract_fn!(), r#"({"include":[],"exclude":[],"overlays":false})"#);

/// Returns the page-side reader for `opts`.
pub fn extract_script(opts: &ExtractOptions) -> String {
    let args = serde_json::to_string(opts).expect("options serialise");
    format!("{}({args})", extract_fn!())
}

/// Parses what [`EXTRACT_JS`] (or [`extract_script`]) returned.
pub fn parse_extracted(value: serde_json::Value) -> Result<Extracted, EngineError> {
    from_raw(raw(value)?)
}

fn raw(value: serde_json::Value) -> Result<Raw, EngineError> {
    serde_json::from_value(value).map_err(unexpected)
}

fn unexpected(e: impl std::fmt::Display) -> EngineError {
    EngineError::new(EngineErrorKind::Script, format!("unexpected page read: {e}"))
}

fn from_raw(raw: Raw) -> Result<Extracted, EngineError> {
    if let Some(error) = raw.error {
        return Err(EngineError::new(EngineErrorKind::InvalidInput, error));
    }
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
            next: raw.next,
            open_graph: raw.og,
            twitter: raw.twitter,
            json_ld: raw.json_ld,
            published: raw.published,
            modified: raw.modified,
            response_headers: BTreeMap::new(),
            meta,
        },
        links: raw.links,
        images: raw.images,
        included: raw.included,
        overlays_removed: raw.overlays,
    })
}

/// Reads the page's HTML and metadata with every option off; see [`Extracted`].
pub async fn extract(page: &dyn Page, limit: Duration) -> Result<Extracted, EngineError> {
    read(page, EXTRACT_JS, limit).await
}

/// Reads the page as `opts` asks; see [`Extracted`]. The shadow roots the
/// page's components closed are read too, as the browser paints them.
pub async fn extract_with(
    page: &dyn Page,
    opts: &ExtractOptions,
    limit: Duration,
) -> Result<Extracted, EngineError> {
    let closed = format!("{}_shadow", slice_key());
    if let Err(err) = page.expose_closed_shadow_roots(&closed).await {
        // Read without them: what the page's scripts can see.
        tracing::debug!(error = %err, "closed shadow roots not reached");
    }
    let mut args = serde_json::to_value(opts).expect("options serialise");
    args["closed"] = serde_json::Value::String(closed);
    read(page, &format!("{}({args})", extract_fn!()), limit).await
}

/// The most UTF-16 code units of the page's HTML one answer carries (at
/// most 1.5 MiB of UTF-8). The DevTools connection's read buffer grows to
/// the largest message Chromium sends and keeps that size for the
/// browser's life (hundreds of jobs): one heavy page read in one answer,
/// its HTML twice, set the process's RSS for all of them (BENCHMARKS §3).
const SLICE: usize = 1 << 19;

/// Runs `reader`; its `html` and `visible` fields, when longer than
/// [`SLICE`], come back in slices of at most that size.
async fn read(page: &dyn Page, reader: &str, limit: Duration) -> Result<Extracted, EngineError> {
    let key = slice_key();
    let mut raw = raw(page.evaluate(&sliced_script(reader, &key), limit).await?)?;
    if !raw.sliced.is_empty() {
        let slices = read_sliced(page, &key, &mut raw, limit).await;
        // The page may outlive the job (an MCP session's does).
        let _ = page
            .evaluate(&format!("delete globalThis[{}]", js_string(&key)), limit)
            .await;
        slices?;
    }
    from_raw(raw)
}

/// A page-side name no page script guesses: the process's id, the time
/// and a counter.
fn slice_key() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!(
        "__oxwright_read_{:x}_{nanos:x}_{:x}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

fn js_string(s: &str) -> String {
    serde_json::to_string(s).expect("a string serialises")
}

/// `reader` wrapped: a field longer than [`SLICE`] is kept under `key` on
/// the page's global object and left empty in the answer, its length in
/// `sliced`.
fn sliced_script(reader: &str, key: &str) -> String {
    format!(
        r#"((r, key, n) => {{
  if (!r || r.error) return r;
  const kept = {{}}, sliced = {{}};
  for (const k of ['html', 'visible']) {{
    if (typeof r[k] === 'string' && r[k].length > n) {{ kept[k] = r[k]; sliced[k] = r[k].length; r[k] = ''; }}
  }}
  if (Object.keys(sliced).length) {{ globalThis[key] = kept; r.sliced = sliced; }}
  return r;
}})({reader}, {key}, {SLICE})"#,
        key = js_string(key)
    )
}

/// Reads each field `raw.sliced` names from the page, a slice at a time.
async fn read_sliced(page: &dyn Page, key: &str, raw: &mut Raw, limit: Duration) -> Result<(), EngineError> {
    for (field, len) in std::mem::take(&mut raw.sliced) {
        let kept = format!("globalThis[{}][{}]", js_string(key), js_string(&field));
        let mut out = String::with_capacity(len);
        let mut at = 0;
        while at < len {
            // A slice never ends between the two halves of a surrogate pair.
            let expr = format!(
                r#"((s, a, n) => {{
  let b = Math.min(s.length, a + n);
  if (b < s.length) {{ const c = s.charCodeAt(b - 1); if (c >= 0xD800 && c <= 0xDBFF) b--; }}
  return [b, s.slice(a, b)];
}})({kept}, {at}, {SLICE})"#
            );
            let (next, part): (usize, String) =
                serde_json::from_value(page.evaluate(&expr, limit).await?).map_err(unexpected)?;
            if next <= at {
                return Err(unexpected(format_args!(
                    "the {field} slice at {at} of {len} is empty"
                )));
            }
            out.push_str(&part);
            at = next;
        }
        match field.as_str() {
            "html" => raw.html = out,
            "visible" => raw.visible = out,
            _ => {}
        }
    }
    Ok(())
}
