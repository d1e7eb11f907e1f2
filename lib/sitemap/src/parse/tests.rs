//! Parser unit tests on in-memory documents.

use super::*;

fn locs(doc: &ParsedDoc) -> Vec<&str> {
    doc.urls.iter().map(|u| u.loc.as_str()).collect()
}

fn parse(text: &str) -> ParsedDoc {
    parse_sitemap(text.as_bytes(), 1000)
}

#[test]
fn urlset_keeps_metadata_and_skips_extensions() {
    let doc = parse(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
        xmlns:image="http://www.google.com/schemas/sitemap-image/1.1">
  <url><loc> https://a.example/one?x=1&amp;y=2 </loc><lastmod>2024-01-02</lastmod>
       <changefreq>daily</changefreq><priority>0.8</priority>
       <image:image><image:loc>https://cdn.example/i.png</image:loc></image:image></url>
  <url><loc><![CDATA[https://a.example/two]]></loc><priority>7</priority></url>
  <url><loc>not a url</loc></url>
</urlset>"#,
    );
    assert_eq!(doc.error, None);
    assert_eq!(doc.kind, DocKind::UrlSet);
    assert_eq!(
        locs(&doc),
        ["https://a.example/one?x=1&y=2", "https://a.example/two"]
    );
    let one = &doc.urls[0];
    assert_eq!(one.lastmod.as_deref(), Some("2024-01-02"));
    assert_eq!(one.changefreq.as_deref(), Some("daily"));
    assert_eq!(one.priority, Some(0.8));
    assert_eq!(doc.urls[1].priority, None);
    assert_eq!(
        doc.warnings,
        ["skipped 1 entries without an absolute http(s) URL"]
    );
}

#[test]
fn prefixed_sitemap_namespace_and_no_namespace() {
    let doc = parse(
        r#"<sm:sitemapindex xmlns:sm="http://www.sitemaps.org/schemas/sitemap/0.9">
  <sm:sitemap><sm:loc>https://a.example/s1.xml</sm:loc></sm:sitemap></sm:sitemapindex>"#,
    );
    assert_eq!(
        (doc.kind, doc.sitemaps.clone()),
        (DocKind::Index, vec!["https://a.example/s1.xml".to_string()])
    );
    let doc = parse("<sitemapindex><sitemap><loc>https://a.example/s2.xml</loc></sitemap></sitemapindex>");
    assert_eq!(doc.sitemaps, ["https://a.example/s2.xml"]);
}

#[test]
fn feeds() {
    let rss = parse(
        r#"<rss version="2.0" xmlns:atom="http://www.w3.org/2005/Atom"><channel><link>https://a.example/</link>
<atom:link href="https://a.example/feed" rel="self"/>
<item><title>t</title><link>https://a.example/p1</link><pubDate>Mon, 01 Jan 2024 00:00:00 GMT</pubDate></item>
<item><link>https://a.example/p2</link></item></channel></rss>"#,
    );
    assert_eq!(locs(&rss), ["https://a.example/p1", "https://a.example/p2"]);
    assert_eq!(
        rss.urls[0].lastmod.as_deref(),
        Some("Mon, 01 Jan 2024 00:00:00 GMT")
    );
    let atom = parse(
        r#"<feed xmlns="http://www.w3.org/2005/Atom"><link href="https://a.example/" />
<entry><link rel="edit" href="https://a.example/edit/1"/><link href="https://a.example/e1"/><updated>2024-02-03T00:00:00Z</updated></entry>
<entry><link rel="alternate" href="https://a.example/e2"/></entry></feed>"#,
    );
    assert_eq!(atom.kind, DocKind::Atom);
    assert_eq!(locs(&atom), ["https://a.example/e1", "https://a.example/e2"]);
    assert_eq!(atom.urls[0].lastmod.as_deref(), Some("2024-02-03T00:00:00Z"));
}

#[test]
fn plain_text_with_bom() {
    let doc = parse_sitemap(
        b"\xEF\xBB\xBFhttps://a.example/a\r\n\n# c\nnope\nhttps://a.example/b",
        10,
    );
    assert_eq!(doc.kind, DocKind::Text);
    assert_eq!(locs(&doc), ["https://a.example/a", "https://a.example/b"]);
    assert_eq!(
        doc.warnings,
        ["skipped 1 lines that are not absolute http(s) URLs"]
    );
    let doc = parse("hello world\n");
    assert_eq!(
        doc.error,
        Some(ParseError::NotSitemap(
            "no line is an absolute http(s) URL".into()
        ))
    );
}

#[test]
fn truncated_keeps_what_was_read() {
    let doc = parse(
        "<urlset><url><loc>https://a.example/1</loc></url><url><loc>https://a.example/2</loc><lastmod>20",
    );
    assert_eq!(doc.error, None);
    assert_eq!(locs(&doc), ["https://a.example/1", "https://a.example/2"]);
    assert_eq!(doc.warnings.len(), 1, "{:?}", doc.warnings);
    assert!(doc.warnings[0].contains("truncated"));
    let doc = parse("<urlset><url><loc>https://a.example/1</loc></url><url><loc>https://a.exa");
    assert_eq!(locs(&doc), ["https://a.example/1"]);
}

#[test]
fn dtd_and_html_are_refused() {
    let doc = parse(
        r#"<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;">]>
<urlset><url><loc>https://a.example/&lol2;</loc></url></urlset>"#,
    );
    assert_eq!(doc.error, Some(ParseError::Dtd));
    assert!(doc.urls.is_empty());
    let doc = parse("<!DOCTYPE html><html><body>hi</body></html>");
    assert_eq!(doc.error, Some(ParseError::NotSitemap("an HTML page".into())));
    let doc = parse("<html><body>hi</body></html>");
    assert_eq!(doc.error, Some(ParseError::NotSitemap("an HTML page".into())));
}

#[test]
fn unknown_entity_drops_the_entry() {
    let doc = parse(
        "<urlset><url><loc>https://a.example/&bogus;</loc></url><url><loc>https://a.example/&#65;</loc></url></urlset>",
    );
    assert_eq!(locs(&doc), ["https://a.example/A"]);
}

#[test]
fn max_urls_stops_the_parse() {
    let body: String = (0..10).map(|i| format!("https://a.example/{i}\n")).collect();
    let doc = parse_sitemap(body.as_bytes(), 3);
    assert_eq!(doc.urls.len(), 3);
    let xml = format!(
        "<urlset>{}</urlset>",
        (0..10)
            .map(|i| format!("<url><loc>https://a.example/{i}</loc></url>"))
            .collect::<String>()
    );
    let doc = parse_sitemap(xml.as_bytes(), 3);
    assert_eq!(
        locs(&doc),
        [
            "https://a.example/0",
            "https://a.example/1",
            "https://a.example/2"
        ]
    );
    assert_eq!(doc.warnings, ["stopped after 3 entries (max_urls)"]);
}

#[test]
fn cap_applies_to_plain_documents() {
    let body = "https://a.example/x\n".repeat(100);
    let doc = parse_sitemap_with(
        body.as_bytes(),
        ParseLimits {
            max_bytes: 1000,
            max_urls: 1000,
        },
    );
    assert_eq!(doc.error, Some(ParseError::TooLarge { limit: 1000 }));
    assert!(doc.urls.is_empty());
    let doc = parse_sitemap_with(
        body.as_bytes(),
        ParseLimits {
            max_bytes: 2000,
            max_urls: 1000,
        },
    );
    assert_eq!((doc.error, doc.urls.len(), doc.bytes), (None, 100, 2000));
}

#[test]
fn empty_and_junk() {
    assert_eq!(
        parse("").error,
        Some(ParseError::NotSitemap("empty document".into()))
    );
    assert!(matches!(parse("<<<").error, Some(ParseError::Malformed(_))));
    assert_eq!(
        parse("<foo/>").error,
        Some(ParseError::NotSitemap("unexpected root element <foo>".into()))
    );
}
