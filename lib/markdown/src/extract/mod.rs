//! Owns main-content extraction: runs dom_smoothie's readability port on a
//! cleaned document (optionally between the boilerplate rules of `prune`
//! and the prose check of `prose`) and judges whether what it kept is
//! worth using.

mod blocks;
mod prose;
mod prune;
mod tail;

use dom_query::{Document, NodeRef};
use dom_smoothie::{Config, Readability};

/// Below this many visible characters the extracted content counts as "almost nothing"…
const MIN_MAIN_CHARS: usize = 140;
/// …unless it still holds at least this share of the page's visible text.
const MIN_MAIN_SHARE: f64 = 0.2;

/// Landmarks and widgets that are never the article. Readability scores them
/// down, but on short articles (CJK text especially) its retries let them back in.
const BOILERPLATE: &str = "nav, aside, [role=navigation], [role=complementary], [role=contentinfo], \
    [role=banner], [role=search], [role=dialog], [role=alertdialog], #comments, .comments, \
    #disqus_thread, .comment-list, .commentlist, body [class*=related i], body [id*=related i]";

/// Cookie and consent notices, by their names. Inside an `article` or
/// `main` such a name is content (a cookie recipe, a consent form the
/// article is about); overlays there are removed in the browser, where
/// their position is known (`oxwright_fetch`'s page read).
const CONSENT: &str =
    "body [id*=cookie i], body [class*=cookie i], body [id*=consent i], body [class*=consent i]";

/// What main-content extraction produced.
pub(crate) enum Outcome {
    /// The article's HTML and its title: the page's first `<h1>`, else the
    /// extractor's guess from `<title>` (possibly empty).
    Article { html: String, title: String },
    /// The extractor kept too little of a page that has text.
    TooLittle { page_chars: usize, kept_chars: usize },
    /// The extractor gave up; the reason is human-readable.
    Failed(String),
    /// The page has no visible text at all.
    EmptyPage,
}

/// Extracts the main content of an already cleaned document; `pruned`
/// adds the furniture and link-density rules of [`prune`].
pub(crate) fn main_content(doc: Document, pruned: bool) -> Outcome {
    let page_chars = crate::clean::visible_chars(&doc);
    if page_chars == 0 {
        return Outcome::EmptyPage;
    }
    let h1 = page_heading(&doc);
    strip_boilerplate(&doc);
    let (mut candidate, mut lead) = (None, None);
    if pruned {
        prune::strip_furniture(&doc, page_chars);
        candidate = prose::candidate(&doc);
        lead = prose::lead(&doc);
    }
    let cfg = Config {
        // Keeps the `language-x` classes that carry code-block languages.
        keep_classes: true,
        ..Config::default()
    };
    // URLs are already absolute, so no document URL is needed for rewriting.
    let mut readability = match Readability::with_document(doc, None, Some(cfg)) {
        Ok(r) => r,
        Err(e) => return Outcome::Failed(e.to_string()),
    };
    let article = match readability.parse() {
        Ok(a) => a,
        Err(e) => return Outcome::Failed(e.to_string()),
    };
    let kept_chars = article
        .text_content
        .chars()
        .filter(|c| !c.is_whitespace())
        .count();
    let share = kept_chars as f64 / page_chars as f64;
    if kept_chars < MIN_MAIN_CHARS && share < MIN_MAIN_SHARE {
        return Outcome::TooLittle {
            page_chars,
            kept_chars,
        };
    }
    let html = if pruned {
        let content = match candidate {
            Some(c) if prose::missed(prose::prose_in(&article.content), &c) => c.html,
            _ => article.content.to_string(),
        };
        prose::with_lead(prune::drop_link_blocks(&content), lead)
    } else {
        article.content.to_string()
    };
    Outcome::Article {
        html,
        title: if h1.is_empty() { article.title } else { h1 },
    }
}

/// Finds the article's `<h1>`: one inside `<article>`/`<main>` first, else the
/// first one outside page chrome (a logo in the header is often an `h1`).
fn page_heading(doc: &Document) -> String {
    let in_content = doc.select("article h1, main h1, [role=main] h1").first();
    let node = match in_content.nodes().first() {
        Some(n) => Some(*n),
        None => doc
            .select("body h1")
            .nodes()
            .iter()
            .find(|h| {
                !h.ancestors_it(None)
                    .any(|a| ["nav", "header", "footer", "aside"].iter().any(|t| a.has_name(t)))
            })
            .cloned(),
    };
    node.map(|n| crate::convert::one_line(&n.text()))
        .unwrap_or_default()
}

/// Removes [`BOILERPLATE`] elements, except those holding the article itself
/// and page-level headers and footers outside `<article>` or `<main>`.
fn strip_boilerplate(doc: &Document) {
    let mut doomed: Vec<NodeRef> = doc.select(BOILERPLATE).nodes().to_vec();
    let outside_article = |n: &&NodeRef| {
        !n.ancestors_it(None)
            .any(|a| a.has_name("article") || a.has_name("main"))
    };
    let chrome = doc.select("body header, body footer");
    doomed.extend(chrome.nodes().iter().filter(outside_article).cloned());
    let consent = doc.select(CONSENT);
    doomed.extend(consent.nodes().iter().filter(outside_article).cloned());
    for node in doomed {
        let holds_article = node
            .descendants_it()
            .any(|d| d.has_name("article") || d.has_name("main") || d.has_name("h1"));
        if !holds_article && !node.has_name("main") && !node.has_name("article") {
            node.remove_from_parent();
        }
    }
}
