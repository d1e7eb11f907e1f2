//! The prompt form of a URL list: `urls:\n<URL>\n…`, capped so a single
//! prompt can carry it.

use crate::types::SitemapUrl;

/// Most URLs in the prompt form.
pub const PROMPT_MAX_URLS: usize = 300;
/// Most characters in the prompt form, header included.
pub const PROMPT_MAX_CHARS: usize = 10_000;

/// Renders `urls:\n<URL>\n…` with at most [`PROMPT_MAX_URLS`] URLs and
/// [`PROMPT_MAX_CHARS`] characters; a URL that does not fit whole is left out
/// with everything after it.
pub fn prompt_form(urls: &[SitemapUrl]) -> String {
    let mut out = String::from("urls:\n");
    let mut chars = out.chars().count();
    for u in urls.iter().take(PROMPT_MAX_URLS) {
        let add = u.loc.chars().count() + 1;
        if chars + add > PROMPT_MAX_CHARS {
            break;
        }
        out.push_str(&u.loc);
        out.push('\n');
        chars += add;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn urls(n: usize, len: usize) -> Vec<SitemapUrl> {
        (0..n)
            .map(|i| {
                let head = format!("https://a.example/{i}/");
                SitemapUrl::new(format!("{head}{}", "x".repeat(len.saturating_sub(head.len()))))
            })
            .collect()
    }

    #[test]
    fn caps_at_300_urls() {
        let out = prompt_form(&urls(500, 20));
        assert_eq!(out.lines().count(), 301);
        assert!(out.starts_with("urls:\nhttps://a.example/0/"));
        assert!(out.chars().count() <= PROMPT_MAX_CHARS);
    }

    #[test]
    fn caps_at_10000_chars_without_cutting() {
        let list = urls(300, 99);
        let out = prompt_form(&list);
        // 6 header chars + 99 URLs of 100 chars = 9,906; the 100th would pass 10,000.
        assert_eq!(out.lines().count(), 100);
        assert_eq!(out.chars().count(), 9_906);
        for line in out.lines().skip(1) {
            assert!(list.iter().any(|u| u.loc == line));
        }
    }

    #[test]
    fn counts_characters_not_bytes() {
        let list = vec![SitemapUrl::new(format!(
            "https://a.example/{}",
            "é".repeat(9_900)
        ))];
        assert_eq!(
            prompt_form(&list).chars().count(),
            6 + list[0].loc.chars().count() + 1
        );
        assert_eq!(prompt_form(&[]), "urls:\n");
    }
}
