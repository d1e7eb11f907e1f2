//! What the decision prompt learns beyond the snapshot (seed 001): the
//! site's profile from `sites.yaml` (name, characteristics, common
//! selectors, login hints) and the site's sitemap URLs, discovered at run
//! time. Both are added only when they apply to the page, and the step's
//! token budget shrinks the snapshot first, then the URL list.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// URLs of a sitemap the prompt takes at most (seed: 300 URLs or 10,000
/// characters, whichever is smaller).
pub const SITEMAP_MAX_URLS: usize = 300;
/// Characters of the URL list the prompt takes at most.
pub const SITEMAP_MAX_CHARS: usize = 10_000;

/// One site of `sites.yaml`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SiteProfile {
    /// Where the site starts: pages whose URL begins with this (scheme and
    /// host case-insensitive) get the profile; the longest match wins.
    pub url: String,
    /// Its name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// What to know about it ("search results load as you type").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub characteristics: Vec<String>,
    /// Selectors for recurring controls, by purpose (`search_box: input[name="q"]`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub common_selectors: BTreeMap<String, String>,
    /// How signing in works here ("the login form is in a dialog behind
    /// 'Account'"); never credentials, which are placeholders.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub login_hints: Vec<String>,
}

/// `sites.yaml`: `sites:` and a list of [`SiteProfile`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SiteProfiles {
    /// The sites.
    #[serde(default)]
    pub sites: Vec<SiteProfile>,
}

impl SiteProfiles {
    /// Parses `sites.yaml`, refusing unknown keys and profiles whose `url`
    /// is not an absolute http(s) URL.
    pub fn parse_yaml(text: &str) -> Result<Self, String> {
        let profiles: SiteProfiles = serde_yaml::from_str(text).map_err(|e| e.to_string())?;
        for p in &profiles.sites {
            match url::Url::parse(&p.url) {
                Ok(u) if matches!(u.scheme(), "http" | "https") => {}
                _ => return Err(format!("site url {:?}: give an absolute http(s) URL", p.url)),
            }
        }
        Ok(profiles)
    }

    /// The profile for the page at `url`: the longest `url` prefix match.
    pub fn matching(&self, url: &str) -> Option<&SiteProfile> {
        let page = normalized(url)?;
        self.sites
            .iter()
            .filter_map(|p| {
                let base = normalized(&p.url)?;
                let base = base.trim_end_matches('/');
                let hit = page == base
                    || page
                        .strip_prefix(base)
                        .is_some_and(|rest| rest.starts_with(['/', '?', '#']));
                hit.then_some((base.len(), p))
            })
            .max_by_key(|(len, _)| *len)
            .map(|(_, p)| p)
    }
}

/// The URL with scheme and host lowercased (the URL parser does that) and
/// the default port dropped.
fn normalized(url: &str) -> Option<String> {
    url::Url::parse(url).ok().map(|u| u.to_string())
}

impl SiteProfile {
    /// The profile as the prompt's `site` hint.
    pub fn hint(&self) -> serde_json::Value {
        let mut v = serde_json::json!({ "url": self.url });
        if let Some(n) = &self.name {
            v["name"] = n.clone().into();
        }
        if !self.characteristics.is_empty() {
            v["characteristics"] = serde_json::json!(self.characteristics);
        }
        if !self.common_selectors.is_empty() {
            v["commonSelectors"] = serde_json::json!(self.common_selectors);
        }
        if !self.login_hints.is_empty() {
            v["loginHints"] = serde_json::json!(self.login_hints);
        }
        v
    }
}

/// Where a site's sitemap URLs come from (the sitemap loader, with its
/// cache and the run's URL policy); an empty list when there is none.
#[async_trait::async_trait]
pub trait SitemapSource: Send + Sync {
    /// The sitemap URLs of the site `page` is on.
    async fn urls(&self, page: &url::Url) -> Vec<String>;
}

/// What a run adds to its decision prompts.
#[derive(Clone, Default)]
pub struct Hints {
    /// `sites.yaml`.
    pub sites: Option<Arc<SiteProfiles>>,
    /// The sitemap URLs of the page's site.
    pub sitemaps: Option<Arc<dyn SitemapSource>>,
}

impl std::fmt::Debug for Hints {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hints")
            .field("sites", &self.sites.as_ref().map(|s| s.sites.len()))
            .field("sitemaps", &self.sitemaps.is_some())
            .finish()
    }
}

/// The URL list the prompt takes: `urls:` and one URL a line, at most
/// `max_urls` URLs and `max_chars` characters; `None` when empty.
pub fn url_block(urls: &[String], max_urls: usize, max_chars: usize) -> Option<String> {
    let mut out = String::from("urls:\n");
    let mut n = 0;
    for u in urls.iter().take(max_urls) {
        if out.len() + u.len() + 1 > max_chars {
            break;
        }
        out.push_str(u);
        out.push('\n');
        n += 1;
    }
    (n > 0).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const YAML: &str = r#"
sites:
  - url: "https://www.example.com"
    name: "Example"
    common_selectors:
      search_box: 'input[name="q"]'
  - url: "https://www.example.com/admin"
    name: "Example admin"
    login_hints: ["Sign in through the Account menu"]
"#;

    #[test]
    fn the_longest_matching_profile_applies() {
        let p = SiteProfiles::parse_yaml(YAML).unwrap();
        assert_eq!(
            p.matching("https://WWW.example.com/a").unwrap().name.as_deref(),
            Some("Example")
        );
        assert_eq!(
            p.matching("https://www.example.com/admin/users?x=1")
                .unwrap()
                .name
                .as_deref(),
            Some("Example admin")
        );
        assert_eq!(
            p.matching("https://www.example.com/administrator")
                .unwrap()
                .name
                .as_deref(),
            Some("Example")
        );
        assert!(p.matching("https://example.org/").is_none());
        let hint = p.matching("https://www.example.com/").unwrap().hint();
        assert_eq!(hint["commonSelectors"]["search_box"], "input[name=\"q\"]");
    }

    #[test]
    fn bad_profiles_are_refused() {
        assert!(SiteProfiles::parse_yaml("sites:\n  - url: example.com\n").is_err());
        assert!(SiteProfiles::parse_yaml("sites:\n  - url: https://a.test\n    colour: 1\n").is_err());
    }

    #[test]
    fn url_blocks_are_capped() {
        let urls: Vec<String> = (0..500).map(|i| format!("https://a.test/p/{i}")).collect();
        let b = url_block(&urls, SITEMAP_MAX_URLS, SITEMAP_MAX_CHARS).unwrap();
        assert_eq!(b.lines().count(), 301);
        let b = url_block(&urls, SITEMAP_MAX_URLS, 100).unwrap();
        assert!(b.len() <= 100, "{}", b.len());
        assert!(url_block(&[], 10, 100).is_none());
    }
}
