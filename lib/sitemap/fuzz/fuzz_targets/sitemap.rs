//! libFuzzer target: `parse_sitemap_with` never panics and its caps hold.
#![no_main]

use oxwright_sitemap::{ParseLimits, parse_sitemap_with};

const LIMITS: ParseLimits = ParseLimits {
    max_bytes: 256 * 1024,
    max_urls: 64,
};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let doc = parse_sitemap_with(data, LIMITS);
    assert!(doc.urls.len() <= LIMITS.max_urls);
    assert!(doc.sitemaps.len() <= LIMITS.max_urls);
    assert!(doc.bytes <= LIMITS.max_bytes as u64);
    if doc.error.is_some() {
        assert!(doc.urls.is_empty() && doc.sitemaps.is_empty());
    }
    for loc in doc.urls.iter().map(|u| &u.loc).chain(&doc.sitemaps) {
        let u = url::Url::parse(loc).expect("every loc is a URL");
        assert!(matches!(u.scheme(), "http" | "https"));
    }
});
