//! A PDF main document (served as a PDF, or as a download named `.pdf`)
//! becomes Markdown with its pages in order, its title and dates; a
//! password-protected or broken PDF is a typed `extraction` error, tried
//! once. Real Chromium; the PDF never reaches Chromium's viewer.

mod common;

use common::Env;
use oxwright_fetch::fetch_page;
use oxwright_jobs::{ErrorKind, Format};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pdf_becomes_markdown_page_by_page() {
    let env = Env::start().await;
    for path in ["/report.pdf", "/report-download"] {
        let mut spec = env.spec(path);
        spec.formats.push(Format::Text);
        spec.formats.push(Format::RawHtml);
        let out = fetch_page(&env.pool, &env.policy, &spec)
            .await
            .unwrap_or_else(|e| panic!("{path}: {e}"));
        let r = &out.result;
        let md = &r.markdown;
        assert_eq!(r.status, 200, "{path}");
        assert_eq!(r.title, "Harbour Tram Pilot: Quarterly Report", "{path}");
        assert!(
            md.starts_with("# Harbour Tram Pilot: Quarterly Report\n"),
            "{path}: {md}"
        );
        let first = md.find("<!-- page 1 of 2 -->").expect("page 1 marker");
        let second = md.find("<!-- page 2 of 2 -->").expect("page 2 marker");
        // Whole words, as printed (the font's widths do not space them out).
        let carried = md
            .find("The overnight tram pilot carried 41,200 passengers")
            .unwrap_or_else(|| panic!("{path}: {md}"));
        let costs = md
            .find("Operating costs came to 1.8 million")
            .unwrap_or_else(|| panic!("{path}: page 2 text: {md}"));
        assert!(
            first < carried && carried < second && second < costs,
            "{path}: {md}"
        );
        assert!(!md.contains("Pi l ot"), "{path}: {md}");
        assert_eq!(r.metadata.meta.get("pdf:pages").map(String::as_str), Some("2"));
        assert_eq!(r.metadata.published.as_deref(), Some("2026-11-24T07:01:02"));
        assert!(r.text.as_deref().is_some_and(|t| t.contains("41,200 passengers")));
        assert!(r.raw_html.is_none());
        assert!(
            r.warnings
                .iter()
                .any(|w| w.contains("PDF") && w.contains("raw_html")),
            "{:?}",
            r.warnings
        );
        assert!(out.screenshot.is_none());
    }
    assert_eq!(env.site.hits("/report.pdf"), 1, "fetched once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn locked_and_broken_pdfs_are_typed_errors_tried_once() {
    let env = Env::start().await;
    for (path, says) in [
        ("/locked.pdf", "password-protected"),
        ("/broken.pdf", "could not be read"),
    ] {
        let mut spec = env.spec(path);
        spec.retry_count = 2;
        let err = fetch_page(&env.pool, &env.policy, &spec).await.expect_err(path);
        assert_eq!(err.kind, ErrorKind::Extraction, "{path}: {err}");
        assert!(err.message.contains(says), "{path}: {err}");
        assert_eq!(env.site.hits(path), 1, "{path}: retried");
    }
    // A PDF after them: the page is as good as new.
    let out = fetch_page(&env.pool, &env.policy, &env.spec("/doc.pdf"))
        .await
        .unwrap();
    assert!(!out.result.markdown.trim().is_empty());
}
