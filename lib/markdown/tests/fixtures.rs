//! Fixture-page tests: realistic article pages with boilerplate around them,
//! checked in both content modes.

use oxwright_markdown::{ContentMode, Conversion, count_tokens, html_to_markdown};
use url::Url;

const FIXTURES: &[&str] = &[
    "news_article.html",
    "blog_post.html",
    "docs_page.html",
    "product_review.html",
    "japanese_article.html",
];

/// Text that must never reach the output in any mode.
const NEVER: &[&str] = &[
    "SCRIPTSENTINEL",
    "STYLESENTINEL",
    "HIDDENSENTINEL",
    "TEMPLATESENTINEL",
    "NOSCRIPTSENTINEL",
    "SVGSENTINEL",
    "COMMENTSENTINEL ",
    "HEADSENTINEL",
];

/// Page chrome that main mode must drop.
const CHROME: &[&str] = &[
    "NAVSENTINEL",
    "FOOTERSENTINEL",
    "SIDEBARSENTINEL",
    "COOKIESENTINEL",
    "COMMENTSSENTINEL",
    "RELATEDSENTINEL",
];

fn fixture(name: &str) -> String {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn base() -> Url {
    Url::parse("https://www.example-news.co.uk/news/2025/03/14/story").unwrap()
}

fn convert(name: &str, mode: ContentMode) -> Conversion {
    let out = html_to_markdown(&fixture(name), Some(&base()), mode).unwrap();
    assert!(out.warnings.is_empty(), "{name} {mode:?}: {:?}", out.warnings);
    out
}

fn assert_clean(name: &str, mode: ContentMode, md: &str) {
    for s in NEVER {
        assert!(!md.contains(s), "{name} {mode:?} leaked {s}");
    }
    for tag in ["<div", "<span", "<script", "<p>", "</", "<!--"] {
        assert!(!md.contains(tag), "{name} {mode:?} has stray {tag}");
    }
    assert!(!md.contains("\n\n\n"), "{name} {mode:?} has blank-line runs");
    assert!(
        !md.lines().any(|l| l.ends_with(' ') || l.ends_with('\t')),
        "{name} {mode:?} has trailing spaces"
    );
    assert_eq!(md, md.trim(), "{name} {mode:?} is not trimmed");
}

#[test]
fn invisible_content_never_appears_in_any_mode() {
    for name in FIXTURES {
        for mode in [ContentMode::Main, ContentMode::Full] {
            assert_clean(name, mode, &convert(name, mode).markdown);
        }
    }
}

#[test]
fn main_mode_drops_chrome_and_full_mode_keeps_it() {
    for name in FIXTURES {
        let main = convert(name, ContentMode::Main).markdown;
        for s in CHROME {
            assert!(!main.contains(s), "{name} main kept {s}");
        }
        let full = convert(name, ContentMode::Full).markdown;
        assert!(full.contains("NAVSENTINEL"), "{name} full lost the nav");
        assert!(full.contains("FOOTERSENTINEL"), "{name} full lost the footer");
    }
}

#[test]
fn markdown_has_at_most_half_the_tokens_of_the_html() {
    for name in FIXTURES {
        let html_tokens = count_tokens(&fixture(name));
        for mode in [ContentMode::Main, ContentMode::Full] {
            let md_tokens = count_tokens(&convert(name, mode).markdown);
            assert!(
                md_tokens * 2 <= html_tokens,
                "{name} {mode:?}: {md_tokens} markdown tokens vs {html_tokens} html tokens"
            );
        }
    }
}

#[test]
fn news_article_keeps_its_structure() {
    let md = convert("news_article.html", ContentMode::Main).markdown;
    assert!(
        md.starts_with("# City council approves £2.4bn transport plan after marathon session\n"),
        "{md}"
    );
    assert!(
        md.contains(
            "1. Phase one (2026–2028): utility diversion and depot construction\n   \
         - Gas and water mains moved on Queen Street and Market Row\n   \
         - A new depot at the former Eastgate goods yard\n     \
         - Capacity for 24 trams\n     \
         - Solar canopy over the stabling sidings\n\
         2. Phase two"
        ),
        "{md}"
    );
    assert!(
        md.contains(
            "| Source | Amount | Condition |\n| --- | --- | --- |\n\
         | National transport grant | 1,450 | Match funding \\| local share ≥ 25% |\n"
        ),
        "{md}"
    );
    assert!(
        md.contains("| Developer contributions | 310 | Section 106 \\| corridor sites only |"),
        "{md}"
    );
    assert!(md.contains("![An artist's impression of a tram on Queen Street](https://www.example-news.co.uk/images/2025/03/tram-render.jpg)"));
    assert!(
        md.contains("[Central Library](https://www.example-news.co.uk/news/2025/03/14/libraries/central)")
    );
    assert!(md.contains("> We are not against trams."));
    assert!(md.contains("*Rajiv Anand*"));
}

#[test]
fn blog_post_keeps_fences_and_nesting() {
    for mode in [ContentMode::Main, ContentMode::Full] {
        let md = convert("blog_post.html", mode).markdown;
        assert!(
            md.contains("```rust\n#[derive(Debug)]\npub struct Token {\n"),
            "{md}"
        );
        assert!(md.contains("fn lex(input: &str) -> Vec<Token> {"), "{md}");
        assert!(md.contains("```python\nimport timeit\n"), "{md}");
        assert!(
            md.contains("```bash\ncargo bench --bench lex -- --save-baseline borrowed\n```"),
            "{md}"
        );
        assert!(
            md.contains(
                "- Does the input outlive every token?\n  \
             - If you read from a file, keep the buffer alive\n    \
             - Memory-map it with `memmap2`, or\n    \
             - read it once into a `Vec<u8>`\n  \
             - If you read from a socket"
            ),
            "{md}"
        );
        assert!(md.contains("| Variant | Time (ms) | Allocations |\n| --- | --- | --- |\n| Owned `String` | 41.2 | 1,048,576 |"), "{md}");
        assert!(md.contains(
            "![Flamegraph before and after](https://www.example-news.co.uk/assets/flamegraph.png)"
        ));
        assert!(!md.contains("spacer.gif"), "alt-less image kept");
    }
}

#[test]
fn docs_page_keeps_api_table_and_languages() {
    let md = convert("docs_page.html", ContentMode::Main).markdown;
    assert!(
        md.contains("| `timeout` | `Duration \\| None` | `30s` | Total request timeout. |"),
        "{md}"
    );
    assert!(md.contains("```toml\n[client]\n"), "{md}");
    assert!(md.contains("```js\nconst client"), "{md}");
    assert!(
        md.contains("[retryable errors](https://www.example-news.co.uk/news/2025/03/errors#retryable)"),
        "{md}"
    );
}

#[test]
fn japanese_article_survives_exactly() {
    for mode in [ContentMode::Main, ContentMode::Full] {
        let md = convert("japanese_article.html", mode).markdown;
        for s in [
            "東京都は14日、臨海部を結ぶ次世代型路面電車（LRT）の整備計画を正式に決定した。総事業費は約1,200億円。",
            "Zoë Müller, said: « C'est une très bonne nouvelle ».",
            "| 停留所 \\| 車両基地 | 370 |",
            "   - 環境影響評価\n     - 騒音・振動の調査",
            "> 「通勤時間が短くなるなら歓迎です」と沿線に住む会社員の女性（34）は話した。",
        ] {
            assert!(md.contains(s), "{mode:?} lost {s}:\n{md}");
        }
    }
}

/// Converts a ~5 MB page in both modes to show large input is handled
/// (correctness only; no timing is asserted).
#[test]
fn very_large_page_converts() {
    let html = fixture("news_article.html");
    let start = html.find("<article").unwrap();
    let end = html.find("</article>").unwrap() + "</article>".len();
    let article = &html[start..end];
    let copies = 5_000_000 / article.len() + 1;
    let page = format!("{}{}{}", &html[..start], article.repeat(copies), &html[end..]);
    assert!(page.len() > 5_000_000);
    for mode in [ContentMode::Main, ContentMode::Full] {
        let out = html_to_markdown(&page, Some(&base()), mode).unwrap();
        assert_eq!(
            out.markdown.matches("| --- | --- | --- |").count(),
            copies,
            "{mode:?}"
        );
        assert_clean("large page", mode, &out.markdown);
    }
}
