//! Crawl URL normalisation: one spelling per document, so a crawl's
//! frontier fetches each URL at most once however a page links to it,
//! and the trap guard that stops a crawl from wandering into endless URL
//! spaces (calendars, session ids, faceted search).
//!
//! It lives here, beside the job types, because it is pure (no I/O) and
//! its rules are part of what a crawl is asked to do: the scheduler's
//! frontier, the workers reporting links and the API validating a crawl
//! spec all use the one definition without linking an HTTP client or a
//! browser.

use std::collections::hash_map::DefaultHasher;
use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};

use serde::{Deserialize, Serialize};
use url::Url;

/// Query parameters that only track where a visitor came from and never
/// select content; [`normalise`] drops them. A trailing `*` matches a
/// prefix; names compare case-insensitively.
///
/// `utm_*` (Google Analytics campaigns), `gclid`, `dclid`, `gbraid`,
/// `wbraid` (Google Ads), `_ga`, `_gl` (Google cross-domain linking),
/// `fbclid` (Facebook), `igshid` (Instagram), `mc_cid`, `mc_eid`
/// (Mailchimp), `msclkid` (Microsoft Ads), `yclid` (Yandex), `twclid`
/// (X), `ttclid` (TikTok), `li_fat_id` (LinkedIn), `_hsenc`, `_hsmi`
/// (HubSpot), `mkt_tok` (Marketo), `oly_anon_id`, `oly_enc_id` (Omeda),
/// `vero_id` (Vero).
pub const TRACKING_PARAMS: &[&str] = &[
    "utm_*",
    "gclid",
    "dclid",
    "gbraid",
    "wbraid",
    "_ga",
    "_gl",
    "fbclid",
    "igshid",
    "mc_cid",
    "mc_eid",
    "msclkid",
    "yclid",
    "twclid",
    "ttclid",
    "li_fat_id",
    "_hsenc",
    "_hsmi",
    "mkt_tok",
    "oly_anon_id",
    "oly_enc_id",
    "vero_id",
];

/// Longest normalised URL a crawl follows by default: 2,048 bytes, the
/// limit most crawlers and sitemaps (the sitemap protocol's `loc`) keep;
/// longer ones are nearly always generated traps.
pub const DEFAULT_MAX_URL_LEN: usize = 2_048;

/// Most distinct queries of one path a crawl follows by default: 50,
/// enough for real pagination and filters, too few for a calendar or a
/// faceted search to swallow the crawl.
pub const DEFAULT_MAX_QUERY_VARIANTS: usize = 50;

/// How a crawl normalises the URLs it finds. The default drops the
/// tracking parameters, sorts the rest and keeps the query.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct NormaliseRules {
    /// Drops the whole query: for sites whose query never selects content
    /// (session ids, sort orders). Default: false.
    pub ignore_query: bool,
    /// Sorts the query parameters by name (parameters of one name keep
    /// their order), so `?b=1&a=2` and `?a=2&b=1` are one URL. Default: true.
    pub sort_query: bool,
    /// Keeps the parameters of [`TRACKING_PARAMS`]. Default: false.
    pub keep_tracking: bool,
    /// Further parameter names to drop, as in [`TRACKING_PARAMS`] (a
    /// trailing `*` matches a prefix). Default: none.
    pub drop_params: Vec<String>,
}

impl Default for NormaliseRules {
    fn default() -> Self {
        Self {
            ignore_query: false,
            sort_query: true,
            keep_tracking: false,
            drop_params: Vec::new(),
        }
    }
}

impl NormaliseRules {
    /// Says whether the query parameter `name` is dropped.
    pub fn drops(&self, name: &str) -> bool {
        let matches = |pattern: &str| match pattern.strip_suffix('*') {
            Some(prefix) => name.len() >= prefix.len() && name[..prefix.len()].eq_ignore_ascii_case(prefix),
            None => name.eq_ignore_ascii_case(pattern),
        };
        (!self.keep_tracking && TRACKING_PARAMS.iter().any(|p| matches(p)))
            || self.drop_params.iter().any(|p| matches(p))
    }
}

/// Returns the one spelling of `url` a crawl keeps: scheme and host
/// lowercase (an international host in its ASCII form), the scheme's
/// default port dropped, `.` and `..` segments resolved, escapes of
/// unreserved characters decoded (`%7E` is `~`) and every other escape in
/// uppercase hex, the fragment dropped, the parameters `rules` name
/// dropped, empty parameters dropped, the rest sorted by name, and an
/// empty query dropped. Normalising a normalised URL changes nothing.
pub fn normalise(url: &Url, rules: &NormaliseRules) -> Url {
    // Parsing did the host, scheme, port and dot segments; the rest is
    // what the URL standard leaves as written.
    let mut out = url.clone();
    out.set_fragment(None);
    if !out.cannot_be_a_base() {
        let path = normalise_escapes_str(out.path());
        if path != out.path() {
            // Setting the path again resolves segments that were escaped dots.
            out.set_path(&path);
        }
    }
    let query = match out.query() {
        Some(q) if !rules.ignore_query => normalise_query(q, rules),
        _ => None,
    };
    out.set_query(query.as_deref());
    out
}

/// The query's parameters, escapes normalised, the dropped and empty ones
/// left out, sorted if the rules say so; `None` when nothing is left.
fn normalise_query(query: &str, rules: &NormaliseRules) -> Option<String> {
    let mut params: Vec<(String, String)> = query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(normalise_escapes_str)
        .filter_map(|p| {
            let name = p.split_once('=').map_or(p.as_str(), |(n, _)| n).to_owned();
            (!rules.drops(&name)).then_some((name, p))
        })
        .collect();
    if rules.sort_query {
        // Stable: repeated names keep their order, which may carry meaning.
        params.sort_by(|a, b| a.0.cmp(&b.0));
    }
    let joined = params.into_iter().map(|(_, p)| p).collect::<Vec<_>>().join("&");
    (!joined.is_empty()).then_some(joined)
}

/// Decodes escapes of unreserved characters (`A-Z a-z 0-9 - . _ ~`) and
/// writes every other escape in uppercase hex, as RFC 3986 section 6.2.2
/// normalises them; every other byte is kept. It works on bytes so a
/// robots.txt (in whatever encoding) can be read with the same spelling
/// as the URLs matched against it.
pub fn normalise_escapes(input: &[u8]) -> Vec<u8> {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let mut out = Vec::with_capacity(input.len());
    let mut i = 0;
    while i < input.len() {
        if input[i] == b'%'
            && let (Some(hi), Some(lo)) = (hex(input.get(i + 1)), hex(input.get(i + 2)))
        {
            let b = hi * 16 + lo;
            if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
                out.push(b);
            } else {
                out.extend([b'%', HEX[usize::from(hi)], HEX[usize::from(lo)]]);
            }
            i += 3;
            continue;
        }
        out.push(input[i]);
        i += 1;
    }
    out
}

/// [`normalise_escapes`] of text, which stays text: only ASCII is decoded.
fn normalise_escapes_str(s: &str) -> String {
    String::from_utf8_lossy(&normalise_escapes(s.as_bytes())).into_owned()
}

fn hex(b: Option<&u8>) -> Option<u8> {
    char::from(*b?).to_digit(16).and_then(|d| u8::try_from(d).ok())
}

/// The limits of the trap guard. Every default is the one its field names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct TrapLimits {
    /// Longest normalised URL followed, in bytes: [`DEFAULT_MAX_URL_LEN`] (2,048).
    pub max_url_len: usize,
    /// Most distinct queries of one path (the URL without its query; no
    /// query at all is one of them): [`DEFAULT_MAX_QUERY_VARIANTS`] (50).
    pub max_query_variants: usize,
}

impl Default for TrapLimits {
    fn default() -> Self {
        Self {
            max_url_len: DEFAULT_MAX_URL_LEN,
            max_query_variants: DEFAULT_MAX_QUERY_VARIANTS,
        }
    }
}

/// Why the trap guard turned a URL away.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Trap {
    /// The URL is longer than the cap.
    #[error("URL of {len} bytes is over the {limit}-byte limit")]
    TooLong {
        /// Its length in bytes.
        len: usize,
        /// The cap.
        limit: usize,
    },
    /// Its path already has as many query variants as allowed.
    #[error("{path} already has {limit} query variants")]
    TooManyVariants {
        /// The URL without its query.
        path: String,
        /// The cap.
        limit: usize,
    },
}

impl Trap {
    /// The job error kind a refused URL reports as.
    pub fn kind(&self) -> crate::ErrorKind {
        crate::ErrorKind::ResourceLimit
    }
}

/// Counts the query variants of each path a crawl has admitted and turns
/// away URLs over the length cap or past the variant cap. Give it
/// normalised URLs, so spellings of one query count once.
#[derive(Debug, Clone, Default)]
pub struct TrapGuard {
    limits: TrapLimits,
    /// Per path (the URL without its query), the hashes of the queries
    /// admitted: a hash per variant keeps the memory per path small.
    variants: HashMap<String, HashSet<u64>>,
}

impl TrapGuard {
    /// A guard with `limits` and nothing admitted yet.
    pub fn new(limits: TrapLimits) -> Self {
        Self {
            limits,
            variants: HashMap::new(),
        }
    }

    /// The limits in force.
    pub fn limits(&self) -> TrapLimits {
        self.limits
    }

    /// Admits `url` and counts its query variant, or says which trap it
    /// looks like. A variant admitted before is admitted again without
    /// counting twice.
    pub fn admit(&mut self, url: &Url) -> Result<(), Trap> {
        let len = url.as_str().len();
        if len > self.limits.max_url_len {
            return Err(Trap::TooLong {
                len,
                limit: self.limits.max_url_len,
            });
        }
        let mut hasher = DefaultHasher::new();
        url.query().hash(&mut hasher);
        let variant = hasher.finish();
        let limit = self.limits.max_query_variants;
        let seen = self.variants.entry(path_key(url)).or_default();
        if seen.contains(&variant) {
            return Ok(());
        }
        if seen.len() >= limit {
            return Err(Trap::TooManyVariants {
                path: path_key(url),
                limit,
            });
        }
        seen.insert(variant);
        Ok(())
    }

    /// How many query variants of `url`'s path were admitted.
    pub fn variants_of(&self, url: &Url) -> usize {
        self.variants.get(&path_key(url)).map_or(0, HashSet::len)
    }
}

/// The URL without its query and fragment: what variants are counted per.
fn path_key(url: &Url) -> String {
    let mut path = url.clone();
    path.set_query(None);
    path.set_fragment(None);
    path.into()
}

#[cfg(test)]
#[path = "normalise_tests.rs"]
mod tests;
