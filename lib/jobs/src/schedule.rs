//! The scheduler's `[scheduler]` configuration section: the API's
//! address and guards, cron schedules and webhooks. Only its shape and
//! rules; the daemon that runs it is the scheduler's.

use serde::{Deserialize, Serialize};

use crate::JobTemplate;

/// A cron schedule: `cron` (seconds first: `sec min hour day month
/// weekday [year]`, UTC) → a batch from `job` at every tick.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScheduleConfig {
    /// The schedule's name (batch ids start with it).
    pub name: String,
    /// The cron expression.
    pub cron: String,
    /// What to submit.
    pub job: JobTemplate,
}

/// A webhook: `POST /webhooks/<name>` submits `job` and starts a run of
/// each of `checks` (a deploy webhook). When `secret_env` names an
/// environment variable, callers must send its value as
/// `Authorization: Bearer <secret>`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebhookConfig {
    /// The webhook's name, its path segment.
    pub name: String,
    /// Environment variable holding the shared secret.
    #[serde(default)]
    pub secret_env: Option<String>,
    /// What to submit (none: the webhook only runs checks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<JobTemplate>,
    /// The checks to run on each call, by name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<String>,
    /// The body field holding the deployment's URL (a dotted path such as
    /// `deployment_status.environment_url`): its origin replaces each
    /// check's start URL's, after the URL policy allowed it. No other
    /// part of the body reaches a run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url_field: Option<String>,
    /// Body fields (dotted paths) recorded as each run's metadata, under
    /// their path (a commit sha, a deploy id).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub metadata_fields: Vec<String>,
}

impl WebhookConfig {
    /// Refuses a webhook that does nothing, or names a check not loaded.
    /// `is_check` says whether a check of that name is loaded.
    pub fn validate(&self, is_check: impl Fn(&str) -> bool) -> Result<(), String> {
        if self.job.is_none() && self.checks.is_empty() {
            return Err(format!(
                "webhook {:?}: give it a `job`, `checks`, or both",
                self.name
            ));
        }
        if let Some(unknown) = self.checks.iter().find(|n| !is_check(n)) {
            return Err(format!(
                "webhook {:?}: no check is named {unknown:?} (the checks come from `--checks DIR` or `[scheduler] checks`)",
                self.name
            ));
        }
        if self.checks.is_empty() && (self.url_field.is_some() || !self.metadata_fields.is_empty()) {
            return Err(format!(
                "webhook {:?}: `url_field` and `metadata_fields` are for checks; name some in `checks`",
                self.name
            ));
        }
        Ok(())
    }
}

/// Default largest request body: 10 MiB (about 100,000 URLs).
pub const DEFAULT_MAX_BODY_BYTES: usize = 10 * 1024 * 1024;

/// `[scheduler]`: the daemon's API, schedules and webhooks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SchedulerSection {
    /// Address of the HTTP API.
    #[serde(default = "default_listen")]
    pub listen: String,
    /// How often manifests with new lines are written, ms.
    #[serde(default = "default_flush_ms")]
    pub flush_interval_ms: u64,
    /// Cron schedules.
    #[serde(default)]
    pub schedules: Vec<ScheduleConfig>,
    /// Webhooks.
    #[serde(default)]
    pub webhooks: Vec<WebhookConfig>,
    /// The environment variable holding the API's bearer token.
    #[serde(default = "default_token_env")]
    pub api_token_env: String,
    /// The environment variable holding the batch-webhook signing key.
    #[serde(default = "default_signing_env")]
    pub webhook_signing_secret_env: String,
    /// Largest request body, bytes.
    #[serde(default = "default_max_body")]
    pub max_body_bytes: usize,
    /// A directory of check files (`NAME.check.toml`, read recursively)
    /// the daemon runs on their schedules and on triggers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checks: Option<std::path::PathBuf>,
    /// Pages in flight at most per crawl, across its hosts (each host has
    /// its own `per_host_concurrency` besides): 1 to 10,000.
    #[serde(default = "default_crawl_window")]
    pub crawl_window: usize,
}

/// Default `[scheduler] crawl_window`: pages in flight at most per crawl.
pub const DEFAULT_CRAWL_WINDOW: usize = 64;

/// Largest `[scheduler] crawl_window`.
pub const MAX_CRAWL_WINDOW: usize = 10_000;

fn default_crawl_window() -> usize {
    DEFAULT_CRAWL_WINDOW
}

/// Longest `[scheduler] flush_interval_ms`: a minute.
pub const MAX_FLUSH_INTERVAL_MS: u64 = 60_000;

fn default_listen() -> String {
    "127.0.0.1:8080".to_owned()
}

fn default_flush_ms() -> u64 {
    500
}

fn default_token_env() -> String {
    "OXWRIGHT_API_TOKEN".to_owned()
}

fn default_signing_env() -> String {
    "OXWRIGHT_WEBHOOK_SECRET".to_owned()
}

fn default_max_body() -> usize {
    DEFAULT_MAX_BODY_BYTES
}

impl Default for SchedulerSection {
    fn default() -> Self {
        Self {
            listen: default_listen(),
            flush_interval_ms: default_flush_ms(),
            schedules: Vec::new(),
            webhooks: Vec::new(),
            api_token_env: default_token_env(),
            webhook_signing_secret_env: default_signing_env(),
            max_body_bytes: default_max_body(),
            checks: None,
            crawl_window: DEFAULT_CRAWL_WINDOW,
        }
    }
}

impl SchedulerSection {
    /// Refuses a flush interval no one could wait out (it would hold every
    /// summary back) and a crawl window of no page or past the limit.
    pub fn check(&self) -> Result<(), crate::JobError> {
        crate::limits::check_range(
            "[scheduler] flush_interval_ms",
            self.flush_interval_ms,
            1,
            MAX_FLUSH_INTERVAL_MS,
        )?;
        crate::limits::check_range(
            "[scheduler] crawl_window",
            self.crawl_window as u64,
            1,
            MAX_CRAWL_WINDOW as u64,
        )
    }
}

#[cfg(test)]
mod section_tests {
    use super::*;

    #[test]
    fn the_section_parses_strictly_with_its_defaults() {
        let s: SchedulerSection = toml::from_str(
            r#"
[[schedules]]
name = "home"
cron = "0 */5 * * * *"
job = { urls = ["https://example.com/"], options = { content = "full" } }
[[webhooks]]
name = "deploy"
secret_env = "DEPLOY_SECRET"
job = { kind = "sitemap", urls = ["example.com"] }
"#,
        )
        .unwrap();
        assert_eq!(s.schedules[0].job.options["content"], "full");
        assert_eq!(s.webhooks[0].job.as_ref().unwrap().kind, crate::JobKind::Sitemap);
        assert_eq!(s.listen, "127.0.0.1:8080");
        let err = toml::from_str::<SchedulerSection>("listn = \"x\"").unwrap_err();
        assert!(err.to_string().contains("listn"), "{err}");
        let empty: SchedulerSection = toml::from_str("").unwrap();
        assert_eq!(empty, SchedulerSection::default());
        assert_eq!(empty.flush_interval_ms, 500);
        empty.check().unwrap();
        let huge: SchedulerSection = toml::from_str("flush_interval_ms = 9223372036854775807").unwrap();
        let err = huge.check().unwrap_err();
        assert!(err.message.contains("out of range"), "{err}");
    }

    #[test]
    fn a_webhook_does_something_and_names_only_loaded_checks() {
        let hooks: SchedulerSection = toml::from_str(
            r#"
[[webhooks]]
name = "idle"
[[webhooks]]
name = "deploy"
checks = ["login"]
url_field = "deployment.url"
[[webhooks]]
name = "stray"
job = { urls = ["https://example.com/"] }
url_field = "deployment.url"
"#,
        )
        .unwrap();
        let login = |name: &str| name == "login";
        let none = |_: &str| false;
        let [idle, deploy, stray] = &hooks.webhooks[..] else {
            panic!("three webhooks")
        };
        assert!(
            idle.validate(none)
                .unwrap_err()
                .contains("give it a `job`, `checks`, or both")
        );
        deploy.validate(login).unwrap();
        let err = deploy.validate(none).unwrap_err();
        assert!(err.contains("no check is named \"login\""), "{err}");
        assert!(stray.validate(login).unwrap_err().contains("are for checks"));
    }
}
