//! Checkpoints: after each step that completed, the run writes
//! `sessions/<id>/checkpoint.json` so that another worker (or a later
//! invocation, or `run --resume`) continues at the next step instead of
//! from the first. The browser state (cookies, storage) and the page's
//! URL are sealed with AES-256-GCM under a key from the worker's
//! configuration ([`CheckpointKey`]), never stored in the clear; the rest
//! (progress, outcomes, totals) is the run's own sanitised record, in the
//! clear but bound to the seal as its associated data, so that a record
//! edited in the store (a step set back, an outcome dropped) does not open.
//! Without a key nothing is sealed and nothing is bound: the checkpoint is
//! the store's word. The checkpoint is deleted when the run ends.

use chrono::{DateTime, Utc};
use oxwright_engine::StorageState;
use oxwright_jobs::{ResumeMark, StepOutcome, WorkflowTotals};
pub use oxwright_secrets::CheckpointKey;
use serde::{Deserialize, Serialize};

use crate::steps::{Workflow, WorkflowBody};

/// The checkpoint's name under `sessions/<id>/`.
pub const CHECKPOINT: &str = "checkpoint.json";

/// The checkpoint format's version. Version 1 sealed the URLs and the
/// browser state only; since version 2 the seal binds every other field.
const VERSION: u32 = 2;

/// The first version whose seal binds the whole record: a sealed
/// checkpoint of an earlier one could have been set back unnoticed, so it
/// is not continued.
const BOUND_SINCE: u32 = 2;

/// Prefixes the associated data, so that a seal made for anything else
/// never opens as a checkpoint's.
const BOUND_LABEL: &[u8] = b"oxwright-checkpoint/2\n";

/// Where the run was and what it carries, sealed.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct Sealed {
    /// The URL of the page the next step starts from.
    pub url: String,
    /// The URL of the document the steps since the last navigation ran on.
    pub document_url: String,
    /// Cookies and storage, when the engine exports them.
    pub state: Option<StorageState>,
}

/// A run's checkpoint.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Checkpoint {
    /// The format's version.
    pub version: u32,
    /// The session.
    pub session_id: String,
    /// The job the run belongs to, when a worker runs it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_id: Option<String>,
    /// A digest of the workflow's steps: a checkpoint of another workflow
    /// is not continued.
    pub workflow_digest: String,
    /// The step to run next (0-based).
    pub next_step: u32,
    /// The first step (0-based) run on the current document: on resume
    /// the document is opened again and the steps since are replayed.
    pub document_step: u32,
    /// The step (0-based) that started an action which may have had an
    /// effect (a click, a key press, a step marked `once:`) and has not
    /// completed yet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acting: Option<u32>,
    /// The checklist.
    pub checklist: Vec<String>,
    /// The outcomes of the steps before `next_step`.
    pub outcomes: Vec<StepOutcome>,
    /// The totals so far.
    pub totals: WorkflowTotals,
    /// The artefact keys written so far.
    pub artifacts: Vec<String>,
    /// When the run started.
    pub started_at: DateTime<Utc>,
    /// The resumes so far.
    #[serde(default)]
    pub resumed: Vec<ResumeMark>,
    /// Written when the run handed itself over before a deadline (rather
    /// than its worker dying).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub handed_over: bool,
    /// The worker that wrote it.
    pub worker: String,
    /// When it was written.
    pub written_at: DateTime<Utc>,
    /// The sealed URL and browser state (base64), when a key is configured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sealed: Option<String>,
    /// Without a key: the URLs, sanitised, and no browser state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) open: Option<Sealed>,
}

impl Checkpoint {
    /// Why a run continues from this checkpoint: `handed_over` when the
    /// run handed itself over, else `redelivered` (its worker stopped).
    pub fn continued_because(&self) -> &'static str {
        if self.handed_over {
            "handed_over"
        } else {
            "redelivered"
        }
    }

    /// Reads the checkpoint's URLs and state. With a key only a sealed
    /// checkpoint of a version that binds its record is read, and only
    /// when neither the seal nor any field beside it was changed: an
    /// unsealed one could have been written by anyone who can write the
    /// store.
    pub(crate) fn unseal(&self, key: Option<&CheckpointKey>) -> Result<Sealed, String> {
        match (&self.sealed, key) {
            (Some(sealed), Some(key)) => {
                if self.version < BOUND_SINCE {
                    return Err(format!(
                        "it is of version {}, whose seal does not cover where the run is; \
                         this build continues version {BOUND_SINCE} and later: run the workflow again",
                        self.version
                    ));
                }
                let plain = key.open(sealed, &self.bound()?)?;
                serde_json::from_slice(&plain).map_err(|e| e.to_string())
            }
            (Some(_), None) => Err(format!(
                "the checkpoint's browser state is sealed and this worker has no key ({})",
                CheckpointKey::ENV
            )),
            (None, Some(_)) => Err(format!(
                "it is not sealed and this worker has a key ({}), so nothing shows it was not \
                 edited; continue it without the key, or run the workflow again",
                CheckpointKey::ENV
            )),
            (None, None) => self
                .open
                .clone()
                .ok_or_else(|| "the checkpoint holds no URL".to_string()),
        }
    }

    /// Puts the URLs and state in: sealed with `key`, binding every other
    /// field as it stands (set them first), or without one the URLs only
    /// (sanitised by the caller) and no state.
    pub(crate) fn seal(&mut self, inner: Sealed, key: Option<&CheckpointKey>) -> Result<(), String> {
        // Durations kept to the microsecond read back as the same numbers
        // (and so bind the same bytes) after a trip through JSON.
        self.totals.duration_ms = to_micros(self.totals.duration_ms);
        for outcome in &mut self.outcomes {
            outcome.duration_ms = to_micros(outcome.duration_ms);
        }
        self.sealed = None;
        self.open = None;
        self.version = VERSION;
        match key {
            Some(key) => {
                let plain = serde_json::to_vec(&inner).map_err(|e| e.to_string())?;
                self.sealed = Some(key.seal(&plain, &self.bound()?)?);
            }
            None => self.open = Some(Sealed { state: None, ..inner }),
        }
        Ok(())
    }

    /// The associated data of the seal: every field but the seal itself,
    /// as canonical JSON (keys sorted), so that changing any of them
    /// (`next_step`, `acting`, `outcomes`, the workflow's digest, the job
    /// …) makes the seal refuse to open.
    fn bound(&self) -> Result<Vec<u8>, String> {
        let mut value = serde_json::to_value(self).map_err(|e| e.to_string())?;
        if let Some(fields) = value.as_object_mut() {
            fields.remove("sealed");
        }
        let mut out = BOUND_LABEL.to_vec();
        canonical(&value, &mut out);
        Ok(out)
    }

    /// The format's version this build writes.
    pub(crate) fn current_version() -> u32 {
        VERSION
    }
}

/// `ms` rounded to the microsecond: at most 15 significant digits, which
/// JSON's shortest form writes and reads back exactly.
fn to_micros(ms: f64) -> f64 {
    (ms * 1000.0).round() / 1000.0
}

/// Writes `value` as JSON with every object's keys sorted, whatever order
/// the map keeps them in.
fn canonical(value: &serde_json::Value, out: &mut Vec<u8>) {
    match value {
        serde_json::Value::Object(fields) => {
            let mut names: Vec<&String> = fields.keys().collect();
            names.sort();
            out.push(b'{');
            for (i, name) in names.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(serde_json::Value::from(name.as_str()).to_string().as_bytes());
                out.push(b':');
                canonical(&fields[name], out);
            }
            out.push(b'}');
        }
        serde_json::Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                canonical(item, out);
            }
            out.push(b']');
        }
        scalar => out.extend_from_slice(scalar.to_string().as_bytes()),
    }
}

/// A digest of the workflow's steps (FNV-1a over their text).
pub fn workflow_digest(workflow: &Workflow) -> String {
    let text = match &workflow.body {
        WorkflowBody::Plain(text) => text.clone(),
        WorkflowBody::Structured(steps) => steps
            .iter()
            .map(|s| s.text.as_str())
            .collect::<Vec<_>>()
            .join("\n"),
    };
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// What a run needs to write checkpoints and to continue from one.
#[derive(Debug, Clone, Default)]
pub struct Checkpoints {
    /// Seals the browser state; without one, checkpoints carry progress
    /// and URLs only.
    pub key: Option<CheckpointKey>,
    /// The job the run belongs to.
    pub job_id: Option<String>,
    /// Names this worker in checkpoints and resume marks.
    pub worker: String,
    /// Continue from this checkpoint, and why (`redelivered`,
    /// `handed_over`, `by_hand`).
    pub resume: Option<(Checkpoint, String)>,
    /// Hand the rest of the run over (stop before a step, keeping the
    /// checkpoint) once this time is near: an invocation's deadline.
    pub stop_by: Option<std::time::Instant>,
}

impl Checkpoints {
    /// Checkpoints written by `worker`, sealed with `key`.
    pub fn new(key: Option<CheckpointKey>, worker: impl Into<String>) -> Self {
        Self {
            key,
            worker: worker.into(),
            ..Self::default()
        }
    }
}

/// Names this process: `host:pid`.
pub fn this_worker() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "localhost".into());
    format!("{host}:{}", std::process::id())
}

#[cfg(test)]
mod tests {
    use oxwright_jobs::RunStatus;
    use serde_json::{Value, json};

    use super::*;

    fn key() -> CheckpointKey {
        CheckpointKey::parse(&"ab".repeat(32)).unwrap()
    }

    fn outcome(number: u32, ms: f64) -> StepOutcome {
        StepOutcome {
            step_number: number,
            instruction: format!("[] step {number}"),
            status: RunStatus::Completed,
            attempts: 1,
            reasons: Vec::new(),
            prompt_tokens: 0,
            completion_tokens: 0,
            duration_ms: ms,
            screenshot: None,
            source: None,
            else_reason: None,
            output: None,
        }
    }

    /// A run past a finished click (step 3), resumed once before.
    fn checkpoint() -> Checkpoint {
        Checkpoint {
            version: VERSION,
            session_id: "s".into(),
            job_id: Some("job-1".into()),
            workflow_digest: "d".into(),
            next_step: 4,
            document_step: 3,
            acting: None,
            checklist: (1..=6).map(|n| format!("[] step {n}")).collect(),
            outcomes: (1..=4).map(|n| outcome(n, 12.5)).collect(),
            totals: WorkflowTotals {
                steps_ok: 4,
                attempts: 4,
                duration_ms: 2_000.25,
                ..WorkflowTotals::default()
            },
            artifacts: vec!["sessions/s/steps.jsonl".into()],
            started_at: Utc::now(),
            resumed: vec![ResumeMark {
                at_step: 2,
                reason: "redelivered".into(),
                worker: "w0".into(),
                in_flight: None,
                state_restored: true,
                at: Utc::now(),
            }],
            handed_over: false,
            worker: "w".into(),
            written_at: Utc::now(),
            sealed: None,
            open: None,
        }
    }

    fn inner() -> Sealed {
        Sealed {
            url: "http://a.test/x?signed=1".into(),
            document_url: "http://a.test/x?signed=1".into(),
            state: None,
        }
    }

    /// The checkpoint as the store holds it, read back.
    fn stored(cp: &Checkpoint, edit: impl FnOnce(&mut Value)) -> Checkpoint {
        let mut value: Value = serde_json::from_slice(&serde_json::to_vec(cp).unwrap()).unwrap();
        edit(&mut value);
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn sealed_state_opens_only_with_its_key_and_shows_nothing_in_the_clear() {
        let state = StorageState {
            cookies: vec![
                serde_json::json!({"name": "sid", "value": "COOKIE-SECRET-VALUE", "domain": "a.test"}),
            ],
            origins: Vec::new(),
        };
        let mut cp = checkpoint();
        let inner = Sealed {
            url: "http://a.test/x?token=URL-SECRET".into(),
            document_url: "http://a.test/x".into(),
            state: Some(state.clone()),
        };
        cp.seal(inner, Some(&key())).unwrap();
        let text = serde_json::to_string(&cp).unwrap();
        assert!(
            !text.contains("COOKIE-SECRET-VALUE") && !text.contains("URL-SECRET"),
            "{text}"
        );
        let back = stored(&cp, |_| {}).unseal(Some(&key())).unwrap();
        assert_eq!(back.state, Some(state));
        let other = CheckpointKey::parse(&"cd".repeat(32)).unwrap();
        assert!(cp.unseal(Some(&other)).is_err());
        assert!(cp.unseal(None).unwrap_err().contains(CheckpointKey::ENV));
    }

    #[test]
    fn a_checkpoint_edited_beside_its_seal_does_not_open() {
        let mut cp = checkpoint();
        cp.seal(inner(), Some(&key())).unwrap();
        assert_eq!(stored(&cp, |_| {}).unseal(Some(&key())).unwrap().url, inner().url);
        // Set back to before the finished click, the seal untouched.
        let rewound = stored(&cp, |v| {
            v["next_step"] = json!(2);
            v["document_step"] = json!(1);
            v["outcomes"].as_array_mut().unwrap().truncate(2);
        });
        let err = rewound.unseal(Some(&key())).unwrap_err();
        assert!(err.contains("edited"), "{err}");
        // Each field on its own.
        let edits: Vec<(&str, Value)> = vec![
            ("next_step", json!(3)),
            ("document_step", json!(0)),
            ("acting", json!(3)),
            ("checklist", json!(["[] step 1"])),
            ("outcomes", json!([])),
            ("workflow_digest", json!("e")),
            ("session_id", json!("t")),
            ("job_id", json!("job-2")),
            ("resumed", json!([])),
            (
                "totals",
                json!({"steps": 0, "steps_ok": 0, "attempts": 0, "llm_calls": 0,
                "prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0, "duration_ms": 0.0}),
            ),
            ("artifacts", json!([])),
            ("handed_over", json!(true)),
            ("worker", json!("x")),
            ("started_at", json!("2020-01-01T00:00:00Z")),
            ("written_at", json!("2020-01-01T00:00:00Z")),
            (
                "open",
                json!({"url": "http://a.test/", "document_url": "http://a.test/", "state": null}),
            ),
        ];
        for (field, value) in edits {
            let edited = stored(&cp, |v| v[field] = value.clone());
            assert!(
                edited.unseal(Some(&key())).is_err(),
                "{field} set to {value} still opens"
            );
        }
        // An outcome's status turned, deep inside.
        let edited = stored(&cp, |v| v["outcomes"][3]["status"] = json!("failed"));
        assert!(edited.unseal(Some(&key())).is_err());
    }

    #[test]
    fn with_a_key_an_unsealed_or_version_1_checkpoint_is_refused() {
        // Its seal stripped and the URLs written in the clear.
        let mut cp = checkpoint();
        cp.seal(inner(), Some(&key())).unwrap();
        let stripped = stored(&cp, |v| {
            v.as_object_mut().unwrap().remove("sealed");
            v["open"] = json!({"url": "http://a.test/", "document_url": "http://a.test/", "state": null});
        });
        let err = stripped.unseal(Some(&key())).unwrap_err();
        assert!(err.contains("not sealed"), "{err}");
        // Without a key the same checkpoint is continued: it is the store's word.
        assert_eq!(stripped.unseal(None).unwrap().url, "http://a.test/");
        // Version 1 sealed the URLs and state under a fixed label only.
        let mut old = checkpoint();
        old.version = 1;
        let plain = serde_json::to_vec(&inner()).unwrap();
        old.sealed = Some(key().seal(&plain, b"oxwright-checkpoint").unwrap());
        let err = stored(&old, |_| {}).unseal(Some(&key())).unwrap_err();
        assert!(err.contains("version 1"), "{err}");
    }

    #[test]
    fn durations_bind_the_same_bytes_after_a_trip_through_json() {
        let k = key();
        for i in 1..500u32 {
            let mut cp = checkpoint();
            let ms = f64::from(i) * 1_234.567_891 / 7.0 + 1.0 / f64::from(i);
            cp.totals.duration_ms = ms * 1_000.0;
            cp.outcomes.iter_mut().for_each(|o| o.duration_ms = ms);
            cp.seal(inner(), Some(&k)).unwrap();
            let back: Checkpoint = serde_json::from_str(&serde_json::to_string(&cp).unwrap()).unwrap();
            assert!(back.unseal(Some(&k)).is_ok(), "{ms} does not bind the same bytes");
        }
    }

    #[test]
    fn canonical_json_sorts_keys_at_every_depth() {
        let mut out = Vec::new();
        canonical(&json!({"b": [{"z": 1, "a": "x"}], "a": null}), &mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"a":null,"b":[{"a":"x","z":1}]}"#
        );
    }
}
