//! The rules of one host's robots.txt for one user-agent token: which
//! URLs may be fetched, the crawl delay and the `Sitemap:` lines. Parsing
//! is texting_robots' (RFC 9309 matching: longest match wins, `Allow`
//! beats `Disallow` on equal length, `*` and `$`, the group for the token
//! else `*`, groups for the token merged); this module caps the input,
//! reduces each `User-agent:` value to its product token first, spells
//! percent-escapes one way in rules and URLs alike, and turns the RFC's
//! fetch outcomes into rules.

use std::sync::Arc;
use std::time::Duration;

use oxwright_jobs::normalise_escapes;
use url::{Position, Url};

use crate::sitemaps::{resolve_sitemaps, scan_sitemap_lines};

/// Most bytes of a robots.txt that are parsed; the rest is ignored. The
/// RFC asks a parser to read at least 500 KiB and lets it stop there.
pub const MAX_ROBOTS_BYTES: usize = 500 * 1024;

/// Where the rules came from, and so what they mean.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RobotsSource {
    /// Parsed from a successful (2xx) answer with this status.
    Fetched {
        /// The status of the answer after redirects.
        status: u16,
    },
    /// The file is unavailable (a 4xx other than 429, or more redirects
    /// than allowed): the RFC lets a crawler fetch everything.
    Unavailable {
        /// Why, in words.
        reason: String,
    },
    /// The server failed (5xx, 429) or could not be reached: the RFC has a
    /// crawler fetch nothing from the host until it can read the file.
    Unreachable {
        /// Why, in words.
        reason: String,
    },
    /// The parser refused the file (a rule too complex to compile): no
    /// rule is known to allow anything, so nothing is fetched.
    Unparsable {
        /// The parser's reason.
        reason: String,
    },
}

#[derive(Clone)]
enum Rules {
    AllowAll,
    DisallowAll,
    Parsed(Arc<texting_robots::Robot>),
}

impl std::fmt::Debug for Rules {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Rules::AllowAll => f.write_str("AllowAll"),
            Rules::DisallowAll => f.write_str("DisallowAll"),
            Rules::Parsed(robot) => f.debug_tuple("Parsed").field(robot).finish(),
        }
    }
}

/// The robots.txt rules of one host (one origin: scheme, host and port)
/// for one user-agent token. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Robots {
    rules: Rules,
    crawl_delay: Option<Duration>,
    sitemaps: Vec<Url>,
    source: RobotsSource,
}

impl Robots {
    /// Parses the robots.txt `body` fetched from `robots_url` for the
    /// user-agent `token` (matched case-insensitively). Only the first
    /// [`MAX_ROBOTS_BYTES`] are read. `status` is the answer's (2xx).
    pub fn parse(body: &[u8], robots_url: &Url, token: &str, status: u16) -> Robots {
        let body = &body[..body.len().min(MAX_ROBOTS_BYTES)];
        // Rules and URLs are compared with escapes spelt one way (`%7E` is
        // `~`, hex uppercase), as RFC 9309 section 2.2.2 compares them.
        let prepared = normalise_escapes(&agent_lines_to_tokens(body));
        match texting_robots::Robot::new(&token.to_ascii_lowercase(), &prepared) {
            Ok(robot) => Robots {
                crawl_delay: robot.delay.and_then(|d| Duration::try_from_secs_f32(d).ok()),
                sitemaps: resolve_sitemaps(&robot.sitemaps, robots_url),
                rules: Rules::Parsed(Arc::new(robot)),
                source: RobotsSource::Fetched { status },
            },
            Err(e) => Robots {
                rules: Rules::DisallowAll,
                crawl_delay: None,
                sitemaps: resolve_sitemaps(&scan_sitemap_lines(body), robots_url),
                source: RobotsSource::Unparsable {
                    reason: format!("{e:#}"),
                },
            },
        }
    }

    /// Rules that allow every URL: the file is unavailable.
    pub fn unavailable(reason: impl Into<String>) -> Robots {
        Robots {
            rules: Rules::AllowAll,
            crawl_delay: None,
            sitemaps: Vec::new(),
            source: RobotsSource::Unavailable {
                reason: reason.into(),
            },
        }
    }

    /// Rules that allow no URL: the host could not be asked.
    pub fn unreachable(reason: impl Into<String>) -> Robots {
        Robots {
            rules: Rules::DisallowAll,
            crawl_delay: None,
            sitemaps: Vec::new(),
            source: RobotsSource::Unreachable {
                reason: reason.into(),
            },
        }
    }

    /// Says whether `url` may be fetched. Only its path and query are
    /// compared: the caller picks the rules of the URL's origin. The
    /// robots.txt itself is always allowed, as the RFC says.
    pub fn allowed(&self, url: &Url) -> bool {
        let target = &url[Position::BeforePath..Position::AfterQuery];
        let target = if target.is_empty() { "/" } else { target };
        let target = String::from_utf8_lossy(&normalise_escapes(target.as_bytes())).into_owned();
        match &self.rules {
            Rules::AllowAll => true,
            Rules::DisallowAll => target == "/robots.txt",
            Rules::Parsed(robot) => robot.allowed(&target),
        }
    }

    /// The `Crawl-delay` of the group that applies, if it gave a usable one.
    pub fn crawl_delay(&self) -> Option<Duration> {
        self.crawl_delay
    }

    /// The `Sitemap:` URLs, resolved, http(s) only, deduplicated, in file order.
    pub fn sitemaps(&self) -> &[Url] {
        &self.sitemaps
    }

    /// Where the rules came from.
    pub fn source(&self) -> &RobotsSource {
        &self.source
    }
}

/// Says whether `token` is a product token the RFC allows: letters,
/// underscores and hyphens only.
pub fn is_product_token(token: &str) -> bool {
    !token.is_empty() && token.bytes().all(is_token_byte)
}

fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_' || b == b'-'
}

/// Rewrites each `User-agent:` line to its product token (`Oxwright/1.0
/// (+https://…)` becomes `Oxwright`), as Google's reference parser reads
/// them; texting_robots compares the whole value, so a versioned line would
/// otherwise not match the token and the crawler would obey the `*` group
/// instead of the one written for it. A value starting with `*` is the
/// global group. Other lines are kept byte for byte.
fn agent_lines_to_tokens(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len());
    let mut start = 0;
    while start < body.len() {
        let end = body[start..]
            .iter()
            .position(|b| *b == b'\n' || *b == b'\r')
            .map_or(body.len(), |i| start + i);
        let line = &body[start..end];
        match agent_token(line) {
            Some(token) => {
                out.extend_from_slice(b"User-agent: ");
                out.extend_from_slice(token);
            }
            None => out.extend_from_slice(line),
        }
        let next = body[end..]
            .iter()
            .position(|b| *b != b'\n' && *b != b'\r')
            .map_or(body.len(), |i| end + i);
        out.extend_from_slice(&body[end..next]);
        start = next;
    }
    out
}

/// The product token of a `User-agent` line (in any of the spellings
/// texting_robots accepts), or `None` for other lines and values with no
/// token to cut.
fn agent_token(line: &[u8]) -> Option<&[u8]> {
    let line = line.trim_ascii_start();
    let key_len = ["user-agent", "user agent", "useragent"]
        .iter()
        .find(|k| line.len() >= k.len() && line[..k.len()].eq_ignore_ascii_case(k.as_bytes()))?
        .len();
    let rest = &line[key_len..];
    // As the parser reads keys: a separator must follow, or it is another word.
    if !matches!(rest.first(), Some(b' ' | b'\t' | b':')) {
        return None;
    }
    let rest = rest.trim_ascii_start();
    let value = rest.strip_prefix(b":").unwrap_or(rest).trim_ascii_start();
    if value.first() == Some(&b'*') {
        return Some(b"*");
    }
    let len = value.iter().take_while(|b| is_token_byte(**b)).count();
    let value_end = value.iter().position(|b| *b == b'#').unwrap_or(value.len());
    // Only a value that has something after its token is rewritten.
    (len > 0 && value[..value_end].trim_ascii_end().len() > len).then(|| &value[..len])
}

#[cfg(test)]
#[path = "rules_tests.rs"]
mod tests;
