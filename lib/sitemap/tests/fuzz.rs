//! A bounded, deterministic fuzz harness for the two parsers that read
//! untrusted bytes: `parse_sitemap` and `parse_robots_sitemaps`. It mutates
//! a seed corpus (the fixture documents) with a small xorshift PRNG, keeps
//! inputs that reach a new outcome, and checks that nothing panics and that
//! the caps hold. `cargo test` runs each target for a few seconds;
//! `OXWRIGHT_FUZZ_SECS=600` runs longer and `OXWRIGHT_FUZZ_SEED` picks
//! another sequence. A failing input is written under the system temp dir.

use std::collections::HashSet;
use std::io::Write;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::{Duration, Instant};

use flate2::Compression;
use flate2::write::GzEncoder;
use oxwright_sitemap::{ParseLimits, ParsedDoc, parse_robots_sitemaps, parse_sitemap_with};
use url::Url;

const LIMITS: ParseLimits = ParseLimits {
    max_bytes: 256 * 1024,
    max_urls: 64,
};
const MAX_CORPUS: usize = 2048;
const MAX_INPUT: usize = 64 * 1024;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

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

fn mutate(rng: &mut Rng, corpus: &[Vec<u8>]) -> Vec<u8> {
    let mut data = corpus[rng.below(corpus.len())].clone();
    for _ in 0..1 + rng.below(8) {
        let len = data.len();
        let at = rng.below(len + 1);
        match rng.below(9) {
            0 if len > 0 => data[at.min(len - 1)] ^= 1 << rng.below(8),
            1 => data.insert(at, rng.next() as u8),
            2 if len > 0 => {
                let end = (at + 1 + rng.below(16)).min(len);
                data.drain(at.min(end)..end);
            }
            3 => {
                let t = TOKENS[rng.below(TOKENS.len())];
                data.splice(at..at, t.iter().copied());
            }
            4 => data.truncate(at),
            5 if len > 0 => {
                let start = rng.below(len);
                let end = (start + 1 + rng.below(256)).min(len);
                let chunk = data[start..end].to_vec();
                for _ in 0..1 + rng.below(4) {
                    data.splice(at..at, chunk.iter().copied());
                }
            }
            6 => {
                let other = &corpus[rng.below(corpus.len())];
                let from = rng.below(other.len() + 1);
                data.truncate(at);
                data.extend_from_slice(&other[from..]);
            }
            7 if rng.below(8) == 0 => data = gzip(&data),
            _ => {
                if len > 0 {
                    data[at.min(len - 1)] = rng.next() as u8;
                }
            }
        }
    }
    data.truncate(MAX_INPUT);
    data
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

/// Runs one target and returns (iterations, distinct outcomes).
fn run(name: &str, seeds: Vec<Vec<u8>>, check: fn(&[u8]) -> String) -> (u64, usize) {
    let secs: f64 = std::env::var("OXWRIGHT_FUZZ_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3.0);
    let seed: u64 = std::env::var("OXWRIGHT_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x9E37_79B9_7F4A_7C15);
    let deadline = Instant::now() + Duration::from_secs_f64(secs);
    let mut rng = Rng(seed | 1);
    let mut corpus = seeds;
    let mut outcomes = HashSet::new();
    for s in &corpus {
        outcomes.insert(check(s));
    }
    let mut iterations = 0u64;
    while Instant::now() < deadline {
        for _ in 0..64 {
            let input = mutate(&mut rng, &corpus);
            let res = catch_unwind(AssertUnwindSafe(|| check(&input)));
            iterations += 1;
            match res {
                Ok(sig) => {
                    if outcomes.insert(sig) && corpus.len() < MAX_CORPUS {
                        corpus.push(input);
                    }
                }
                Err(_) => {
                    let path = std::env::temp_dir().join(format!("oxwright-fuzz-{name}-{iterations}.bin"));
                    std::fs::write(&path, &input).unwrap();
                    panic!(
                        "{name}: failing input after {iterations} iterations saved to {}",
                        path.display()
                    );
                }
            }
        }
    }
    eprintln!(
        "fuzz {name}: {iterations} iterations in {secs} s, {} outcomes, corpus {}",
        outcomes.len(),
        corpus.len()
    );
    (iterations, outcomes.len())
}

fn sitemap_seeds() -> Vec<Vec<u8>> {
    let urlset = r#"<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:image="http://www.google.com/schemas/sitemap-image/1.1">
<url><loc>https://a.example/a?x=1&amp;y=2</loc><lastmod>2024-01-01</lastmod><changefreq>daily</changefreq><priority>0.5</priority>
<image:image><image:loc>https://cdn.example/i.png</image:loc></image:image></url>
<url><loc><![CDATA[https://a.example/b]]></loc></url></urlset>"#;
    let index = r#"<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><sitemap><loc>https://a.example/s1.xml</loc><lastmod>2024-01-01</lastmod></sitemap></sitemapindex>"#;
    let plain_index =
        "<sitemapindex><sitemap><loc>https://a.example/s2.xml.gz</loc></sitemap></sitemapindex>";
    let rss = r#"<rss version="2.0"><channel><link>https://a.example/</link><item><link>https://a.example/p</link><pubDate>Mon, 01 Jan 2024 00:00:00 GMT</pubDate></item></channel></rss>"#;
    let atom = r#"<feed xmlns="http://www.w3.org/2005/Atom"><entry><link rel="self" href="https://a.example/x"/><link href="https://a.example/e"/><updated>2024-01-01T00:00:00Z</updated></entry></feed>"#;
    let laughs = r#"<?xml version="1.0"?><!DOCTYPE l [<!ENTITY a "x"><!ENTITY b "&a;&a;">]><urlset><url><loc>https://a.example/&b;</loc></url></urlset>"#;
    let text = "\u{feff}https://a.example/1\r\nhttps://a.example/2\n# c\nnope\n";
    let mut seeds: Vec<Vec<u8>> = [
        urlset,
        index,
        plain_index,
        rss,
        atom,
        laughs,
        text,
        "<!DOCTYPE html><html></html>",
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect();
    seeds.push(urlset.as_bytes()[..urlset.len() / 2].to_vec());
    seeds.push(gzip(urlset.as_bytes()));
    seeds.push(gzip(&gzip(index.as_bytes())));
    seeds.push(gzip(&vec![b' '; 1024 * 1024]));
    seeds
}

fn robots_seeds() -> Vec<Vec<u8>> {
    [
        "User-agent: *\nDisallow: /private\nSitemap: https://a.example/s.xml\n",
        "sitemap:https://a.example/a.xml\r\n  SITEMAP :\thttps://a.example/b.xml # c\nSite-map: /c.xml\n",
        "\u{feff}User-agent: bot\nCrawl-delay: 5\nAllow: /\nSitemap: /rel.xml\n",
        "Sitemap: ftp://a.example/x\nSitemap: javascript:alert(1)\n",
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect()
}

#[test]
fn fuzz_parse_sitemap() {
    let (iterations, outcomes) = run("parse_sitemap", sitemap_seeds(), check_sitemap);
    assert!(iterations > 0 && outcomes > 5);
}

#[test]
fn fuzz_parse_robots_sitemaps() {
    let (iterations, outcomes) = run("parse_robots_sitemaps", robots_seeds(), check_robots);
    assert!(iterations > 0 && outcomes > 1);
}
