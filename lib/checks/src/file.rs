//! The check file, `NAME.check.toml`: its keys, how it is read and
//! validated, and the workflow job a check becomes.
//!
//! ```toml
//! url = "https://shop.example/app/login"
//! steps = """
//! fill: textbox "Username" = {{LOGIN_ID}}
//! fill: textbox "Password" = {{PASSWORD}}
//! click: button "Sign in"
//! expect: text "Plan: Pro"
//! """
//! every = "5m"
//! timeout = "2m"
//! retries = 1
//! tags = ["smoke", "billing"]
//!
//! [alert]
//! after = 2
//! webhook = "https://hooks.example/oxwright"
//! reminder_every = "1h"
//! ```
//!
//! Secrets stay `{{NAME}}` placeholders; nothing here resolves them.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;
use url::{Position, Url};

use crate::error::{CheckError, Invalid, key_at, line_of};
use crate::schedule::{CronSchedule, Schedule, parse_duration};

/// What every check file's name ends with.
pub const CHECK_SUFFIX: &str = ".check.toml";
/// How long one run of a check may take when the file sets no `timeout`.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
/// The longest `timeout` accepted.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(3600);
/// The most `retries` accepted.
pub const MAX_RETRIES: u32 = 10;
/// The wait before the first retry when the file sets no `retry_delay`;
/// each further retry waits twice as long as the one before.
pub const DEFAULT_RETRY_DELAY: Duration = Duration::from_secs(1);
/// The longest wait between two attempts, however many retries.
pub const MAX_RETRY_DELAY: Duration = Duration::from_secs(60);
/// The longest check name.
pub const MAX_NAME_LEN: usize = 64;

/// A check: a workflow with a name, a start URL, a schedule, retries and
/// alert settings, read from `NAME.check.toml`.
#[derive(Debug, Clone, PartialEq)]
pub struct Check {
    /// The name: the file's name without `.check.toml` (a safe store key).
    pub name: String,
    /// The check file.
    pub path: PathBuf,
    /// The page the run starts on (`url`).
    pub url: Url,
    /// The workflow text (`steps`, or the text of `steps_file`); secrets
    /// appear only as `{{NAME}}`.
    pub steps: String,
    /// The steps file, resolved against the check file's directory, when
    /// the steps came from one.
    pub steps_file: Option<PathBuf>,
    /// When the check runs on its own (`every` or `cron`); `None`: only
    /// when triggered.
    pub schedule: Option<Schedule>,
    /// How long one run (one attempt) may take (`timeout`).
    pub timeout: Duration,
    /// How many times a failed run is tried again as a new session
    /// (`retries`, default 0); [`Check::may_retry`] says whether it may be.
    pub retries: u32,
    /// The wait before the first retry (`retry_delay`); it doubles for each further one.
    pub retry_delay: Duration,
    /// When and where a failing check alerts (`[alert]`).
    pub alert: Alert,
    /// A saved login state (Playwright's `storageState` JSON) the run
    /// starts with, resolved against the check file's directory; carried,
    /// not read, here.
    pub storage_state: Option<PathBuf>,
    /// Free-form labels (`tags`); the JUnit report's class name.
    pub tags: Vec<String>,
    /// The JSON Schemas its `extract: FILE.json as NAME` steps read the
    /// page into, read relative to the file the steps are in and checked
    /// as schemas when the check is read.
    pub schemas: std::collections::BTreeMap<String, oxwright_jobs::JsonSchema>,
    /// The lines of the keys [`Check::admit`] may refuse.
    lines: KeyLines,
}

/// Where the keys [`Check::admit`] may refuse are written (1-based lines).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct KeyLines {
    url: usize,
    webhook: Option<usize>,
    storage_state: Option<usize>,
}

/// A check's alert settings (`[alert]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Alert {
    /// Consecutive failed runs before the check counts as failing and alerts (default 1).
    pub after: u32,
    /// Where alerts are posted.
    pub webhook: Option<Url>,
    /// How often a reminder is sent while the check stays failing; none when absent.
    pub reminder_every: Option<Duration>,
}

impl Default for Alert {
    fn default() -> Self {
        Self {
            after: 1,
            webhook: None,
            reminder_every: None,
        }
    }
}

/// The file as written; every value keeps its place for error messages.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCheck {
    url: Spanned<String>,
    steps: Option<Spanned<String>>,
    steps_file: Option<Spanned<String>>,
    every: Option<Spanned<String>>,
    cron: Option<Spanned<String>>,
    timeout: Option<Spanned<String>>,
    retries: Option<Spanned<u32>>,
    retry_delay: Option<Spanned<String>>,
    alert: Option<RawAlert>,
    storage_state: Option<Spanned<String>>,
    #[serde(default)]
    tags: Vec<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAlert {
    after: Option<Spanned<u32>>,
    webhook: Option<Spanned<String>>,
    reminder_every: Option<Spanned<String>>,
}

/// Reads and validates the check file at `path`.
pub fn load(path: &Path) -> Result<Check, CheckError> {
    let text = std::fs::read_to_string(path).map_err(|source| CheckError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let name = name_of(path)?;
    let dir = path.parent().unwrap_or_else(|| Path::new("."));
    parse_in(path, &name, &text, dir, &|p: &Path| std::fs::read_to_string(p))
}

/// Reads every `*.check.toml` under `dir` (and its subdirectories), sorted
/// by path; two files with the same name are refused.
pub fn load_dir(dir: &Path) -> Result<Vec<Check>, CheckError> {
    let mut files = Vec::new();
    collect(dir, &mut files)?;
    files.sort();
    let mut checks: Vec<Check> = Vec::new();
    for file in files {
        let check = load(&file)?;
        if let Some(first) = checks.iter().find(|c| c.name == check.name) {
            return Err(CheckError::Duplicate {
                name: check.name,
                first: first.path.clone(),
                path: file,
            });
        }
        checks.push(check);
    }
    Ok(checks)
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), CheckError> {
    let read = |e| CheckError::Read {
        path: dir.to_path_buf(),
        source: e,
    };
    for entry in std::fs::read_dir(dir).map_err(read)? {
        let path = entry.map_err(read)?.path();
        if path.is_dir() {
            collect(&path, out)?;
        } else if is_check_file(&path) {
            out.push(path);
        }
    }
    Ok(())
}

/// Tells whether `path` names a check file (`*.check.toml`).
pub fn is_check_file(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.len() > CHECK_SUFFIX.len() && n.ends_with(CHECK_SUFFIX))
}

/// Returns the check name of `path`: its file name without `.check.toml`,
/// refused unless it is a safe store key.
pub fn name_of(path: &Path) -> Result<String, CheckError> {
    let invalid = |message: String| {
        CheckError::Invalid(Invalid {
            path: path.to_path_buf(),
            key: None,
            line: None,
            message,
        })
    };
    let file = path
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| invalid("the file name is not UTF-8".into()))?;
    let name = file
        .strip_suffix(CHECK_SUFFIX)
        .ok_or_else(|| invalid(format!("a check file's name ends with `{CHECK_SUFFIX}`")))?;
    validate_name(name).map_err(invalid)?;
    Ok(name.to_string())
}

/// Checks that `name` can be a check's name (and a store key's segment):
/// 1 to 64 ASCII letters, digits, `-`, `_` or `.`, starting with a letter or digit.
pub fn validate_name(name: &str) -> Result<(), String> {
    let ok_start = name.chars().next().is_some_and(|c| c.is_ascii_alphanumeric());
    let ok_chars = name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if name.is_empty() || name.len() > MAX_NAME_LEN || !ok_start || !ok_chars || name.contains("..") {
        return Err(format!(
            "check name `{}` must be 1 to {MAX_NAME_LEN} letters, digits, `-`, `_` or `.`, \
             starting with a letter or digit",
            name.escape_debug()
        ));
    }
    Ok(())
}

/// Parses the text of a check file named `name`, as read from `path`;
/// `steps_file` is read through `read` relative to `dir`.
pub(crate) fn parse_in(
    path: &Path,
    name: &str,
    text: &str,
    dir: &Path,
    read: &dyn Fn(&Path) -> std::io::Result<String>,
) -> Result<Check, CheckError> {
    let at = |key: &str, offset: Option<usize>, message: String| {
        CheckError::Invalid(Invalid {
            path: path.to_path_buf(),
            key: Some(key.to_string()),
            line: offset.map(|o| line_of(text, o)),
            message,
        })
    };
    let raw: RawCheck = toml::from_str(text).map_err(|e| {
        let message = e.message().trim().to_string();
        // A missing key has no place of its own: name it, with no line.
        let missing = message
            .strip_prefix("missing field `")
            .and_then(|r| r.split_once('`'))
            .map(|(key, _)| key.to_string());
        let start = e.span().map(|s| s.start).filter(|_| missing.is_none());
        CheckError::Invalid(Invalid {
            path: path.to_path_buf(),
            key: missing.or_else(|| start.and_then(|s| key_at(text, s))),
            line: start.map(|s| line_of(text, s)),
            message,
        })
    })?;
    let url = parse_url(raw.url.get_ref()).map_err(|m| at("url", Some(raw.url.span().start), m))?;
    let (steps, steps_file) = steps_of(&raw, dir, read, &at)?;
    let schemas = schemas_of(
        &steps,
        steps_file.as_deref().and_then(Path::parent).unwrap_or(dir),
        read,
    )
    .map_err(|message| match &raw.steps_file {
        Some(f) => at("steps_file", Some(f.span().start), message),
        None => at("steps", raw.steps.as_ref().map(|s| s.span().start), message),
    })?;
    let schedule = schedule_of(&raw, &at)?;
    let (timeout, retries, retry_delay) = limits_of(&raw, &at)?;
    let alert = match &raw.alert {
        Some(a) => alert(a, &at)?,
        None => Alert::default(),
    };
    let storage_state = raw.storage_state.as_ref().map(|s| dir.join(s.get_ref()));
    let mut tags = Vec::new();
    for tag in &raw.tags {
        let t = tag.get_ref().trim();
        if t.is_empty() || t.chars().any(char::is_control) {
            return Err(at(
                "tags",
                Some(tag.span().start),
                "a tag is a non-empty line of text".into(),
            ));
        }
        tags.push(t.to_string());
    }
    Ok(Check {
        name: name.to_string(),
        path: path.to_path_buf(),
        url,
        steps,
        steps_file,
        schedule,
        timeout,
        retries,
        retry_delay,
        alert,
        storage_state,
        tags,
        schemas,
        lines: KeyLines {
            url: line_of(text, raw.url.span().start),
            webhook: raw
                .alert
                .as_ref()
                .and_then(|a| a.webhook.as_ref())
                .map(|w| line_of(text, w.span().start)),
            storage_state: raw.storage_state.as_ref().map(|s| line_of(text, s.span().start)),
        },
    })
}

/// The JSON Schemas the `extract: FILE.json` steps of `steps` name,
/// read through `read` relative to `dir`, each checked as a schema.
fn schemas_of(
    steps: &str,
    dir: &Path,
    read: &dyn Fn(&Path) -> std::io::Result<String>,
) -> Result<std::collections::BTreeMap<String, oxwright_jobs::JsonSchema>, String> {
    // A step that does not parse is the run's to report.
    let parsed: Vec<oxwright_steps::StructuredStep> = steps
        .lines()
        .enumerate()
        .map(|(i, line)| (i + 1, line.trim()))
        .filter(|(_, line)| !line.starts_with('#') && oxwright_steps::looks_structured(line))
        .filter_map(|(n, line)| oxwright_steps::StructuredStep::parse(n, line).ok())
        .collect();
    oxwright_steps::read_schemas(&parsed, dir, read)
}

/// The workflow text (inline, or read from `steps_file`) and its file.
fn steps_of(
    raw: &RawCheck,
    dir: &Path,
    read: &dyn Fn(&Path) -> std::io::Result<String>,
    at: &At<'_>,
) -> Result<(String, Option<PathBuf>), CheckError> {
    let (steps, file) = match (&raw.steps, &raw.steps_file) {
        (Some(_), Some(f)) => {
            return Err(at(
                "steps_file",
                Some(f.span().start),
                "give `steps` or `steps_file`, not both".into(),
            ));
        }
        (None, None) => {
            return Err(at(
                "steps",
                None,
                "the check has no steps: give `steps` (the workflow inline) or `steps_file`".into(),
            ));
        }
        (Some(s), None) => (s.get_ref().clone(), None),
        (None, Some(f)) => {
            let file = dir.join(f.get_ref());
            let text = read(&file).map_err(|e| {
                at(
                    "steps_file",
                    Some(f.span().start),
                    format!("reading {}: {e}", file.display()),
                )
            })?;
            (text, Some(file))
        }
    };
    if steps.trim().is_empty() {
        let offset = raw.steps.as_ref().map(|s| s.span().start);
        return Err(at("steps", offset, "the steps are empty".into()));
    }
    Ok((steps, file))
}

/// `every` or `cron`, at most one.
fn schedule_of(raw: &RawCheck, at: &At<'_>) -> Result<Option<Schedule>, CheckError> {
    Ok(match (&raw.every, &raw.cron) {
        (Some(_), Some(c)) => {
            return Err(at(
                "cron",
                Some(c.span().start),
                "give `every` or `cron`, not both".into(),
            ));
        }
        (Some(e), None) => Some(Schedule::Every(
            parse_duration(e.get_ref()).map_err(|m| at("every", Some(e.span().start), m))?,
        )),
        (None, Some(c)) => Some(Schedule::Cron(CronSchedule::parse(c.get_ref()).map_err(|m| {
            at(
                "cron",
                Some(c.span().start),
                format!(
                    "`{}` is not a cron expression (sec min hour day month weekday [year], UTC): {m}",
                    c.get_ref()
                ),
            )
        })?)),
        (None, None) => None,
    })
}

/// `timeout`, `retries` and `retry_delay`, defaults filled in.
fn limits_of(raw: &RawCheck, at: &At<'_>) -> Result<(Duration, u32, Duration), CheckError> {
    let timeout = match &raw.timeout {
        Some(t) => {
            let offset = Some(t.span().start);
            let d = parse_duration(t.get_ref()).map_err(|m| at("timeout", offset, m))?;
            if d > MAX_TIMEOUT {
                return Err(at(
                    "timeout",
                    offset,
                    format!("`{}` is longer than the most a run may take (1h)", t.get_ref()),
                ));
            }
            d
        }
        None => DEFAULT_TIMEOUT,
    };
    let retries = match &raw.retries {
        Some(r) if *r.get_ref() > MAX_RETRIES => {
            return Err(at(
                "retries",
                Some(r.span().start),
                format!("{} retries is more than {MAX_RETRIES}", r.get_ref()),
            ));
        }
        Some(r) => *r.get_ref(),
        None => 0,
    };
    let retry_delay = match &raw.retry_delay {
        Some(d) => parse_duration(d.get_ref())
            .map_err(|m| at("retry_delay", Some(d.span().start), m))?
            .min(MAX_RETRY_DELAY),
        None => DEFAULT_RETRY_DELAY,
    };
    Ok((timeout, retries, retry_delay))
}

type At<'a> = dyn Fn(&str, Option<usize>, String) -> CheckError + 'a;

fn alert(raw: &RawAlert, at: &At<'_>) -> Result<Alert, CheckError> {
    let after = match &raw.after {
        Some(a) if *a.get_ref() == 0 => {
            return Err(at(
                "alert.after",
                Some(a.span().start),
                "`after` counts failed runs: 1 or more".into(),
            ));
        }
        Some(a) => *a.get_ref(),
        None => 1,
    };
    let webhook = match &raw.webhook {
        Some(w) => Some(parse_url(w.get_ref()).map_err(|m| at("alert.webhook", Some(w.span().start), m))?),
        None => None,
    };
    let reminder_every = match &raw.reminder_every {
        Some(r) => Some(
            parse_duration(r.get_ref()).map_err(|m| at("alert.reminder_every", Some(r.span().start), m))?,
        ),
        None => None,
    };
    Ok(Alert {
        after,
        webhook,
        reminder_every,
    })
}

/// An absolute `http` or `https` URL.
fn parse_url(text: &str) -> Result<Url, String> {
    let url = Url::parse(text.trim()).map_err(|e| format!("`{text}` is not an absolute URL ({e})"))?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(format!("`{text}` is not an http or https URL"));
    }
    Ok(url)
}

/// Parses a `--url BASE` deployment origin: an http(s) URL with a host and
/// no path, query or fragment beyond `/` (the path comes from the check).
pub fn parse_base_url(text: &str) -> Result<Url, String> {
    let url = parse_url(text)?;
    if url.path() != "/" || url.query().is_some() || url.fragment().is_some() {
        return Err(format!(
            "`{text}` has a path, query or fragment; give the deployment's origin \
             (scheme, host and port), the path comes from each check"
        ));
    }
    Ok(url)
}

/// Returns `url` with the scheme, host and port of `base`, keeping its
/// path, query and fragment.
pub fn with_origin(url: &Url, base: &Url) -> Url {
    let Some(host) = base.host_str() else {
        return url.clone();
    };
    let port = base.port().map(|p| format!(":{p}")).unwrap_or_default();
    let swapped = format!("{}://{host}{port}{}", base.scheme(), &url[Position::BeforePath..]);
    Url::parse(&swapped).unwrap_or_else(|_| url.clone())
}

impl Check {
    /// Refuses what a run cannot honour, naming the file, the key and its
    /// line: a start URL or an alert webhook `policy` does not allow.
    pub fn admit(&self, policy: &oxwright_policy::UrlPolicy) -> Result<(), CheckError> {
        let at = |key: &str, line: usize, message: String| {
            CheckError::Invalid(crate::Invalid {
                path: self.path.clone(),
                key: Some(key.to_string()),
                line: Some(line),
                message,
            })
        };
        let refused = |key: &str, line: usize, url: &Url, e: oxwright_policy::PolicyError| {
            at(key, line, format!("`{url}` is refused by the URL policy: {e}"))
        };
        policy
            .parse_input(self.url.as_str())
            .map_err(|e| refused("url", self.lines.url, &self.url, e))?;
        if let Some(webhook) = &self.alert.webhook {
            policy.parse_input(webhook.as_str()).map_err(|e| {
                refused(
                    "alert.webhook",
                    self.lines.webhook.unwrap_or(self.lines.url),
                    webhook,
                    e,
                )
            })?;
        }
        Ok(())
    }

    /// An error about the check's `storage_state`, naming the file, the
    /// key and its line.
    pub fn storage_state_error(&self, message: String) -> CheckError {
        CheckError::Invalid(crate::Invalid {
            path: self.path.clone(),
            key: Some("storage_state".into()),
            line: self.lines.storage_state,
            message,
        })
    }

    /// Reads the saved login state the check names and seals it with the
    /// workers' checkpoint key from `env`, as it travels to them in each
    /// run's job; `None` when the check names none. A missing key, an
    /// unreadable or malformed file is an error naming the check's line.
    pub fn sealed_storage_state(
        &self,
        env: &std::collections::BTreeMap<String, String>,
    ) -> Result<Option<String>, CheckError> {
        let Some(path) = &self.storage_state else {
            return Ok(None);
        };
        let refused = |why: String| self.storage_state_error(why);
        let key = oxwright_secrets::CheckpointKey::from_env(env)
            .map_err(refused)?
            .ok_or_else(|| {
                refused(format!(
                    "a saved login travels to the workers sealed: set {} to the workers' checkpoint key",
                    oxwright_secrets::CheckpointKey::ENV
                ))
            })?;
        let (_, bytes) = oxwright_engine::StorageState::read_file(path).map_err(refused)?;
        key.seal(&bytes, oxwright_jobs::STORAGE_STATE_BOUND)
            .map(Some)
            .map_err(refused)
    }

    /// Returns the workflow job this check runs: its steps from the start
    /// URL, with the start URL's origin replaced by `url_override`'s
    /// when one is given (`--url`, a preview deployment).
    pub fn workflow_spec(&self, url_override: Option<&Url>) -> oxwright_jobs::WorkflowSpec {
        let mut spec = oxwright_jobs::WorkflowSpec::new(self.steps.clone(), self.start_url(url_override));
        spec.name = Some(self.name.clone());
        spec.schemas = self.schemas.clone();
        spec
    }

    /// Returns the start URL, its origin replaced by `url_override`'s when given.
    pub fn start_url(&self, url_override: Option<&Url>) -> Url {
        match url_override {
            Some(base) => with_origin(&self.url, base),
            None => self.url.clone(),
        }
    }

    /// Tells whether a failed run may be tried again: never when a step is
    /// marked `once:` (it must not act twice), else while `retries` allow.
    pub fn may_retry(&self) -> bool {
        self.retries > 0 && !self.has_once_step()
    }

    /// Tells whether any step is marked `once:`.
    pub fn has_once_step(&self) -> bool {
        self.steps.lines().any(|line| {
            let line = line.trim();
            !line.starts_with('#')
                && line
                    .split_once(':')
                    .is_some_and(|(word, _)| word.trim().eq_ignore_ascii_case("once"))
        })
    }

    /// Returns the wait before retry number `retry` (1 for the first):
    /// `retry_delay`, doubled for each further retry, at most a minute.
    pub fn retry_wait(&self, retry: u32) -> Duration {
        let factor = 2u32.saturating_pow(retry.saturating_sub(1));
        self.retry_delay.saturating_mul(factor).min(MAX_RETRY_DELAY)
    }

    /// Returns the `{{NAME}}` placeholders the steps use, in order.
    pub fn placeholders(&self) -> Vec<String> {
        oxwright_secrets::placeholders(&self.steps)
    }
}

#[cfg(test)]
#[path = "file_tests.rs"]
mod tests;
