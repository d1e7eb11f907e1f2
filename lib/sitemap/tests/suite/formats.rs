//! Formats: urlset and index with and without a namespace, gzip however it
//! is labelled, Content-Encoding, BOM, plain text, RSS and Atom.

use oxwright_sitemap::SitemapUrl;

use crate::common::{Fixture, Route, gzip, index, locs, pages, urlset};

#[tokio::test]
async fn urlset_with_namespace_keeps_metadata() {
    let body = r#"<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <url><loc>https://site.example/a</loc><lastmod>2024-05-01T10:00:00+00:00</lastmod><changefreq>weekly</changefreq><priority>0.5</priority></url>
  <url><loc>https://site.example/b</loc></url>
</urlset>"#;
    let f = Fixture::start(vec![("/sitemap.xml", Route::xml(body))]).await;
    let r = f.load("/sitemap.xml").await.unwrap();
    assert_eq!(
        r.urls,
        [
            SitemapUrl {
                loc: "https://site.example/a".into(),
                lastmod: Some("2024-05-01T10:00:00+00:00".into()),
                changefreq: Some("weekly".into()),
                priority: Some(0.5),
            },
            SitemapUrl::new("https://site.example/b"),
        ]
    );
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
}

#[tokio::test]
async fn urlset_without_namespace() {
    let body = "<urlset><url><loc>https://site.example/n1</loc><priority>1.0</priority></url><url><loc>https://site.example/n2</loc></url></urlset>";
    let f = Fixture::start(vec![(
        "/sitemap.xml",
        Route::ok(body).header("content-type", "text/xml"),
    )])
    .await;
    let r = f.load("/sitemap.xml").await.unwrap();
    assert_eq!(locs(&r), pages(&["n1", "n2"]));
    assert_eq!(r.urls[0].priority, Some(1.0));
}

#[tokio::test]
async fn sitemapindex_with_and_without_namespace() {
    let f = Fixture::start(vec![]).await;
    f.set(
        "/sitemap.xml",
        Route::xml(index(&[f.url("/plain-index.xml"), f.url("/s1.xml")])),
    );
    f.set(
        "/plain-index.xml",
        Route::xml(format!(
            "<sitemapindex><sitemap><loc>{}</loc><lastmod>2024-01-01</lastmod></sitemap></sitemapindex>",
            f.url("/s2.xml")
        )),
    );
    f.set("/s1.xml", Route::xml(urlset(&["https://site.example/one"])));
    f.set(
        "/s2.xml",
        Route::xml(urlset(&["https://site.example/two", "https://site.example/one"])),
    );
    let r = f.load("/").await.unwrap();
    // Breadth first: s1 (depth 1) before s2 (depth 2); the duplicate is dropped.
    assert_eq!(locs(&r), pages(&["one", "two"]));
    assert_eq!(r.sources.len(), 5, "{:?}", r.sources);
}

#[tokio::test]
async fn gzip_by_extension_and_by_content_type() {
    let f = Fixture::start(vec![]).await;
    f.set(
        "/sitemap.xml",
        Route::xml(index(&[f.url("/a.xml.gz"), f.url("/b"), f.url("/c.xml.gz")])),
    );
    f.set(
        "/a.xml.gz",
        Route::ok(gzip(urlset(&["https://site.example/gz-ext"]).as_bytes()))
            .header("content-type", "application/octet-stream"),
    );
    f.set(
        "/b",
        Route::ok(gzip(urlset(&["https://site.example/gz-type"]).as_bytes()))
            .header("content-type", "application/x-gzip"),
    );
    // A .gz served as text/plain is still gzip.
    f.set(
        "/c.xml.gz",
        Route::ok(gzip(urlset(&["https://site.example/gz-text"]).as_bytes()))
            .header("content-type", "text/plain"),
    );
    let r = f.load("/sitemap.xml").await.unwrap();
    assert_eq!(locs(&r), pages(&["gz-ext", "gz-type", "gz-text"]));
}

#[tokio::test]
async fn fake_gzip_falls_back_to_plain() {
    let f = Fixture::start(vec![(
        "/sitemap.xml.gz",
        Route::ok(urlset(&["https://site.example/not-gzipped"])).header("content-type", "application/gzip"),
    )])
    .await;
    let r = f.load("/sitemap.xml.gz").await.unwrap();
    assert_eq!(locs(&r), pages(&["not-gzipped"]));
}

#[tokio::test]
async fn content_encoding_gzip_and_double_gzip() {
    let f = Fixture::start(vec![
        (
            "/sitemap.xml",
            Route::xml(gzip(urlset(&["https://site.example/ce"]).as_bytes()))
                .header("content-encoding", "gzip"),
        ),
        (
            "/double.xml.gz",
            Route::ok(gzip(&gzip(urlset(&["https://site.example/ce2"]).as_bytes())))
                .header("content-encoding", "gzip"),
        ),
    ])
    .await;
    assert_eq!(locs(&f.load("/sitemap.xml").await.unwrap()), pages(&["ce"]));
    assert_eq!(locs(&f.load("/double.xml.gz").await.unwrap()), pages(&["ce2"]));
}

#[tokio::test]
async fn utf8_bom_before_xml_and_text() {
    let mut xml = b"\xEF\xBB\xBF".to_vec();
    xml.extend_from_slice(urlset(&["https://site.example/bom"]).as_bytes());
    let mut txt = b"\xEF\xBB\xBF".to_vec();
    txt.extend_from_slice(b"https://site.example/bom-text\n");
    let f = Fixture::start(vec![
        ("/sitemap.xml", Route::xml(xml)),
        ("/sitemap.txt", Route::ok(txt)),
    ])
    .await;
    assert_eq!(locs(&f.load("/sitemap.xml").await.unwrap()), pages(&["bom"]));
    assert_eq!(locs(&f.load("/sitemap.txt").await.unwrap()), pages(&["bom-text"]));
}

#[tokio::test]
async fn plain_text_sitemap() {
    let body = "https://site.example/t1\r\n\n  https://site.example/t2  \nnot-a-url\nftp://site.example/t3\nhttps://site.example/t1\n";
    let f = Fixture::start(vec![(
        "/sitemap.txt",
        Route::ok(body).header("content-type", "text/plain"),
    )])
    .await;
    let r = f.load("/sitemap.txt").await.unwrap();
    assert_eq!(locs(&r), pages(&["t1", "t2"]));
    assert_eq!(
        r.warnings,
        [format!(
            "{}: skipped 2 lines that are not absolute http(s) URLs",
            f.url("/sitemap.txt")
        )]
    );
}

#[tokio::test]
async fn rss_feed_as_sitemap() {
    let body = r#"<?xml version="1.0"?><rss version="2.0"><channel><title>Blog</title><link>https://site.example/</link>
<item><title>One</title><link>https://site.example/post-1</link><pubDate>Tue, 02 Jan 2024 03:04:05 GMT</pubDate></item>
<item><title>Two</title><link>https://site.example/post-2</link></item></channel></rss>"#;
    let f = Fixture::start(vec![(
        "/feed",
        Route::ok(body).header("content-type", "application/rss+xml"),
    )])
    .await;
    let r = f.load("/feed").await.unwrap();
    assert_eq!(locs(&r), pages(&["post-1", "post-2"]));
    assert_eq!(
        r.urls[0].lastmod.as_deref(),
        Some("Tue, 02 Jan 2024 03:04:05 GMT")
    );
}

#[tokio::test]
async fn atom_feed_as_sitemap() {
    let body = r#"<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom"><title>Blog</title><link href="https://site.example/" rel="alternate"/>
<entry><title>A</title><link rel="self" href="https://site.example/api/a"/><link href="https://site.example/entry-a"/><updated>2024-03-03T00:00:00Z</updated></entry>
<entry><title>B</title><link rel="alternate" type="text/html" href="https://site.example/entry-b"/></entry></feed>"#;
    let f = Fixture::start(vec![(
        "/atom.xml",
        Route::ok(body).header("content-type", "application/atom+xml"),
    )])
    .await;
    let r = f.load("/atom.xml").await.unwrap();
    assert_eq!(locs(&r), pages(&["entry-a", "entry-b"]));
    assert_eq!(r.urls[0].lastmod.as_deref(), Some("2024-03-03T00:00:00Z"));
}

#[tokio::test]
async fn image_and_news_extensions_are_skipped() {
    let body = r#"<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
  xmlns:image="http://www.google.com/schemas/sitemap-image/1.1"
  xmlns:news="http://www.google.com/schemas/sitemap-news/0.9"
  xmlns:xhtml="http://www.w3.org/1999/xhtml">
<url><loc>https://site.example/article</loc>
  <image:image><image:loc>https://cdn.example/photo.jpg</image:loc></image:image>
  <news:news><news:publication><news:name>X</news:name></news:publication><news:title>T</news:title></news:news>
  <xhtml:link rel="alternate" hreflang="de" href="https://site.example/de/article"/>
</url></urlset>"#;
    let f = Fixture::start(vec![("/sitemap.xml", Route::xml(body))]).await;
    let r = f.load("/sitemap.xml").await.unwrap();
    assert_eq!(locs(&r), pages(&["article"]));
}

#[tokio::test]
async fn urls_are_deduplicated_across_documents() {
    let f = Fixture::start(vec![]).await;
    f.set(
        "/sitemap.xml",
        Route::xml(index(&[f.url("/d1.xml"), f.url("/d2.txt")])),
    );
    f.set(
        "/d1.xml",
        Route::xml(urlset(&[
            "https://site.example/a",
            "https://site.example/b",
            "https://site.example/a",
        ])),
    );
    f.set(
        "/d2.txt",
        Route::ok("https://site.example/b\nhttps://site.example/c\n"),
    );
    let r = f.load("/sitemap.xml").await.unwrap();
    assert_eq!(locs(&r), pages(&["a", "b", "c"]));
}
