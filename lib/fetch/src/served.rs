//! Reads the document a server sent, without a browser: what the page-side
//! reader ([`crate::extract`]) takes from a rendered page — the title, the
//! metadata, the links and images, `include` / `exclude` — taken from the
//! markup instead. What a browser decides by layout is approximated from
//! markup: `hidden`, `aria-hidden="true"`, inline `display:none` /
//! `visibility:hidden`, `<template>` and `<noscript>` (dropped, as a
//! browser running scripts drops it) go in the Markdown conversion, which
//! removes them from rendered pages too; a declarative shadow root
//! (`<template shadowrootmode>`) is shown, as a browser attaches it.

use std::collections::{BTreeMap, HashSet};

use dom_query::{Document, Matcher, NodeRef};
use oxwright_jobs::{ErrorKind, JobError, PageImage, PageLink, PageLinks, PageMetadata};
use url::Url;

use crate::decide::Signs;
use crate::{ExtractOptions, Extracted};

/// Most links and images read, as the page-side reader caps them.
const MAX_LINKS: usize = 5000;
const MAX_IMAGES: usize = 2000;

/// Reads `html`, served at `url`, as [`crate::extract_with`] reads a rendered page.
pub fn read_served(html: &str, url: &Url, opts: &ExtractOptions) -> Result<Extracted, JobError> {
    let mut page = read_served_page(html, url, opts)?;
    page.read.visible_html = page.visible_html(opts);
    Ok(page.read)
}

/// A served page read, its tree kept for the converter.
pub struct ServedPage {
    /// What was read; `visible_html` is left empty (see [`Self::visible_html`]).
    pub read: Extracted,
    /// The visible page: what does not show and what `exclude` names taken out.
    pub tree: Document,
    /// What the served document says about needing scripts, read before
    /// anything was taken out.
    pub signs: Signs,
}

impl ServedPage {
    /// The markup the Markdown is converted from: the visible page, or what
    /// `include` picked of it (`read.included` then says how many elements).
    pub fn visible_html(&mut self, opts: &ExtractOptions) -> String {
        if opts.include.is_empty() {
            return self.tree.html().to_string();
        }
        let doc = &self.tree;
        let picked = doc.select(&opts.include.join(", "));
        let mut kept: Vec<NodeRef> = Vec::new();
        for n in picked.nodes() {
            let inside = kept.iter().any(|k| n.ancestors_it(None).any(|a| a.id == k.id));
            if !inside {
                kept.push(*n);
            }
        }
        self.read.included = Some(kept.len());
        let head = doc
            .select("head")
            .nodes()
            .first()
            .map(|h| h.inner_html().to_string())
            .unwrap_or_default();
        let body: Vec<String> = kept.iter().map(|n| n.html().to_string()).collect();
        format!("<html><head>{head}</head><body>{}</body></html>", body.join("\n"))
    }
}

/// [`read_served`] with the page's visible tree in place of its markup,
/// for a converter that takes the tree as it is: the page is parsed once.
pub fn read_served_page(html: &str, url: &Url, opts: &ExtractOptions) -> Result<ServedPage, JobError> {
    for sel in opts.include.iter().chain(&opts.exclude) {
        if Matcher::new(sel).is_err() {
            return Err(JobError::new(
                ErrorKind::InvalidInput,
                format!("selector {sel:?} is not valid CSS"),
            ));
        }
    }
    let doc = Document::from(oxwright_markdown::open_shadow_roots(html).as_ref());
    let base = base_url(&doc, url);
    let read = Extracted {
        html: html.to_owned(),
        visible_html: String::new(),
        title: title(&doc),
        metadata: metadata(&doc, &base),
        links: links(&doc, url, &base),
        images: images(&doc, &base),
        included: None,
        overlays_removed: 0,
    };
    let signs = crate::decide::signs_of(&doc);
    // Links and images are the whole page's; the Markdown is what shows.
    hide(&doc, opts);
    Ok(ServedPage {
        read,
        tree: doc,
        signs,
    })
}

/// The tree [`read_served_page`] gives, alone: the converter's fresh copy
/// when main-content extraction gives way to the whole page.
pub fn visible_tree(html: &str, opts: &ExtractOptions) -> Document {
    let doc = Document::from(oxwright_markdown::open_shadow_roots(html).as_ref());
    hide(&doc, opts);
    doc
}

/// Takes out of `doc` what does not show and what `exclude` names.
fn hide(doc: &Document, opts: &ExtractOptions) {
    remove_style_hidden(doc);
    for sel in &opts.exclude {
        doc.select(sel).remove();
    }
}

/// What a site map reads of a served page: no Markdown, only what leads
/// elsewhere and names the page.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Outline {
    /// The `<title>`, on one line.
    pub title: String,
    /// The metadata (`canonical`, `next`, `description`, …).
    pub metadata: PageMetadata,
    /// Every link, absolute, as [`read_served`] lists them.
    pub links: PageLinks,
}

/// Reads the title, metadata and links of `html`, served at `url`.
pub fn read_outline(html: &str, url: &Url) -> Outline {
    let doc = Document::from(html);
    let base = base_url(&doc, url);
    Outline {
        title: title(&doc),
        metadata: metadata(&doc, &base),
        links: links(&doc, url, &base),
    }
}

/// Removes what the document's own `<style>` elements hide outright
/// (`display: none`, `visibility: hidden`) with plain selectors (no
/// pseudo-classes, no `@media` or other conditional block): a browser
/// would not show it. Stylesheets the page links are not fetched.
fn remove_style_hidden(doc: &Document) {
    let mut css = String::new();
    for s in doc.select("style").nodes() {
        let media = s
            .attr("media")
            .map(|m| m.trim().to_ascii_lowercase())
            .unwrap_or_default();
        if media.is_empty() || media == "all" || media == "screen" {
            css.push_str(&s.text());
            css.push('\n');
        }
    }
    if css.is_empty() {
        return;
    }
    for sel in hiding_selectors(&css) {
        if Matcher::new(&sel).is_ok() {
            doc.select(&sel).remove();
        }
    }
}

/// The selectors of top-level rules in `css` that hide what they match.
fn hiding_selectors(css: &str) -> Vec<String> {
    // Comments out first.
    let mut text = String::with_capacity(css.len());
    let mut rest = css;
    while let Some(i) = rest.find("/*") {
        text.push_str(&rest[..i]);
        rest = rest[i + 2..].find("*/").map_or("", |e| &rest[i + 2 + e + 2..]);
    }
    text.push_str(rest);
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut prelude = String::new();
    let mut block = String::new();
    let mut in_at = false;
    for c in text.chars() {
        match c {
            '{' => {
                if depth == 0 {
                    in_at = prelude.trim_start().starts_with('@');
                    block.clear();
                }
                depth += 1;
            }
            '}' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    let decl: String = block.split_whitespace().collect::<String>().to_ascii_lowercase();
                    let hides = decl.contains("display:none") || decl.contains("visibility:hidden");
                    if !in_at && hides {
                        out.extend(
                            prelude
                                .split(',')
                                .map(str::trim)
                                .filter(|s| !s.is_empty() && !s.contains(':') && !s.contains("no-js"))
                                .map(str::to_owned),
                        );
                    }
                    prelude.clear();
                }
            }
            _ if depth == 0 => prelude.push(c),
            _ => block.push(c),
        }
    }
    out
}

/// The URL relative references resolve against: `<base href>` over the document's URL.
fn base_url(doc: &Document, url: &Url) -> Url {
    doc.select("base[href]")
        .nodes()
        .first()
        .and_then(|b| b.attr("href"))
        .and_then(|h| url.join(h.trim()).ok())
        .unwrap_or_else(|| url.clone())
}

/// The document's `<title>`, on one line.
fn title(doc: &Document) -> String {
    doc.select("title")
        .nodes()
        .first()
        .map(|t| one_line(&t.text()))
        .unwrap_or_default()
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn abs(base: &Url, u: &str) -> String {
    base.join(u.trim())
        .map(String::from)
        .unwrap_or_else(|_| u.to_owned())
}

fn metadata(doc: &Document, base: &Url) -> PageMetadata {
    let (mut meta, og, twitter) = meta_tags(doc, base);
    let json_ld = json_ld(doc);
    let time_of = |prop: &str| {
        doc.select(&format!("[itemprop={prop}]"))
            .nodes()
            .first()
            .and_then(|t| t.attr("datetime").or_else(|| t.attr("content")))
            .map(|v| v.to_string())
    };
    let first = |vs: Vec<Option<String>>| vs.into_iter().flatten().find(|v| !v.trim().is_empty());
    let get = |m: &BTreeMap<String, String>, k: &str| m.get(k).cloned();
    let published = first(vec![
        get(&og, "article:published_time"),
        get(&meta, "datepublished"),
        get(&meta, "date"),
        get(&meta, "pubdate"),
        get(&meta, "publishdate"),
        get(&meta, "dc.date.issued"),
        get(&meta, "dc.date"),
        get(&meta, "dcterms.created"),
        from_ld(&json_ld, "datePublished"),
        time_of("datePublished"),
    ]);
    let modified = first(vec![
        get(&og, "article:modified_time"),
        get(&og, "og:updated_time"),
        get(&meta, "datemodified"),
        get(&meta, "last-modified"),
        get(&meta, "dc.date.modified"),
        get(&meta, "dcterms.modified"),
        from_ld(&json_ld, "dateModified"),
        time_of("dateModified"),
    ]);
    let link_rel = |rel: &str| {
        doc.select("link[rel][href]")
            .nodes()
            .iter()
            .find(|l| {
                l.attr("rel")
                    .is_some_and(|r| r.split_whitespace().any(|t| t.eq_ignore_ascii_case(rel)))
            })
            .and_then(|l| l.attr("href"))
            .map(|h| abs(base, &h))
    };
    let canonical = link_rel("canonical");
    let next = link_rel("next");
    let description = meta.remove("description");
    PageMetadata {
        description,
        lang: doc
            .select("html[lang]")
            .nodes()
            .first()
            .and_then(|h| h.attr("lang"))
            .map(|l| l.to_string()),
        canonical,
        next,
        open_graph: og,
        twitter,
        json_ld,
        published,
        modified,
        response_headers: BTreeMap::new(),
        meta,
    }
}

/// Plain, Open Graph and Twitter meta tags by name.
type MetaTags = (
    BTreeMap<String, String>,
    BTreeMap<String, String>,
    BTreeMap<String, String>,
);

/// The `<meta content>` tags by name: plain, Open Graph (and `article:`,
/// `book:`, `profile:`), Twitter; the social ones' URLs made absolute.
fn meta_tags(doc: &Document, base: &Url) -> MetaTags {
    let mut meta = BTreeMap::new();
    let mut og = BTreeMap::new();
    let mut twitter = BTreeMap::new();
    // As the page-side reader's `(^|:)(image|url|video|audio|player)(:url|:secure_url|:src)?$`.
    let urlish = |k: &str| {
        let kind = |p: &str| matches!(p, "image" | "url" | "video" | "audio" | "player");
        let parts: Vec<&str> = k.split(':').collect();
        let n = parts.len();
        kind(parts[n - 1])
            || (n >= 2 && matches!(parts[n - 1], "url" | "secure_url" | "src") && kind(parts[n - 2]))
    };
    for m in doc.select("meta[content]").nodes() {
        let key = ["property", "name", "itemprop"]
            .iter()
            .find_map(|a| m.attr(a).filter(|v| !v.trim().is_empty()))
            .map(|k| one_line(&k).to_lowercase())
            .unwrap_or_default();
        if key.is_empty() {
            continue;
        }
        let mut value = one_line(&m.attr("content").unwrap_or_default());
        let social = if ["og:", "article:", "book:", "profile:"]
            .iter()
            .any(|p| key.starts_with(p))
        {
            Some(&mut og)
        } else if key.starts_with("twitter:") {
            Some(&mut twitter)
        } else {
            None
        };
        if social.is_some() && !value.is_empty() && urlish(&key) {
            value = abs(base, &value);
        }
        social.unwrap_or(&mut meta).entry(key).or_insert(value);
    }
    (meta, og, twitter)
}

/// The page's JSON-LD blocks (the first 20 that parse).
fn json_ld(doc: &Document) -> Vec<serde_json::Value> {
    let mut json_ld = Vec::new();
    for s in doc.select("script[type]").nodes() {
        if json_ld.len() >= 20 {
            break;
        }
        let is_ld = s
            .attr("type")
            .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/ld+json"));
        if is_ld && let Ok(v) = serde_json::from_str::<serde_json::Value>(&s.text()) {
            json_ld.push(v);
        }
    }
    json_ld
}

/// The first string value of `key` in the JSON-LD blocks, depth first.
fn from_ld(blocks: &[serde_json::Value], key: &str) -> Option<String> {
    fn walk(v: &serde_json::Value, key: &str, depth: usize) -> Option<String> {
        if depth > 6 {
            return None;
        }
        match v {
            serde_json::Value::Object(m) => {
                if let Some(serde_json::Value::String(s)) = m.get(key) {
                    return Some(s.clone());
                }
                m.values().find_map(|c| walk(c, key, depth + 1))
            }
            serde_json::Value::Array(a) => a.iter().find_map(|c| walk(c, key, depth + 1)),
            _ => None,
        }
    }
    blocks.iter().find_map(|b| walk(b, key, 0))
}

fn bare_host(u: &Url) -> String {
    let h = u.host_str().unwrap_or_default().to_lowercase();
    h.strip_prefix("www.").map(str::to_owned).unwrap_or(h)
}

fn links(doc: &Document, url: &Url, base: &Url) -> PageLinks {
    let here = bare_host(url);
    let mut this = url.clone();
    this.set_fragment(None);
    let mut out = PageLinks::default();
    let mut seen: BTreeMap<String, (bool, usize)> = BTreeMap::new();
    for a in doc.select("a[href], area[href]").nodes() {
        if seen.len() >= MAX_LINKS {
            break;
        }
        let Some(mut u) = a.attr("href").and_then(|h| base.join(h.trim()).ok()) else {
            continue;
        };
        if !matches!(u.scheme(), "http" | "https") {
            continue;
        }
        u.set_fragment(None);
        if u == this {
            continue;
        }
        let text = {
            let t = one_line(&a.text());
            let t = if t.is_empty() {
                a.attr("aria-label")
                    .or_else(|| a.attr("title"))
                    .map(|v| one_line(&v))
                    .unwrap_or_default()
            } else {
                t
            };
            t.chars().take(200).collect::<String>()
        };
        let key = u.to_string();
        if let Some(&(internal, i)) = seen.get(&key) {
            let list = if internal {
                &mut out.internal
            } else {
                &mut out.external
            };
            if list[i].text.is_empty() && !text.is_empty() {
                list[i].text = text;
            }
            continue;
        }
        let internal = bare_host(&u) == here;
        let list = if internal {
            &mut out.internal
        } else {
            &mut out.external
        };
        seen.insert(key.clone(), (internal, list.len()));
        list.push(PageLink { url: key, text });
    }
    out
}

fn images(doc: &Document, base: &Url) -> Vec<PageImage> {
    let usable = |s: &str| !s.trim().is_empty() && !s.trim_start().to_ascii_lowercase().starts_with("data:");
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    for img in doc.select("img").nodes() {
        if out.len() >= MAX_IMAGES {
            break;
        }
        let mut src = ["src", "data-src", "data-lazy-src", "data-original"]
            .iter()
            .filter_map(|a| img.attr(a))
            .map(|v| v.to_string())
            .find(|v| usable(v));
        if src.is_none() {
            let set = img
                .attr("srcset")
                .or_else(|| img.attr("data-srcset"))
                .unwrap_or_default();
            let first = set
                .split(',')
                .next()
                .unwrap_or("")
                .split_whitespace()
                .next()
                .unwrap_or("")
                .to_owned();
            if usable(&first) {
                src = Some(first);
            }
        }
        let Some(src) = src.map(|s| abs(base, &s)) else {
            continue;
        };
        if !(src.starts_with("http://") || src.starts_with("https://")) || !seen.insert(src.clone()) {
            continue;
        }
        out.push(PageImage {
            src,
            alt: one_line(&img.attr("alt").unwrap_or_default()),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The served page's tree converted as it is gives the Markdown its
    /// markup gives when parsed again, the fallback to the whole page too.
    #[test]
    fn the_tree_converts_as_its_markup_does() {
        use oxwright_jobs::{ContentMode, LinkStyle};
        use oxwright_markdown::{document_to_markdown, html_to_markdown_links};
        let prose = "<p>Readers of this long paragraph learn a great many things about the matter \
            at hand, sentence after sentence, with commas, clauses and a point.</p>"
            .repeat(8);
        let article = format!(
            "<html><head><title>T</title></head><body><nav><a href=\"/\">Home</a></nav>\
             <noscript><div>Turn scripts on</div></noscript><div hidden>gone</div>\
             <p style=\"display:none\">hidden too</p><div class=\"ad\">Advert here</div>\
             <article><h1>Head</h1>{prose}<img src=\"i.png\" alt=\"I\"></article>\
             <footer>© Someone</footer></body></html>"
        );
        let links: String = (0..40)
            .map(|i| format!("<li><a href=\"/s/{i}\">Section number {i} of the site</a></li>"))
            .collect();
        let short = format!("<html><body><nav><ul>{links}</ul></nav><p>Hi.</p></body></html>");
        let url = Url::parse("https://example.com/docs/page").unwrap();
        let opts = ExtractOptions {
            exclude: vec![".ad".into()],
            ..ExtractOptions::default()
        };
        let mut fell_back = 0;
        for page in [article.as_str(), short.as_str(), PAGE] {
            for mode in [ContentMode::Main, ContentMode::Full] {
                let markup = read_served(page, &url, &opts).unwrap();
                let want = html_to_markdown_links(&markup.visible_html, Some(&url), mode, LinkStyle::Inline)
                    .unwrap();
                let served = read_served_page(page, &url, &opts).unwrap();
                let reparse = || visible_tree(page, &opts);
                let got =
                    document_to_markdown(served.tree, reparse, Some(&url), mode, LinkStyle::Inline).unwrap();
                assert_eq!(got, want, "{mode:?}: {page}");
                assert!(!got.markdown.contains("Advert") && !got.markdown.contains("hidden too"));
                fell_back += usize::from(got.fell_back());
            }
        }
        assert!(fell_back > 0, "a page falls back to the whole page");
    }

    const PAGE: &str = r#"<!doctype html><html lang="en"><head><title> A  title </title>
<base href="/docs/">
<meta name="description" content="About things">
<meta property="og:image" content="img/og.png">
<meta property="article:published_time" content="2024-01-02">
<link rel="canonical" href="/docs/page">
<script type="application/ld+json">{"@type":"Article","dateModified":"2024-02-03"}</script>
</head><body><nav><a href="/">Home</a> <a href="https://other.example/x#y">Out</a></nav>
<article><h1>Head</h1><p>Body <a href="a.html">rel</a></p><img data-src="lazy.png" alt=" Lazy "></article>
<div class="ad">AD</div>
<div id="host"><template shadowrootmode="open"><p>SHADOW TEXT</p></template></div>
</body></html>"#;

    #[test]
    fn reads_metadata_links_and_images_from_markup() {
        let url = Url::parse("http://www.a.example/docs/page").unwrap();
        let read = read_served(PAGE, &url, &ExtractOptions::default()).unwrap();
        assert_eq!(read.title, "A title");
        assert_eq!(read.metadata.description.as_deref(), Some("About things"));
        assert_eq!(read.metadata.lang.as_deref(), Some("en"));
        assert_eq!(
            read.metadata.canonical.as_deref(),
            Some("http://www.a.example/docs/page")
        );
        assert_eq!(
            read.metadata.open_graph["og:image"],
            "http://www.a.example/docs/img/og.png"
        );
        assert_eq!(read.metadata.published.as_deref(), Some("2024-01-02"));
        assert_eq!(read.metadata.modified.as_deref(), Some("2024-02-03"));
        let internal: Vec<&str> = read.links.internal.iter().map(|l| l.url.as_str()).collect();
        assert_eq!(
            internal,
            ["http://www.a.example/", "http://www.a.example/docs/a.html"]
        );
        assert_eq!(read.links.external[0].url, "https://other.example/x");
        assert_eq!(read.images[0].src, "http://www.a.example/docs/lazy.png");
        assert_eq!(read.images[0].alt, "Lazy");
        assert!(read.visible_html.contains("SHADOW TEXT") && !read.visible_html.contains("<template"));
    }

    #[test]
    fn what_the_documents_own_styles_hide_is_left_out() {
        let css = "/* x */ .gone, #off { display : none } .shown { color: red } \
                   @media print { .p { display: none } } a:hover { visibility: hidden } .no-js .n { display:none }";
        assert_eq!(hiding_selectors(css), [".gone", "#off"]);
        let page = "<html><head><style>.gone{display:none}</style></head><body><p class=gone>HIDDEN</p><p>SHOWN</p></body></html>";
        let url = Url::parse("http://a.example/").unwrap();
        let read = read_served(page, &url, &ExtractOptions::default()).unwrap();
        assert!(!read.visible_html.contains("HIDDEN") && read.visible_html.contains("SHOWN"));
    }

    #[test]
    fn include_and_exclude_select_from_markup() {
        let url = Url::parse("http://a.example/").unwrap();
        let opts = ExtractOptions {
            include: vec!["article".into(), "article p".into()],
            exclude: vec![".ad".into()],
            ..ExtractOptions::default()
        };
        let read = read_served(PAGE, &url, &opts).unwrap();
        assert_eq!(read.included, Some(1));
        assert!(read.visible_html.contains("Head") && !read.visible_html.contains("AD"));
        let bad = ExtractOptions {
            include: vec!["p[".into()],
            ..ExtractOptions::default()
        };
        assert_eq!(
            read_served(PAGE, &url, &bad).unwrap_err().kind,
            ErrorKind::InvalidInput
        );
    }
}
