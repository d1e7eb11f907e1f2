//! Owns the boilerplate rules of the `pruned` extractor: before
//! readability runs, containers whose class or id names them as page
//! furniture (sharing, newsletter, related, comments, post metadata…) go;
//! after it, link-dense blocks inside the article (link lists, "read also"
//! teasers) go. Each rule protects what carries the article: the `<h1>`,
//! `<article>`/`<main>`, and any block holding a large share of the text.

use dom_query::{Document, NodeRef};

use super::blocks::{chars, heading_level, is_block, link_chars, units};

/// Class or id words (split on anything not a letter or digit) that name
/// furniture around an article rather than the article.
const FURNITURE: &[&str] = &[
    "share",
    "sharing",
    "sharer",
    "shares",
    "social",
    "socials",
    "newsletter",
    "subscribe",
    "subscription",
    "signup",
    "promo",
    "promotion",
    "advert",
    "advertisement",
    "ad",
    "ads",
    "adsbygoogle",
    "sponsor",
    "sponsored",
    "related",
    "recommended",
    "recommendations",
    "comments",
    "comment",
    "respond",
    "breadcrumb",
    "breadcrumbs",
    "tags",
    "tagcloud",
    "categories",
    "widget",
    "sidebar",
    "popular",
    "trending",
    "paywall",
    "modal",
    "popup",
    "print",
    "toolbar",
    "pagination",
    "pager",
    "navbar",
    "menu",
    "footer",
    "meta",
    "postmeta",
    "bio",
    "disclaimer",
    "copyright",
    "rating",
    "donate",
    "donation",
    "author",
    "byline",
    "caption",
    "credit",
    "credits",
];

/// Furniture words that never name the article, however much text the
/// element holds (a long comment thread outweighs a short post).
const ALWAYS: &[&str] = &["comments", "comment", "respond"];

/// Words that name the content itself: an element carrying one of these is
/// never furniture (`st-sidebar__main`, `article-footer-wrap` hold articles).
const CONTENT: &[&str] = &["main", "content", "article", "body", "story", "text"];

/// Above this share of the page's text an element is kept whatever its
/// class says (a site may call its article wrapper `post-meta-wrap`).
const PROTECTED_SHARE: f64 = 0.25;

/// Removes furniture containers from a cleaned document; `page_chars` is
/// the page's visible text length.
pub(crate) fn strip_furniture(doc: &Document, page_chars: usize) {
    // Figure captions and photo credits ("Image: Reuters") are read as
    // boilerplate by the human annotations this extractor is measured on
    // (80 of their boilerplate snippets sit in a `figcaption`, 9 of the
    // article's); the image itself stays, with its alt text.
    for caption in doc.select("body figcaption").nodes() {
        caption.remove_from_parent();
    }
    let marked = doc.select("body [class], body [id], body form");
    for node in marked.nodes() {
        if !attached(node) {
            continue;
        }
        let (hit, always) = furniture(node);
        if !hit && !node.has_name("form") {
            continue;
        }
        if holds_article(node) {
            continue;
        }
        if !always && chars(&node.text()) as f64 > PROTECTED_SHARE * page_chars as f64 {
            continue;
        }
        node.remove_from_parent();
    }
}

/// Tells whether the node's class or id holds a furniture word, and whether
/// it is one that is furniture at any size.
fn furniture(node: &NodeRef) -> (bool, bool) {
    let (mut hit, mut always) = (false, false);
    for attr in ["class", "id"] {
        let Some(value) = node.attr(attr) else { continue };
        for word in value.split(|c: char| !c.is_ascii_alphanumeric()) {
            if word.is_empty() || word.len() > 24 {
                continue;
            }
            let word = word.to_ascii_lowercase();
            if CONTENT.contains(&word.as_str()) {
                return (false, false);
            }
            if FURNITURE.contains(&word.as_str()) {
                hit = true;
                always |= ALWAYS.contains(&word.as_str());
            }
        }
    }
    (hit, always)
}

/// Tells whether the node is still in the document (an ancestor may have gone).
fn attached(node: &NodeRef) -> bool {
    node.ancestors_it(None).any(|a| a.has_name("body"))
}

fn holds_article(node: &NodeRef) -> bool {
    node.has_name("article")
        || node.has_name("main")
        || node
            .descendants_it()
            .any(|d| d.has_name("h1") || d.has_name("article") || d.has_name("main"))
}

/// Above this share of link text a list is a link list (related stories,
/// tag clouds), and a labelled block a teaser.
const LINK_DENSE: f64 = 0.6;
/// Longest label before a teaser's link ("Read also:", "MIRA |").
const TEASER_LABEL: usize = 40;
/// Longest teaser block (non-whitespace characters).
const SHORT_BLOCK: usize = 300;

/// Removes link-dense blocks from the extracted article's HTML: lists of
/// two or more items whose text is mostly links, and short teasers, blocks
/// that are a short label ending in `:` or `|` followed by mostly link text
/// ("Read also: <headline>"). Returns the HTML unchanged when nothing matched.
pub(crate) fn drop_link_blocks(html: &str) -> String {
    let doc = Document::fragment(html);
    let mut changed = false;
    let total = chars(&doc.root().text()).max(1);
    for node in doc.select("ul, ol, p, div, blockquote").nodes() {
        if !node
            .ancestors_it(None)
            .last()
            .is_some_and(|a| a.is_document() || a.is_fragment())
        {
            continue;
        }
        let text = node.text();
        let text_chars = chars(&text);
        if text_chars == 0 || text_chars * 2 > total {
            continue;
        }
        let links: Vec<NodeRef> = node
            .descendants_it()
            .filter(|d| d.has_name("a"))
            .filter(|a| !a.ancestors_it(None).any(|p| p.has_name("a")))
            .collect();
        let link_chars: usize = links.iter().map(|a| chars(&a.text())).sum();
        let dense = link_chars as f64 / text_chars as f64 > LINK_DENSE;
        let doomed = if node.has_name("ul") || node.has_name("ol") {
            dense && node.children_it(false).filter(|c| c.has_name("li")).count() >= 2
        } else {
            dense
                && text_chars <= SHORT_BLOCK
                && !node.descendants_it().any(|d| d.is_element() && is_block(&d))
                && teaser_label(&text, links.first())
        };
        if doomed {
            node.remove_from_parent();
            changed = true;
        }
    }
    changed |= trim_ends(&doc);
    changed |= super::tail::cut_end_sections(&doc);
    if changed {
        doc.html().to_string()
    } else {
        html.to_owned()
    }
}

/// Trims the article's ends: link blocks (navigation back to a list, "more
/// stories" cards) and, at the end, headings left with nothing under them.
/// Returns whether anything was removed.
fn trim_ends(doc: &Document) -> bool {
    let units = units(doc);
    let mut changed = false;
    let (mut first, mut last) = (0, units.len());
    // At the start, link blocks, and short lines that are not sentences
    // (a section name, a date, "Posted by …", "Updated:") before the first
    // heading or paragraph of prose; never the last unit.
    while first + 1 < last && (is_link_unit(&units[first]) || is_label(&units[first])) {
        units[first].remove_from_parent();
        first += 1;
        changed = true;
    }
    while last > first {
        let unit = &units[last - 1];
        let heading = heading_level(unit).is_some();
        let empty = chars(&unit.text()) == 0 && !unit.descendants_it().any(|d| d.has_name("img"));
        if !(heading || empty || is_link_unit(unit) || is_lead_in(unit)) {
            break;
        }
        unit.remove_from_parent();
        last -= 1;
        changed = true;
    }
    changed
}

/// Above this share of link text a block at either end of the article is
/// a card or a "back to the list" link; a closing "See also <a> and <b>."
/// sentence stays under it.
const END_LINK_DENSE: f64 = 0.85;

/// Longest lead-in line ("Read also:", "**Share this article?**").
const LEAD_IN: usize = 80;

/// Tells whether a block is a short line that only leads in to something
/// else (a bold-only line, or one ending in `:`, `?` or `!`): at the end of
/// an article, what it led in to has already gone.
fn is_lead_in(node: &NodeRef) -> bool {
    let text = node.text();
    let text = text.trim();
    let n = chars(text);
    if n == 0 || n > LEAD_IN {
        return false;
    }
    let bold: usize = node
        .descendants_it()
        .filter(|d| d.has_name("strong") || d.has_name("b"))
        .filter(|b| {
            !b.ancestors_it(None)
                .any(|p| p.has_name("strong") || p.has_name("b"))
        })
        .map(|b| chars(&b.text()))
        .sum();
    bold == n || text.ends_with([':', '?', '!'])
}

/// Longest label line ("Kategorie: News", "Posted by K A", a date).
const LABEL: usize = 40;

/// Tells whether a block is a short line of text that is not a sentence:
/// a `p` or a `div` without sentence-ending punctuation (headings, lists,
/// tables and quotes are not labels).
fn is_label(node: &NodeRef) -> bool {
    if !(node.has_name("p") || node.has_name("div")) {
        return false;
    }
    let text = node.text();
    let text = text.trim();
    let n = chars(text);
    n > 0 && n <= LABEL && !text.ends_with(['.', '…', '"', '”', '»', '“', ')', '。', '！', '？', '!', '?'])
}

/// Tells whether a block is mostly link text (a card, a "back to list" link).
fn is_link_unit(node: &NodeRef) -> bool {
    let text = chars(&node.text());
    if text == 0 || text > SHORT_BLOCK {
        return false;
    }
    link_chars(node) as f64 / text as f64 > END_LINK_DENSE
}

/// Tells whether the block's text before its first link is a short label
/// that ends in `:` or `|` (the link's own text is not such a label).
fn teaser_label(text: &str, first_link: Option<&NodeRef>) -> bool {
    let Some(link) = first_link else { return false };
    let link_text = link.text();
    let link_text = link_text.trim();
    if link_text.is_empty() {
        return false;
    }
    let Some(at) = text.find(link_text) else {
        return false;
    };
    let label = text[..at].trim();
    !label.is_empty() && label.chars().count() <= TEASER_LABEL && label.ends_with([':', '|'])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text_of(html: &str) -> String {
        Document::fragment(html)
            .root()
            .text()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn trims_link_cards_and_orphan_headings_at_the_end() {
        let html = "<div><div><p>First paragraph of the story with enough words.</p>\
            <p>Second paragraph, also prose, with a <a href='/x'>link</a> inside.</p>\
            <h2>More from us</h2><div><a href='/a'>Card one</a></div><div><a href='/b'>Card two</a></div>\
            </div></div>";
        let out = text_of(&drop_link_blocks(html));
        assert!(out.ends_with("with a link inside."), "{out}");
    }

    #[test]
    fn trims_label_lines_at_the_start_but_not_the_only_block() {
        let html = "<div><div>Posted by K A</div><p>23.10.2018</p>\
            <p>First paragraph of the story with enough words.</p>\
            <p>Second paragraph, also prose.</p></div>";
        let out = text_of(&drop_link_blocks(html));
        assert!(out.starts_with("First paragraph"), "{out}");
        let alone = "<div><p>Short line</p></div>";
        assert_eq!(text_of(&drop_link_blocks(alone)), "Short line");
    }
}
