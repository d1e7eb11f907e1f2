//! Checks a cloud event starts on the worker function: a table of routes
//! (`OXWRIGHT_CHECK_EVENTS`, JSON) maps S3 notifications and EventBridge
//! events (a deploy's, or an EventBridge schedule's) to the checks of
//! `[scheduler] checks` (`OXWRIGHT_SCHEDULER__CHECKS`, a directory in the
//! function's image). Each check the event names runs on this function's
//! browsers as the fleet runs it: the same job, its retries as new
//! sessions, its record in the run log, its state folded, an alert its
//! change raises through the outbox and delivered before the answer.
//!
//! ```json
//! [
//!   {"on": "s3", "bucket": "site-releases", "prefix": "prod/", "checks": ["home"]},
//!   {"on": "eventbridge", "source": "com.example.deploy", "detail_type": "Deployment Succeeded",
//!    "checks": ["home", "login"], "url_field": "url", "metadata_fields": ["sha"]},
//!   {"on": "eventbridge", "source": "aws.events", "detail_type": "Scheduled Event",
//!    "rule": "login-every-5m", "checks": ["login"]}
//! ]
//! ```

use std::collections::BTreeMap;
use std::sync::Arc;

use aws_lambda_events::event::eventbridge::EventBridgeEvent;
use aws_lambda_events::event::s3::S3EventRecord;
use oxwright_checks::{Check, Trigger};
use oxwright_config::{Setup, UsageError};
use oxwright_policy::UrlPolicy;
use oxwright_scheduler::checks::{CheckRunner, TriggerError, inputs, outbox::Outbox};
use serde::Deserialize;
use serde_json::{Value, json};

/// `OXWRIGHT_CHECK_EVENTS`: the routes from events to checks (JSON).
pub const CHECK_EVENTS: &str = "OXWRIGHT_CHECK_EVENTS";

/// One route: which events, and the checks they run.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "on", rename_all = "snake_case", deny_unknown_fields)]
pub enum Route {
    /// An S3 notification of an object in `bucket` (any when not given)
    /// whose key starts with `prefix` and ends with `suffix`, for an event
    /// whose name starts with `event` (`ObjectCreated`).
    S3 {
        /// The checks to run.
        checks: Vec<String>,
        /// The bucket.
        #[serde(default)]
        bucket: Option<String>,
        /// The key's start.
        #[serde(default)]
        prefix: Option<String>,
        /// The key's end.
        #[serde(default)]
        suffix: Option<String>,
        /// The event name's start (`ObjectCreated`, `ObjectRemoved`).
        #[serde(default)]
        event: Option<String>,
    },
    /// An EventBridge event from `source`, of `detail_type` when given,
    /// naming `rule` among its resources when given (an EventBridge rule
    /// or schedule: `…:rule/NAME`, `…:schedule/GROUP/NAME`).
    Eventbridge {
        /// The checks to run.
        checks: Vec<String>,
        /// The event's `source`.
        source: String,
        /// The event's `detail-type`.
        #[serde(default)]
        detail_type: Option<String>,
        /// The rule or schedule name the event's resources end with.
        #[serde(default)]
        rule: Option<String>,
        /// The field of `detail` (a dotted path) holding the deployment's
        /// URL: its origin replaces each check's start URL's, after the
        /// URL policy allowed it. No other part of the event reaches a run.
        #[serde(default)]
        url_field: Option<String>,
        /// Fields of `detail` (dotted paths) recorded as the runs' metadata.
        #[serde(default)]
        metadata_fields: Vec<String>,
    },
}

impl Route {
    fn checks(&self) -> &[String] {
        match self {
            Route::S3 { checks, .. } | Route::Eventbridge { checks, .. } => checks,
        }
    }
}

/// A run an event asks for: the check, the deployment URL, the metadata.
#[derive(Debug, Clone, PartialEq)]
pub struct Wanted {
    /// What started it: an event, or a call by name.
    pub trigger: Trigger,
    /// The check's name.
    pub check: String,
    /// The origin that replaces the start URL's.
    pub url: Option<url::Url>,
    /// What the run records of the event.
    pub metadata: BTreeMap<String, String>,
}

/// The routes and the checks they run, read when the function starts.
#[derive(Debug)]
pub struct CheckEvents {
    routes: Vec<Route>,
    checks: BTreeMap<String, Check>,
    /// Sealed login states by check name.
    states: BTreeMap<String, String>,
    secret: Option<String>,
}

impl CheckEvents {
    /// Reads the routes and loads the checks they name; `None` when no
    /// route is configured. A malformed table, a route naming no loaded
    /// check, a check the URL policy refuses or whose saved login cannot
    /// be sealed is a usage error: the function does not start.
    pub fn from_setup(setup: &Setup) -> anyhow::Result<Option<Self>> {
        let raw = setup.env.get(CHECK_EVENTS).filter(|r| !r.trim().is_empty());
        let dir = setup.config.scheduler.checks.as_ref();
        if raw.is_none() && dir.is_none() {
            return Ok(None);
        }
        let usage = |message: String| UsageError::from_any(format!("{CHECK_EVENTS}: {message}"));
        let routes: Vec<Route> = match raw {
            Some(raw) => serde_json::from_str(raw).map_err(|e| usage(e.to_string()))?,
            None => Vec::new(),
        };
        let dir = dir.ok_or_else(|| {
            usage(
                "the routes name checks: set OXWRIGHT_SCHEDULER__CHECKS to the directory of check files"
                    .into(),
            )
        })?;
        let mut checks = BTreeMap::new();
        let mut states = BTreeMap::new();
        for check in oxwright_checks::load_dir(dir).map_err(UsageError::from_any)? {
            check.admit(&setup.policy).map_err(UsageError::from_any)?;
            if let Some(sealed) = check
                .sealed_storage_state(&setup.env)
                .map_err(UsageError::from_any)?
            {
                states.insert(check.name.clone(), sealed);
            }
            checks.insert(check.name.clone(), check);
        }
        for (i, route) in routes.iter().enumerate() {
            if route.checks().is_empty() {
                return Err(usage(format!("route {i} names no check")));
            }
            if let Some(unknown) = route.checks().iter().find(|n| !checks.contains_key(*n)) {
                return Err(usage(format!(
                    "route {i}: no check is named {unknown:?} in {}",
                    dir.display()
                )));
            }
        }
        let secret = setup
            .env
            .get(&setup.config.scheduler.webhook_signing_secret_env)
            .filter(|s| !s.is_empty())
            .cloned();
        Ok(Some(Self {
            routes,
            checks,
            states,
            secret,
        }))
    }

    /// The runs an S3 notification asks for, each check once.
    pub fn from_s3(&self, records: &[S3EventRecord]) -> Vec<Wanted> {
        let mut wanted = Vec::new();
        for record in records {
            let bucket = record.s3.bucket.name.clone().unwrap_or_default();
            let key = decoded_key(record.s3.object.key.as_deref().unwrap_or_default());
            let name = record.event_name.clone().unwrap_or_default();
            for route in &self.routes {
                let Route::S3 {
                    checks,
                    bucket: want_bucket,
                    prefix,
                    suffix,
                    event,
                } = route
                else {
                    continue;
                };
                let matches = want_bucket.as_ref().is_none_or(|b| *b == bucket)
                    && prefix.as_ref().is_none_or(|p| key.starts_with(p.as_str()))
                    && suffix.as_ref().is_none_or(|s| key.ends_with(s.as_str()))
                    && event.as_ref().is_none_or(|e| name.starts_with(e.as_str()));
                if !matches {
                    continue;
                }
                let metadata = BTreeMap::from([
                    ("event".to_string(), name.clone()),
                    ("s3_bucket".to_string(), bucket.clone()),
                    ("s3_key".to_string(), clip(&key)),
                ]);
                add(&mut wanted, checks, None, &metadata);
            }
        }
        wanted
    }

    /// The runs an EventBridge event asks for, each check once; an event
    /// whose URL field is missing or refused is an error naming the field.
    pub fn from_eventbridge(
        &self,
        event: &EventBridgeEvent,
        policy: &UrlPolicy,
    ) -> Result<Vec<Wanted>, String> {
        let mut wanted = Vec::new();
        let resources = event.resources.as_deref().unwrap_or_default();
        for route in &self.routes {
            let Route::Eventbridge {
                checks,
                source,
                detail_type,
                rule,
                url_field,
                metadata_fields,
            } = route
            else {
                continue;
            };
            let matches = *source == event.source
                && detail_type.as_ref().is_none_or(|t| *t == event.detail_type)
                && rule.as_ref().is_none_or(|rule| {
                    resources
                        .iter()
                        .any(|r| r == rule || r.ends_with(&format!("/{rule}")))
                });
            if !matches {
                continue;
            }
            let url = match url_field {
                Some(field) => Some(inputs::deploy_url(policy, &event.detail, field)?),
                None => None,
            };
            let mut metadata = BTreeMap::from([
                ("event".to_string(), event.detail_type.clone()),
                ("source".to_string(), event.source.clone()),
            ]);
            if let Some(id) = &event.id {
                metadata.insert("event_id".into(), id.clone());
            }
            inputs::add_metadata(&mut metadata, &event.detail, metadata_fields);
            add(&mut wanted, checks, url, &metadata);
        }
        Ok(wanted)
    }

    /// The run a check invoked by name asks for: a loaded check, its URL
    /// allowed by `policy`, its metadata bounded.
    pub fn from_call(&self, call: &crate::events::CheckCall, policy: &UrlPolicy) -> Result<Wanted, String> {
        if !self.checks.contains_key(&call.check) {
            return Err(format!("no check is named {:?}", call.check));
        }
        let url = match &call.url {
            Some(raw) => Some(inputs::deploy_url(policy, &json!({ "url": raw }), "url")?),
            None => None,
        };
        if call.metadata.len() > MAX_METADATA_FIELDS {
            return Err(format!(
                "{} metadata fields: at most {MAX_METADATA_FIELDS}",
                call.metadata.len()
            ));
        }
        let metadata = call.metadata.iter().map(|(k, v)| (clip(k), clip(v))).collect();
        Ok(Wanted {
            trigger: Trigger::Api,
            check: call.check.clone(),
            url,
            metadata,
        })
    }

    /// A runner of the one check `name`, over `queue`, keeping its state
    /// where the fleet keeps it and delivering its alerts before it
    /// answers.
    pub fn runner(
        &self,
        name: &str,
        store: Arc<dyn oxwright_artifacts::ArtifactStore>,
        queue: Arc<dyn oxwright_queue::JobQueue>,
    ) -> Option<CheckRunner> {
        let check = self.checks.get(name)?.clone();
        let states = self
            .states
            .get(name)
            .map(|s| BTreeMap::from([(name.to_string(), s.clone())]))
            .unwrap_or_default();
        Some(
            CheckRunner::new(vec![check], store, queue, self.secret.clone())
                .with_states(states)
                .with_inline_alerts(),
        )
    }

    /// Delivers the alerts of `check` a function stopped before
    /// delivering; it lists that check's outbox only.
    pub async fn sweep_outbox(&self, check: &str, store: Arc<dyn oxwright_artifacts::ArtifactStore>) {
        Outbox::new(store, self.secret.clone()).sweep_check(check).await;
    }
}

/// Adds a run of each of `checks` not asked for yet.
fn add(
    wanted: &mut Vec<Wanted>,
    checks: &[String],
    url: Option<url::Url>,
    metadata: &BTreeMap<String, String>,
) {
    for check in checks {
        if wanted.iter().any(|w| w.check == *check) {
            continue;
        }
        wanted.push(Wanted {
            trigger: Trigger::Event,
            check: check.clone(),
            url: url.clone(),
            metadata: metadata.clone(),
        });
    }
}

fn clip(text: &str) -> String {
    text.chars().take(inputs::MAX_METADATA_CHARS).collect()
}

/// An S3 notification's key as stored: notifications send it URL-encoded,
/// a space as `+`.
fn decoded_key(key: &str) -> String {
    let spaced = key.replace('+', " ");
    percent_encoding::percent_decode_str(&spaced)
        .decode_utf8_lossy()
        .into_owned()
}

/// What the answer says of a run that did not start.
pub fn not_started(check: &str, err: &TriggerError) -> Value {
    let reason = match err {
        TriggerError::Running(_) => "running",
        TriggerError::Unknown(_) => "unknown",
        TriggerError::Failed(_) => "failed",
    };
    json!({ "check": check, "skipped": reason, "message": err.to_string() })
}

/// The most metadata fields a check invoked by name records.
const MAX_METADATA_FIELDS: usize = 32;

#[cfg(test)]
mod tests {
    use super::*;

    fn events(routes: Value, dir: &std::path::Path) -> CheckEvents {
        for name in ["home", "login"] {
            std::fs::write(
                dir.join(format!("{name}.check.toml")),
                "url = \"https://shop.example/\"\nsteps = \"expect: text main = Shop\"\n",
            )
            .unwrap();
        }
        let env = BTreeMap::from([
            (CHECK_EVENTS.to_string(), routes.to_string()),
            (
                "OXWRIGHT_SCHEDULER__CHECKS".to_string(),
                dir.display().to_string(),
            ),
        ]);
        let setup = crate::setup_from_env(env).unwrap();
        CheckEvents::from_setup(&setup).unwrap().expect("routes")
    }

    fn s3_record(bucket: &str, key: &str, name: &str) -> S3EventRecord {
        serde_json::from_value(json!({
            "eventVersion": "2.1", "eventSource": "aws:s3", "awsRegion": "eu-west-1",
            "eventTime": "2026-12-01T10:00:00.000Z", "eventName": name,
            "userIdentity": {"principalId": "A"}, "requestParameters": {"sourceIPAddress": "10.0.0.1"},
            "responseElements": {},
            "s3": {"s3SchemaVersion": "1.0", "configurationId": "c", "bucket": {"name": bucket, "arn": "arn:aws:s3:::b"},
                   "object": {"key": key, "size": 1, "eTag": "e", "sequencer": "1"}}
        }))
        .unwrap()
    }

    #[test]
    fn s3_routes_match_bucket_prefix_and_event_and_run_each_check_once() {
        let dir = tempfile::tempdir().unwrap();
        let events = events(
            json!([
                {"on": "s3", "bucket": "releases", "prefix": "prod/", "event": "ObjectCreated", "checks": ["home"]},
                {"on": "s3", "suffix": ".html", "checks": ["home", "login"]}
            ]),
            dir.path(),
        );
        let wanted = events.from_s3(&[
            s3_record("releases", "prod/site+v2%2B.tar", "ObjectCreated:Put"),
            s3_record("releases", "prod/index.html", "ObjectCreated:Put"),
        ]);
        let names: Vec<_> = wanted.iter().map(|w| w.check.as_str()).collect();
        assert_eq!(names, ["home", "login"]);
        assert_eq!(wanted[0].metadata["s3_key"], "prod/site v2+.tar");
        assert_eq!(wanted[0].metadata["event"], "ObjectCreated:Put");
        assert_eq!(wanted[1].metadata["s3_key"], "prod/index.html");
        assert!(
            events
                .from_s3(&[s3_record("other", "prod/a.tar", "ObjectCreated:Put")])
                .is_empty()
        );
        assert!(
            events
                .from_s3(&[s3_record("releases", "prod/a.tar", "ObjectRemoved:Delete")])
                .is_empty()
        );
    }

    #[test]
    fn eventbridge_routes_take_the_deploy_url_and_the_schedule_rule() {
        let dir = tempfile::tempdir().unwrap();
        let events = events(
            json!([
                {"on": "eventbridge", "source": "com.example.deploy", "detail_type": "Deployment Succeeded",
                 "checks": ["home"], "url_field": "url", "metadata_fields": ["sha"]},
                {"on": "eventbridge", "source": "aws.events", "detail_type": "Scheduled Event",
                 "rule": "login-every-5m", "checks": ["login"]}
            ]),
            dir.path(),
        );
        let policy = UrlPolicy::default();
        let deploy: EventBridgeEvent = serde_json::from_value(json!({
            "version": "0", "id": "e-1", "detail-type": "Deployment Succeeded", "source": "com.example.deploy",
            "account": "1", "time": "2026-12-01T10:00:00Z", "region": "eu-west-1", "resources": [],
            "detail": {"url": "https://pr-7.preview.example/", "sha": "3f2a", "token": "not recorded"}
        }))
        .unwrap();
        let wanted = events.from_eventbridge(&deploy, &policy).unwrap();
        assert_eq!(wanted.len(), 1);
        assert_eq!(
            wanted[0].url.as_ref().unwrap().as_str(),
            "https://pr-7.preview.example/"
        );
        assert_eq!(wanted[0].metadata["sha"], "3f2a");
        assert_eq!(wanted[0].metadata["event_id"], "e-1");
        assert!(!wanted[0].metadata.values().any(|v| v == "not recorded"));

        let mut refused = deploy.clone();
        refused.detail = json!({"url": "http://169.254.169.254/latest"});
        let err = events.from_eventbridge(&refused, &policy).unwrap_err();
        assert!(err.contains("`url`"), "{err}");

        let tick: EventBridgeEvent = serde_json::from_value(json!({
            "id": "t-1", "detail-type": "Scheduled Event", "source": "aws.events",
            "resources": ["arn:aws:events:eu-west-1:1:rule/login-every-5m"], "detail": {}
        }))
        .unwrap();
        let wanted = events.from_eventbridge(&tick, &policy).unwrap();
        assert_eq!(
            wanted.iter().map(|w| w.check.as_str()).collect::<Vec<_>>(),
            ["login"]
        );
        let mut other = tick.clone();
        other.resources = Some(vec!["arn:aws:events:eu-west-1:1:rule/nightly".into()]);
        assert!(events.from_eventbridge(&other, &policy).unwrap().is_empty());
    }

    #[test]
    fn a_bad_table_stops_the_function_naming_what_is_wrong() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("home.check.toml"),
            "url = \"https://shop.example/\"\nsteps = \"expect: text main = Shop\"\n",
        )
        .unwrap();
        let setup = |routes: &str, with_dir: bool| {
            let mut env = BTreeMap::from([(CHECK_EVENTS.to_string(), routes.to_string())]);
            if with_dir {
                env.insert(
                    "OXWRIGHT_SCHEDULER__CHECKS".into(),
                    dir.path().display().to_string(),
                );
            }
            CheckEvents::from_setup(&crate::setup_from_env(env).unwrap())
        };
        let message = |r: anyhow::Result<Option<CheckEvents>>| {
            let err = r.unwrap_err();
            assert!(UsageError::is_in(&err), "{err:#}");
            format!("{err:#}")
        };
        assert!(
            message(setup(r#"[{"on":"s3","checks":["nope"]}]"#, true)).contains("no check is named \"nope\"")
        );
        assert!(message(setup(r#"[{"on":"s3","checks":["home"],"bukket":"x"}]"#, true)).contains("bukket"));
        assert!(message(setup(r#"[{"on":"sns","checks":["home"]}]"#, true)).contains("sns"));
        assert!(
            message(setup(r#"[{"on":"s3","checks":["home"]}]"#, false))
                .contains("OXWRIGHT_SCHEDULER__CHECKS")
        );
        assert!(setup("", false).unwrap().is_none());
        let by_name = setup("", true).unwrap().expect("checks loaded, no route");
        let call = |check: &str, url: Option<&str>| crate::events::CheckCall {
            check: check.into(),
            url: url.map(Into::into),
            metadata: BTreeMap::from([("sha".into(), "x".repeat(300))]),
        };
        let policy = UrlPolicy::default();
        let wanted = by_name
            .from_call(&call("home", Some("https://pr-7.preview.example/")), &policy)
            .unwrap();
        assert_eq!(wanted.trigger, Trigger::Api);
        assert_eq!(wanted.metadata["sha"].len(), inputs::MAX_METADATA_CHARS);
        assert!(
            by_name
                .from_call(&call("nope", None), &policy)
                .unwrap_err()
                .contains("nope")
        );
        assert!(
            by_name
                .from_call(&call("home", Some("http://10.0.0.1/")), &policy)
                .is_err()
        );
    }
}
