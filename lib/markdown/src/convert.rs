//! Owns the htmd converter: its options and our handlers for tables, links,
//! images and the tags that must never produce text.

use std::cell::Cell;
use std::rc::Rc;
use std::sync::OnceLock;

use htmd::element_handler::{HandlerResult, Handlers};
use htmd::options::{BrStyle, BulletListMarker, CodeBlockStyle, HeadingStyle, HrStyle, Options};
use htmd::{Element, HtmlToMarkdown, Node};
use markup5ever_rcdom::NodeData;
use oxwright_jobs::LinkStyle;

use crate::MarkdownError;

/// Tags whose text htmd would otherwise print (it emits `<script>` text by default).
const SKIPPED: &[&str] = &[
    "head", "script", "style", "noscript", "template", "svg", "math", "iframe", "object", "embed", "canvas",
    "button", "input", "select", "textarea", "option",
];

/// Widest table we render; wider ones are almost always layout grids.
const MAX_COLSPAN: usize = 64;

/// Returns the converter, built once per thread (htmd's tree is `Rc`-based).
fn with_converter<T>(f: impl FnOnce(&HtmlToMarkdown) -> T) -> T {
    thread_local! {
        static CONVERTER: OnceLock<HtmlToMarkdown> = const { OnceLock::new() };
    }
    CONVERTER.with(|c| f(c.get_or_init(build)))
}

fn build() -> HtmlToMarkdown {
    HtmlToMarkdown::builder()
        .options(Options {
            heading_style: HeadingStyle::Atx,
            hr_style: HrStyle::Dashes,
            br_style: BrStyle::Backslash,
            code_block_style: CodeBlockStyle::Fenced,
            bullet_list_marker: BulletListMarker::Dash,
            ul_bullet_spacing: 1,
            ol_number_spacing: 1,
            ..Options::default()
        })
        .skip_tags(SKIPPED.to_vec())
        .add_handler(vec!["table"], table_handler)
        .add_handler(vec!["a"], anchor_handler)
        .add_handler(vec!["img"], img_handler)
        .build()
}

thread_local! {
    /// The link style of the conversion running on this thread (the
    /// converter's handlers are built once and take no arguments).
    static LINKS: Cell<LinkStyle> = const { Cell::new(LinkStyle::Inline) };
}

/// Converts cleaned HTML to raw (untidied) Markdown, links as `links` says.
pub(crate) fn to_markdown(html: &str, links: LinkStyle) -> Result<String, MarkdownError> {
    LINKS.set(links);
    let markdown = with_converter(|c| c.convert(html));
    LINKS.set(LinkStyle::Inline);
    markdown.map_err(MarkdownError::Convert)
}

/// Collapses every whitespace run (newlines included) into one space and trims.
pub(crate) fn one_line(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for word in text.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

fn attr<'a>(element: &'a Element, name: &str) -> Option<&'a str> {
    element
        .attrs
        .iter()
        .find(|a| &*a.name.local == name)
        .map(|a| &*a.value)
}

/// Makes a URL safe as a Markdown link destination.
fn destination(url: &str) -> String {
    url.replace(' ', "%20").replace('(', "%28").replace(')', "%29")
}

/// Renders `<a href>` as `[text](url)`; links without text vanish, links without a target keep their text.
fn anchor_handler(handlers: &dyn Handlers, element: Element) -> Option<HandlerResult> {
    let content = handlers.walk_children(element.node).content;
    let text = one_line(&content);
    let href = attr(&element, "href").map(str::trim).unwrap_or("");
    if text.is_empty() {
        return Some(String::new().into());
    }
    if href.is_empty() || LINKS.get() == LinkStyle::Text {
        return Some(text.into());
    }
    Some(format!("[{text}]({})", destination(href)).into())
}

/// Renders `<img>` as `![alt](src)`; images without alt text are dropped.
fn img_handler(_handlers: &dyn Handlers, element: Element) -> Option<HandlerResult> {
    let alt = one_line(attr(&element, "alt").unwrap_or(""))
        .replace('[', "\\[")
        .replace(']', "\\]");
    let src = attr(&element, "src").map(str::trim).unwrap_or("");
    if alt.is_empty() || src.is_empty() {
        return Some(String::new().into());
    }
    Some(format!("![{alt}]({})", destination(src)).into())
}

fn tag_of(node: &Node) -> Option<&str> {
    match &node.data {
        NodeData::Element { name, .. } => Some(&name.local),
        _ => None,
    }
}

fn element_children(node: &Rc<Node>) -> Vec<Rc<Node>> {
    node.children
        .borrow()
        .iter()
        .filter(|c| matches!(c.data, NodeData::Element { .. }))
        .cloned()
        .collect()
}

fn colspan(node: &Node) -> usize {
    let NodeData::Element { attrs, .. } = &node.data else {
        return 1;
    };
    attrs
        .borrow()
        .iter()
        .find(|a| &*a.name.local == "colspan")
        .and_then(|a| a.value.trim().parse::<usize>().ok())
        .unwrap_or(1)
        .clamp(1, MAX_COLSPAN)
}

fn contains_table(node: &Rc<Node>) -> bool {
    node.children
        .borrow()
        .iter()
        .any(|c| tag_of(c) == Some("table") || contains_table(c))
}

/// One table row: its cells as inline Markdown and whether all were `<th>` or in `<thead>`.
struct Row {
    cells: Vec<String>,
    is_header: bool,
}

fn read_row(handlers: &dyn Handlers, tr: &Rc<Node>, in_thead: bool) -> Row {
    let mut cells = Vec::new();
    let mut all_th = true;
    for cell in element_children(tr) {
        let tag = tag_of(&cell);
        if !matches!(tag, Some("td" | "th")) {
            continue;
        }
        all_th &= tag == Some("th");
        // A `<br>` is a backslash hard break, which means nothing inside a one-line cell.
        let content = handlers.walk_children(&cell).content.replace("\\\n", " ");
        let text = one_line(&content).replace('|', "\\|");
        let span = colspan(&cell);
        cells.push(text);
        cells.extend(std::iter::repeat_n(String::new(), span - 1));
    }
    Row {
        is_header: in_thead || (all_th && !cells.is_empty()),
        cells,
    }
}

/// Renders a data table as a GFM pipe table; layout tables (nested tables,
/// a single column) are rendered as the blocks they contain.
fn table_handler(handlers: &dyn Handlers, element: Element) -> Option<HandlerResult> {
    if contains_table(element.node) {
        return Some(handlers.walk_children(element.node));
    }
    let mut caption = String::new();
    let mut rows: Vec<Row> = Vec::new();
    for child in element_children(element.node) {
        match tag_of(&child) {
            Some("caption") => caption = one_line(&handlers.walk_children(&child).content),
            Some("tr") => rows.push(read_row(handlers, &child, false)),
            Some(section @ ("thead" | "tbody" | "tfoot")) => {
                let in_thead = section == "thead";
                for tr in element_children(&child) {
                    if tag_of(&tr) == Some("tr") {
                        rows.push(read_row(handlers, &tr, in_thead));
                    }
                }
            }
            _ => {}
        }
    }
    rows.retain(|r| r.cells.iter().any(|c| !c.is_empty()));
    let columns = rows.iter().map(|r| r.cells.len()).max().unwrap_or(0);
    if columns < 2 {
        return Some(handlers.walk_children(element.node));
    }
    // GFM needs a header row; a table without one promotes its first row.
    let header_at = rows.iter().position(|r| r.is_header).unwrap_or(0);
    let header = rows.remove(header_at);
    let mut out = String::from("\n\n");
    if !caption.is_empty() {
        out.push_str(&caption);
        out.push_str("\n\n");
    }
    push_row(&mut out, &header.cells, columns);
    out.push('|');
    for _ in 0..columns {
        out.push_str(" --- |");
    }
    out.push('\n');
    for row in &rows {
        push_row(&mut out, &row.cells, columns);
    }
    out.push('\n');
    Some(out.into())
}

fn push_row(out: &mut String, cells: &[String], columns: usize) {
    out.push('|');
    for i in 0..columns {
        let cell = cells.get(i).map(String::as_str).unwrap_or("");
        if cell.is_empty() {
            out.push_str("  |");
        } else {
            out.push(' ');
            out.push_str(cell);
            out.push_str(" |");
        }
    }
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn md(html: &str) -> String {
        crate::tidy::tidy(&to_markdown(html, LinkStyle::Inline).unwrap())
    }

    #[test]
    fn renders_table_with_escaped_pipe_and_separator() {
        let out = md("<table><thead><tr><th>a</th><th>b</th></tr></thead>\
             <tbody><tr><td>x | y</td><td>line1<br>line2\nmore</td></tr></tbody></table>");
        assert_eq!(out, "| a | b |\n| --- | --- |\n| x \\| y | line1 line2 more |");
    }

    #[test]
    fn promotes_first_row_without_header() {
        let out = md("<table><tr><td>1</td><td>2</td></tr><tr><td>3</td></tr></table>");
        assert_eq!(out, "| 1 | 2 |\n| --- | --- |\n| 3 |  |");
    }

    #[test]
    fn renders_single_column_table_as_blocks() {
        assert_eq!(
            md("<table><tr><td><p>just text</p></td></tr></table>"),
            "just text"
        );
    }

    #[test]
    fn renders_links_and_images() {
        assert_eq!(
            md(r#"<p><a href="https://e.com/a b(c)">x
             y</a> <a href="https://e.com/"><img src="https://e.com/i.png" alt=""></a></p>"#),
            "[x y](https://e.com/a%20b%28c%29)"
        );
        assert_eq!(
            md(r#"<img src="https://e.com/i.png" alt="A [cat]">"#),
            "![A \\[cat\\]](https://e.com/i.png)"
        );
    }

    #[test]
    fn skips_script_text() {
        assert_eq!(md("<p>a</p><script>var x = 1;</script><style>p{}</style>"), "a");
    }
}
