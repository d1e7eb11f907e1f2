//! Discovery: robots.txt `Sitemap:` lines, the `/sitemap.xml` fallback,
//! redirects under the URL policy, and the typed errors when nothing loads.

use std::net::{IpAddr, Ipv4Addr};

use oxwright_policy::PolicyError;
use oxwright_sitemap::SitemapError;

use crate::common::{Fixture, Route, locs, pages, paths, urlset};

#[tokio::test]
async fn robots_lines_any_case_odd_spacing_no_content_type() {
    let f = Fixture::start(vec![]).await;
    let robots = format!(
        "User-agent: *\nDisallow: /private\n\nsitemap:{a}\n   SITEMAP :\t{b}   # second\r\nSite-map: /c.xml\n",
        a = f.url("/a.xml"),
        b = f.url("/b.xml"),
    );
    f.set("/robots.txt", Route::ok(robots));
    f.set("/a.xml", Route::xml(urlset(&["https://site.example/a"])));
    f.set("/b.xml", Route::ok(urlset(&["https://site.example/b"])));
    f.set("/c.xml", Route::xml(urlset(&["https://site.example/c"])));
    f.set(
        "/sitemap.xml",
        Route::xml(urlset(&["https://site.example/never"])),
    );
    let r = f.load("/").await.unwrap();
    assert_eq!(locs(&r), pages(&["a", "b", "c"]));
    assert_eq!(r.domain, f.addr.to_string());
    let mut seen = paths(&f.take_log());
    seen.sort();
    assert_eq!(seen, ["/a.xml", "/b.xml", "/c.xml", "/robots.txt"]);
}

#[tokio::test]
async fn robots_missing_falls_back_to_sitemap_xml() {
    let f = Fixture::start(vec![(
        "/sitemap.xml",
        Route::xml(urlset(&["https://site.example/x"])),
    )])
    .await;
    let r = f.load("/").await.unwrap();
    assert_eq!(locs(&r), pages(&["x"]));
    assert_eq!(r.sources[0].status, Some(404));
    assert_eq!(paths(&f.take_log()), ["/robots.txt", "/sitemap.xml"]);
}

#[tokio::test]
async fn robots_without_sitemap_lines_falls_back() {
    let f = Fixture::start(vec![
        (
            "/robots.txt",
            Route::ok("User-agent: *\nDisallow:\n").header("content-type", "text/plain"),
        ),
        ("/sitemap.xml", Route::xml(urlset(&["https://site.example/y"]))),
    ])
    .await;
    let r = f.load("/").await.unwrap();
    assert_eq!(locs(&r), pages(&["y"]));
}

#[tokio::test]
async fn robots_sitemaps_all_failing_fall_back_to_sitemap_xml() {
    let f = Fixture::start(vec![]).await;
    f.set(
        "/robots.txt",
        Route::ok(format!("Sitemap: {}\n", f.url("/gone.xml"))),
    );
    f.set("/sitemap.xml", Route::xml(urlset(&["https://site.example/z"])));
    let r = f.load("/").await.unwrap();
    assert_eq!(locs(&r), pages(&["z"]));
    assert_eq!(
        r.sources[1].error.as_deref(),
        Some(&*format!("{}: HTTP 404", f.url("/gone.xml")))
    );
}

#[tokio::test]
async fn nothing_found_is_not_found() {
    let f = Fixture::start(vec![(
        "/sitemap.xml",
        Route::ok("<!DOCTYPE html><html><body>Not here</body></html>").header("content-type", "text/html"),
    )])
    .await;
    let err = f.load("/").await.unwrap_err();
    assert_eq!(
        err,
        SitemapError::NotFound {
            domain: f.addr.to_string(),
            tried: vec![f.url("/sitemap.xml")],
        }
    );
    assert!(!err.is_retryable());
}

#[tokio::test]
async fn explicit_sitemap_url_skips_discovery() {
    let f = Fixture::start(vec![(
        "/maps/sitemap-posts.xml",
        Route::xml(urlset(&["https://site.example/p"])),
    )])
    .await;
    let r = f.load("/maps/sitemap-posts.xml").await.unwrap();
    assert_eq!(locs(&r), pages(&["p"]));
    assert_eq!(paths(&f.take_log()), ["/maps/sitemap-posts.xml"]);
}

#[tokio::test]
async fn redirects_are_followed_within_policy() {
    let f = Fixture::start(vec![
        ("/sitemap.xml", Route::redirect("/moved/sitemap.xml")),
        (
            "/moved/sitemap.xml",
            Route::status(302).header("location", "/final.xml"),
        ),
        ("/final.xml", Route::xml(urlset(&["https://site.example/r"]))),
    ])
    .await;
    let r = f.load("/sitemap.xml").await.unwrap();
    assert_eq!(locs(&r), pages(&["r"]));
    assert_eq!(r.sources[0].status, Some(200));
    assert_eq!(
        paths(&f.take_log()),
        ["/sitemap.xml", "/moved/sitemap.xml", "/final.xml"]
    );
}

#[tokio::test]
async fn redirect_to_a_refused_address_is_a_policy_error() {
    let f = Fixture::start(vec![]).await;
    let target = format!("http://127.0.0.2:{}/sitemap.xml", f.addr.port());
    f.set("/sitemap.xml", Route::redirect(&target));
    let err = f.load("/sitemap.xml").await.unwrap_err();
    assert_eq!(
        err,
        SitemapError::Policy {
            url: target,
            source: PolicyError::PrivateAddress {
                host: "127.0.0.2".into(),
                addr: IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2)),
                port: Some(f.addr.port()),
            },
        }
    );
    assert_eq!(paths(&f.take_log()), ["/sitemap.xml"]);
}

#[tokio::test]
async fn refused_target_is_a_policy_error_before_any_request() {
    let f = Fixture::start(vec![]).await;
    let err = f.loader().load("http://10.0.0.1/sitemap.xml").await.unwrap_err();
    assert!(
        matches!(
            err,
            SitemapError::Policy {
                source: PolicyError::PrivateAddress { .. },
                ..
            }
        ),
        "{err:?}"
    );
    let err = f.loader().load("file:///etc/passwd").await.unwrap_err();
    assert!(
        matches!(err, SitemapError::Policy { .. } | SitemapError::InvalidInput(_)),
        "{err:?}"
    );
    assert!(f.take_log().is_empty());
}

#[tokio::test]
async fn redirect_loops_stop_after_five_hops() {
    let f = Fixture::start(vec![
        ("/sitemap.xml", Route::redirect("/loop1.xml")),
        ("/loop1.xml", Route::redirect("/loop2.xml")),
        ("/loop2.xml", Route::redirect("/loop1.xml")),
    ])
    .await;
    let err = f.load("/sitemap.xml").await.unwrap_err();
    assert_eq!(
        err,
        SitemapError::Redirect {
            url: f.url("/loop1.xml"),
            reason: "more than 5 redirects".into(),
        }
    );
    assert_eq!(f.take_log().len(), 6);
}

#[tokio::test]
async fn server_error_is_typed_and_retryable() {
    let f = Fixture::start(vec![("/sitemap.xml", Route::status(503))]).await;
    let err = f.load("/sitemap.xml").await.unwrap_err();
    assert_eq!(
        err,
        SitemapError::Http {
            url: f.url("/sitemap.xml"),
            status: 503,
        }
    );
    assert!(err.is_retryable());
    // Through discovery a 5xx is surfaced rather than reported as "not found".
    let err = f.load("/").await.unwrap_err();
    assert!(matches!(err, SitemapError::Http { status: 503, .. }), "{err:?}");
}
