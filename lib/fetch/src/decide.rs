//! `render: auto`: whether the document a server sent holds the page, or
//! only a browser running its scripts would show it. The rule reads the
//! served markup and the main content converted from it, whose words are
//! counted outside links (a list of headlines is not an article):
//!
//! - the spec asks for what only a browser does (actions, `wait_for`, a
//!   lifecycle state, an extra wait, a screenshot): render;
//! - a frameset, or a `<meta http-equiv=refresh>` to another URL: render
//!   (the page is elsewhere);
//! - no script at all: the served HTML is the page, read it;
//! - no article found in the served HTML (the main-content reader gave way
//!   to the whole page, so the words counted are the page's frame —
//!   navigation, teasers, footer — not its content): render, whatever the
//!   length, since the article is what the scripts bring;
//! - a long main content (at least [`LONG_WORDS`] words): read it, whatever
//!   else the page runs (comments widgets, analytics, a `<noscript>` for
//!   them);
//! - a shorter one with a sign that scripts fill the page (an empty mount
//!   point such as `#root`, an empty `<main>`/`<article>`, a loading
//!   placeholder, a `<noscript>` that asks for JavaScript, a script that
//!   sends the page elsewhere): render, and say which sign;
//! - a teaser (fewer than [`TEASER_WORDS`] words) with an inline script
//!   that loads content (`fetch(`, `new XMLHttpRequest`, jQuery's `$.ajax`
//!   and kin, `axios`, a dynamic `import(`): render, since a news page
//!   whose script appends the rest of its article serves the first
//!   paragraphs only;
//! - otherwise read it when the main content has at least [`SHORT_WORDS`]
//!   words, and render it when it has fewer.
//!
//! Every outcome carries its reason in words, for the result.

use dom_query::Document;
use oxwright_jobs::{FetchSpec, Format, WaitUntil};

/// Main-content words past which the served document is read whatever else it holds.
pub const LONG_WORDS: usize = 200;
/// Main-content words under which a scripted page is rendered.
pub const SHORT_WORDS: usize = 50;
/// Main-content words under which a page whose inline script loads
/// content is read as a teaser of its article, and rendered.
pub const TEASER_WORDS: usize = 100;

/// The decision and its reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// Render in a browser.
    pub render: bool,
    /// Why, in words.
    pub reason: String,
}

impl Decision {
    fn render(reason: impl Into<String>) -> Self {
        Self {
            render: true,
            reason: reason.into(),
        }
    }

    fn read(reason: impl Into<String>) -> Self {
        Self {
            render: false,
            reason: reason.into(),
        }
    }
}

/// What in the spec needs a browser, if anything (actions, waits, screenshots).
pub fn needs_browser(spec: &FetchSpec) -> Option<&'static str> {
    if !spec.actions.is_empty() {
        Some("actions")
    } else if spec.scroll {
        Some("scroll")
    } else if spec.wait_for.is_some() {
        Some("wait_for")
    } else if spec.wait_until != WaitUntil::Ready {
        Some("wait_until")
    } else if spec.wait_ms > 0 {
        Some("wait_ms")
    } else if spec.screenshot
        || spec.formats.contains(&Format::Screenshot)
        || spec.formats.contains(&Format::ScreenshotFullPage)
    {
        Some("a screenshot")
    } else if !spec.headless {
        Some("a headed browser")
    } else if spec.frames == oxwright_jobs::Frames::Inline {
        Some("frames inline")
    } else {
        None
    }
}

/// What the served markup says about itself.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Signs {
    /// `<frameset>`.
    pub frameset: bool,
    /// The target of a `<meta http-equiv=refresh>` naming a URL.
    pub meta_refresh: Option<String>,
    /// `<script src>` elements.
    pub script_files: usize,
    /// Inline scripts that run (not JSON, not templates).
    pub inline_scripts: usize,
    /// An empty mount point, named as a selector (`#root`).
    pub empty_mount: Option<String>,
    /// An empty `<main>`, `<article>` or `[role=main]`.
    pub empty_main: bool,
    /// A loading placeholder (`aria-busy`, "Loading…").
    pub loading: bool,
    /// A `<noscript>` that asks for JavaScript.
    pub noscript_wall: bool,
    /// An inline script that assigns the page's location.
    pub script_redirect: bool,
    /// An inline script that loads content (`fetch(`, `XMLHttpRequest`,
    /// jQuery's loaders, `axios`, a dynamic `import(`).
    pub inline_loader: bool,
    /// The main-content reader found no article in the served document and
    /// fell back to the whole page. Set by the caller from the conversion,
    /// not from the markup.
    pub no_article: bool,
}

/// Mount points single-page frameworks render into.
const MOUNTS: &[&str] = &[
    "#root",
    "#app",
    "#__next",
    "#___gatsby",
    "#__nuxt",
    "#svelte",
    "#main-app",
    "#application",
    "app-root",
    "[data-reactroot]",
    "[ng-app]",
    "[data-v-app]",
];

/// Reads the signs of `html` (the served document).
pub fn signs(html: &str) -> Signs {
    signs_of(&Document::from(html))
}

/// Reads the signs of the served document, parsed.
pub fn signs_of(doc: &Document) -> Signs {
    let mut s = Signs {
        frameset: doc.select("frameset").exists(),
        ..Signs::default()
    };
    for m in doc.select("meta[http-equiv][content]").nodes() {
        let refresh = m
            .attr("http-equiv")
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("refresh"));
        let content = m.attr("content").unwrap_or_default().to_string();
        let lower = content.to_ascii_lowercase();
        if refresh && let Some(i) = lower.find("url=") {
            let target = content[i + 4..].trim().trim_matches(|c| c == '"' || c == '\'');
            if !target.is_empty() {
                s.meta_refresh = Some(target.to_owned());
            }
        }
    }
    for script in doc.select("script").nodes() {
        let kind = script
            .attr("type")
            .map(|t| t.trim().to_ascii_lowercase())
            .unwrap_or_default();
        let runs = kind.is_empty()
            || kind == "module"
            || kind.contains("javascript")
            || kind.contains("ecmascript")
            || kind == "text/babel";
        if !runs {
            continue;
        }
        if script.has_attr("src") {
            s.script_files += 1;
        } else {
            let code = script.text();
            if code.trim().is_empty() {
                continue;
            }
            s.inline_scripts += 1;
            s.script_redirect |= assigns_location(&code);
            s.inline_loader |= loads_content(&code);
        }
    }
    let empty = |n: &dom_query::NodeRef| {
        n.text().trim().is_empty()
            && !n.descendants_it().any(|d| {
                d.node_name()
                    .is_some_and(|t| matches!(t.as_ref(), "img" | "video" | "svg" | "picture" | "canvas"))
            })
    };
    s.empty_mount = MOUNTS.iter().find_map(|sel| {
        doc.select(sel)
            .nodes()
            .iter()
            .any(empty)
            .then(|| (*sel).to_owned())
    });
    s.empty_main = doc.select("main, article, [role=main]").nodes().iter().any(empty);
    s.loading = doc.select("[aria-busy=true]").exists()
        || doc
            .select("body *")
            .nodes()
            .iter()
            .filter(|n| n.element_children().is_empty())
            .any(|n| {
                let t = n.text().trim().to_lowercase();
                t.len() < 40
                    && (t.starts_with("loading")
                        || t.starts_with("please wait")
                        || t.starts_with("読み込み中"))
            });
    s.noscript_wall = doc.select("noscript").nodes().iter().any(|n| {
        let t = n.text().to_lowercase();
        // The raw text of a `<noscript>` as html5ever reads it with scripting off.
        let t = if t.trim().is_empty() {
            n.inner_html().to_lowercase()
        } else {
            t
        };
        t.contains("javascript")
            && ["enable", "requires", "need", "turn on", "activate", "must"]
                .iter()
                .any(|w| t.contains(w))
    });
    s
}

/// The most meta refreshes a served read follows.
pub const MAX_META_REFRESHES: usize = 3;

/// The longest meta refresh delay a read follows, in seconds: a browser
/// would have moved on before the page was read.
const REFRESH_FOLLOWED_S: f64 = 5.0;

/// How much of a document is searched for a meta refresh (it sits in the head).
pub const REFRESH_SCAN_BYTES: usize = 64 * 1024;

/// The URL a `<meta http-equiv=refresh>` of `head` (the first
/// [`REFRESH_SCAN_BYTES`] of a document, decoded) sends the page to within
/// [`REFRESH_FOLLOWED_S`] seconds, resolved against `base`.
pub fn meta_refresh_target(head: &str, base: &url::Url) -> Option<url::Url> {
    let doc = Document::from(head);
    doc.select("meta[http-equiv][content]")
        .nodes()
        .iter()
        .find_map(|m| {
            let refresh = m
                .attr("http-equiv")
                .is_some_and(|v| v.trim().eq_ignore_ascii_case("refresh"));
            if !refresh {
                return None;
            }
            let content = m.attr("content")?.to_string();
            let (delay, rest) = content.split_once([';', ',']).unwrap_or((&content, ""));
            let delay: f64 = delay.trim().parse().ok()?;
            let rest = rest.trim();
            let target = rest
                .get(..4)
                .filter(|k| k.eq_ignore_ascii_case("url="))
                .map_or(rest, |_| &rest[4..])
                .trim()
                .trim_matches(|c| c == '"' || c == '\'');
            if delay > REFRESH_FOLLOWED_S || target.is_empty() {
                return None;
            }
            base.join(target).ok()
        })
}

/// Says whether a script assigns `location` (`location.href = …`,
/// `location.replace(…)`, `window.location = …`).
fn assigns_location(code: &str) -> bool {
    let bytes = code.as_bytes();
    let mut from = 0;
    while let Some(i) = code[from..].find("location") {
        let at = from + i + "location".len();
        from = at;
        let rest = code[at..].trim_start();
        let rest = rest.strip_prefix(".href").map(str::trim_start).unwrap_or(rest);
        if rest.starts_with(".replace(") || rest.starts_with(".assign(") {
            return true;
        }
        if let Some(after) = rest.strip_prefix('=')
            && !after.starts_with('=')
        {
            // `document.location` / `window.location` / `location`, not `xlocation`.
            let before = bytes.get(at - "location".len() - 1).copied().unwrap_or(b' ');
            if !(before.is_ascii_alphanumeric() || before == b'_') {
                return true;
            }
        }
    }
    false
}

/// Calls that load content, each found where no identifier character
/// comes before it (`prefetch(` and `reimport(` are not loads).
const LOADERS: &[&str] = &[
    "fetch(",
    "new XMLHttpRequest",
    "$.ajax(",
    "$.get(",
    "$.getJSON(",
    "$.post(",
    "jQuery.ajax(",
    "axios.",
    "axios(",
    "import(",
];

/// Says whether a script loads content: one of [`LOADERS`], or jQuery's
/// `$(…).load("url")` (not `.load(function …)`, which binds an event).
fn loads_content(code: &str) -> bool {
    let standalone = |needle: &str| {
        code.match_indices(needle).any(|(i, _)| {
            let before = code[..i].chars().next_back().unwrap_or(' ');
            !(before.is_alphanumeric() || before == '_' || before == '$')
        })
    };
    let jquery_load = code
        .match_indices(").load(")
        .any(|(i, m)| code[i + m.len()..].trim_start().starts_with(['\'', '"', '`']));
    LOADERS.iter().any(|l| standalone(l)) || jquery_load
}

/// Decides from the served document's `signs` and its main content's word
/// count (prose: the words outside links).
pub fn decide(signs: &Signs, main_words: usize) -> Decision {
    if signs.frameset {
        return Decision::render("the served HTML is a frameset");
    }
    if let Some(target) = &signs.meta_refresh {
        return Decision::render(format!(
            "the served HTML sends the page elsewhere (meta refresh to {target})"
        ));
    }
    let scripts = signs.script_files + signs.inline_scripts;
    if scripts == 0 {
        return Decision::read(format!(
            "the served HTML runs no script: it is the page (main content {main_words} words)"
        ));
    }
    if signs.no_article {
        return Decision::render(format!(
            "no article in the served HTML: its {main_words} words are the page's frame, and it runs {scripts} script(s)"
        ));
    }
    if main_words >= LONG_WORDS {
        return Decision::read(format!("main content {main_words} words from the served HTML"));
    }
    let shell = |what: String| {
        Decision::render(format!(
            "the served HTML is an application shell: {what}, main content {main_words} words, {} script file(s)",
            signs.script_files
        ))
    };
    if let Some(mount) = &signs.empty_mount {
        return shell(format!("empty {mount}"));
    }
    if signs.empty_main {
        return shell("an empty <main> or <article>".into());
    }
    if signs.loading {
        return shell("a loading placeholder".into());
    }
    if signs.noscript_wall {
        return Decision::render(format!(
            "`<noscript>` asks for JavaScript and the served main content has {main_words} words"
        ));
    }
    if signs.script_redirect {
        return Decision::render(format!(
            "a script in the served HTML sends the page elsewhere and its main content has {main_words} words"
        ));
    }
    if (SHORT_WORDS..TEASER_WORDS).contains(&main_words) && signs.inline_loader {
        return Decision::render(format!(
            "the served article is a teaser of {main_words} words and an inline script loads content"
        ));
    }
    if main_words >= SHORT_WORDS {
        return Decision::read(format!("main content {main_words} words from the served HTML"));
    }
    Decision::render(format!(
        "the served HTML holds {main_words} words of main content and runs {scripts} script(s)"
    ))
}

/// Counts the words of prose in `html` (a main content's cleaned HTML): the
/// text outside links. A list of headlines is links, not an article, so a
/// served frame of navigation and teasers does not pass for content.
pub fn prose_words(html: &str) -> usize {
    let doc = Document::from(html);
    doc.root()
        .descendants_it()
        .filter(|n| n.is_text())
        .filter(|n| !n.ancestors_it(None).any(|a| a.has_name("a")))
        .map(|n| n.text().split_whitespace().count())
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_application_shell_is_rendered() {
        let s = signs(r#"<html><body><div id="root"></div><script src="/app.js"></script></body></html>"#);
        assert_eq!(s.empty_mount.as_deref(), Some("#root"));
        let d = decide(&s, 0);
        assert!(d.render && d.reason.contains("empty #root"), "{d:?}");
    }

    #[test]
    fn a_static_page_is_read_whatever_its_length() {
        let s = signs("<html><body><p>Short.</p></body></html>");
        assert!(!decide(&s, 1).render);
    }

    #[test]
    fn a_long_article_with_a_comments_noscript_is_read() {
        let s = signs(
            r#"<body><article><p>text</p></article><noscript>Please enable JavaScript to view the comments.</noscript>
               <script>var x = location.href;</script></body>"#,
        );
        assert!(s.noscript_wall && !s.script_redirect);
        assert!(!decide(&s, 900).render);
        assert!(decide(&s, 20).render);
    }

    #[test]
    fn a_frame_with_no_article_is_rendered_whatever_its_length() {
        let mut s = signs(
            r#"<body><nav>Home News Sport</nav><section class="teasers"><p>teaser</p></section>
               <div class="story"></div><script src="/story.js"></script></body>"#,
        );
        assert!(!decide(&s, 300).render);
        s.no_article = true;
        let d = decide(&s, 300);
        assert!(d.render && d.reason.contains("no article"), "{d:?}");
        // With no script, nothing would bring an article: the page is read.
        let mut plain = signs("<body><nav>Home News Sport</nav></body>");
        plain.no_article = true;
        assert!(!decide(&plain, 300).render);
    }

    #[test]
    fn redirects_and_framesets_are_rendered() {
        let s = signs(r#"<head><meta http-equiv="refresh" content="0; url=/next"></head><body>x</body>"#);
        assert_eq!(s.meta_refresh.as_deref(), Some("/next"));
        assert!(decide(&s, 500).render);
        assert!(decide(&signs("<frameset><frame src=a></frameset>"), 0).render);
        assert!(assigns_location("window.location = '/x'"));
        assert!(assigns_location("location.replace('/x')"));
        assert!(assigns_location("document.location.href='/x'"));
        assert!(!assigns_location("if (location.href == x) {}"));
        assert!(!assigns_location("var mylocation = 1"));
    }

    #[test]
    fn a_prompt_meta_refresh_is_a_target_and_a_slow_one_is_not() {
        let base = url::Url::parse("http://a.example/old/").unwrap();
        let page =
            |c: &str| format!(r#"<head><meta http-equiv="Refresh" content="{c}"></head><body>Moved</body>"#);
        let target = meta_refresh_target(&page("0; url=/new"), &base).unwrap();
        assert_eq!(target.as_str(), "http://a.example/new");
        let target = meta_refresh_target(&page("2;URL='next.html'"), &base).unwrap();
        assert_eq!(target.as_str(), "http://a.example/old/next.html");
        assert_eq!(meta_refresh_target(&page("600"), &base), None);
        assert_eq!(meta_refresh_target(&page("600; url=/later"), &base), None);
    }

    #[test]
    fn a_teaser_whose_inline_script_loads_content_is_rendered() {
        let page = |script: &str| {
            format!("<html><body><article><p>Short.</p></article><script>{script}</script></body></html>")
        };
        for loader in [
            "fetch('/api/rest').then(r => r.json())",
            "window.fetch(url)",
            "var x = new XMLHttpRequest();",
            "$.getJSON('/rest', add)",
            "$('#more').load('/rest')",
            "axios.get('/rest')",
            "import('./rest.js').then(m => m.show())",
        ] {
            let signs = signs(&page(loader));
            assert!(signs.inline_loader, "{loader}");
            let d = decide(&signs, 60);
            assert!(
                d.render && d.reason.contains("teaser of 60 words"),
                "{loader}: {d:?}"
            );
            assert!(
                !decide(&signs, TEASER_WORDS).render,
                "{loader}: an article of 100 words is read"
            );
        }
        for not_a_loader in [
            "prefetch('/next')",
            "$(frame).load(function () { resize(); })",
            "var send = XMLHttpRequest.prototype.send;",
            "reimport(x)",
            "gtag('config', 'G-1')",
            "window.addEventListener('load', init)",
        ] {
            let signs = signs(&page(not_a_loader));
            assert!(!signs.inline_loader, "{not_a_loader}");
            assert!(!decide(&signs, 60).render, "{not_a_loader}");
        }
        // A loader in a script file is not seen: the served markup names the file only.
        let file =
            signs("<html><body><article><p>Short.</p></article><script src=/app.js></script></body></html>");
        assert!(!file.inline_loader && !decide(&file, 60).render);
    }

    #[test]
    fn loading_placeholders_and_empty_articles_are_signs() {
        let s = signs(
            r#"<body><header>Site</header><article id="post"></article><script src="a.js"></script></body>"#,
        );
        assert!(s.empty_main);
        let s = signs(r#"<body><div class="x"><span>Loading…</span></div><script>go()</script></body>"#);
        assert!(s.loading);
        let d = decide(&s, 60);
        assert!(d.render, "{d:?}");
        let plain = signs(r#"<body><p>Fine.</p><script>track()</script></body>"#);
        assert!(!decide(&plain, 60).render);
        assert!(decide(&plain, 10).render);
    }
}
