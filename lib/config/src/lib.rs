//! The `oxwright` configuration shared by every binary (the CLI, workers,
//! the scheduler, the Lambda functions) and what a binary builds from it
//! before it runs anything ([`Setup`]), with the binaries' allocator and
//! runtime ([`heap`]).
//!
//! The configuration is composed of the sections their crates declare:
//! `[queue]` in the queue crate, `[store]` in the artefacts crate, `[llm]`
//! in the LLM crate, `[fetch]` in the jobs crate, `[policy]` and
//! `[scheduler]` in theirs; `[browser]` here (see [`BrowserSection`]). It
//! is read from a TOML file, then environment overrides from an injected
//! map, then the binary's own overrides (flags). The file
//! is the one `--config` / `OXWRIGHT_CONFIG` names, else the first found of
//! `./oxwright.toml` and `$XDG_CONFIG_HOME/oxwright/config.toml`
//! (`~/.config/oxwright/config.toml` when `XDG_CONFIG_HOME` is unset);
//! `oxwright.example.toml` at the repository root lists every key with its
//! default.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context;
use oxwright_artifacts::StoreSection;
use oxwright_jobs::FetchDefaults;
use oxwright_llm::LlmSection;
use oxwright_policy::{HostRule, UrlPolicy};
use oxwright_queue::QueueSection;
use serde::{Deserialize, Serialize};

mod browser;
pub mod heap;
mod setup;

pub use browser::BrowserSection;
pub use setup::{Overrides, Setup, UsageError, parse_s3_location};

/// The whole configuration file.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// The browser pool.
    #[serde(default)]
    pub browser: BrowserSection,
    /// The URL policy.
    #[serde(default)]
    pub policy: UrlPolicy,
    /// Where embedded runs write artefacts.
    #[serde(default = "default_out_dir")]
    pub out_dir: PathBuf,
    /// The job queue of the distributed mode.
    #[serde(default)]
    pub queue: QueueSection,
    /// The artefact store of the distributed mode.
    #[serde(default)]
    pub store: StoreSection,
    /// The LLM of plain-language workflows (`run`, `mcp`'s `run_workflow`).
    #[serde(default)]
    pub llm: LlmSection,
    /// Default fetch options of `fetch`, `batch` and `submit` (flags win).
    #[serde(default)]
    pub fetch: FetchDefaults,
    /// The scheduler daemon's API, schedules and webhooks (the scheduler
    /// crate owns the section).
    #[serde(default)]
    pub scheduler: oxwright_jobs::schedule::SchedulerSection,
}

impl Default for Config {
    /// What an absent file means: every section's defaults, artefacts under
    /// `./oxwright-out` (not the current directory).
    fn default() -> Self {
        Self {
            browser: BrowserSection::default(),
            policy: UrlPolicy::default(),
            out_dir: default_out_dir(),
            queue: QueueSection::default(),
            store: StoreSection::default(),
            llm: LlmSection::default(),
            fetch: Default::default(),
            scheduler: Default::default(),
        }
    }
}

fn default_out_dir() -> PathBuf {
    PathBuf::from("oxwright-out")
}

/// The environment variables that override the file, with the key each sets.
pub const ENV_OVERRIDES: &[(&str, &str)] = &[
    ("OXWRIGHT_OUT", "out_dir"),
    ("CHROME_PATH", "browser.chrome_path"),
    ("CHROME_URL", "browser.chrome_url"),
    ("OXWRIGHT_ALLOW_HOSTS", "policy.allow_hosts (added)"),
    ("OXWRIGHT_AMQP_URL", "queue.amqp_url"),
    ("OXWRIGHT_QUEUE_PREFIX", "queue.prefix"),
    ("OXWRIGHT_S3", "store.s3"),
    ("OXWRIGHT_S3_ENDPOINT", "store.s3_endpoint"),
    (
        "AWS_ENDPOINT_URL",
        "store.s3_endpoint (when OXWRIGHT_S3_ENDPOINT is unset)",
    ),
];

/// The prefix of the one rule every key follows: `OXWRIGHT_<SECTION>__<KEY>`
/// sets `<section>.<key>` (`OXWRIGHT_BROWSER__PAGES_PER_BROWSER=8`,
/// `OXWRIGHT_LLM__MODEL=qwen2.5`, `OXWRIGHT_POLICY__ALLOW_HOSTS='["10.0.0.5"]'`).
pub const ENV_PREFIX: &str = "OXWRIGHT_";

/// Returns the `(variable, key)` pairs of `env` that follow the
/// `OXWRIGHT_<SECTION>__<KEY>` rule, in name order.
pub fn env_keys(env: &BTreeMap<String, String>) -> Vec<(String, String)> {
    env.keys()
        .filter_map(|name| {
            let rest = name.strip_prefix(ENV_PREFIX)?;
            let (section, key) = rest.split_once("__")?;
            if section.is_empty() || key.is_empty() {
                return None;
            }
            let path: Vec<String> = std::iter::once(section)
                .chain(key.split("__"))
                .map(str::to_ascii_lowercase)
                .collect();
            Some((name.clone(), path.join(".")))
        })
        .collect()
}

/// Sets `path` (dotted) in `root` to `raw`, typed like the value it
/// replaces (a number, a boolean, a list: TOML syntax or comma-separated),
/// a string when the key holds one, else whatever `raw` parses as in TOML.
fn set_path(root: &mut toml::Value, path: &str, raw: &str) -> anyhow::Result<()> {
    let parts: Vec<&str> = path.split('.').collect();
    let mut node = root;
    for part in &parts[..parts.len() - 1] {
        let table = node
            .as_table_mut()
            .with_context(|| format!("{path}: {part} is not a section"))?;
        node = table
            .entry(part.to_string())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
    }
    let table = node
        .as_table_mut()
        .with_context(|| format!("{path}: not in a section"))?;
    let leaf = parts[parts.len() - 1];
    let literal = |raw: &str| -> Option<toml::Value> {
        toml::from_str::<toml::Table>(&format!("v = {raw}"))
            .ok()
            .and_then(|mut t| t.remove("v"))
    };
    let value = match table.get(leaf) {
        Some(toml::Value::String(_)) => toml::Value::String(raw.to_string()),
        Some(toml::Value::Array(_)) => match literal(raw) {
            Some(v @ toml::Value::Array(_)) => v,
            _ => toml::Value::Array(
                raw.split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(|s| toml::Value::String(s.to_string()))
                    .collect(),
            ),
        },
        Some(_) => literal(raw).with_context(|| format!("{raw:?} is not a valid value for {path}"))?,
        None => literal(raw).unwrap_or_else(|| toml::Value::String(raw.to_string())),
    };
    table.insert(leaf.to_string(), value);
    Ok(())
}

/// The configuration file's name in the current directory.
pub const LOCAL_CONFIG: &str = "oxwright.toml";

/// Returns the places a configuration file is looked for when no flag
/// names one, in order: `<cwd>/oxwright.toml`, then
/// `$XDG_CONFIG_HOME/oxwright/config.toml` (`$HOME/.config/…` when
/// `XDG_CONFIG_HOME` is unset or empty).
pub fn config_candidates(cwd: &Path, env: &BTreeMap<String, String>) -> Vec<PathBuf> {
    let mut out = vec![cwd.join(LOCAL_CONFIG)];
    let set = |name: &str| env.get(name).filter(|v| !v.trim().is_empty()).map(PathBuf::from);
    let base = set("XDG_CONFIG_HOME").or_else(|| set("HOME").map(|h| h.join(".config")));
    if let Some(base) = base {
        out.push(base.join("oxwright").join("config.toml"));
    }
    out
}

/// Returns the first of [`config_candidates`] that exists.
pub fn discover_config(cwd: &Path, env: &BTreeMap<String, String>) -> Option<PathBuf> {
    config_candidates(cwd, env).into_iter().find(|p| p.is_file())
}

impl Config {
    /// Reads `path` (when given), then applies `env`.
    pub fn load(path: Option<&Path>, env: &BTreeMap<String, String>) -> anyhow::Result<Self> {
        let mut cfg = match path {
            Some(p) => {
                let text = std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
                toml::from_str(&text).with_context(|| format!("parsing {}", p.display()))?
            }
            None => Config::default(),
        };
        // The one rule, variable by variable so an error names its variable.
        for (var, key) in env_keys(env) {
            let mut value = toml::Value::try_from(&cfg).context("the configuration serialises")?;
            set_path(&mut value, &key, env[&var].trim())
                .with_context(|| format!("environment variable {var}"))?;
            // The message alone: the key is named here, toml's "in `key`" after it is not needed.
            cfg = value
                .try_into()
                .map_err(|e: toml::de::Error| anyhow::anyhow!("{}", e.message().trim()))
                .with_context(|| format!("environment variable {var} (sets {key})"))?;
        }
        if let Some(dir) = env.get("OXWRIGHT_OUT").filter(|d| !d.is_empty()) {
            cfg.out_dir = PathBuf::from(dir);
        }
        let set = |name: &str| env.get(name).filter(|v| !v.trim().is_empty()).cloned();
        if let Some(path) = set("CHROME_PATH") {
            cfg.browser.chrome_path = Some(PathBuf::from(path));
        }
        if let Some(url) = set("CHROME_URL") {
            cfg.browser.chrome_url = Some(url);
        }
        if let Some(url) = set("OXWRIGHT_AMQP_URL") {
            cfg.queue.amqp_url = Some(url);
        }
        if let Some(prefix) = set("OXWRIGHT_QUEUE_PREFIX") {
            cfg.queue.prefix = prefix;
        }
        if let Some(s3) = set("OXWRIGHT_S3") {
            cfg.store.s3 = Some(s3);
        }
        if let Some(endpoint) = set("OXWRIGHT_S3_ENDPOINT").or_else(|| set("AWS_ENDPOINT_URL")) {
            cfg.store.s3_endpoint = Some(endpoint);
        }
        if let Some(hosts) = env.get("OXWRIGHT_ALLOW_HOSTS").filter(|h| !h.is_empty()) {
            for host in hosts.split(',').map(str::trim).filter(|h| !h.is_empty()) {
                let rule: HostRule = host
                    .parse()
                    .with_context(|| format!("OXWRIGHT_ALLOW_HOSTS entry {host:?}"))?;
                cfg.policy.allow_hosts.push(rule);
            }
        }
        cfg.check_bounds()?;
        Ok(cfg)
    }

    /// Refuses durations no run could wait out (see `oxwright_jobs::limits`):
    /// a DevTools call deadline or a queue retry delay of `u64::MAX` ms would
    /// park work for ever instead of failing.
    pub fn check_bounds(&self) -> anyhow::Result<()> {
        use oxwright_jobs::limits::{MAX_QUEUE_RETRY_DELAY_MS, MAX_TIMEOUT_MS, check_range};
        let checks = [
            (
                "[browser] call_timeout_ms",
                self.browser.call_timeout_ms,
                1,
                MAX_TIMEOUT_MS,
            ),
            ("[browser] job_memory_mb", self.browser.job_memory_mb, 64, 1 << 20),
            (
                "[browser] job_dom_nodes",
                self.browser.job_dom_nodes,
                1_000,
                1 << 32,
            ),
            (
                "[queue] retry_delay_ms",
                self.queue.retry_delay_ms,
                0,
                MAX_QUEUE_RETRY_DELAY_MS,
            ),
            ("[llm] timeout_ms", self.llm.timeout_ms, 1, MAX_TIMEOUT_MS),
        ];
        for (name, value, min, max) in checks {
            check_range(name, value, min, max).map_err(|e| anyhow::anyhow!("{}", e.message))?;
        }
        self.scheduler
            .check()
            .map_err(|e| anyhow::anyhow!("{}", e.message))?;
        self.fetch.check().map_err(anyhow::Error::msg)
    }
}

#[cfg(test)]
mod tests {
    use oxwright_engine::Isolation;

    use super::*;

    #[test]
    fn file_then_env() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("oxwright.toml");
        std::fs::write(
            &path,
            "out_dir = \"/data/out\"\n[browser]\nbrowsers = 2\nisolation = \"shared\"\nchrome_path = \"/opt/chrome\"\n[policy]\nallow_hosts = [\"127.0.0.1:8080\"]\n",
        )
        .unwrap();
        let env = BTreeMap::from([
            ("CHROME_PATH".to_string(), "/usr/bin/chromium".to_string()),
            (
                "OXWRIGHT_ALLOW_HOSTS".to_string(),
                "10.0.0.5, docs.internal:8443".to_string(),
            ),
        ]);
        let cfg = Config::load(Some(&path), &env).unwrap();
        assert_eq!(cfg.out_dir, PathBuf::from("/data/out"));
        assert_eq!(cfg.policy.allow_hosts.len(), 3);
        assert_eq!(cfg.browser.browsers, 2);
        assert_eq!(cfg.browser.isolation, Isolation::Shared);
        assert_eq!(Config::default().browser.isolation, Isolation::Context);
        assert_eq!(
            cfg.browser.chrome_path,
            Some(PathBuf::from("/usr/bin/chromium")),
            "CHROME_PATH wins over the file"
        );
    }

    #[test]
    fn a_crawl_window_is_set_in_the_scheduler_section_within_its_bounds() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("oxwright.toml");
        let env = BTreeMap::new();
        assert_eq!(Config::default().scheduler.crawl_window, 64);
        std::fs::write(&path, "[scheduler]\ncrawl_window = 256\n").unwrap();
        assert_eq!(
            Config::load(Some(&path), &env).unwrap().scheduler.crawl_window,
            256
        );
        for bad in ["0", "10001"] {
            std::fs::write(&path, format!("[scheduler]\ncrawl_window = {bad}\n")).unwrap();
            let err = Config::load(Some(&path), &env).unwrap_err().to_string();
            assert!(err.contains("[scheduler] crawl_window"), "{err}");
        }
    }

    #[test]
    fn distributed_sections() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("oxwright.toml");
        std::fs::write(
            &path,
            r#"
[queue]
amqp_url = "amqp://file/"
max_attempts = 5
[store]
s3 = "s3://bucket/prefix"
[[scheduler.schedules]]
name = "home"
cron = "0 */5 * * * *"
job = { urls = ["https://example.com/"], options = { content = "full" } }
[[scheduler.webhooks]]
name = "deploy"
secret_env = "DEPLOY_SECRET"
job = { kind = "sitemap", urls = ["example.com"] }
"#,
        )
        .unwrap();
        let env = BTreeMap::from([
            ("OXWRIGHT_AMQP_URL".to_string(), "amqp://env/".to_string()),
            (
                "AWS_ENDPOINT_URL".to_string(),
                "http://127.0.0.1:9000".to_string(),
            ),
        ]);
        let cfg = Config::load(Some(&path), &env).unwrap();
        assert_eq!(cfg.queue.amqp_url.as_deref(), Some("amqp://env/"));
        assert_eq!(cfg.queue.max_attempts, 5);
        assert_eq!(cfg.queue.prefix, "oxwright");
        assert_eq!(cfg.store.s3.as_deref(), Some("s3://bucket/prefix"));
        assert_eq!(cfg.store.s3_endpoint.as_deref(), Some("http://127.0.0.1:9000"));
        assert_eq!(cfg.scheduler.schedules.len(), 1, "the scheduler section is read");
    }

    #[test]
    fn no_file_means_oxwright_out() {
        let cfg = Config::load(None, &BTreeMap::new()).unwrap();
        assert_eq!(cfg.out_dir, PathBuf::from("oxwright-out"));
        assert_eq!(Config::default().out_dir, PathBuf::from("oxwright-out"));
    }

    const EXAMPLE: &str = include_str!("../../../oxwright.example.toml");

    /// Returns `text` with its commented-out settings (`# key = value`,
    /// `# [[table]]`) turned on.
    fn uncommented(text: &str) -> String {
        let setting = |rest: &str| {
            let key = rest.split(" = ").next().unwrap_or_default();
            (rest.contains(" = ")
                && !key.is_empty()
                && key
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'))
                || (rest.starts_with("[[") && rest.ends_with("]]"))
        };
        text.lines()
            .map(|l| match l.strip_prefix("# ") {
                Some(rest) if setting(rest) => rest,
                _ => l,
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Collects the dotted paths of every leaf key of `v`.
    fn leaf_keys(v: &toml::Value, prefix: &str, out: &mut std::collections::BTreeSet<String>) {
        if let toml::Value::Table(t) = v {
            for (k, v) in t {
                let path = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                if matches!(v, toml::Value::Table(_)) {
                    leaf_keys(v, &path, out);
                } else {
                    out.insert(path);
                }
            }
        }
    }

    #[test]
    fn the_example_documents_every_key_with_its_default() {
        // As shipped, the example is the defaults.
        let example: Config = toml::from_str(EXAMPLE).expect("the example parses strictly");
        let defaults = toml::Value::try_from(Config::default()).unwrap();
        assert_eq!(toml::Value::try_from(&example).unwrap(), defaults);
        // With its commented-out settings on, it still parses strictly (every
        // documented key is real) and holds every key a default has.
        let full: Config = toml::from_str(&uncommented(EXAMPLE)).expect("the uncommented example parses");
        assert!(full.queue.amqp_url.is_some() && full.store.s3_region.is_some());
        assert!(full.browser.chrome_path.is_some() && full.browser.chrome_url.is_some());
        assert!(full.llm.base_url.is_some() && full.llm.api_key_env.is_some());
        // Keys as written in the file, not as filled in by defaults.
        let written: toml::Value = toml::from_str(&uncommented(EXAMPLE)).unwrap();
        let mut documented = std::collections::BTreeSet::new();
        leaf_keys(&written, "", &mut documented);
        let mut needed = std::collections::BTreeSet::new();
        leaf_keys(&defaults, "", &mut needed);
        let missing: Vec<_> = needed.difference(&documented).collect();
        assert!(missing.is_empty(), "oxwright.example.toml lacks {missing:?}");
    }

    #[test]
    fn a_config_file_is_found_without_a_flag() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path().join("project");
        let xdg = dir.path().join("xdg");
        let home = dir.path().join("home");
        for d in [&cwd, &xdg.join("oxwright"), &home.join(".config/oxwright")] {
            std::fs::create_dir_all(d).unwrap();
        }
        let env = |pairs: &[(&str, &std::path::Path)]| -> BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.display().to_string()))
                .collect()
        };
        let both = env(&[("XDG_CONFIG_HOME", &xdg), ("HOME", &home)]);
        assert_eq!(discover_config(&cwd, &both), None);
        let home_file = home.join(".config/oxwright/config.toml");
        std::fs::write(&home_file, "").unwrap();
        // XDG_CONFIG_HOME replaces ~/.config when it is set.
        assert_eq!(discover_config(&cwd, &both), None);
        assert_eq!(discover_config(&cwd, &env(&[("HOME", &home)])), Some(home_file));
        let xdg_file = xdg.join("oxwright/config.toml");
        std::fs::write(&xdg_file, "").unwrap();
        assert_eq!(discover_config(&cwd, &both), Some(xdg_file));
        let local = cwd.join("oxwright.toml");
        std::fs::write(&local, "").unwrap();
        assert_eq!(discover_config(&cwd, &both), Some(local));
    }

    #[test]
    fn every_key_follows_one_environment_rule() {
        let env = BTreeMap::from([
            ("OXWRIGHT_BROWSER__PAGES_PER_BROWSER".to_string(), "8".to_string()),
            ("OXWRIGHT_BROWSER__ISOLATION".to_string(), "shared".to_string()),
            (
                "OXWRIGHT_BROWSER__MAX_PAGES_PER_BROWSER".to_string(),
                "12".to_string(),
            ),
            (
                "OXWRIGHT_BROWSER__EXTRA_ARGS".to_string(),
                "--mute-audio, --lang=ja".to_string(),
            ),
            ("OXWRIGHT_QUEUE__MAX_ATTEMPTS".to_string(), "5".to_string()),
            ("OXWRIGHT_QUEUE__PREFIX".to_string(), "123".to_string()),
            ("OXWRIGHT_POLICY__ALLOW_PRIVATE".to_string(), "true".to_string()),
            ("OXWRIGHT_LLM__MODEL".to_string(), "qwen2.5-7b".to_string()),
            ("OXWRIGHT_LLM__TIMEOUT_MS".to_string(), "45000".to_string()),
            // Not the rule: the older single names and other OXWRIGHT_ variables.
            ("OXWRIGHT_SECRET_PASSWORD".to_string(), "x".to_string()),
        ]);
        let cfg = Config::load(None, &env).unwrap();
        assert_eq!(cfg.browser.pages_per_browser, 8);
        assert_eq!(cfg.browser.isolation, Isolation::Shared);
        assert_eq!(cfg.browser.max_pages_per_browser, Some(12));
        assert_eq!(cfg.browser.extra_args, vec!["--mute-audio", "--lang=ja"]);
        assert_eq!(cfg.queue.max_attempts, 5);
        assert_eq!(cfg.queue.prefix, "123");
        assert!(cfg.policy.allow_private);
        assert_eq!(cfg.llm.model.as_deref(), Some("qwen2.5-7b"));
        assert_eq!(cfg.llm.timeout_ms, 45_000);
        for (var, value, says) in [
            ("OXWRIGHT_BROWSER__PAGESPERBROWSER", "8", "pagesperbrowser"),
            (
                "OXWRIGHT_QUEUE__MAX_ATTEMPTS",
                "many",
                "OXWRIGHT_QUEUE__MAX_ATTEMPTS",
            ),
            ("OXWRIGHT_NOSUCH__KEY", "1", "nosuch"),
        ] {
            let env = BTreeMap::from([(var.to_string(), value.to_string())]);
            let err = format!("{:#}", Config::load(None, &env).unwrap_err());
            assert!(err.contains(var) && err.contains(says), "{err}");
        }
        // A value its key does not take: the variable, the key and why, on one line.
        for (var, value, says) in [
            ("OXWRIGHT_BROWSER__ISOLATION", "nope", "unknown variant `nope`"),
            ("OXWRIGHT_FETCH__HEADERS", "{}", "credentials: per request"),
        ] {
            let env = BTreeMap::from([(var.to_string(), value.to_string())]);
            let err = format!("{:#}", Config::load(None, &env).unwrap_err());
            assert!(err.contains(var) && err.contains(says), "{err}");
            assert!(!err.contains('\n'), "{err:?}");
        }
    }

    #[test]
    fn unbounded_durations_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("huge.toml");
        for text in [
            "[browser]\ncall_timeout_ms = 9223372036854775807\n",
            "[queue]\nretry_delay_ms = 9223372036854775807\n",
        ] {
            std::fs::write(&path, text).unwrap();
            let err = Config::load(Some(&path), &BTreeMap::new()).unwrap_err();
            assert!(format!("{err:#}").contains("out of range"), "{text}: {err:#}");
        }
    }

    #[test]
    fn unknown_keys_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bad.toml");
        std::fs::write(&path, "[browser]\nbrowserz = 2\n").unwrap();
        let err = Config::load(Some(&path), &BTreeMap::new()).unwrap_err();
        assert!(format!("{err:#}").contains("browserz"), "{err:#}");
    }
}
