//! `[fetch]`: default fetch options for the commands a person runs
//! (`fetch`, `batch`, `submit`). A flag given on the command line wins;
//! a key set here (or by `OXWRIGHT_FETCH__<KEY>`) replaces the built-in
//! default; the names are the job JSON's (`FetchSpec`).

use oxwright_jobs::{
    BlockResource, ContentMode, DialogAction, FetchSpec, Format, Frames, Render, Viewport, WaitUntil,
};
use serde::{Deserialize, Serialize};

/// The `[fetch]` section: every key optional.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FetchDefaults {
    /// Deadline of one attempt, ms (`--timeout-ms`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// `always`, `auto` or `never` (`--render`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub render: Option<Render>,
    /// What to wait for before reading the page (`--wait-until`).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        alias = "wait_for_load_state"
    )]
    pub wait_until: Option<WaitUntil>,
    /// A fixed extra wait, ms (`--wait-ms`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_ms: Option<u64>,
    /// Retries of transient failures (`--retries`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_count: Option<u32>,
    /// Backoff base, ms (`--retry-delay-ms`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_delay_ms: Option<u64>,
    /// Resource types never downloaded (`--block`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_resources: Option<Vec<BlockResource>>,
    /// `skip` or `load` the page's frames (`--frames`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frames: Option<Frames>,
    /// `main` or `full` (`--content`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<ContentMode>,
    /// Keep cookie banners and overlays (`--keep-overlays`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keep_overlays: Option<bool>,
    /// How dialogs are answered (`--dialogs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dialogs: Option<DialogAction>,
    /// `User-Agent` (`--user-agent`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_agent: Option<String>,
    /// Locale (`--locale`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub locale: Option<String>,
    /// IANA time zone (`--timezone`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timezone: Option<String>,
    /// Token budget of the Markdown (`--max-tokens`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    /// Age in ms within which a cached result answers (`--max-age-ms`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_age_ms: Option<u64>,
    /// Keep the rendered HTML as an artefact (`--include-html`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include_html: Option<bool>,
    /// Take a PNG screenshot (`--screenshot`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub screenshot: Option<bool>,
    /// Viewport size in CSS pixels (`--viewport`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub viewport: Option<Viewport>,
    /// Emulate a phone (`--mobile`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mobile: Option<bool>,
    /// Outputs added to the result (`--format`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub formats: Option<Vec<Format>>,
    /// Response headers reported in the metadata (`--response-header`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_headers: Option<Vec<String>>,
}

impl FetchDefaults {
    /// Sets each key of this section on `spec` unless `given(key)` says
    /// its flag was typed (the flag's value is already in `spec`).
    pub fn apply(&self, spec: &mut FetchSpec, given: impl Fn(&str) -> bool) {
        macro_rules! take {
            ($key:ident) => {
                if let Some(v) = &self.$key
                    && !given(stringify!($key))
                {
                    spec.$key = v.clone();
                }
            };
            ($key:ident, opt) => {
                if let Some(v) = &self.$key
                    && !given(stringify!($key))
                {
                    spec.$key = Some(v.clone());
                }
            };
        }
        take!(timeout_ms);
        take!(render);
        take!(wait_until);
        take!(wait_ms);
        take!(retry_count);
        take!(retry_delay_ms);
        take!(block_resources);
        take!(frames);
        take!(content);
        take!(keep_overlays);
        take!(dialogs);
        take!(user_agent, opt);
        take!(locale, opt);
        take!(timezone, opt);
        take!(max_tokens, opt);
        take!(max_age_ms);
        take!(include_html);
        take!(screenshot);
        take!(viewport, opt);
        take!(mobile);
        take!(formats);
        take!(response_headers);
    }

    /// Refuses values no fetch accepts, naming the key.
    pub fn check(&self) -> anyhow::Result<()> {
        let mut spec = FetchSpec::new("https://example.invalid/".parse().expect("a URL"));
        self.apply(&mut spec, |_| false);
        spec.validate()
            .map_err(|e| anyhow::anyhow!("[fetch] {}", e.message))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_apply_unless_their_flag_was_typed() {
        let d: FetchDefaults =
            toml::from_str("timeout_ms = 5000\nwait_until = \"networkidle\"\nblock_resources = [\"image\"]\nlocale = \"de-DE\"")
                .unwrap();
        let mut spec = FetchSpec::new("https://a.test/".parse().unwrap());
        spec.timeout_ms = 9_000;
        d.apply(&mut spec, |k| k == "timeout_ms");
        assert_eq!(spec.timeout_ms, 9_000, "a typed flag wins");
        assert_eq!(spec.wait_until, WaitUntil::Networkidle);
        assert_eq!(spec.block_resources, vec![BlockResource::Image]);
        assert_eq!(spec.locale.as_deref(), Some("de-DE"));
        let outputs: FetchDefaults = toml::from_str(
            "screenshot = true\nformats = [\"text\"]\nviewport = { width = 800, height = 600 }\nmobile = true",
        )
        .unwrap();
        outputs.apply(&mut spec, |k| k == "mobile");
        assert!(spec.screenshot && !spec.mobile, "a typed flag wins over a key");
        assert_eq!(spec.formats, vec![Format::Text]);
        assert_eq!(
            spec.viewport,
            Some(Viewport {
                width: 800,
                height: 600
            })
        );
        assert!(toml::from_str::<FetchDefaults>("colour = 1").is_err());
        let bad: FetchDefaults = toml::from_str("timeout_ms = 0").unwrap();
        assert!(bad.check().unwrap_err().to_string().contains("[fetch] "));
    }
}
