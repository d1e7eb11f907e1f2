//! A flag for every fetch option `FetchArgs` does not write by hand,
//! generated from the job's schema: an option added to `FetchSpec` is a
//! flag of `fetch`, `batch` and `submit fetch` with nothing else to
//! change. Its long name is the option's, in kebab case; its help is the
//! option's doc; its values are checked against the option's type when
//! the command line is read, as the job JSON's would be.
//!
//! How a value is written on the command line follows the option's type:
//! a boolean is a switch (`--keep-overlays`; `--headless false` for one
//! that is on by default), a list takes its items comma-separated or
//! repeated (strings only repeated: a selector may hold a comma), an
//! object takes JSON, anything else its plain value.

use clap::builder::PossibleValuesParser;
use clap::{Arg, ArgAction, ArgMatches, Args, Command, FromArgMatches};
use oxwright_jobs::FetchPatch;
use serde_json::{Map, Value};

/// The options whose hand-written flag has a name of its own, with that
/// name; every other option's flag, hand-written or generated, is its name
/// in kebab case.
pub const FLAG_NAMES: &[(&str, &str)] = &[
    ("headless", "headed"),
    ("retry_count", "retries"),
    ("block_resources", "block"),
    ("headers", "header"),
    ("cookies", "cookie"),
    ("formats", "format"),
    ("response_headers", "response-header"),
    ("actions", "action"),
];

/// The flag of `option`.
pub fn flag_of(option: &str) -> String {
    FLAG_NAMES
        .iter()
        .find(|(o, _)| *o == option)
        .map_or_else(|| option.replace('_', "-"), |(_, f)| (*f).to_string())
}

/// The fetch options with their schemas, generated once a process (every
/// command line is built with the fetch flags of three subcommands).
fn properties() -> &'static Map<String, Value> {
    static PROPERTIES: std::sync::LazyLock<Map<String, Value>> =
        std::sync::LazyLock::new(|| oxwright_jobs::schema::fetch_option_properties(&[]));
    &PROPERTIES
}

/// The id a generated flag's value is kept under (apart from the
/// hand-written flags' ids, which are their fields' names).
const ID_PREFIX: &str = "option:";

/// The option a generated flag's id stands for.
pub fn option_of_id(id: &str) -> Option<&str> {
    id.strip_prefix(ID_PREFIX)
}

/// The values of the generated flags given, as a patch over a spec.
#[derive(Debug, Clone, Default)]
pub struct GeneratedFlags {
    /// The options given, checked against their fields.
    pub patch: FetchPatch,
}

impl Args for GeneratedFlags {
    /// Adds a flag for each option no flag already in `cmd` stands for, so
    /// it is flattened after the hand-written ones.
    fn augment_args(cmd: Command) -> Command {
        let written: Vec<String> = cmd
            .get_arguments()
            .filter_map(|a| a.get_long().map(str::to_string))
            .collect();
        let mut cmd = cmd;
        for (option, schema) in properties() {
            if !written.contains(&flag_of(option)) {
                cmd = cmd.arg(flag(option, option.replace('_', "-"), schema));
            }
        }
        cmd
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        Self::augment_args(cmd)
    }
}

impl FromArgMatches for GeneratedFlags {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        let mut object = Map::new();
        for id in matches.ids() {
            let Some(option) = option_of_id(id.as_str()) else {
                continue;
            };
            if matches.value_source(id.as_str()) != Some(clap::parser::ValueSource::CommandLine) {
                continue;
            }
            let raw: Vec<String> = matches
                .get_raw(id.as_str())
                .into_iter()
                .flatten()
                .map(|v| v.to_string_lossy().into_owned())
                .collect();
            let schema = properties().get(option).cloned().unwrap_or(Value::Null);
            object.insert(option.to_string(), value_of(&schema, &raw).map_err(invalid)?);
        }
        let patch = FetchPatch::from_object(object, &[]).map_err(|e| invalid(e.to_string()))?;
        Ok(Self { patch })
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(matches)?;
        Ok(())
    }
}

fn invalid(message: String) -> clap::Error {
    clap::Error::raw(clap::error::ErrorKind::ValueValidation, format!("{message}\n"))
}

fn kind(schema: &Value) -> &str {
    schema.get("type").and_then(Value::as_str).unwrap_or("")
}

fn choices(schema: &Value) -> Option<Vec<String>> {
    schema.get("enum").and_then(Value::as_array).map(|values| {
        values
            .iter()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect()
    })
}

/// The flag of `option`, shaped by its schema.
fn flag(option: &str, long: String, schema: &Value) -> Arg {
    let help = schema
        .get("description")
        .and_then(Value::as_str)
        .and_then(|d| d.split("\n\n").next())
        .map(|d| d.split_whitespace().collect::<Vec<_>>().join(" "))
        .unwrap_or_default();
    let arg = Arg::new(format!("{ID_PREFIX}{option}")).long(long).help(help);
    let check = {
        let (option, schema) = (option.to_string(), schema.clone());
        move |raw: &str| -> Result<String, String> {
            let one = value_of(&schema, &[raw.to_string()])?;
            FetchPatch::from_object(Map::from_iter([(option.clone(), one)]), &[])
                .map(|_| raw.to_string())
                .map_err(|e| e.to_string())
        }
    };
    let arg = match kind(schema) {
        "boolean" if schema.get("default") != Some(&Value::Bool(true)) => arg,
        _ => arg.value_name(option.to_ascii_uppercase()),
    };
    match kind(schema) {
        "boolean" if schema.get("default") != Some(&Value::Bool(true)) => arg.action(ArgAction::SetTrue),
        "array" => {
            let items = schema.get("items").cloned().unwrap_or(Value::Null);
            let arg = arg.action(ArgAction::Append);
            match choices(&items) {
                Some(values) => arg
                    .value_delimiter(',')
                    .value_parser(PossibleValuesParser::new(values)),
                None if kind(&items) == "string" => arg.value_parser(check),
                None => arg.value_delimiter(',').value_parser(check),
            }
        }
        _ => match choices(schema) {
            Some(values) => arg.value_parser(PossibleValuesParser::new(values)),
            None => arg.value_parser(check),
        },
    }
}

/// The JSON value `raw` (a flag's values, in order) stands for under `schema`.
fn value_of(schema: &Value, raw: &[String]) -> Result<Value, String> {
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
mod tests {
    use oxwright_jobs::{BlockResource, ContentMode, FetchSpec, Viewport};

    use super::*;

    /// A command of generated flags alone: every option gets one.
    fn parse(args: &[&str]) -> Result<FetchSpec, clap::Error> {
        let cmd = GeneratedFlags::augment_args(Command::new("t").no_binary_name(true));
        let flags = GeneratedFlags::from_arg_matches(&cmd.try_get_matches_from(args)?)?;
        let mut spec = FetchSpec::new("https://a.test/".parse().unwrap());
        flags.patch.apply(&mut spec).unwrap();
        Ok(spec)
    }

    #[test]
    fn every_kind_of_option_is_a_flag_of_its_type() {
        let spec = parse(&[
            "--timeout-ms",
            "5000",
            "--block-resources",
            "image,font",
            "--keep-overlays",
            "--viewport",
            r#"{"width": 300, "height": 400}"#,
            "--include",
            "main, article",
            "--include",
            "aside",
            "--headless",
            "false",
            "--content",
            "full",
        ])
        .unwrap();
        assert_eq!(spec.timeout_ms, 5000);
        assert_eq!(
            spec.block_resources,
            vec![BlockResource::Image, BlockResource::Font]
        );
        assert!(spec.keep_overlays);
        assert_eq!(
            spec.viewport,
            Some(Viewport {
                width: 300,
                height: 400
            })
        );
        assert_eq!(spec.include, vec!["main, article", "aside"]);
        assert!(!spec.headless);
        assert_eq!(spec.content, ContentMode::Full);
        // Nothing given leaves the job's defaults.
        let untouched = parse(&[]).unwrap();
        assert_eq!(untouched, FetchSpec::new("https://a.test/".parse().unwrap()));
        for bad in [
            &["--timeout-ms", "soon"][..],
            &["--content", "most"],
            &["--block-resources", "image,sound"],
            &["--viewport", "300x400"],
        ] {
            let err = parse(bad).unwrap_err().to_string();
            assert!(
                err.contains(bad[1].split(',').next_back().unwrap()),
                "{bad:?}: {err}"
            );
        }
    }

    #[test]
    fn a_value_is_read_by_its_options_type() {
        let number = serde_json::json!({"type": "integer"});
        assert_eq!(value_of(&number, &["12".into()]), Ok(Value::from(12)));
        assert!(value_of(&number, &["twelve".into()]).is_err());
        let list = serde_json::json!({"type": "array", "items": {"type": "string"}});
        assert_eq!(
            value_of(&list, &["a, b".into(), "c".into()]),
            Ok(serde_json::json!(["a, b", "c"]))
        );
        let object = serde_json::json!({"type": "object"});
        assert_eq!(
            value_of(&object, &[r#"{"width": 3}"#.into()]),
            Ok(serde_json::json!({"width": 3}))
        );
        assert_eq!(flag_of("retry_count"), "retries");
        assert_eq!(flag_of("max_age_ms"), "max-age-ms");
    }
}
