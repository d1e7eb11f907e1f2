//! A page's Markdown as HTML for the dashboard: raw HTML in the Markdown
//! is shown as text, links keep only `http`, `https`, `mailto` and
//! relative targets, and images become links (no request leaves the
//! dashboard for a page's assets).

use pulldown_cmark::{CowStr, Event, Options, Parser, Tag};

/// Renders `markdown` with raw HTML disabled.
pub(crate) fn render(markdown: &str) -> String {
    let mut options = Options::empty();
    options.insert(Options::ENABLE_TABLES);
    options.insert(Options::ENABLE_STRIKETHROUGH);
    options.insert(Options::ENABLE_TASKLISTS);
    let events = Parser::new_ext(markdown, options).map(|event| match event {
        Event::Html(html) | Event::InlineHtml(html) => Event::Text(html),
        Event::Start(
            Tag::Link {
                link_type,
                dest_url,
                title,
                id,
            }
            | Tag::Image {
                link_type,
                dest_url,
                title,
                id,
            },
        ) => Event::Start(Tag::Link {
            link_type,
            dest_url: safe_url(dest_url),
            title,
            id,
        }),
        Event::End(pulldown_cmark::TagEnd::Image) => Event::End(pulldown_cmark::TagEnd::Link),
        other => other,
    });
    let mut out = String::with_capacity(markdown.len() * 3 / 2);
    pulldown_cmark::html::push_html(&mut out, events);
    out
}

/// Keeps a link target that cannot run script; anything else becomes `#`.
fn safe_url(url: CowStr<'_>) -> CowStr<'_> {
    let trimmed: String = url
        .chars()
        .filter(|c| !c.is_ascii_whitespace() && !c.is_control())
        .collect();
    let lower = trimmed.to_ascii_lowercase();
    let scheme = lower
        .split_once(':')
        .map(|(s, _)| s)
        .filter(|s| !s.contains(['/', '?', '#']));
    match scheme {
        None | Some("http" | "https" | "mailto") => url,
        Some(_) => CowStr::Borrowed("#"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_html_is_text_and_script_urls_are_dropped() {
        let html = render(
            "# T <script>alert(1)</script>\n\n<img src=x onerror=alert(1)>\n\n\
             [a](javascript:alert(1)) [b](JaVa\tScRiPt:alert(1)) [c](https://example.com/x) [d](/rel)\n\n\
             ![pic](data:text/html,x)",
        );
        assert!(!html.contains("<script"), "{html}");
        assert!(!html.contains("<img"), "{html}");
        assert!(html.contains("&lt;script&gt;"), "{html}");
        assert!(!html.to_ascii_lowercase().contains("javascript:"), "{html}");
        assert!(!html.contains("data:text"), "{html}");
        assert!(html.contains("href=\"https://example.com/x\""), "{html}");
        assert!(html.contains("href=\"/rel\""), "{html}");
    }
}
