//! How the scheduler daemon and its HTTP API run. The `[scheduler]`
//! section they are built from is declared with the job types.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

pub use oxwright_jobs::schedule::{
    DEFAULT_MAX_BODY_BYTES, MAX_FLUSH_INTERVAL_MS, ScheduleConfig, SchedulerSection, WebhookConfig,
};
use oxwright_policy::UrlPolicy;

/// How the daemon runs.
#[derive(Debug, Clone)]
pub struct SchedulerOptions {
    /// The URL policy submissions are checked against.
    pub policy: Arc<UrlPolicy>,
    /// How often manifests with new lines are written.
    pub flush_interval: Duration,
    /// Cron schedules.
    pub schedules: Vec<ScheduleConfig>,
    /// Webhooks.
    pub webhooks: Vec<WebhookConfig>,
    /// Resolved webhook secrets by webhook name (never logged).
    pub webhook_secrets: BTreeMap<String, String>,
    /// The HTTP API's token, body limit and webhook signing key.
    pub api: ApiOptions,
    /// The checks the daemon runs on their schedules and on triggers.
    pub checks: Vec<oxwright_checks::Check>,
    /// The saved login states of the checks that name one, sealed with the
    /// workers' checkpoint key (base64), by check name: each run's job
    /// carries its check's.
    pub check_states: BTreeMap<String, String>,
    /// Pages in flight at most per crawl, across its hosts (each host
    /// has its own `per_host_concurrency` besides).
    pub crawl_window: usize,
    /// The queue outlives this daemon (a broker): a stopping daemon
    /// suspends its crawls for the next one, and a crawl taken up counts
    /// the pages an earlier daemon published as in flight. False for a
    /// daemon on an in-process queue: its crawls end as a cancel ends
    /// them, and a crawl taken up after a crash publishes those pages
    /// again (a worker answers each from its stored result, if any).
    pub durable_queue: bool,
}

impl SchedulerOptions {
    /// Options judging submissions by `policy`, with every other setting
    /// at its default: manifests flushed every 500 ms, no schedules,
    /// webhooks or checks, the API open with the default body limit, a
    /// crawl window of [`oxwright_jobs::schedule::DEFAULT_CRAWL_WINDOW`],
    /// a queue that outlives the daemon.
    pub fn new(policy: Arc<UrlPolicy>) -> Self {
        Self {
            policy,
            flush_interval: Duration::from_millis(500),
            schedules: Vec::new(),
            webhooks: Vec::new(),
            webhook_secrets: BTreeMap::new(),
            api: ApiOptions::default(),
            checks: Vec::new(),
            check_states: BTreeMap::new(),
            crawl_window: oxwright_jobs::schedule::DEFAULT_CRAWL_WINDOW,
            durable_queue: true,
        }
    }
}

/// How the HTTP API guards itself.
#[derive(Clone)]
pub struct ApiOptions {
    /// When set, every route but `/healthz` and `/webhooks/{name}` (which
    /// have their own secrets) needs `Authorization: Bearer <token>`.
    pub token: Option<String>,
    /// Largest request body, in bytes; larger ones get 413.
    pub max_body_bytes: usize,
    /// The key batch webhook deliveries are signed with (HMAC-SHA256);
    /// unsigned without one.
    pub signing_secret: Option<String>,
    /// Serves only what reads the store (the dashboard, batch status,
    /// artefacts): no job is submitted, cancelled or re-driven.
    pub view_only: bool,
}

impl Default for ApiOptions {
    fn default() -> Self {
        Self {
            token: None,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            signing_secret: None,
            view_only: false,
        }
    }
}

impl std::fmt::Debug for ApiOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The secrets themselves are never printed.
        f.debug_struct("ApiOptions")
            .field("token", &self.token.is_some())
            .field("max_body_bytes", &self.max_body_bytes)
            .field("signing_secret", &self.signing_secret.is_some())
            .field("view_only", &self.view_only)
            .finish()
    }
}
