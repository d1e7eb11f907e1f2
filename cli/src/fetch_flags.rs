//! The fetch flags of `fetch`, `batch` and `submit fetch`, every one
//! generated from its option's declaration ([`oxwright_jobs::options`]):
//! an option added to `FetchSpec` is a flag with nothing else to change.
//! Its long name is the option's in kebab case (or its form's), its help
//! the first paragraph of the option's doc with its default, and its
//! values are checked when the command line is read against the option's
//! type and bounds, as the job JSON's would be.
//!
//! How a value is written follows the option's type: a boolean off by
//! default is a switch (`--keep-overlays`; `--headless false` for one on
//! by default), a list takes its items comma-separated or repeated
//! (strings only repeated: a selector may hold a comma), an object takes
//! JSON, anything else its plain value. The few options written in a
//! syntax of their own (`--header 'NAME: VALUE'`, `--viewport 800x600`,
//! `--headed` …) follow their form in [`oxwright_jobs::options::FORMS`].

use clap::builder::PossibleValuesParser;
use clap::parser::ValueSource;
use clap::{Arg, ArgAction, ArgMatches, Args, Command, FromArgMatches};
use oxwright_jobs::options::{self, CREDENTIALS_HOST_VALUE, FetchOption, Syntax};
use oxwright_jobs::{FetchDefaults, FetchPatch, FetchSpec};
use serde_json::{Map, Value, json};

/// The fetch options with their faces, read once a process (every command
/// line is built with the fetch flags of three subcommands).
fn all() -> &'static [FetchOption] {
    static OPTIONS: std::sync::LazyLock<Vec<FetchOption>> = std::sync::LazyLock::new(options::fetch_options);
    &OPTIONS
}

/// The id a flag's value is kept under: apart from every other flag's.
const ID_PREFIX: &str = "option:";

/// The id of `--storage-state`, whose file's cookies join `--cookie`'s.
const STORAGE_STATE_ID: &str = "storage-state";

/// The id of the companion flag naming the host a credentials flag's
/// credentials go to.
fn host_id(option: &str) -> String {
    format!("{ID_PREFIX}{option}:host")
}

/// The fetch options given on the command line (or in their environment
/// variable), as a patch over a spec.
#[derive(Debug, Clone, Default)]
pub struct FetchArgs {
    /// The options given, checked against their fields.
    pub patch: FetchPatch,
}

impl FetchArgs {
    /// Builds a spec for `url` from these flags, with `[fetch]`'s keys for
    /// the options no flag set.
    pub fn spec_with(&self, url: url::Url, defaults: &FetchDefaults) -> FetchSpec {
        let mut spec = FetchSpec::new(url);
        if let Err(e) = defaults.apply(&mut spec, |key| self.patch.keys().any(|k| k == key)) {
            tracing::warn!(error = %e, "[fetch] not applied");
        }
        // Checked against their fields when the command line was read.
        if let Err(e) = self.patch.apply(&mut spec) {
            tracing::warn!(error = %e, "a fetch flag not applied");
        }
        spec
    }
}

impl Args for FetchArgs {
    fn augment_args(cmd: Command) -> Command {
        let mut cmd = cmd;
        for option in all() {
            cmd = cmd.arg(flag(option));
            if option.syntax() == Syntax::Credentials {
                cmd = cmd.arg(
                    Arg::new(host_id(&option.name))
                        .long(format!("{}-host", option.long()))
                        .value_name(CREDENTIALS_HOST_VALUE)
                        .requires(format!("{ID_PREFIX}{}", option.name))
                        .help(format!(
                            "The host[:port] the --{} credentials go to (by default the fetched URL's).",
                            option.long()
                        )),
                );
            }
        }
        cmd.arg(
            Arg::new(STORAGE_STATE_ID)
                .long("storage-state")
                .value_name("FILE")
                .help(
                    "Fetch signed in: the cookies of a saved login, a Playwright `storageState` JSON file \
                     (as `oxwright run --save-storage-state` writes), each to its own domain and path, a \
                     Secure one over HTTPS (or to loopback) only; expired ones are left out. Its localStorage is not \
                     restored: a site that keeps its login there needs `oxwright run --storage-state`.",
                ),
        )
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        Self::augment_args(cmd)
    }
}

/// Whether `id`'s value came from the command line or its variable (not
/// from nowhere).
fn given(matches: &ArgMatches, id: &str) -> bool {
    matches.try_contains_id(id).unwrap_or(false)
        && matches!(
            matches.value_source(id),
            Some(ValueSource::CommandLine | ValueSource::EnvVariable)
        )
}

fn raw_values(matches: &ArgMatches, id: &str) -> Vec<String> {
    matches
        .get_raw(id)
        .into_iter()
        .flatten()
        .map(|v| v.to_string_lossy().into_owned())
        .collect()
}

impl FromArgMatches for FetchArgs {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        let mut object = Map::new();
        for option in all() {
            let id = format!("{ID_PREFIX}{}", option.name);
            if !given(matches, &id) {
                continue;
            }
            let mut value = value_of(option, &raw_values(matches, &id)).map_err(invalid)?;
            let host = host_id(&option.name);
            if let (Value::Object(v), true) = (&mut value, given(matches, &host)) {
                let host = raw_values(matches, &host).pop().unwrap_or_default();
                v.insert("host".into(), Value::String(host));
            }
            object.insert(option.name.clone(), value);
        }
        if given(matches, STORAGE_STATE_ID) {
            let path = raw_values(matches, STORAGE_STATE_ID).pop().unwrap_or_default();
            let saved = storage_state_cookies(std::path::Path::new(&path)).map_err(invalid)?;
            let cookies = object
                .entry("cookies")
                .or_insert_with(|| Value::Array(Vec::new()));
            if let Value::Array(cookies) = cookies {
                cookies.extend(saved);
            }
        }
        let patch = FetchPatch::from_object(object, &[]).map_err(|e| invalid(e.to_string()))?;
        // Each flag was checked alone; what holds between flags is checked here.
        let mut spec =
            FetchSpec::new(url::Url::parse("https://example.invalid/").expect("a fixed URL parses"));
        patch.apply(&mut spec).map_err(|e| invalid(e.to_string()))?;
        spec.validate_together().map_err(|e| invalid(e.message))?;
        Ok(Self { patch })
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(matches)?;
        Ok(())
    }
}

/// The cookies of the saved login at `path` as the job JSON's `cookies`
/// items: each with its domain and path, `secure` when it is; a cookie
/// whose `expires` has passed is left out (`-1`, a session cookie, is kept).
fn storage_state_cookies(path: &std::path::Path) -> Result<Vec<Value>, String> {
    let (state, _) =
        oxwright_engine::StorageState::read_file(path).map_err(|e| format!("storage state {e}"))?;
    let now = chrono::Utc::now().timestamp() as f64;
    Ok(state
        .cookies
        .iter()
        .filter(|c| {
            c.get("expires")
                .and_then(Value::as_f64)
                .is_none_or(|at| at <= 0.0 || at > now)
        })
        .map(|c| {
            let text = |key: &str| c.get(key).and_then(Value::as_str).unwrap_or_default();
            let mut cookie =
                json!({ "name": text("name"), "value": text("value"), "domain": text("domain") });
            if !text("path").is_empty() {
                cookie["path"] = json!(text("path"));
            }
            if c.get("secure").and_then(Value::as_bool) == Some(true) {
                cookie["secure"] = json!(true);
            }
            cookie
        })
        .collect())
}

fn invalid(message: String) -> clap::Error {
    clap::Error::raw(clap::error::ErrorKind::ValueValidation, format!("{message}\n"))
}

/// Checks one value of `option`'s flag: its syntax, its type and its bounds.
fn check(option: &FetchOption, raw: &str) -> Result<(), String> {
    let one = value_of(option, &[raw.to_string()])?;
    let patch = FetchPatch::from_object(Map::from_iter([(option.name.clone(), one)]), &[])
        .map_err(|e| e.to_string())?;
    let mut spec = FetchSpec::new(url::Url::parse("https://example.invalid/").expect("a fixed URL parses"));
    patch.apply(&mut spec).map_err(|e| e.to_string())?;
    spec.validate_each().map_err(|e| e.message)
}

/// The flag of `option`, shaped by its form and its schema.
fn flag(option: &'static FetchOption) -> Arg {
    let mut help = option.summary();
    if let Some(default) = option.default_text() {
        help.push_str(&format!(" [default: {default}]"));
    }
    let mut arg = Arg::new(format!("{ID_PREFIX}{}", option.name))
        .long(option.long())
        .help(help);
    if let Some(form) = option.form {
        if let Some(alias) = form.alias {
            arg = arg.visible_alias(alias);
        }
        if let Some(env) = form.env {
            arg = arg.env(env).hide_env_values(true);
        }
    }
    if option.is_switch() {
        return arg.action(ArgAction::SetTrue);
    }
    arg = arg.value_name(option.value_name());
    let checked = move |raw: &str| check(option, raw).map(|()| raw.to_string());
    match option.syntax() {
        Syntax::Typed if option.kind() == "array" => {
            let arg = arg.action(ArgAction::Append);
            match option.choices() {
                Some(values) => arg
                    .value_delimiter(',')
                    .value_parser(PossibleValuesParser::new(values)),
                None if item_kind(option) == "string" => arg.value_parser(checked),
                None => arg.value_delimiter(',').value_parser(checked),
            }
        }
        Syntax::Typed => match option.choices() {
            Some(values) => arg.value_parser(PossibleValuesParser::new(values)),
            None => arg.value_parser(checked),
        },
        Syntax::Header | Syntax::Cookie | Syntax::Step => arg.action(ArgAction::Append).value_parser(checked),
        Syntax::Size | Syntax::Credentials | Syntax::Negated | Syntax::JsonFile => arg.value_parser(checked),
    }
}

fn item_kind(option: &FetchOption) -> &str {
    option
        .schema
        .get("items")
        .and_then(|i| i.get("type"))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// The JSON value `raw` (a flag's values, in order) stands for.
fn value_of(option: &FetchOption, raw: &[String]) -> Result<Value, String> {
    let last = raw.last().map_or("", String::as_str);
    match option.syntax() {
        Syntax::Negated => Ok(Value::Bool(false)),
        Syntax::Header => raw
            .iter()
            .map(|r| {
                let (name, value) = r
                    .split_once(':')
                    .ok_or_else(|| format!("{r:?}: give NAME: VALUE"))?;
                Ok((name.trim().to_string(), Value::String(value.trim().to_string())))
            })
            .collect::<Result<Map<_, _>, String>>()
            .map(Value::Object),
        Syntax::Cookie => raw
            .iter()
            .map(|r| {
                let (name, value) = r
                    .split_once('=')
                    .ok_or_else(|| format!("{r:?}: give NAME=VALUE"))?;
                Ok(json!({ "name": name.trim(), "value": value.trim() }))
            })
            .collect::<Result<Vec<_>, String>>()
            .map(Value::Array),
        Syntax::Size => {
            let (w, h) = last
                .split_once(['x', 'X'])
                .ok_or_else(|| format!("{last:?}: give WIDTHxHEIGHT, e.g. 1280x800"))?;
            let side = |s: &str| {
                s.trim()
                    .parse::<u32>()
                    .ok()
                    .filter(|v| (1..=10_000).contains(v))
                    .ok_or_else(|| format!("{last:?}: each side is a number from 1 to 10000"))
            };
            Ok(json!({ "width": side(w)?, "height": side(h)? }))
        }
        Syntax::Credentials => {
            let (username, password) = last.split_once(':').unwrap_or((last, ""));
            Ok(json!({ "username": username, "password": password }))
        }
        Syntax::Step => raw
            .iter()
            .map(|r| {
                oxwright_steps::parse_steps(std::slice::from_ref(r))
                    .map(|_| Value::String(r.trim().to_string()))
                    .map_err(|e| e.message)
            })
            .collect::<Result<Vec<_>, String>>()
            .map(Value::Array),
        Syntax::JsonFile => {
            let text = std::fs::read_to_string(last).map_err(|e| format!("{last}: cannot be read: {e}"))?;
            serde_json::from_str(&text).map_err(|e| format!("{last}: not JSON: {e}"))
        }
        Syntax::Typed => typed(&option.schema, raw),
    }
}

/// The value of `raw` under `schema`, by the schema's type.
fn typed(schema: &Value, raw: &[String]) -> Result<Value, String> {
    match kind(schema) {
        "array" => {
            let items = schema.get("items").cloned().unwrap_or(Value::Null);
            raw.iter()
                .map(|r| scalar(&items, r))
                .collect::<Result<Vec<_>, _>>()
                .map(Value::Array)
        }
        _ => scalar(schema, raw.last().map_or("", String::as_str)),
    }
}

fn kind(schema: &Value) -> &str {
    schema.get("type").and_then(Value::as_str).unwrap_or("")
}

fn scalar(schema: &Value, raw: &str) -> Result<Value, String> {
    match kind(schema) {
        "string" => Ok(Value::String(raw.to_string())),
        "boolean" | "integer" | "number" | "object" => {
            serde_json::from_str(raw.trim()).map_err(|_| format!("{raw:?} is no {}", kind(schema)))
        }
        _ => Ok(serde_json::from_str(raw.trim()).unwrap_or_else(|_| Value::String(raw.to_string()))),
    }
}

#[cfg(test)]
mod tests;
