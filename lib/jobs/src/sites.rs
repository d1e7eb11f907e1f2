//! Site profiles: what a workflow's decision prompt learns about a site
//! (name, characteristics, common selectors, login hints), given to a run
//! as `sites.yaml` (`oxwright run --sites`), as a workflow job's `sites`
//! or as MCP's `run_workflow` argument. A profile applies to the pages
//! under its `url`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Profiles a run takes at most.
pub const MAX_SITE_PROFILES: usize = 200;

/// One site of `sites.yaml`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
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
    /// Parses `sites.yaml`, refusing unknown keys and bad profiles (see
    /// [`SiteProfiles::check`]).
    pub fn parse_yaml(text: &str) -> Result<Self, String> {
        let profiles: SiteProfiles = serde_yaml::from_str(text).map_err(|e| e.to_string())?;
        Self::check(&profiles.sites)?;
        Ok(profiles)
    }

    /// Refuses more than [`MAX_SITE_PROFILES`] profiles and a profile
    /// whose `url` is not an absolute http(s) URL.
    pub fn check(sites: &[SiteProfile]) -> Result<(), String> {
        if sites.len() > MAX_SITE_PROFILES {
            return Err(format!(
                "{} site profiles: give at most {MAX_SITE_PROFILES}",
                sites.len()
            ));
        }
        for p in sites {
            match url::Url::parse(&p.url) {
                Ok(u) if matches!(u.scheme(), "http" | "https") => {}
                _ => return Err(format!("site url {:?}: give an absolute http(s) URL", p.url)),
            }
        }
        Ok(())
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
}
