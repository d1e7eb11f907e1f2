//! Limits and safety: size cap (decompressed bytes count), time limit,
//! index depth and document limits, cycles, DTDs and truncation.

use std::time::Duration;

use oxwright_sitemap::{SitemapError, SitemapOptions};

use crate::common::{Fixture, Route, gzip, index, locs, pages, paths, urlset};

const MIB: usize = 1024 * 1024;

#[tokio::test]
async fn plain_document_over_two_mib_is_too_large() {
    let mut body = urlset(&["https://site.example/a"]).into_bytes();
    body.resize(2 * MIB + 1, b' ');
    let f = Fixture::start(vec![("/sitemap.xml", Route::xml(body))]).await;
    let err = f.load("/sitemap.xml").await.unwrap_err();
    assert_eq!(
        err,
        SitemapError::TooLarge {
            url: f.url("/sitemap.xml"),
            limit: 2 * MIB,
        }
    );
}

#[tokio::test]
async fn exactly_two_mib_is_accepted() {
    let mut body = urlset(&["https://site.example/edge"]).into_bytes();
    body.resize(2 * MIB, b'\n');
    let f = Fixture::start(vec![("/sitemap.xml", Route::xml(body))]).await;
    let r = f.load("/sitemap.xml").await.unwrap();
    assert_eq!(locs(&r), pages(&["edge"]));
    assert_eq!(r.sources[0].bytes, 2 * MIB as u64);
}

#[tokio::test]
async fn gzip_bomb_stops_at_the_cap() {
    // Padding inside the root element, and after it.
    let mut inside = b"<urlset><url><loc>https://site.example/bomb</loc></url>".to_vec();
    inside.resize(64 * MIB, b' ');
    inside.extend_from_slice(b"</urlset>");
    let mut after = urlset(&["https://site.example/bomb"]).into_bytes();
    after.resize(64 * MIB, b'\n');
    let (inside, after) = (gzip(&inside), gzip(&after));
    assert!(inside.len() < 200 * 1024, "bomb is {} bytes", inside.len());
    let f = Fixture::start(vec![
        ("/bomb.xml.gz", Route::ok(inside)),
        (
            "/bomb-ce.xml",
            Route::xml(after).header("content-encoding", "gzip"),
        ),
    ])
    .await;
    for path in ["/bomb.xml.gz", "/bomb-ce.xml"] {
        let err = f.load(path).await.unwrap_err();
        assert_eq!(
            err,
            SitemapError::TooLarge {
                url: f.url(path),
                limit: 2 * MIB,
            }
        );
    }
}

#[tokio::test]
async fn slow_document_times_out() {
    let f = Fixture::start(vec![(
        "/sitemap.xml",
        Route::xml(urlset(&["https://site.example/slow"])).delay(Duration::from_secs(5)),
    )])
    .await;
    let opts = SitemapOptions {
        timeout: Duration::from_millis(300),
        ..f.options()
    };
    let started = std::time::Instant::now();
    let err = f
        .loader_with(opts)
        .load(&f.url("/sitemap.xml"))
        .await
        .unwrap_err();
    assert_eq!(
        err,
        SitemapError::Timeout {
            url: f.url("/sitemap.xml"),
            timeout_ms: 300,
        }
    );
    assert!(err.is_retryable());
    assert!(started.elapsed() < Duration::from_secs(3));
}

#[tokio::test]
async fn default_limits_are_the_documented_ones() {
    let o = SitemapOptions::default();
    assert_eq!((o.timeout, o.max_bytes), (Duration::from_secs(3), 2 * MIB));
    assert_eq!(o.ttl, Duration::from_secs(24 * 3600));
    assert!(o.cache_dir.unwrap().starts_with(std::env::temp_dir()));
}

/// /l0.xml → /l1.xml → … → /l{n}.xml, each index also listing one page.
async fn chain(n: usize) -> Fixture {
    let f = Fixture::start(vec![]).await;
    for i in 0..n {
        let body = format!(
            "<sitemapindex><sitemap><loc>{}</loc></sitemap><sitemap><loc>{}</loc></sitemap></sitemapindex>",
            f.url(&format!("/l{}.xml", i + 1)),
            f.url(&format!("/p{i}.xml"))
        );
        f.set(&format!("/l{i}.xml"), Route::xml(body));
        f.set(
            &format!("/p{i}.xml"),
            Route::xml(urlset(&[&format!("https://site.example/p{i}")])),
        );
    }
    f.set(
        &format!("/l{n}.xml"),
        Route::xml(urlset(&["https://site.example/leaf"])),
    );
    f
}

#[tokio::test]
async fn nested_indexes_stop_at_max_depth() {
    let f = chain(5).await;
    let opts = SitemapOptions {
        max_depth: 2,
        ..f.options()
    };
    let r = f.loader_with(opts).load(&f.url("/l0.xml")).await.unwrap();
    // Depth 0: l0. Depth 1: l1, p0. Depth 2: l2 (an index, not expanded), p1.
    assert_eq!(locs(&r), pages(&["p0", "p1"]));
    assert!(
        r.warnings.contains(&format!(
            "{}: index nesting deeper than max_depth (2); skipped 2 sitemaps",
            f.url("/l2.xml")
        )),
        "{:?}",
        r.warnings
    );
    let r = f.load("/l0.xml").await.unwrap();
    assert_eq!(locs(&r), pages(&["p0", "p1", "p2"]), "default max_depth is 3");
}

#[tokio::test]
async fn total_documents_are_capped() {
    let f = Fixture::start(vec![]).await;
    let children: Vec<String> = (0..10).map(|i| f.url(&format!("/c{i}.xml"))).collect();
    f.set("/sitemap.xml", Route::xml(index(&children)));
    for i in 0..10 {
        f.set(
            &format!("/c{i}.xml"),
            Route::xml(urlset(&[&format!("https://site.example/c{i}")])),
        );
    }
    let opts = SitemapOptions {
        max_documents: 4,
        ..f.options()
    };
    let r = f.loader_with(opts).load(&f.url("/sitemap.xml")).await.unwrap();
    assert_eq!(locs(&r), pages(&["c0", "c1", "c2"]));
    assert_eq!(r.sources.len(), 4);
    assert_eq!(
        r.warnings
            .iter()
            .filter(|w| w.contains("max_documents (4)"))
            .count(),
        7
    );
}

#[tokio::test]
async fn self_reference_is_read_once() {
    let f = Fixture::start(vec![]).await;
    f.set(
        "/sitemap.xml",
        Route::xml(index(&[f.url("/sitemap.xml"), f.url("/s.xml")])),
    );
    f.set("/s.xml", Route::xml(urlset(&["https://site.example/s"])));
    let r = f.load("/sitemap.xml").await.unwrap();
    assert_eq!(locs(&r), pages(&["s"]));
    let mut seen = paths(&f.take_log());
    seen.sort();
    assert_eq!(seen, ["/s.xml", "/sitemap.xml"]);
}

#[tokio::test]
async fn mutual_reference_terminates() {
    let f = Fixture::start(vec![]).await;
    f.set("/a.xml", Route::xml(index(&[f.url("/b.xml"), f.url("/pa.xml")])));
    f.set(
        "/b.xml",
        Route::xml(index(&[f.url("/a.xml#again"), f.url("/pb.xml")])),
    );
    f.set("/pa.xml", Route::xml(urlset(&["https://site.example/pa"])));
    f.set("/pb.xml", Route::xml(urlset(&["https://site.example/pb"])));
    let r = f.load("/a.xml").await.unwrap();
    assert_eq!(locs(&r), pages(&["pa", "pb"]));
    assert_eq!(f.take_log().len(), 4);
}

#[tokio::test]
async fn redirect_back_to_an_ancestor_is_a_cycle() {
    let f = Fixture::start(vec![]).await;
    f.set(
        "/sitemap.xml",
        Route::xml(index(&[f.url("/child.xml"), f.url("/ok.xml")])),
    );
    f.set("/child.xml", Route::redirect("/sitemap.xml"));
    f.set("/ok.xml", Route::xml(urlset(&["https://site.example/ok"])));
    let r = f.load("/sitemap.xml").await.unwrap();
    assert_eq!(locs(&r), pages(&["ok"]));
    let cycle = SitemapError::Cycle {
        url: f.url("/child.xml"),
        target: f.url("/sitemap.xml"),
    };
    let child = r.sources.iter().find(|s| s.url == f.url("/child.xml")).unwrap();
    assert_eq!(child.error.as_deref(), Some(&*cycle.to_string()));
    assert_eq!(
        f.take_log().iter().filter(|l| l.path == "/sitemap.xml").count(),
        1
    );
}

#[tokio::test]
async fn billion_laughs_is_refused() {
    let body = r#"<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol9 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
]>
<urlset><url><loc>https://site.example/&lol9;</loc></url></urlset>"#;
    let f = Fixture::start(vec![("/sitemap.xml", Route::xml(body))]).await;
    let err = f.load("/sitemap.xml").await.unwrap_err();
    assert_eq!(
        err,
        SitemapError::Dtd {
            url: f.url("/sitemap.xml")
        }
    );
}

#[tokio::test]
async fn truncated_xml_keeps_urls_read_so_far() {
    let full = urlset(&[
        "https://site.example/t1",
        "https://site.example/t2",
        "https://site.example/t3",
    ]);
    let cut = &full[..full.find("https://site.example/t3").unwrap() + 10];
    let f = Fixture::start(vec![("/sitemap.xml", Route::xml(cut.to_string()))]).await;
    let r = f.load("/sitemap.xml").await.unwrap();
    assert_eq!(locs(&r), pages(&["t1", "t2"]));
    assert_eq!(r.warnings.len(), 1);
    assert!(r.warnings[0].contains("truncated"), "{:?}", r.warnings);
}

#[tokio::test]
async fn truncated_gzip_keeps_urls_read_so_far() {
    let mut xml = String::from("<urlset>");
    for i in 0..2000 {
        xml.push_str(&format!("<url><loc>https://site.example/{i}</loc></url>"));
    }
    xml.push_str("</urlset>");
    let gz = gzip(xml.as_bytes());
    let f = Fixture::start(vec![("/sitemap.xml.gz", Route::ok(gz[..gz.len() / 2].to_vec()))]).await;
    let r = f.load("/sitemap.xml.gz").await.unwrap();
    assert!(r.urls.len() > 100 && r.urls.len() < 2000, "{}", r.urls.len());
    let expected: Vec<String> = (0..r.urls.len())
        .map(|i| format!("https://site.example/{i}"))
        .collect();
    assert_eq!(locs(&r), expected);
    assert!(
        r.warnings.iter().any(|w| w.contains("truncated")),
        "{:?}",
        r.warnings
    );
}

#[tokio::test]
async fn max_urls_caps_the_whole_load() {
    let f = Fixture::start(vec![]).await;
    f.set(
        "/sitemap.xml",
        Route::xml(index(&[f.url("/m1.xml"), f.url("/m2.xml")])),
    );
    f.set(
        "/m1.xml",
        Route::xml(urlset(&["https://site.example/1", "https://site.example/2"])),
    );
    f.set(
        "/m2.xml",
        Route::xml(urlset(&["https://site.example/3", "https://site.example/4"])),
    );
    let opts = SitemapOptions {
        max_urls: 3,
        ..f.options()
    };
    let r = f.loader_with(opts).load(&f.url("/sitemap.xml")).await.unwrap();
    assert_eq!(locs(&r), pages(&["1", "2", "3"]));
    assert!(
        r.warnings
            .contains(&"stopped at max_urls (3); further URLs were dropped".to_string())
    );
}

#[tokio::test]
async fn failing_child_is_reported_not_fatal() {
    let f = Fixture::start(vec![]).await;
    f.set(
        "/sitemap.xml",
        Route::xml(index(&[
            f.url("/broken.xml"),
            f.url("/fine.xml"),
            "http://10.9.9.9/x.xml".into(),
        ])),
    );
    f.set("/broken.xml", Route::status(500));
    f.set("/fine.xml", Route::xml(urlset(&["https://site.example/fine"])));
    let r = f.load("/sitemap.xml").await.unwrap();
    assert_eq!(locs(&r), pages(&["fine"]));
    let errors: Vec<_> = r.sources.iter().filter_map(|s| s.error.clone()).collect();
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert_eq!(errors[0], format!("{}: HTTP 500", f.url("/broken.xml")));
    assert!(
        errors[1].starts_with("http://10.9.9.9/x.xml: refused by the URL policy"),
        "{errors:?}"
    );
}
