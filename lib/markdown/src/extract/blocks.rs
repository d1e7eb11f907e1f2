//! What the extractor's rules measure a block by: its characters, its
//! link text, its heading level, and the article's blocks in order.

use dom_query::{Document, NodeRef};

/// Block elements that count as one unit when trimming the article's ends.
pub(super) const UNITS: &[&str] = &[
    "p",
    "ul",
    "ol",
    "dl",
    "table",
    "pre",
    "blockquote",
    "figure",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
];

/// The level of an `h1`–`h6`.
pub(super) fn heading_level(unit: &NodeRef) -> Option<u8> {
    let name = unit.node_name()?;
    let b = name.as_bytes();
    (b.len() == 2 && b[0] == b'h' && (b'1'..=b'6').contains(&b[1])).then(|| b[1] - b'0')
}

/// The article's blocks in document order: [`UNITS`] and `div`s or
/// `section`s without block children, none inside another.
pub(super) fn units(doc: &Document) -> Vec<NodeRef<'_>> {
    let mut out: Vec<NodeRef<'_>> = Vec::new();
    for node in doc.root().descendants_it() {
        if !node.is_element() {
            continue;
        }
        let unit = UNITS.iter().any(|t| node.has_name(t))
            || ((node.has_name("div") || node.has_name("section"))
                && !node.descendants_it().any(|d| d.is_element() && is_block(&d)));
        if unit
            && !out
                .last()
                .is_some_and(|prev| node.ancestors_it(None).any(|a| a.id == prev.id))
        {
            out.push(node);
        }
    }
    out
}

/// Non-whitespace characters of `text`.
pub(super) fn chars(text: &str) -> usize {
    text.chars().filter(|c| !c.is_whitespace()).count()
}

/// Characters of the link text inside `node`.
pub(super) fn link_chars(node: &NodeRef) -> usize {
    node.descendants_it()
        .filter(|d| d.has_name("a"))
        .map(|a| chars(&a.text()))
        .sum()
}

/// Whether `node` is a block: a unit, a `div` or a `section`.
pub(super) fn is_block(node: &NodeRef) -> bool {
    UNITS.iter().any(|t| node.has_name(t)) || node.has_name("div") || node.has_name("section")
}
