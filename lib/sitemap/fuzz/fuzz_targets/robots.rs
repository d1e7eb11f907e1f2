//! libFuzzer target: `parse_robots_sitemaps` never panics and returns
//! distinct http(s) URLs only.
#![no_main]

use oxwright_sitemap::parse_robots_sitemaps;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let base = url::Url::parse("https://a.example/robots.txt").unwrap();
    let found = parse_robots_sitemaps(data, &base);
    assert!(found.len() <= 1000);
    for (i, u) in found.iter().enumerate() {
        assert!(matches!(u.scheme(), "http" | "https"));
        assert!(!found[..i].contains(u));
    }
});
