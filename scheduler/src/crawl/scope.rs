//! Which hosts and paths a crawl follows: the start hosts (and, when
//! asked, their subdomains and the hosts named), and the include and
//! exclude patterns over a URL's path and query.

use std::collections::HashSet;

use oxwright_jobs::CrawlOptions;
use regex::Regex;
use url::Url;

/// A pattern that could not be read.
#[derive(Debug, thiserror::Error)]
#[error("pattern {pattern:?}: {reason}")]
pub struct PatternError {
    /// The pattern as given.
    pub pattern: String,
    /// What is wrong with it.
    pub reason: String,
}

/// An include or exclude pattern, compiled.
#[derive(Debug, Clone)]
struct Pattern(Regex);

impl Pattern {
    /// A glob over the path and query (`*` within a segment, `**` across
    /// segments, `?` one character other than `/`), anchored at both ends;
    /// or, written `re:…`, a regular expression searched anywhere in it.
    fn parse(text: &str) -> Result<Self, PatternError> {
        let source = match text.strip_prefix("re:") {
            Some(re) => re.to_owned(),
            None => glob_to_regex(text),
        };
        Regex::new(&source).map(Pattern).map_err(|e| PatternError {
            pattern: text.to_owned(),
            // The parser's message draws the spot over several lines; its
            // last line says what is wrong.
            reason: e
                .to_string()
                .lines()
                .last()
                .unwrap_or_default()
                .trim()
                .trim_start_matches("error: ")
                .to_owned(),
        })
    }

    fn matches(&self, target: &str) -> bool {
        self.0.is_match(target)
    }
}

fn glob_to_regex(glob: &str) -> String {
    let mut out = String::from("^");
    let mut chars = glob.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '*' if chars.peek() == Some(&'*') => {
                chars.next();
                out.push_str(".*");
            }
            '*' => out.push_str("[^/]*"),
            '?' => out.push_str("[^/]"),
            c => out.push_str(&regex::escape(c.encode_utf8(&mut [0; 4]))),
        }
    }
    out.push('$');
    out
}

/// A host as compared: lowercase, without a leading `www.`.
fn bare_host(host: &str) -> String {
    let host = host.to_ascii_lowercase();
    match host.strip_prefix("www.") {
        Some(rest) => rest.to_owned(),
        None => host,
    }
}

/// What a crawl may follow.
#[derive(Debug, Clone)]
pub struct Scope {
    start_hosts: HashSet<String>,
    allowed_hosts: HashSet<String>,
    subdomains: bool,
    include: Vec<Pattern>,
    exclude: Vec<Pattern>,
}

impl Scope {
    /// The scope of a crawl from `starts` with `options`.
    pub fn new(starts: &[Url], options: &CrawlOptions) -> Result<Self, PatternError> {
        let parse = |list: &[String]| {
            list.iter()
                .map(|p| Pattern::parse(p))
                .collect::<Result<Vec<_>, _>>()
        };
        Ok(Self {
            start_hosts: starts.iter().filter_map(Url::host_str).map(bare_host).collect(),
            allowed_hosts: options.allow_hosts.iter().map(|h| bare_host(h)).collect(),
            subdomains: options.allow_subdomains,
            include: parse(&options.include)?,
            exclude: parse(&options.exclude)?,
        })
    }

    /// Says whether `url`'s host is followed.
    pub fn host_allowed(&self, url: &Url) -> bool {
        let Some(host) = url.host_str().map(bare_host) else {
            return false;
        };
        if self.start_hosts.contains(&host) || self.allowed_hosts.contains(&host) {
            return true;
        }
        self.subdomains
            && self.start_hosts.iter().any(|start| {
                host.len() > start.len() + 1
                    && host.ends_with(start.as_str())
                    && host[..host.len() - start.len()].ends_with('.')
            })
    }

    /// Says whether `url`'s path and query pass the include and exclude patterns.
    pub fn path_allowed(&self, url: &Url) -> bool {
        let target = match url.query() {
            Some(q) => format!("{}?{q}", url.path()),
            None => url.path().to_owned(),
        };
        if self.exclude.iter().any(|p| p.matches(&target)) {
            return false;
        }
        self.include.is_empty() || self.include.iter().any(|p| p.matches(&target))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope(options: CrawlOptions) -> Scope {
        Scope::new(&["https://www.example.com/docs/".parse().unwrap()], &options).unwrap()
    }

    fn url(s: &str) -> Url {
        s.parse().unwrap()
    }

    #[test]
    fn the_start_host_is_followed_with_or_without_www() {
        let s = scope(CrawlOptions::default());
        assert!(s.host_allowed(&url("https://example.com/a")));
        assert!(s.host_allowed(&url("https://WWW.example.com:8443/a")));
        assert!(!s.host_allowed(&url("https://docs.example.com/a")));
        assert!(!s.host_allowed(&url("https://badexample.com/a")));
        assert!(!s.host_allowed(&url("https://example.com.evil.net/a")));
    }

    #[test]
    fn subdomains_and_named_hosts_are_followed_when_asked() {
        let s = scope(CrawlOptions {
            allow_subdomains: true,
            allow_hosts: vec!["cdn.other.org".into()],
            ..CrawlOptions::default()
        });
        assert!(s.host_allowed(&url("https://docs.example.com/a")));
        assert!(s.host_allowed(&url("https://a.b.example.com/a")));
        assert!(!s.host_allowed(&url("https://badexample.com/a")));
        assert!(s.host_allowed(&url("https://cdn.other.org/x")));
        assert!(!s.host_allowed(&url("https://other.org/x")));
    }

    #[test]
    fn globs_match_the_whole_path_and_regexes_search_it() {
        let s = scope(CrawlOptions {
            include: vec!["/docs/**".into(), "re:^/blog/20[0-9]{2}/".into()],
            exclude: vec!["/docs/*/draft-*".into(), "**?print=*".into()],
            ..CrawlOptions::default()
        });
        assert!(s.path_allowed(&url("https://example.com/docs/a/b")));
        assert!(s.path_allowed(&url("https://example.com/blog/2024/post")));
        assert!(!s.path_allowed(&url("https://example.com/blog/old/post")));
        assert!(!s.path_allowed(&url("https://example.com/about")));
        assert!(!s.path_allowed(&url("https://example.com/docs/v1/draft-x")));
        assert!(s.path_allowed(&url("https://example.com/docs/v1/x/draft-x")));
        assert!(!s.path_allowed(&url("https://example.com/docs/a?print=1")));
    }

    #[test]
    fn a_bad_regex_is_named() {
        let err = Scope::new(
            &[url("https://example.com/")],
            &CrawlOptions {
                include: vec!["re:(".into()],
                ..CrawlOptions::default()
            },
        )
        .unwrap_err();
        assert_eq!(err.pattern, "re:(");
        assert_eq!(err.to_string(), r#"pattern "re:(": unclosed group"#);
    }
}
