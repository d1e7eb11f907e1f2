//! Owns the prose check of the `pruned` extractor: readability scores
//! containers by commas, class names and paragraph counts, and on some
//! pages it picks a sibling of the article (a list of signatories, an
//! advertiser disclosure, a recipe's ingredient box) over the article's
//! own paragraphs. Before readability runs, the page's prose (paragraphs
//! of some length that are not mostly links) is measured and the smallest
//! element holding most of it is kept aside; when readability's result
//! holds too little of that prose, that element is the article instead.

use super::blocks::{chars, link_chars};
use dom_query::{Document, NodeRef};
use std::collections::HashMap;

/// Shortest paragraph counted as prose (non-whitespace characters).
const PROSE_PARAGRAPH: usize = 80;
/// Above this share of link text a paragraph is not prose.
const PROSE_LINKS: f64 = 0.3;
/// The candidate is the deepest element holding this share of the prose.
const CANDIDATE_SHARE: f64 = 0.7;
/// Below this much prose on the page the check is not made.
const MIN_PROSE: usize = 600;
/// Readability's result is replaced when it holds less than this share
/// of the candidate's prose.
const KEPT_SHARE: f64 = 0.6;

/// The element holding most of a page's prose, as HTML, with the amount.
pub(crate) struct Candidate {
    pub html: String,
    pub prose: usize,
}

/// Measures the page's prose and returns the deepest element holding
/// [`CANDIDATE_SHARE`] of it, or `None` on pages with little prose.
pub(crate) fn candidate(doc: &Document) -> Option<Candidate> {
    let mut held: HashMap<dom_query::NodeId, (usize, usize, NodeRef)> = HashMap::new();
    let mut total = 0usize;
    for p in doc.select("body p").nodes() {
        let n = prose_chars(p);
        if n == 0 {
            continue;
        }
        total += n;
        for (depth, a) in p.ancestors_it(None).collect::<Vec<_>>().iter().rev().enumerate() {
            let e = held.entry(a.id).or_insert((0, depth, *a));
            e.0 += n;
        }
    }
    if total < MIN_PROSE {
        return None;
    }
    let need = (total as f64 * CANDIDATE_SHARE) as usize;
    let &(prose, _, node) = held
        .values()
        .filter(|(n, _, _)| *n >= need)
        .max_by_key(|(_, depth, _)| *depth)?;
    if !node.is_element() || node.has_name("html") {
        return None;
    }
    Some(Candidate {
        html: node.html().to_string(),
        prose,
    })
}

/// Prose characters in an HTML fragment (the extracted article).
pub(crate) fn prose_in(html: &str) -> usize {
    let doc = Document::fragment(html);
    doc.select("p").nodes().iter().map(prose_chars).sum()
}

/// A paragraph's non-whitespace characters when it is prose, else 0.
fn prose_chars(p: &NodeRef) -> usize {
    // Teaser cards (a paragraph inside a link), list items (comment
    // threads, result lists) and discussion threads are not the article.
    if p.ancestors_it(None).any(|a| {
        a.has_name("p")
            || a.has_name("a")
            || a.has_name("li")
            || a.has_name("footer")
            || named(&a, DISCUSSION)
    }) {
        return 0;
    }
    let n = chars(&p.text());
    if n < PROSE_PARAGRAPH {
        return 0;
    }
    if linky(p, n) { 0 } else { n }
}

/// Whether readability's result (`kept` prose characters) missed the
/// candidate's prose.
pub(crate) fn missed(kept: usize, candidate: &Candidate) -> bool {
    (kept as f64) < KEPT_SHARE * candidate.prose as f64
}

/// Whether over [`PROSE_LINKS`] of a node's `n` characters are link text.
fn linky(node: &NodeRef, n: usize) -> bool {
    link_chars(node) as f64 > PROSE_LINKS * n as f64
}

/// Class or id words of discussion threads.
const DISCUSSION: &[&str] = &[
    "forum",
    "comment",
    "comments",
    "reply",
    "replies",
    "discussion",
    "thread",
];

/// Whether the node's class or id holds one of `words` (split on anything
/// not an ASCII letter or digit, compared without case).
fn named(node: &NodeRef, words: &[&str]) -> bool {
    ["class", "id"].iter().any(|attr| {
        node.attr(attr).is_some_and(|v| {
            v.split(|c: char| !c.is_ascii_alphanumeric())
                .any(|w| words.iter().any(|d| w.eq_ignore_ascii_case(d)))
        })
    })
}

/// Class or id words of an article's lead (standfirst, deck, subtitle):
/// sites put it in the article's header, outside the container that holds
/// the body, where readability does not look.
const LEAD: &[&str] = &[
    "lead",
    "deck",
    "dek",
    "standfirst",
    "subtitle",
    "subheadline",
    "subheading",
    "summary",
    "excerpt",
    "chapo",
    "abstract",
    "intro",
];
/// Lead length bounds (non-whitespace characters).
const LEAD_MIN: usize = 30;
const LEAD_MAX: usize = 700;

/// The page's lead: the first element named as one ([`LEAD`]) with a
/// sentence's worth of text that is not mostly links, as its text.
pub(crate) fn lead(doc: &Document) -> Option<String> {
    for node in doc.select("body [class], body [id]").nodes() {
        if !named(node, LEAD) || node.has_name("body") || node.has_name("article") || node.has_name("main") {
            continue;
        }
        let text = node.text();
        let n = chars(&text);
        if !(LEAD_MIN..=LEAD_MAX).contains(&n) {
            continue;
        }
        if linky(node, n) {
            continue;
        }
        if node.descendants_it().any(|d| {
            ["h1", "ul", "ol", "table", "img", "figure"]
                .iter()
                .any(|t| d.has_name(t))
        }) {
            continue;
        }
        return Some(text.split_whitespace().collect::<Vec<_>>().join(" "));
    }
    None
}

/// Puts the lead before the article when the article does not hold it.
pub(crate) fn with_lead(article_html: String, lead: Option<String>) -> String {
    let Some(lead) = lead else { return article_html };
    let article_text = Document::fragment(article_html.as_str())
        .root()
        .text()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    if article_text.contains(&lead) {
        return article_html;
    }
    let escaped = lead
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;");
    format!("<p>{escaped}</p>{article_html}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(body: &str) -> Document {
        Document::from(format!("<html><body>{body}</body></html>").as_str())
    }

    fn para(i: usize) -> String {
        format!(
            "<p>Paragraph {i} of the letter argues that the free exchange of ideas is the \
             lifeblood of a liberal society and is being constricted.</p>"
        )
    }

    #[test]
    fn the_candidate_is_the_smallest_element_holding_most_prose() {
        let letter: String = (1..=6).map(para).collect();
        let doc = page(&format!(
            "<div id=page><div id=letter>{letter}</div><div id=side>{}</div>\
             <ul><li>{}</li></ul><a href=/x>{}</a></div>",
            para(7),
            para(8),
            para(9)
        ));
        let c = candidate(&doc).expect("a candidate");
        assert!(c.html.starts_with("<div id=\"letter\">"), "{}", c.html);
        // The letter holds six of the seven prose paragraphs (the list
        // item's and the link's do not count).
        assert_eq!(c.prose, prose_in(&c.html));
        assert!(missed(prose_in(&para(7)), &c));
        assert!(!missed(prose_in(&(1..=5).map(para).collect::<String>()), &c));
    }

    #[test]
    fn little_prose_gives_no_candidate() {
        assert!(candidate(&page(&format!("<div>{}</div>", para(1)))).is_none());
    }

    #[test]
    fn the_lead_is_put_back_only_when_missing() {
        let doc = page(
            "<header><h1>Title</h1><p class=\"article-standfirst\">The ferries start their \
             spring timetable on Monday.</p></header><div class=\"related-excerpt\"><a href=/a>\
             A linked teaser that is long enough to count</a></div>",
        );
        let lead = lead(&doc);
        assert_eq!(
            lead.as_deref(),
            Some("The ferries start their spring timetable on Monday.")
        );
        let out = with_lead("<p>Body.</p>".into(), lead.clone());
        assert!(out.starts_with("<p>The ferries start"), "{out}");
        let has = "<p>The ferries start their spring timetable on Monday.</p><p>Body.</p>";
        assert_eq!(with_lead(has.into(), lead), has);
    }
}
