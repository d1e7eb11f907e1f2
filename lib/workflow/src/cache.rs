//! The action cache: what each plain-language step resolved to when it
//! verifiably completed, so a later run can replay it with no LLM call.
//!
//! Layout in the artefact store, per workflow:
//! - `workflows/<id>/actions/<time>-<session>.json`: one file per run with
//!   the runs' events (a step completed with this action; a cached action
//!   failed). Every writer writes its own key, so concurrent workers never
//!   overwrite each other.
//! - `workflows/<id>/actions.json`: the folded view of every event file, as
//!   the last run saw it (for people and tools; readers fold the event files
//!   themselves, so a view lost to a concurrent write loses nothing).
//!
//! An entry's key is the page's URL pattern, the step's instruction and its
//! placeholder names. A page on the run's start origin is keyed by its
//! path alone ([`url_pattern_on`]), so a recording made on one host
//! replays under another start URL (staging, then production); a page on
//! any other host keeps its whole origin in the key. An entry counts
//! consecutive verified successes of the same action on the same element
//! (locator, action, value placeholder and the element's neighbourhood
//! fingerprint); another action resets it to 1, a failure to 0. Replay trusts it with no LLM call once it reaches the
//! configured count.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use chrono::{DateTime, Utc};
use oxwright_artifacts::ArtifactStore;
use oxwright_engine::ElementState;
use serde::{Deserialize, Serialize};

use crate::{Locator, WorkflowError};
use oxwright_steps::{Action, ActionValue};

/// Successes before a cached action replays with no LLM call (default).
pub const DEFAULT_TRUST_AFTER: u32 = 2;

/// Where an element is: its role and name and the landmarks around it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fingerprint {
    /// ARIA role.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// Accessible name.
    pub name: String,
    /// Landmarks around it, innermost first.
    pub landmarks: Vec<String>,
}

impl Fingerprint {
    /// The fingerprint of what `state` shows.
    pub fn of(state: &ElementState) -> Self {
        Self {
            role: state.role.clone(),
            name: state.name.clone(),
            landmarks: state.landmarks.clone(),
        }
    }

    /// Says how `now` differs from this one, or `None` when it is the same
    /// element by role, name (case and spacing aside) and landmarks.
    pub fn differs(&self, now: &Fingerprint) -> Option<String> {
        let norm = |s: &str| oxwright_engine::normalize(s).to_lowercase();
        if self.role != now.role || norm(&self.name) != norm(&now.name) || self.landmarks != now.landmarks {
            return Some(format!("was {self}, now {now}"));
        }
        None
    }
}

impl std::fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {:?}", self.role.as_deref().unwrap_or("element"), self.name)?;
        if !self.landmarks.is_empty() {
            write!(f, " in {}", self.landmarks.join(" < "))?;
        }
        Ok(())
    }
}

/// A step's resolved action.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Resolved {
    /// The locator that found the element (never a node id or an XPath).
    pub locator: Locator,
    /// What was done.
    pub action: Action,
    /// The value, placeholders unresolved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<ActionValue>,
    /// The element's neighbourhood when it was acted on.
    pub fingerprint: Fingerprint,
    /// The URL pattern after the action (its effect on the address).
    pub url_after: String,
}

/// One event of a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "lowercase")]
pub enum CacheEvent {
    /// The step verifiably completed with this action.
    Success {
        /// The entry.
        key: EntryKey,
        /// The action.
        resolved: Resolved,
    },
    /// The cached action failed its precheck or its effect check.
    Failure {
        /// The entry.
        key: EntryKey,
        /// The action that failed: a failure of an action another run has
        /// already replaced says nothing about its replacement.
        refused: Resolved,
        /// Why.
        reason: String,
    },
    /// A person forgot the entry (from the dashboard): the next run decides
    /// the step again. Written in an event file of its own, whose
    /// `start_url` and `checklist` are empty.
    Forgotten {
        /// The entry.
        key: EntryKey,
    },
}

/// What an entry is for: a step instruction on a kind of page.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct EntryKey {
    /// The page's URL pattern when the step started.
    pub url_pattern: String,
    /// The step as written (placeholders unresolved).
    pub instruction: String,
    /// The placeholder names the step uses.
    pub placeholders: Vec<String>,
}

impl EntryKey {
    /// The key of `instruction` on the page at `url` of a run that started
    /// at `start` (see [`url_pattern_on`]).
    pub fn on(start: &url::Url, url: &str, instruction: &str) -> Self {
        Self {
            url_pattern: url_pattern_on(url, start),
            ..Self::new(url, instruction)
        }
    }

    /// The key of `instruction` on the page at `url`, its origin whole (the
    /// key of caches recorded before keys were relative to the start).
    pub fn new(url: &str, instruction: &str) -> Self {
        let instruction = instruction.trim_start_matches("[]").trim().to_string();
        Self {
            url_pattern: url_pattern(url),
            placeholders: crate::placeholders(&instruction),
            instruction,
        }
    }

    fn flat(&self) -> String {
        format!(
            "{} | {} | {}",
            self.url_pattern,
            self.instruction,
            self.placeholders.join(",")
        )
    }
}

/// One entry of the folded cache.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// What it is for.
    pub key: EntryKey,
    /// The last action that verifiably completed.
    pub resolved: Resolved,
    /// Consecutive verified successes of that action (0 after a failure).
    pub successes: u32,
    /// The last failure, when the last event was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_failure: Option<String>,
    /// When the last event was.
    pub updated_at: DateTime<Utc>,
}

/// One run's event file.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EventFile {
    /// The workflow.
    pub workflow_id: String,
    /// The run.
    pub session_id: String,
    /// When the run wrote it.
    pub at: DateTime<Utc>,
    /// Where the workflow starts.
    pub start_url: String,
    /// The checklist the run followed.
    pub checklist: Vec<String>,
    /// What happened, in order.
    pub events: Vec<CacheEvent>,
}

/// The folded cache of one workflow.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ActionCache {
    /// The workflow.
    pub workflow_id: String,
    /// Where the workflow starts (from the latest run).
    pub start_url: String,
    /// The checklist of the latest run.
    pub checklist: Vec<String>,
    /// Event files folded in.
    pub runs: usize,
    /// The entries, by key.
    pub entries: Vec<Entry>,
}

impl ActionCache {
    /// Folds event files (any order; sorted by time, then session).
    pub fn fold(workflow_id: &str, mut files: Vec<EventFile>) -> Self {
        files.sort_by(|a, b| (a.at, &a.session_id).cmp(&(b.at, &b.session_id)));
        let mut entries: BTreeMap<String, Entry> = BTreeMap::new();
        let mut cache = ActionCache {
            workflow_id: workflow_id.to_string(),
            runs: files.len(),
            ..Default::default()
        };
        for file in files {
            // A file that only forgets says nothing about the workflow.
            if !file.start_url.is_empty() {
                cache.start_url = file.start_url;
                cache.checklist = file.checklist;
            }
            for event in file.events {
                match event {
                    CacheEvent::Success { key, resolved } => {
                        let e = entries.entry(key.flat()).or_insert_with(|| Entry {
                            key: key.clone(),
                            resolved: resolved.clone(),
                            successes: 0,
                            last_failure: None,
                            updated_at: file.at,
                        });
                        if e.resolved == resolved {
                            e.successes += 1;
                        } else {
                            e.resolved = resolved;
                            e.successes = 1;
                        }
                        e.last_failure = None;
                        e.updated_at = file.at;
                    }
                    CacheEvent::Failure { key, refused, reason } => {
                        if let Some(e) = entries.get_mut(&key.flat())
                            && e.resolved == refused
                        {
                            e.successes = 0;
                            e.last_failure = Some(reason);
                            e.updated_at = file.at;
                        }
                    }
                    CacheEvent::Forgotten { key } => {
                        entries.remove(&key.flat());
                    }
                }
            }
        }
        cache.entries = entries.into_values().collect();
        cache
    }

    /// The entry for `key`.
    pub fn get(&self, key: &EntryKey) -> Option<&Entry> {
        self.entries.iter().find(|e| &e.key == key)
    }

    /// Reads and folds every event file of `workflow_id`. An unreadable
    /// file is skipped with a warning (it cannot make the cache wrong,
    /// only colder).
    pub async fn load(store: &Arc<dyn ArtifactStore>, workflow_id: &str) -> Result<Self, WorkflowError> {
        let prefix = format!("{}/actions/", workflow_prefix(workflow_id));
        let keys = store
            .list(&prefix)
            .await
            .map_err(|e| WorkflowError::Store(e.to_string()))?;
        let mut files = Vec::new();
        for key in keys.iter().filter(|k| k.ends_with(".json")) {
            let body = match store.get(key).await {
                Ok(b) => b,
                Err(e) => {
                    tracing::warn!(%key, error = %e, "action cache file unreadable");
                    continue;
                }
            };
            match serde_json::from_slice::<EventFile>(&body) {
                Ok(f) => files.push(f),
                Err(e) => tracing::warn!(%key, error = %e, "action cache file is not an event file"),
            }
        }
        Ok(Self::fold(workflow_id, files))
    }

    /// Writes one run's events under its own key, then the folded view.
    pub async fn save(store: &Arc<dyn ArtifactStore>, file: &EventFile) -> Result<(), WorkflowError> {
        let prefix = workflow_prefix(&file.workflow_id);
        let key = format!(
            "{prefix}/actions/{}-{}.json",
            file.at.format("%Y%m%dT%H%M%S%.6fZ"),
            file.session_id
        );
        let body = serde_json::to_vec_pretty(file).map_err(|e| WorkflowError::Store(e.to_string()))?;
        store
            .put(&key, Bytes::from(body), "application/json")
            .await
            .map_err(|e| WorkflowError::Store(e.to_string()))?;
        let folded = Self::load(store, &file.workflow_id).await?;
        let body = serde_json::to_vec_pretty(&folded).map_err(|e| WorkflowError::Store(e.to_string()))?;
        store
            .put(
                &format!("{prefix}/actions.json"),
                Bytes::from(body),
                "application/json",
            )
            .await
            .map_err(|e| WorkflowError::Store(e.to_string()))
    }
}

/// `workflows/<id>`.
pub fn workflow_prefix(workflow_id: &str) -> String {
    format!("workflows/{workflow_id}")
}

/// A workflow's id: its name made safe for a key, else a hash of where it
/// starts and what it says.
pub fn workflow_id(name: Option<&str>, start_url: &str, text: &str) -> String {
    if let Some(name) = name {
        let slug: String = name
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '-'
                }
            })
            .collect();
        let slug = slug.trim_matches('-');
        if !slug.is_empty() {
            return slug.chars().take(80).collect();
        }
    }
    // FNV-1a: stable across builds and platforms, unlike std's hasher.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in start_url.bytes().chain([0]).chain(text.bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("wf-{h:016x}")
}

/// [`url_pattern`] of `url`, with the origin left out (`~/path`) when it
/// is `start`'s: where a run on another host of the same application
/// finds the same pages.
pub fn url_pattern_on(url: &str, start: &url::Url) -> String {
    relative_to(url_pattern(url), start)
}

/// A [`url_pattern`] with `start`'s origin taken out (`~/path`), when it
/// begins with it.
pub fn relative_to(pattern: String, start: &url::Url) -> String {
    if !start.origin().is_tuple() {
        return pattern;
    }
    let origin = url_pattern(&start.origin().ascii_serialization());
    let origin = origin.trim_end_matches('/');
    match pattern.strip_prefix(origin) {
        Some(rest) if rest.is_empty() || rest.starts_with(['/', '?']) => format!("~{rest}"),
        _ => pattern,
    }
}

/// A URL with what varies between visits of the same kind of page taken
/// out: query values, the fragment, and path segments that are numbers,
/// UUIDs or long hex (`/orders/123?id=9` → `/orders/*?id=*`).
pub fn url_pattern(url: &str) -> String {
    let Ok(u) = url::Url::parse(url) else {
        return url.to_string();
    };
    let mut out = match u.host_str() {
        Some(host) => match u.port() {
            Some(p) => format!("{}://{host}:{p}", u.scheme()),
            None => format!("{}://{host}", u.scheme()),
        },
        None => format!("{}:", u.scheme()),
    };
    let variable = |seg: &str| {
        !seg.is_empty()
            && (seg.chars().all(|c| c.is_ascii_digit())
                || (seg.len() >= 16 && seg.chars().all(|c| c.is_ascii_hexdigit() || c == '-')))
    };
    let segs: Vec<&str> = u.path().split('/').collect();
    out.push_str(
        &segs
            .iter()
            .map(|s| if variable(s) { "*" } else { s })
            .collect::<Vec<_>>()
            .join("/"),
    );
    let mut names: Vec<String> = u.query_pairs().map(|(k, _)| k.into_owned()).collect();
    names.sort();
    names.dedup();
    if !names.is_empty() {
        out.push('?');
        out.push_str(
            &names
                .iter()
                .map(|n| format!("{n}=*"))
                .collect::<Vec<_>>()
                .join("&"),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolved(name: &str) -> Resolved {
        Resolved {
            locator: Locator::Role {
                role: "button".into(),
                name: Some(name.into()),
                exact: false,
            },
            action: Action::Click,
            value: None,
            fingerprint: Fingerprint {
                role: Some("button".into()),
                name: name.into(),
                landmarks: vec!["form \"Profile\"".into(), "main".into()],
            },
            url_after: "http://a.test/done".into(),
        }
    }

    fn file(session: &str, secs: i64, events: Vec<CacheEvent>) -> EventFile {
        EventFile {
            workflow_id: "w".into(),
            session_id: session.into(),
            at: DateTime::from_timestamp(1_700_000_000 + secs, 0).unwrap(),
            start_url: "http://a.test/".into(),
            checklist: vec!["[] Click Save".into()],
            events,
        }
    }

    #[test]
    fn pages_on_the_start_origin_are_keyed_by_their_path() {
        let staging: url::Url = "http://staging.test:8080/app/login".parse().unwrap();
        let production: url::Url = "https://shop.test/app/login".parse().unwrap();
        assert_eq!(
            url_pattern_on("http://staging.test:8080/orders/12?id=3", &staging),
            "~/orders/*?id=*"
        );
        assert_eq!(
            url_pattern_on("https://shop.test/orders/7?id=1", &production),
            "~/orders/*?id=*"
        );
        assert_eq!(
            EntryKey::on(&staging, "http://staging.test:8080/app/profile", "[] Save"),
            EntryKey::on(&production, "https://shop.test/app/profile", "[] Save")
        );
        // Another host (a look-alike, a login provider) keeps its origin.
        assert_eq!(
            url_pattern_on("https://shop.test.evil.example/app/profile", &production),
            "https://shop.test.evil.example/app/profile"
        );
        assert_eq!(
            url_pattern_on("http://staging.test:8081/app/profile", &staging),
            "http://staging.test:8081/app/profile"
        );
        assert_eq!(
            relative_to(url_pattern("http://staging.test:8080/app"), &staging),
            "~/app"
        );
    }

    #[test]
    fn url_patterns_drop_what_varies() {
        assert_eq!(
            url_pattern("http://127.0.0.1:8080/app/item?id=1&q=x#top"),
            "http://127.0.0.1:8080/app/item?id=*&q=*"
        );
        assert_eq!(
            url_pattern("https://shop.test/orders/12345/items/0b7c6f0e-0d4e-4a8e-9c1e-1a2b3c4d5e6f"),
            "https://shop.test/orders/*/items/*"
        );
        assert_eq!(
            url_pattern("https://shop.test/v2/cart"),
            "https://shop.test/v2/cart"
        );
    }

    #[test]
    fn workflow_ids_are_stable_and_safe() {
        assert_eq!(workflow_id(Some("login flow/1"), "u", "t"), "login-flow-1");
        let a = workflow_id(None, "http://a.test/", "Click Save");
        assert_eq!(a, workflow_id(None, "http://a.test/", "Click Save"));
        assert_ne!(a, workflow_id(None, "http://a.test/", "Click Cancel"));
        assert!(a.starts_with("wf-") && a.len() == 19, "{a}");
    }

    #[test]
    fn folding_counts_consistent_successes_and_resets_on_change_or_failure() {
        let key = EntryKey::new("http://a.test/profile?u=1", "[] Click Save");
        assert_eq!(key.url_pattern, "http://a.test/profile?u=*");
        assert_eq!(key.instruction, "Click Save");
        let ok = |name: &str| CacheEvent::Success {
            key: key.clone(),
            resolved: resolved(name),
        };
        // Out of order on purpose: folding sorts by time.
        let files = vec![file("s2", 2, vec![ok("Save")]), file("s1", 1, vec![ok("Save")])];
        let c = ActionCache::fold("w", files.clone());
        assert_eq!(c.runs, 2);
        assert_eq!(c.get(&key).unwrap().successes, 2);

        let mut more = files.clone();
        more.push(file(
            "s3",
            3,
            vec![
                CacheEvent::Failure {
                    key: key.clone(),
                    refused: resolved("Save"),
                    reason: "matched 2".into(),
                },
                // A failure of an action the entry no longer holds changes nothing.
                CacheEvent::Failure {
                    key: key.clone(),
                    refused: resolved("Older"),
                    reason: "stale".into(),
                },
            ],
        ));
        let c = ActionCache::fold("w", more.clone());
        assert_eq!(c.get(&key).unwrap().successes, 0);
        assert_eq!(c.get(&key).unwrap().last_failure.as_deref(), Some("matched 2"));

        more.push(file("s4", 4, vec![ok("Save changes")]));
        let c = ActionCache::fold("w", more);
        let e = c.get(&key).unwrap();
        assert_eq!(e.successes, 1);
        assert_eq!(e.resolved.fingerprint.name, "Save changes");
        assert!(e.last_failure.is_none());
    }

    #[test]
    fn a_forgotten_entry_is_decided_again() {
        let key = EntryKey::new("http://a.test/profile", "Click Save");
        let ok = CacheEvent::Success {
            key: key.clone(),
            resolved: resolved("Save"),
        };
        // The event file the dashboard writes, as it writes it.
        let forget: EventFile = serde_json::from_value(serde_json::json!({
            "workflow_id": "w", "session_id": "forget-1a2b3c4d", "at": "2023-11-14T22:13:22Z",
            "start_url": "", "checklist": [],
            "events": [{"event": "forgotten", "key": serde_json::to_value(&key).unwrap()}],
        }))
        .unwrap();
        let mut files = vec![file("s1", 1, vec![ok.clone()]), forget];
        let c = ActionCache::fold("w", files.clone());
        assert!(c.get(&key).is_none());
        assert!(
            !c.start_url.is_empty(),
            "a forget file keeps the workflow's start"
        );
        files.push(file("s3", 3, vec![ok]));
        assert_eq!(ActionCache::fold("w", files).get(&key).unwrap().successes, 1);
    }

    #[test]
    fn fingerprints_tell_look_alikes_apart() {
        let a = resolved("Save").fingerprint;
        let mut b = a.clone();
        b.name = "  save ".into();
        assert_eq!(a.differs(&b), None);
        b.landmarks = vec!["complementary \"Newsletter\"".into()];
        let why = a.differs(&b).unwrap();
        assert!(why.contains("Newsletter") && why.contains("Profile"), "{why}");
    }
}
