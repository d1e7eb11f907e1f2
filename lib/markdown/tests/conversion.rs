//! Exact-output tests of the conversion rules on small documents.

use oxwright_markdown::{
    ContentMode, EMPTY_PAGE_WARNING, MAIN_FALLBACK_WARNING, count_tokens, html_to_markdown,
};
use url::Url;

fn full(body: &str) -> String {
    let base = Url::parse("https://example.com/blog/post").unwrap();
    let html = format!("<html><head><title>T</title></head><body>{body}</body></html>");
    let out = html_to_markdown(&html, Some(&base), ContentMode::Full).unwrap();
    assert!(out.warnings.is_empty(), "{:?}", out.warnings);
    out.markdown
}

#[test]
fn table_escapes_pipes_and_has_separator_row() {
    let md = full(
        "<table><thead><tr><th>Name</th><th>Type</th></tr></thead><tbody>\
         <tr><td><code>timeout</code></td><td><code>Duration | None</code></td></tr>\
         <tr><td>a | b</td><td>first\nsecond<br>third</td></tr></tbody></table>",
    );
    assert_eq!(
        md,
        "| Name | Type |\n| --- | --- |\n| `timeout` | `Duration \\| None` |\n| a \\| b | first second third |"
    );
}

#[test]
fn nested_lists_keep_three_levels() {
    let md = full(
        "<ul><li>one<ul><li>two<ol><li>three</li><li>three b</li></ol></li></ul></li><li>back</li></ul>",
    );
    assert_eq!(md, "- one\n  - two\n    1. three\n    2. three b\n- back");
}

#[test]
fn code_blocks_take_their_language() {
    assert_eq!(
        full("<pre><code class=\"language-rust\">fn main() {\n    println!(\"hi\");\n}\n</code></pre>"),
        "```rust\nfn main() {\n    println!(\"hi\");\n}\n```"
    );
    assert_eq!(
        full("<pre class=\"lang-python\"><code>x = 1</code></pre>"),
        "```python\nx = 1\n```"
    );
    assert_eq!(
        full("<div class=\"highlight-bash\"><pre>ls | wc -l</pre></div>"),
        "```bash\nls | wc -l\n```"
    );
    assert_eq!(full("<p>Call <code>f(x)</code> now.</p>"), "Call `f(x)` now.");
}

#[test]
fn links_and_images_become_absolute() {
    assert_eq!(
        full(
            "<p><a href=\"/docs/a\">abs</a> <a href=\"../b?q=1#frag\">rel</a> \
             <a href=\"https://other.org/x\">ext</a> <a href=\"javascript:void(0)\">js</a></p>\
             <p><img src=\"img/cat.png\" alt=\"A cat\"><img src=\"/no-alt.png\"></p>"
        ),
        "[abs](https://example.com/docs/a) [rel](https://example.com/b?q=1#frag) \
         [ext](https://other.org/x) js\n\n![A cat](https://example.com/blog/img/cat.png)"
    );
}

#[test]
fn headings_emphasis_and_quotes_survive() {
    assert_eq!(
        full(
            "<h1>Title</h1><h3>Sub</h3><p><strong>bold</strong> and <em>it</em></p><blockquote><p>quoted</p></blockquote>"
        ),
        "# Title\n\n### Sub\n\n**bold** and *it*\n\n> quoted"
    );
}

#[test]
fn invisible_content_never_appears() {
    let md = full(
        "<p>visible</p><script>var SENTINEL_A = 1;</script><style>.SENTINEL_B{}</style>\
         <noscript>SENTINEL_C</noscript><template><p>SENTINEL_D</p></template>\
         <svg><title>SENTINEL_E</title><text>SENTINEL_E</text></svg><!-- SENTINEL_F -->\
         <div hidden>SENTINEL_G</div><div aria-hidden=\"true\">SENTINEL_H</div>\
         <p style=\"display: none\">SENTINEL_I</p><span style=\"visibility:hidden\">SENTINEL_J</span>\
         <p>still <span>visible</span></p>",
    );
    assert_eq!(md, "visible\n\nstill visible");
}

#[test]
fn head_content_never_appears() {
    let md = full("<p>body text</p>");
    assert_eq!(md, "body text");
}

#[test]
fn non_ascii_text_survives_exactly() {
    let text = "東京都は14日、計画を決定した。Zoë Müller: « très bonne » — naïve café";
    assert_eq!(full(&format!("<p>{text}</p>")), text);
}

#[test]
fn empty_pages_warn() {
    let cases = [
        "<html><head><title>x</title></head><body></body></html>",
        "<html><body>  \n\t </body></html>",
        "<html><body><div hidden>secret</div><script>x()</script><div aria-hidden=\"true\">y</div></body></html>",
        "",
    ];
    for html in cases {
        for mode in [ContentMode::Main, ContentMode::Full] {
            let out = html_to_markdown(html, None, mode).unwrap();
            assert_eq!(out.markdown, "", "{html:?} {mode:?}");
            assert_eq!(
                out.warnings,
                vec![EMPTY_PAGE_WARNING.to_owned()],
                "{html:?} {mode:?}"
            );
        }
    }
}

#[test]
fn main_mode_falls_back_to_full_when_extraction_keeps_almost_nothing() {
    let links: String = (0..40)
        .map(|i| format!("<li><a href=\"/s/{i}\">Section number {i} of the site</a></li>"))
        .collect();
    let html = format!("<html><body><nav><ul>{links}</ul></nav><p>Hi.</p></body></html>");
    let out = html_to_markdown(&html, None, ContentMode::Main).unwrap();
    assert_eq!(out.warnings.len(), 1, "{:?}", out.warnings);
    assert!(
        out.warnings[0].starts_with(MAIN_FALLBACK_WARNING),
        "{:?}",
        out.warnings
    );
    assert!(out.markdown.contains("Section number 39 of the site"));
    assert!(out.markdown.ends_with("Hi."));
}

#[test]
fn main_mode_keeps_short_pages_whole() {
    let html = "<html><body><p>Only one short paragraph here.</p></body></html>";
    let out = html_to_markdown(html, None, ContentMode::Main).unwrap();
    assert_eq!(out.markdown, "Only one short paragraph here.");
    assert!(out.warnings.is_empty(), "{:?}", out.warnings);
}

#[test]
fn output_is_tidy() {
    let md = full("<p>a   </p><br><br><br><div>\n\n\n</div><p>b<br></p><p></p><p>c</p>");
    assert_eq!(md, "a\n\nb\n\nc");
}

#[test]
fn counts_tokens_with_cl100k() {
    assert_eq!(count_tokens("hello world"), 2);
}

/// An article with the furniture that readability alone keeps:
/// a share bar and an author box inside the article container, a labelled
/// "Read also" teaser between paragraphs, and "more stories" cards under a
/// lead-in at the end.
fn furnished_article() -> String {
    let prose: String = (1..=6)
        .map(|i| {
            format!(
                "<p>Paragraph {i} of the council story explains the transit budget, the vote and \
                 what the new bus lanes will cost the city over the next decade of planning.</p>"
            )
        })
        .collect();
    format!(
        "<html><head><title>Council votes on transit</title></head><body>\
         <div class=\"story\"><h1>Council votes on transit</h1>\
         <div class=\"share-bar\">Share this story on Facebook, Twitter and by email today</div>\
         {prose}\
         <p>Read also: <a href=\"/other\">Mayor opens the new harbour bridge after delays</a></p>\
         <p>The final paragraph says when the lanes open and who pays for the buses.</p>\
         <div class=\"author-box\">Jane Doe covers city hall and writes the weekly newsletter.</div>\
         <p><strong>More stories:</strong></p>\
         <div><a href=\"/a\">Harbour bridge opens after long delays</a></div>\
         <div><a href=\"/b\">School board elects a new chair</a></div>\
         </div></body></html>"
    )
}

#[test]
fn main_mode_drops_furniture_inside_the_article() {
    let html = furnished_article();
    let out = html_to_markdown(&html, None, ContentMode::Main).unwrap();
    let md = out.markdown;
    assert!(md.starts_with("# Council votes on transit"), "{md}");
    assert!(md.contains("Paragraph 1 of the council story"), "{md}");
    assert!(md.ends_with("who pays for the buses."), "{md}");
    for furniture in [
        "Share this story",
        "Read also",
        "Jane Doe",
        "More stories",
        "School board",
    ] {
        assert!(!md.contains(furniture), "{furniture} kept:\n{md}");
    }
}

#[test]
fn readability_alone_keeps_that_furniture() {
    // The comparison the rule rests on: the previous default kept it all.
    let html = furnished_article();
    let out = oxwright_markdown::html_to_markdown_with(
        &html,
        None,
        ContentMode::Main,
        oxwright_markdown::Extractor::Readability,
    )
    .unwrap();
    let kept = ["Share this story", "Read also", "Jane Doe", "More stories"]
        .iter()
        .filter(|f| out.markdown.contains(*f))
        .count();
    assert!(kept >= 2, "{}", out.markdown);
}

fn letter_paragraphs() -> String {
    (1..=5)
        .map(|i| {
            format!(
                "<p>Letter paragraph {i} argues that the free exchange of information and ideas \
                 is the lifeblood of a liberal society, and that it is becoming more constricted \
                 every year in our institutions.</p>"
            )
        })
        .collect()
}

/// An open letter and its signatories in a table beside it (a real page's
/// layout, where readability took the comma-rich table cell over the
/// letter): whichever element the extractor picks, the letter's
/// paragraphs must come out. The prose check itself is unit-tested in
/// `extract/prose.rs`.
#[test]
fn main_mode_keeps_the_prose_when_readability_picks_a_list_beside_it() {
    let cell = |from: usize| -> String {
        let names: String = (from..from + 60)
            .map(|i| format!("<strong>Signatory Number{i}</strong>, <span>University {i}</span><br>\n"))
            .collect();
        format!("<td><span>{names}</span></td>")
    };
    let html = format!(
        "<html><head><title>A Letter</title></head><body><div class=\"container\"><article class=\"post\">\
         <div class=\"wysiwyg-content\">{}<table><tr>{}{}</tr></table></div>\
         </article></div></body></html>",
        letter_paragraphs(),
        cell(1),
        cell(61)
    );
    let md = html_to_markdown(&html, None, ContentMode::Main).unwrap().markdown;
    for i in 1..=5 {
        assert!(md.contains(&format!("Letter paragraph {i} argues")), "{md}");
    }
}

/// The lead (standfirst) sits in the article's header, outside the
/// container of the body that readability keeps: it is put back first.
/// Figure captions go; the image stays.
#[test]
fn main_mode_keeps_the_lead_and_drops_figure_captions() {
    let html = format!(
        "<html><head><title>Ferries</title></head><body>\
         <header class=\"article-header\"><h1>Harbour ferries return</h1>\
         <p class=\"article-standfirst\">The three ferries start their spring timetable on Monday \
         after a winter with one boat on weekends.</p></header>\
         <div class=\"article-body\">\
         <figure><img src=\"https://example.com/ferry.jpg\" alt=\"A ferry\">\
         <figcaption>Photo: Harbour Authority</figcaption></figure>{}</div>\
         </body></html>",
        letter_paragraphs()
    );
    let md = html_to_markdown(&html, None, ContentMode::Main).unwrap().markdown;
    let lead = md
        .find("The three ferries start")
        .unwrap_or_else(|| panic!("lead missing:\n{md}"));
    let body = md.find("Letter paragraph 1").expect("body");
    assert!(lead < body, "{md}");
    assert!(md.contains("![A ferry](https://example.com/ferry.jpg)"), "{md}");
    assert!(!md.contains("Photo: Harbour Authority"), "{md}");
}
