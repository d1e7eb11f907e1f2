//! The cache: a second load of an unchanged site is answered with 304s
//! (checked on the server's request log) and returns the same URLs, from
//! memory or from the disk tier; a changed document is refetched; an
//! expired entry is not revalidated.

use std::time::Duration;

use oxwright_sitemap::SitemapOptions;

use crate::common::{Fixture, Logged, Route, index, locs, pages, urlset};

const LM: &str = "Wed, 01 May 2024 10:00:00 GMT";

async fn site() -> Fixture {
    let f = Fixture::start(vec![]).await;
    f.set(
        "/robots.txt",
        Route::ok(format!("Sitemap: {}\n", f.url("/index.xml"))).etag("\"r1\""),
    );
    f.set(
        "/index.xml",
        Route::xml(index(&[f.url("/a.xml"), f.url("/b.xml")])).etag("\"i1\""),
    );
    f.set(
        "/a.xml",
        Route::xml(urlset(&["https://site.example/a1", "https://site.example/a2"])).etag("\"a1\""),
    );
    // Last-Modified only: revalidated with If-Modified-Since.
    f.set(
        "/b.xml",
        Route::xml(urlset(&["https://site.example/b1"])).last_modified(LM),
    );
    f
}

fn sorted(mut log: Vec<Logged>) -> Vec<Logged> {
    log.sort_by(|a, b| a.path.cmp(&b.path));
    log
}

fn logged(path: &str, status: u16, inm: Option<&str>, ims: Option<&str>) -> Logged {
    Logged {
        path: path.into(),
        status,
        if_none_match: inm.map(str::to_string),
        if_modified_since: ims.map(str::to_string),
    }
}

#[tokio::test]
async fn second_load_is_answered_by_304s() {
    let f = site().await;
    let loader = f.loader();
    let first = loader.load(&f.site()).await.unwrap();
    assert_eq!(locs(&first), pages(&["a1", "a2", "b1"]));
    assert!(
        first
            .sources
            .iter()
            .all(|s| s.status == Some(200) && !s.from_cache)
    );
    assert_eq!(
        sorted(f.take_log()),
        [
            logged("/a.xml", 200, None, None),
            logged("/b.xml", 200, None, None),
            logged("/index.xml", 200, None, None),
            logged("/robots.txt", 200, None, None),
        ]
    );

    let second = loader.load(&f.site()).await.unwrap();
    assert_eq!(second.urls, first.urls);
    assert_eq!(
        sorted(f.take_log()),
        [
            logged("/a.xml", 304, Some("\"a1\""), None),
            logged("/b.xml", 304, None, Some(LM)),
            logged("/index.xml", 304, Some("\"i1\""), None),
            logged("/robots.txt", 304, Some("\"r1\""), None),
        ]
    );
    for s in &second.sources {
        assert_eq!(
            (s.status, s.from_cache, s.not_modified),
            (Some(304), true, true),
            "{s:?}"
        );
    }
    let a = |r: &oxwright_sitemap::SitemapResult| {
        r.sources
            .iter()
            .find(|s| s.url.ends_with("/a.xml"))
            .unwrap()
            .bytes
    };
    assert_eq!(a(&second), a(&first));
}

#[tokio::test]
async fn disk_tier_serves_a_fresh_loader() {
    let f = site().await;
    let first = f.loader().load(&f.site()).await.unwrap();
    f.take_log();
    // A new loader has an empty memory tier but shares the cache directory.
    let second = f.loader().load(&f.site()).await.unwrap();
    assert_eq!(second.urls, first.urls);
    assert!(f.take_log().iter().all(|l| l.status == 304));
    assert!(std::fs::read_dir(f.cache_dir.path()).unwrap().count() >= 4);
}

#[tokio::test]
async fn changed_document_is_refetched() {
    let f = site().await;
    let loader = f.loader();
    loader.load(&f.site()).await.unwrap();
    f.set(
        "/a.xml",
        Route::xml(urlset(&["https://site.example/a3"])).etag("\"a2\""),
    );
    f.take_log();
    let r = loader.load(&f.site()).await.unwrap();
    assert_eq!(locs(&r), pages(&["a3", "b1"]));
    let a = f.take_log().into_iter().find(|l| l.path == "/a.xml").unwrap();
    assert_eq!(a, logged("/a.xml", 200, Some("\"a1\""), None));
    // The new version is cached in turn.
    r.sources.iter().for_each(|s| assert!(s.error.is_none()));
    loader.load(&f.site()).await.unwrap();
    let a = f.take_log().into_iter().find(|l| l.path == "/a.xml").unwrap();
    assert_eq!(a, logged("/a.xml", 304, Some("\"a2\""), None));
}

#[tokio::test]
async fn expired_entries_are_fetched_unconditionally() {
    let f = site().await;
    let opts = SitemapOptions {
        ttl: Duration::ZERO,
        ..f.options()
    };
    let loader = f.loader_with(opts);
    loader.load(&f.site()).await.unwrap();
    f.take_log();
    let r = loader.load(&f.site()).await.unwrap();
    assert_eq!(locs(&r), pages(&["a1", "a2", "b1"]));
    assert!(
        f.take_log()
            .iter()
            .all(|l| l.status == 200 && l.if_none_match.is_none() && l.if_modified_since.is_none())
    );
}
