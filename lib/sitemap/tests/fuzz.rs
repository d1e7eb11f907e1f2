//! A bounded, deterministic fuzz harness for the two parsers that read
//! untrusted bytes: `parse_sitemap` and `parse_robots_sitemaps`. Each
//! starts from its committed seed corpus (`fuzz/corpus/`, shared with the
//! libFuzzer targets in `fuzz/`) and checks that nothing panics and that
//! the caps hold (`oxwright_fixtures::fuzz`: `OXWRIGHT_FUZZ_SECS=600`
//! runs longer, `OXWRIGHT_FUZZ_SEED` picks another sequence).

use std::collections::HashSet;
use std::io::Write;
use std::path::Path;

use flate2::Compression;
use flate2::write::GzEncoder;
use oxwright_fixtures::fuzz::{Target, corpus, run};
use oxwright_sitemap::{ParseLimits, ParsedDoc, parse_robots_sitemaps, parse_sitemap_with};
use url::Url;

const LIMITS: ParseLimits = ParseLimits {
    max_bytes: 256 * 1024,
    max_urls: 64,
};
const MAX_INPUT: usize = 64 * 1024;

const TOKENS: &[&[u8]] = &[
    b"<",
    b">",
    b"/>",
    b"</url>",
    b"<url><loc>",
    b"</loc>",
    b"<sitemap><loc>",
    b"<urlset>",
    b"<sitemapindex>",
    b"<rss><channel><item><link>",
    b"<feed><entry><link href=\"",
    b"<!DOCTYPE x [<!ENTITY a \"&a;&a;\">]>",
    b"<!DOCTYPE html>",
    b"&amp;",
    b"&#x41;",
    b"&#1114112;",
    b"&bogus;",
    b"<![CDATA[",
    b"]]>",
    b"<!--",
    b"-->",
    b"<?xml version=\"1.0\"?>",
    b"xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\"",
    b"xmlns:a=\"x\" a:",
    b"\x1f\x8b\x08",
    b"\xEF\xBB\xBF",
    b"https://a.example/",
    b"http://[::1]:99999/",
    b"Sitemap:",
    b"sItEmAp :\t",
    b"User-agent: *\n",
    b"\r\n",
    b"\n",
    b"\0",
    b"\xff\xfe",
    b"<priority>NaN</priority>",
    b"<lastmod>",
];

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = GzEncoder::new(Vec::new(), Compression::fast());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn check_sitemap(input: &[u8]) -> String {
    let doc: ParsedDoc = parse_sitemap_with(input, LIMITS);
    assert!(doc.urls.len() <= LIMITS.max_urls, "urls over max_urls");
    assert!(doc.sitemaps.len() <= LIMITS.max_urls, "sitemaps over max_urls");
    assert!(doc.bytes <= LIMITS.max_bytes as u64, "bytes over the cap");
    if doc.error.is_some() {
        assert!(
            doc.urls.is_empty() && doc.sitemaps.is_empty(),
            "entries kept beside an error"
        );
    }
    for loc in doc.urls.iter().map(|u| &u.loc).chain(&doc.sitemaps) {
        let u = Url::parse(loc).expect("every loc is a URL");
        assert!(matches!(u.scheme(), "http" | "https"), "scheme {}", u.scheme());
    }
    for u in &doc.urls {
        assert!(u.priority.is_none_or(|p| (0.0..=1.0).contains(&p)));
    }
    format!(
        "{:?}|{:?}|{}|{}|{}|{}",
        doc.kind,
        doc.error.as_ref().map(std::mem::discriminant),
        doc.urls.len().min(4),
        doc.sitemaps.len().min(4),
        doc.warnings.len().min(3),
        doc.gzip_layers
    )
}

fn check_robots(input: &[u8]) -> String {
    let base = Url::parse("https://a.example/robots.txt").unwrap();
    let found = parse_robots_sitemaps(input, &base);
    assert!(found.len() <= 1000);
    let unique: HashSet<_> = found.iter().collect();
    assert_eq!(unique.len(), found.len(), "duplicates");
    assert!(found.iter().all(|u| matches!(u.scheme(), "http" | "https")));
    format!("{}", found.len().min(6))
}

fn seeds(name: &str) -> Vec<Vec<u8>> {
    corpus(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fuzz/corpus")
            .join(name),
    )
}

#[test]
fn fuzz_parse_sitemap() {
    let target = Target {
        name: "parse_sitemap",
        seeds: seeds("sitemap"),
        tokens: TOKENS,
        wrap: Some(gzip),
        max_input: MAX_INPUT,
    };
    let (iterations, outcomes) = run(target, check_sitemap);
    assert!(iterations > 0 && outcomes > 5);
}

#[test]
fn fuzz_parse_robots_sitemaps() {
    let target = Target {
        name: "parse_robots_sitemaps",
        seeds: seeds("robots"),
        tokens: TOKENS,
        wrap: None,
        max_input: MAX_INPUT,
    };
    let (iterations, outcomes) = run(target, check_robots);
    assert!(iterations > 0 && outcomes > 1);
}
