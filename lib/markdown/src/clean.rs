//! Owns the DOM clean-up before conversion: invisible and non-content
//! elements go, links and images become absolute, code blocks get one
//! `language-x` class that the converter understands.

use dom_query::{Document, NodeRef};
use url::Url;

/// Elements that never carry readable content. `head` stays for the title and
/// metadata the extractor reads; only `<body>` is ever converted.
const NON_CONTENT: &str = "script, style, noscript, template, svg, math, iframe, frame, \
    frameset, object, embed, canvas, audio, video, source, track, map, \
    button, input, select, option, optgroup, datalist, textarea, dialog:not([open])";

/// Elements hidden by attribute; CSS-hidden ones were already removed by the browser.
const HIDDEN: &str = r#"[hidden], [aria-hidden="true" i]"#;

/// Parses `html` and strips it down to visible content with absolute URLs.
#[cfg(test)]
pub(crate) fn parse_and_clean(html: &str, base_url: Option<&Url>) -> Document {
    clean(parse(html), base_url)
}

/// Parses a page's markup as the converter reads it: shadow roots opened
/// in place, `<noscript>` cut out.
pub(crate) fn parse(html: &str) -> Document {
    let html = open_shadow_roots(html);
    let html = without_noscript(&html);
    Document::from(html.as_ref())
}

/// Strips a parsed page down to visible content with absolute URLs.
pub(crate) fn clean(doc: Document, base_url: Option<&Url>) -> Document {
    let base = effective_base(&doc, base_url);
    doc.select(NON_CONTENT).remove();
    doc.select(HIDDEN).remove();
    remove_inline_hidden(&doc);
    remove_comments(&doc);
    fix_links(&doc, base.as_ref());
    fix_images(&doc, base.as_ref());
    normalize_code_blocks(&doc);
    doc
}

/// Takes the tags of each `<template shadowrootmode>` out of the markup,
/// leaving its content in place: a browser attaches it as the parent's
/// shadow root and shows it (a parser keeps a template's content apart).
/// Templates nest (a component's root holding another's): each closing
/// tag goes with the opening tag it closes.
pub fn open_shadow_roots(html: &str) -> std::borrow::Cow<'_, str> {
    let lower = html.to_ascii_lowercase();
    if !lower.contains("shadowroot") {
        return std::borrow::Cow::Borrowed(html);
    }
    let mut out = String::with_capacity(html.len());
    // Whether each template open here is a shadow root's, innermost last.
    let mut open: Vec<bool> = Vec::new();
    let mut at = 0;
    loop {
        let next_open = lower[at..].find("<template").map(|i| at + i);
        let next_close = lower[at..].find("</template").map(|i| at + i);
        let (start, opening) = match (next_open, next_close) {
            (Some(o), Some(c)) if o < c => (o, true),
            (_, Some(c)) => (c, false),
            (Some(o), None) => (o, true),
            (None, None) => break,
        };
        let Some(end) = lower[start..].find('>').map(|e| start + e + 1) else {
            break;
        };
        let name_end = start
            + if opening {
                "<template".len()
            } else {
                "</template".len()
            };
        if !matches!(
            lower.as_bytes()[name_end],
            b'>' | b'/' | b' ' | b'\t' | b'\n' | b'\r' | b'\x0c'
        ) {
            // Another element whose name starts so (`<template-card>`).
            out.push_str(&html[at..end]);
            at = end;
            continue;
        }
        let shadow = if opening {
            let shadow = lower[start..end].contains("shadowroot");
            open.push(shadow);
            shadow
        } else {
            open.pop().unwrap_or(false)
        };
        out.push_str(&html[at..if shadow { start } else { end }]);
        at = end;
    }
    out.push_str(&html[at..]);
    std::borrow::Cow::Owned(out)
}

/// Cuts every `<noscript>…</noscript>` out of the serialised page.
///
/// Chromium renders with scripting on, so it keeps a `<noscript>`'s content
/// as raw text and serialises it unescaped; html5ever parses with scripting
/// off and would read that text as markup, where an unbalanced
/// `<noscript><div></noscript>` swallows the rest of the page into an
/// element that the clean-up then removes.
fn without_noscript(html: &str) -> std::borrow::Cow<'_, str> {
    const OPEN: &[u8] = b"<noscript";
    const CLOSE: &[u8] = b"</noscript>";
    let bytes = html.as_bytes();
    let find = |from: usize, needle: &[u8]| {
        bytes[from..]
            .windows(needle.len())
            .position(|w| w.eq_ignore_ascii_case(needle))
            .map(|i| i + from)
    };
    let Some(mut start) = find(0, OPEN) else {
        return std::borrow::Cow::Borrowed(html);
    };
    let mut out = String::with_capacity(html.len());
    let mut copied = 0;
    loop {
        out.push_str(&html[copied..start]);
        match find(start, CLOSE) {
            Some(end) => copied = end + CLOSE.len(),
            None => return std::borrow::Cow::Owned(out),
        }
        match find(copied, OPEN) {
            Some(next) => start = next,
            None => break,
        }
    }
    out.push_str(&html[copied..]);
    std::borrow::Cow::Owned(out)
}

/// Returns the HTML of `<body>` (or of the whole document when there is none).
pub(crate) fn body_html(doc: &Document) -> String {
    let body = doc.select("body");
    if body.exists() {
        body.html().to_string()
    } else {
        doc.html().to_string()
    }
}

/// Returns the number of non-whitespace characters of visible text.
pub(crate) fn visible_chars(doc: &Document) -> usize {
    doc.select("body")
        .text()
        .chars()
        .filter(|c| !c.is_whitespace())
        .count()
}

/// Resolves the document's `<base href>` against the caller's URL.
fn effective_base(doc: &Document, base_url: Option<&Url>) -> Option<Url> {
    let base_url = base_url?;
    let declared = doc.select("head base[href]").attr("href");
    match declared {
        Some(href) => base_url.join(href.trim()).ok().or_else(|| Some(base_url.clone())),
        None => Some(base_url.clone()),
    }
}

/// Removes elements whose inline style hides them (`display:none`, `visibility:hidden`).
fn remove_inline_hidden(doc: &Document) {
    let styled = doc.select("[style]");
    for node in styled.nodes() {
        let Some(style) = node.attr("style") else {
            continue;
        };
        if style_hides(&style) {
            node.remove_from_parent();
        }
    }
}

/// Tells whether an inline style declaration hides its element.
fn style_hides(style: &str) -> bool {
    let compact: String = style
        .chars()
        .filter(|c| !c.is_whitespace())
        .map(|c| c.to_ascii_lowercase())
        .collect();
    compact.split(';').any(|decl| {
        let decl = decl.trim_end_matches("!important");
        decl == "display:none" || decl == "visibility:hidden" || decl == "visibility:collapse"
    })
}

/// Removes every HTML comment node.
fn remove_comments(doc: &Document) {
    let comments: Vec<NodeRef> = doc.root().descendants_it().filter(|n| n.is_comment()).collect();
    for node in comments {
        node.remove_from_parent();
    }
}

/// Makes link targets absolute and drops targets that cannot be followed.
fn fix_links(doc: &Document, base: Option<&Url>) {
    for node in doc.select("a[href]").nodes() {
        let Some(href) = node.attr("href") else {
            continue;
        };
        let href = href.trim();
        if href.is_empty() || starts_with_ignore_case(href, "javascript:") {
            node.remove_attr("href");
            continue;
        }
        if let Some(abs) = resolve(base, href) {
            node.set_attr("href", &abs);
        }
    }
}

/// Keeps only images with alt text and a fetchable source, made absolute.
fn fix_images(doc: &Document, base: Option<&Url>) {
    for node in doc.select("img").nodes() {
        let alt = node.attr("alt").map(|a| a.trim().to_owned()).unwrap_or_default();
        let src = image_source(node);
        match (alt.is_empty(), src) {
            (false, Some(src)) => {
                let abs = resolve(base, &src).unwrap_or(src);
                node.set_attr("src", &abs);
            }
            _ => node.remove_from_parent(),
        }
    }
}

/// Picks the real source of an image, looking past lazy-loading placeholders.
fn image_source(node: &NodeRef) -> Option<String> {
    let usable = |s: &str| !s.is_empty() && !starts_with_ignore_case(s, "data:");
    for attr in ["src", "data-src", "data-lazy-src", "data-original"] {
        if let Some(v) = node.attr(attr) {
            let v = v.trim();
            if usable(v) {
                return Some(v.to_owned());
            }
        }
    }
    for attr in ["srcset", "data-srcset"] {
        if let Some(v) = node.attr(attr) {
            let first = v.split(',').next().unwrap_or("").split_whitespace().next();
            if let Some(first) = first.filter(|s| usable(s)) {
                return Some(first.to_owned());
            }
        }
    }
    None
}

/// Resolves `href` against `base`; returns `None` when there is no base or it fails.
fn resolve(base: Option<&Url>, href: &str) -> Option<String> {
    let joined = match base {
        Some(base) => base.join(href).ok()?,
        None => Url::parse(href).ok()?,
    };
    Some(joined.to_string())
}

/// Gives each `<pre>` exactly one `<code>` child with a `language-x` class
/// when a language is declared on either element.
fn normalize_code_blocks(doc: &Document) {
    for pre in doc.select("pre").nodes() {
        let code = single_code_child(pre);
        let lang = code
            .as_ref()
            .and_then(|c| language_of(c.attr("class").as_deref()))
            .or_else(|| language_of(pre.attr("class").as_deref()))
            .or_else(|| pre.parent().and_then(|p| language_of(p.attr("class").as_deref())));
        let class = lang.map(|l| format!("language-{l}")).unwrap_or_default();
        match code {
            Some(code) => {
                if class.is_empty() {
                    code.remove_attr("class");
                } else {
                    code.set_attr("class", &class);
                }
            }
            None => {
                // Without a lone `<code>` child htmd would emit plain text, not a fence.
                let inner = pre.inner_html();
                let attr = if class.is_empty() {
                    String::new()
                } else {
                    format!(r#" class="{class}""#)
                };
                pre.set_html(format!("<code{attr}>{inner}</code>"));
            }
        }
    }
}

/// Returns the `<pre>`'s only child element when it is `<code>` and no text sits beside it.
fn single_code_child<'a>(pre: &NodeRef<'a>) -> Option<NodeRef<'a>> {
    let mut found = None;
    for child in pre.children_it(false) {
        if child.is_element() {
            if found.is_some() || !child.has_name("code") {
                return None;
            }
            found = Some(child);
        } else if child.is_text() && !child.text().trim().is_empty() {
            return None;
        }
    }
    found
}

/// Reads a language from `language-x`, `lang-x`, `highlight-x` or `highlight-source-x` classes.
fn language_of(class: Option<&str>) -> Option<String> {
    class?.split_whitespace().find_map(|token| {
        let lower = token.to_ascii_lowercase();
        let lang = ["language-", "lang-", "highlight-source-", "highlight-"]
            .iter()
            .find_map(|p| lower.strip_prefix(p).map(str::to_owned))?;
        let valid = !lang.is_empty()
            && lang.len() <= 32
            && lang
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '#' | '-' | '_' | '.'));
        valid.then_some(lang)
    })
}

fn starts_with_ignore_case(s: &str, prefix: &str) -> bool {
    s.len() >= prefix.len() && s.as_bytes()[..prefix.len()].eq_ignore_ascii_case(prefix.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shadow_root_templates_open_in_place_however_they_nest() {
        let html = "<x-a><template shadowrootmode=\"open\"><p>A</p><x-b><template shadowrootmode=\"closed\">\
                    <em>B</em></template></x-b><template id=\"t\"><i>kept apart</i></template>\
                    <template-card>C</template-card></template></x-a><p>D</p>";
        assert_eq!(
            open_shadow_roots(html),
            "<x-a><p>A</p><x-b><em>B</em></x-b><template id=\"t\"><i>kept apart</i></template>\
             <template-card>C</template-card></x-a><p>D</p>"
        );
    }

    #[test]
    fn reads_languages_from_classes() {
        assert_eq!(language_of(Some("language-rust")), Some("rust".into()));
        assert_eq!(language_of(Some("x lang-Python")), Some("python".into()));
        assert_eq!(language_of(Some("highlight-source-js")), Some("js".into()));
        assert_eq!(language_of(Some("highlight-bash")), Some("bash".into()));
        assert_eq!(language_of(Some("highlight")), None);
        assert_eq!(language_of(None), None);
    }

    #[test]
    fn unbalanced_noscript_does_not_swallow_the_page() {
        // As Chromium serialises it: the noscript's content is raw text.
        let html = "<html><body><NoScript><div id=nojs></noscript><p>Article text.</p>\
            <noscript></div></noscript><p>More.</p></body></html>";
        let doc = parse_and_clean(html, None);
        assert_eq!(doc.select("body").text().trim(), "Article text.More.");
        assert_eq!(without_noscript("a<noscript>b"), "a");
        assert_eq!(without_noscript("plain"), "plain");
    }

    #[test]
    fn detects_hiding_styles() {
        assert!(style_hides("color: red; display : none"));
        assert!(style_hides("VISIBILITY:hidden !important"));
        assert!(!style_hides("display: block"));
        assert!(!style_hides("display: none-ish"));
    }

    #[test]
    fn resolves_against_base_element() {
        let base = Url::parse("https://example.com/a/b").unwrap();
        let doc = parse_and_clean(
            r#"<html><head><base href="/docs/"></head><body><a href="x">x</a><img src="i.png" alt="i"></body></html>"#,
            Some(&base),
        );
        assert_eq!(
            doc.select("a").attr("href").unwrap().as_ref(),
            "https://example.com/docs/x"
        );
        assert_eq!(
            doc.select("img").attr("src").unwrap().as_ref(),
            "https://example.com/docs/i.png"
        );
    }

    #[test]
    fn wraps_bare_pre_in_code() {
        let doc = parse_and_clean(r#"<pre class="lang-sh">ls -l</pre>"#, None);
        assert_eq!(
            doc.select("pre").html().as_ref(),
            r#"<pre class="lang-sh"><code class="language-sh">ls -l</code></pre>"#
        );
    }
}
