//! HTML by hand: every value that came from a page, a URL or a store goes
//! through [`esc`]; the layout every dashboard page shares.

use std::fmt::Write as _;

/// Escapes text for an element's content or a quoted attribute value
/// (`<`, `>`, `&`, `"` and `'`).
pub(crate) fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    // Writing to a String cannot fail.
    let _ = pulldown_cmark_escape::escape_html(&mut out, text);
    out
}

/// Percent-encodes one path segment or query value.
pub(crate) fn enc(text: &str) -> String {
    url::form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

/// What the layout needs besides the body.
pub(crate) struct Page<'a> {
    /// The `<title>` and the heading.
    pub(crate) title: &'a str,
    /// The navigation entry to mark as current.
    pub(crate) nav: Nav,
    /// The CSRF token for the logout form; `None` when there is no login.
    pub(crate) logout_csrf: Option<&'a str>,
}

/// The dashboard's sections.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Nav {
    Batches,
    Sessions,
    Checks,
    Queues,
    None,
}

/// The whole document: head (the one stylesheet and script, both served
/// by the daemon), navigation, `body`.
pub(crate) fn layout(page: &Page<'_>, body: &str) -> String {
    let mut out = String::with_capacity(body.len() + 1024);
    let _ = write!(
        out,
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{} · oxwright</title>\
         <link rel=\"stylesheet\" href=\"/ui/assets/app.css\">\
         <script src=\"/ui/assets/app.js\" defer></script></head><body><header><nav>\
         <span class=\"brand\">oxwright</span>",
        esc(page.title)
    );
    for (nav, href, label) in [
        (Nav::Batches, "/ui", "Batches"),
        (Nav::Sessions, "/ui/sessions", "Workflow sessions"),
        (Nav::Checks, "/ui/checks", "Checks"),
        (Nav::Queues, "/ui/queues", "Schedules and queues"),
    ] {
        let current = if nav == page.nav {
            " aria-current=\"page\""
        } else {
            ""
        };
        let _ = write!(out, "<a href=\"{href}\"{current}>{label}</a>");
    }
    if let Some(csrf) = page.logout_csrf {
        let _ = write!(
            out,
            "<form method=\"post\" action=\"/ui/logout\" class=\"logout\">{}<button>Log out</button></form>",
            csrf_field(csrf)
        );
    }
    let _ = write!(
        out,
        "</nav></header><main><h1>{}</h1>{body}</main></body></html>",
        esc(page.title)
    );
    out
}

/// The hidden form field every action carries.
pub(crate) fn csrf_field(csrf: &str) -> String {
    format!("<input type=\"hidden\" name=\"csrf\" value=\"{}\">", esc(csrf))
}

/// A link to `href` (already a dashboard path) labelled `text`.
pub(crate) fn link(href: &str, text: &str) -> String {
    format!("<a href=\"{}\">{}</a>", esc(href), esc(text))
}

/// The "Artefacts" list: a link to each key, named by what follows
/// `prefix`.
pub(crate) fn file_list(body: &mut String, keys: &[String], prefix: &str) {
    body.push_str("<h2>Artefacts</h2><ul class=\"files\">");
    for key in keys {
        let name = key.strip_prefix(prefix).unwrap_or(key);
        let _ = write!(
            body,
            "<li><a href=\"/ui/files/{}\">{}</a></li>",
            esc(key),
            esc(name)
        );
    }
    body.push_str("</ul>");
}

/// A duration in ms as people read it.
pub(crate) fn ms(ms: f64) -> String {
    if ms >= 60_000.0 {
        format!("{:.1} min", ms / 60_000.0)
    } else if ms >= 1_000.0 {
        format!("{:.1} s", ms / 1_000.0)
    } else {
        format!("{ms:.0} ms")
    }
}

/// Cuts `text` to `max` characters, with an ellipsis.
pub(crate) fn short(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(max).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_is_escaped_in_text_and_attributes() {
        assert_eq!(
            esc("<script>alert('x')</script> & \"q\""),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;"
        );
        assert_eq!(
            link("/ui/x?a=\"b\"", "<b>"),
            "<a href=\"/ui/x?a=&quot;b&quot;\">&lt;b&gt;</a>"
        );
        assert_eq!(enc("a b/c&d"), "a+b%2Fc%26d");
    }
}
