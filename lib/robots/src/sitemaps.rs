//! `Sitemap:` lines of a robots.txt, read with texting_robots (which
//! accepts any case, odd spacing, a BOM and stray NULs), with a line scan
//! as the fallback when it rejects the file; resolved against the
//! robots.txt URL, http(s) only, deduplicated and capped.

use url::Url;

/// Most sitemap URLs taken from one robots.txt.
pub const MAX_ROBOTS_SITEMAPS: usize = 1000;

/// Returns the sitemap URLs listed in `body`, resolved against `base` (the
/// robots.txt URL), http(s) only, deduplicated, in file order. Never panics.
pub fn sitemap_urls(body: &[u8], base: &Url) -> Vec<Url> {
    // The token does not matter: `Sitemap:` lines belong to no group.
    match texting_robots::Robot::new(crate::DEFAULT_USER_AGENT_TOKEN, body) {
        Ok(robot) => resolve_sitemaps(&robot.sitemaps, base),
        Err(_) => resolve_sitemaps(&scan_sitemap_lines(body), base),
    }
}

/// Resolves raw `Sitemap:` values against `base`, keeping http(s) URLs
/// with a host, each once, at most [`MAX_ROBOTS_SITEMAPS`].
pub(crate) fn resolve_sitemaps(raw: &[String], base: &Url) -> Vec<Url> {
    let mut out: Vec<Url> = Vec::new();
    for line in raw {
        let Ok(url) = base.join(line.trim()) else { continue };
        if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
            continue;
        }
        if !out.contains(&url) {
            out.push(url);
        }
        if out.len() >= MAX_ROBOTS_SITEMAPS {
            break;
        }
    }
    out
}

/// Finds `sitemap:` lines by hand, for files the robots parser refuses.
pub(crate) fn scan_sitemap_lines(body: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(body)
        .lines()
        .filter_map(|line| {
            let line = line.split('#').next().unwrap_or("").trim();
            let (key, value) = line.split_once(':')?;
            let key: String = key.chars().filter(|c| !c.is_whitespace() && *c != '-').collect();
            key.eq_ignore_ascii_case("sitemap")
                .then(|| value.trim().to_string())
        })
        .filter(|v| !v.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> Url {
        Url::parse("https://a.example/robots.txt").unwrap()
    }

    fn found(body: &str) -> Vec<String> {
        sitemap_urls(body.as_bytes(), &base())
            .into_iter()
            .map(String::from)
            .collect()
    }

    #[test]
    fn any_case_and_spacing() {
        let body = "User-agent: *\nDisallow: /x\nsitemap: https://a.example/one.xml\r\n  SITEMAP :\thttps://a.example/two.xml  # note\nSite-map: /three.xml\nSitemap:https://a.example/one.xml\n";
        assert_eq!(
            found(body),
            [
                "https://a.example/one.xml",
                "https://a.example/two.xml",
                "https://a.example/three.xml"
            ]
        );
    }

    #[test]
    fn other_schemes_are_dropped() {
        assert!(found("Sitemap: ftp://a.example/s.xml\nSitemap: javascript:alert(1)\n").is_empty());
    }

    #[test]
    fn fallback_scan_reads_sitemap_lines() {
        assert_eq!(
            scan_sitemap_lines(b"Sitemap : https://a.example/s.xml\nSite-Map: x\nAllow: /"),
            ["https://a.example/s.xml", "x"]
        );
    }

    #[test]
    fn a_file_the_parser_refuses_still_gives_its_sitemaps() {
        // A rule too complex for the parser's regex limits makes it refuse the file.
        let mut body = b"Sitemap: /s.xml\nDisallow: /*".to_vec();
        body.extend(std::iter::repeat_n(b"A*", 20_000).flatten());
        body.extend(b"$\n");
        assert!(texting_robots::Robot::new("oxwright", &body).is_err());
        assert_eq!(
            sitemap_urls(&body, &base()),
            [Url::parse("https://a.example/s.xml").unwrap()]
        );
    }
}
