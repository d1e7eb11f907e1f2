//! The fetch options as people meet them: a flag of `fetch`, `batch` and
//! `submit fetch`, a row of the manual's option table and a key of the
//! example configuration's `[fetch]`. Each face is generated from the
//! option's one declaration, its [`FetchSpec`](crate::FetchSpec) field
//! (name, type, default, doc), so none can drift from the job JSON. The
//! few flags whose value is written in a syntax of their own (`--header
//! 'NAME: VALUE'`, `--viewport 800x600`, `--headed` …) are declared here
//! as forms, in [`FORMS`]; every other flag is the option's name in kebab
//! case, taking the value its type takes.

use serde_json::{Map, Value};

/// How a flag's value is written on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Syntax {
    /// The option's own type: a switch for a boolean off by default, a
    /// list of items comma-separated or repeated (strings only repeated:
    /// a selector may hold a comma), JSON for an object, else the plain
    /// value.
    Typed,
    /// A switch that sets a boolean option to `false` (`--headed`).
    Negated,
    /// `NAME: VALUE`, repeatable: one entry of a map.
    Header,
    /// `NAME=VALUE`, repeatable: one cookie for the fetched URL's host.
    Cookie,
    /// `WIDTHxHEIGHT`.
    Size,
    /// `USER:PASSWORD`, with a companion flag `--<long>-host HOST[:PORT]`.
    Credentials,
    /// A structured workflow step, repeatable, checked by the step parser
    /// when the command line is read.
    Step,
    /// The path of a JSON file whose content is the value.
    JsonFile,
}

/// A fetch option's flag, where it is not the option's name in kebab
/// case taking its typed value.
#[derive(Debug, Clone, Copy)]
pub struct FlagForm {
    /// The option (a `FetchSpec` field).
    pub option: &'static str,
    /// The flag's long name.
    pub long: &'static str,
    /// Another name the flag answers to (the option's own, in kebab case).
    pub alias: Option<&'static str>,
    /// What the value is called in `--help` (none for a switch).
    pub value_name: Option<&'static str>,
    /// An environment variable the value may come from instead (its value
    /// is never shown: these hold credentials).
    pub env: Option<&'static str>,
    /// How the value is written.
    pub syntax: Syntax,
    /// The flag's help, where it says the opposite of the option's doc
    /// (a negated switch).
    pub help: Option<&'static str>,
}

const fn form(option: &'static str, long: &'static str, syntax: Syntax) -> FlagForm {
    FlagForm {
        option,
        long,
        alias: None,
        value_name: None,
        env: None,
        syntax,
        help: None,
    }
}

/// The flags with a name, a value syntax or a source of their own.
pub const FORMS: &[FlagForm] = &[
    FlagForm {
        help: Some("Runs a visible browser (needs a display)."),
        ..form("headless", "headed", Syntax::Negated)
    },
    FlagForm {
        alias: Some("retry-count"),
        value_name: Some("N"),
        ..form("retry_count", "retries", Syntax::Typed)
    },
    FlagForm {
        alias: Some("block-resources"),
        value_name: Some("LIST"),
        ..form("block_resources", "block", Syntax::Typed)
    },
    FlagForm {
        value_name: Some("SELECTOR"),
        ..form("wait_for", "wait-for", Syntax::Typed)
    },
    FlagForm {
        value_name: Some("SELECTOR"),
        ..form("include", "include", Syntax::Typed)
    },
    FlagForm {
        value_name: Some("SELECTOR"),
        ..form("exclude", "exclude", Syntax::Typed)
    },
    FlagForm {
        value_name: Some("NAME: VALUE"),
        ..form("headers", "header", Syntax::Header)
    },
    FlagForm {
        value_name: Some("NAME=VALUE"),
        ..form("cookies", "cookie", Syntax::Cookie)
    },
    FlagForm {
        value_name: Some("UA"),
        ..form("user_agent", "user-agent", Syntax::Typed)
    },
    FlagForm {
        value_name: Some("ZONE"),
        ..form("timezone", "timezone", Syntax::Typed)
    },
    FlagForm {
        value_name: Some("WIDTHxHEIGHT"),
        ..form("viewport", "viewport", Syntax::Size)
    },
    FlagForm {
        value_name: Some("USER:PASSWORD"),
        env: Some("OXWRIGHT_BASIC_AUTH"),
        ..form("basic_auth", "basic-auth", Syntax::Credentials)
    },
    FlagForm {
        value_name: Some("URL"),
        env: Some("OXWRIGHT_PROXY"),
        ..form("proxy", "proxy", Syntax::Typed)
    },
    FlagForm {
        value_name: Some("LIST"),
        ..form("formats", "format", Syntax::Typed)
    },
    FlagForm {
        value_name: Some("NAME"),
        ..form("response_headers", "response-header", Syntax::Typed)
    },
    FlagForm {
        value_name: Some("STEP"),
        ..form("actions", "action", Syntax::Step)
    },
    FlagForm {
        value_name: Some("SCHEMA.json"),
        ..form("extract_css", "extract-css", Syntax::JsonFile)
    },
    FlagForm {
        value_name: Some("SCHEMA.json"),
        ..form("extract", "extract", Syntax::JsonFile)
    },
    FlagForm {
        value_name: Some("TEXT"),
        ..form("extract_prompt", "extract-prompt", Syntax::Typed)
    },
];

/// The host a [`Syntax::Credentials`] flag's companion names.
pub const CREDENTIALS_HOST_VALUE: &str = "HOST[:PORT]";

/// One fetch option with everything its faces show.
#[derive(Debug, Clone)]
pub struct FetchOption {
    /// The option's name (the job JSON's key).
    pub name: String,
    /// Its JSON Schema (type, enum, default, examples, description).
    pub schema: Value,
    /// Its flag's form, where it has one of its own.
    pub form: Option<&'static FlagForm>,
}

impl FetchOption {
    /// The flag's long name.
    pub fn long(&self) -> String {
        self.form
            .map_or_else(|| self.name.replace('_', "-"), |f| f.long.to_string())
    }

    /// How the flag's value is written.
    pub fn syntax(&self) -> Syntax {
        self.form.map_or(Syntax::Typed, |f| f.syntax)
    }

    /// The option's default as the job JSON writes it; none for an option
    /// unset by default.
    pub fn default(&self) -> Option<&Value> {
        self.schema.get("default")
    }

    /// The option's type (`string`, `integer`, `array` …).
    pub fn kind(&self) -> &str {
        self.schema.get("type").and_then(Value::as_str).unwrap_or("")
    }

    /// The values a choice among fixed strings takes (for a list, its items').
    pub fn choices(&self) -> Option<Vec<&str>> {
        fn of(s: &Value) -> Option<Vec<&str>> {
            s.get("enum")
                .and_then(Value::as_array)
                .map(|v| v.iter().filter_map(Value::as_str).collect())
        }
        of(&self.schema).or_else(|| self.schema.get("items").and_then(of))
    }

    /// Whether the flag is a switch (takes no value).
    pub fn is_switch(&self) -> bool {
        match self.syntax() {
            Syntax::Negated => true,
            Syntax::Typed => self.kind() == "boolean" && self.default() != Some(&Value::Bool(true)),
            _ => false,
        }
    }

    /// Whether the flag may be given more than once.
    pub fn is_repeatable(&self) -> bool {
        matches!(self.kind(), "array") || matches!(self.syntax(), Syntax::Header)
    }

    /// The option's doc, paragraphs kept.
    pub fn description(&self) -> &str {
        self.schema
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or("")
    }

    /// The doc's first paragraph on one line: the flag's help.
    pub fn summary(&self) -> String {
        if let Some(help) = self.form.and_then(|f| f.help) {
            return help.to_string();
        }
        one_line(self.description().split("\n\n").next().unwrap_or(""))
    }

    /// What the value is called in `--help` and the manual.
    pub fn value_name(&self) -> String {
        if let Some(name) = self.form.and_then(|f| f.value_name) {
            return name.to_string();
        }
        match self.kind() {
            "integer" | "number" => "N".into(),
            "object" => "JSON".into(),
            _ => self.name.to_ascii_uppercase(),
        }
    }

    /// The flag's default as a person reads it: `30000`, `always`, `off`;
    /// none for an option unset (or empty) by default.
    pub fn default_text(&self) -> Option<String> {
        if self.syntax() == Syntax::Negated {
            // The flag's own default: not given, it is off.
            return Some("off".into());
        }
        match self.default()? {
            Value::Bool(true) => Some("on".into()),
            Value::Bool(false) => Some("off".into()),
            Value::String(s) => Some(s.clone()),
            Value::Array(a) if a.is_empty() => None,
            Value::Object(o) if o.is_empty() => None,
            other => Some(other.to_string()),
        }
    }
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Every fetch option but `url`, in the order `FetchSpec` declares them.
pub fn fetch_options() -> Vec<FetchOption> {
    let mut props = match crate::schema::fetch_options_schema().remove("properties") {
        Some(Value::Object(props)) => props,
        _ => Map::new(),
    };
    let mut ordered: Vec<(String, Value)> = declared_fields()
        .iter()
        .filter_map(|name| props.remove(*name).map(|schema| (name.to_string(), schema)))
        .collect();
    ordered.extend(props);
    ordered
        .into_iter()
        .map(|(name, schema)| FetchOption {
            form: FORMS.iter().find(|f| f.option == name),
            name,
            schema,
        })
        .collect()
}

/// `FetchSpec`'s fields in the order they are declared, as serde's derive
/// hands them to a deserializer (the schema's map sorts them by name).
fn declared_fields() -> &'static [&'static str] {
    use serde::de::{self, Visitor};

    /// A deserializer that only notes the fields a struct asks for.
    struct Fields;

    #[derive(Debug)]
    struct Noted(&'static [&'static str]);

    impl std::fmt::Display for Noted {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("fields noted")
        }
    }

    impl std::error::Error for Noted {}

    impl de::Error for Noted {
        fn custom<T: std::fmt::Display>(_: T) -> Self {
            Noted(&[])
        }
    }

    impl<'de> de::Deserializer<'de> for Fields {
        type Error = Noted;

        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Noted> {
            Err(Noted(&[]))
        }

        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Noted> {
            Err(Noted(fields))
        }

        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option unit
            unit_struct newtype_struct seq tuple tuple_struct map enum identifier ignored_any
        }
    }

    static FIELDS: std::sync::OnceLock<&'static [&'static str]> = std::sync::OnceLock::new();
    FIELDS.get_or_init(
        || match <crate::FetchSpec as serde::Deserialize>::deserialize(Fields) {
            Err(Noted(fields)) => fields,
            Ok(_) => &[],
        },
    )
}

/// The flag as the manual writes it: `--render always|auto|never`,
/// `--header 'NAME: VALUE'` (repeatable), with its other names.
fn flag_cell(o: &FetchOption) -> String {
    let mut cell = format!("`--{}", o.long());
    if !o.is_switch() {
        let value = match (o.choices(), o.kind()) {
            (Some(choices), k) if k != "array" => choices.join("\\|"),
            _ if o.value_name().contains(' ') => format!("'{}'", o.value_name()),
            _ => o.value_name(),
        };
        cell.push(' ');
        cell.push_str(&value);
    }
    cell.push('`');
    if o.is_repeatable() && o.kind() != "array" || o.kind() == "array" && o.choices().is_none() {
        cell.push_str(" (repeatable)");
    }
    let mut others: Vec<String> = Vec::new();
    if let Some(alias) = o.form.and_then(|f| f.alias) {
        others.push(format!("`--{alias}`"));
    }
    if let Some(env) = o.form.and_then(|f| f.env) {
        others.push(format!("`{env}`"));
    }
    if o.syntax() == Syntax::Credentials {
        others.push(format!(
            "`--{}-host {CREDENTIALS_HOST_VALUE}` for the host",
            o.long()
        ));
    }
    if !others.is_empty() {
        cell.push_str(&format!(" (or {})", others.join(", ")));
    }
    cell
}

/// The manual's table of fetch options (Markdown), generated.
pub fn manual_table() -> String {
    let mut out = String::from("| flag | job JSON / HTTP field | default | meaning |\n|---|---|---|---|\n");
    for o in fetch_options() {
        let mut meaning = match o.syntax() {
            Syntax::Negated => format!("{} The job JSON's `{}: false`.", o.summary(), o.name),
            _ => one_line(o.description()),
        };
        if let (Some(choices), "array") = (o.choices(), o.kind()) {
            let listed: Vec<String> = choices.iter().map(|c| format!("`{c}`")).collect();
            meaning.push_str(&format!(" Any of {} (comma-separated).", listed.join(", ")));
        }
        let meaning = meaning.replace('|', "\\|");
        out.push_str(&format!(
            "| {} | `{}` | {} | {} |\n",
            flag_cell(&o),
            o.name,
            o.default_text().unwrap_or_else(|| "—".into()),
            meaning
        ));
    }
    out
}

/// `value` in TOML's inline syntax.
fn toml_value(value: &Value) -> String {
    match value {
        Value::String(s) => serde_json::to_string(s).unwrap_or_default(),
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(toml_value).collect::<Vec<_>>().join(", ")
        ),
        Value::Object(map) if map.is_empty() => "{}".into(),
        Value::Object(map) => format!(
            "{{ {} }}",
            map.iter()
                .map(|(k, v)| format!("{k} = {}", toml_value(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Value::Null => "\"\"".into(),
        other => other.to_string(),
    }
}

/// Words of `text` on lines of at most `width` columns, each after `prefix`.
fn wrapped(text: &str, prefix: &str, width: usize) -> String {
    let mut out = String::new();
    let mut line = String::from(prefix);
    for word in text.split_whitespace() {
        if line.len() > prefix.len() && line.len() + 1 + word.len() > width {
            out.push_str(line.trim_end());
            out.push('\n');
            line = String::from(prefix);
        }
        if line.len() > prefix.len() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if line.len() > prefix.len() {
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// The example configuration's `[fetch]` keys (every option the config
/// takes, commented out at its default or, for one unset by default, at
/// an example value), generated.
pub fn example_config_section() -> String {
    let mut out = String::new();
    for o in fetch_options() {
        if crate::defaults::NOT_IN_CONFIG.iter().any(|(n, _)| *n == o.name) {
            continue;
        }
        out.push_str("#\n");
        out.push_str(&wrapped(&o.summary(), "# ", 76));
        let example = o
            .schema
            .get("examples")
            .and_then(Value::as_array)
            .and_then(|e| e.first());
        let (value, note) = match (o.default(), example) {
            (Some(d), _) => (toml_value(d), String::new()),
            (None, Some(e)) => (toml_value(e), " (unset by default)".to_string()),
            (None, None) => ("\"\"".into(), " (unset by default)".to_string()),
        };
        let choices = o
            .choices()
            .map(|c| format!(": {}", c.join(" | ")))
            .unwrap_or_default();
        out.push_str(&format!(
            "# {} = {value}    # --{}{choices}{note}\n",
            o.name,
            o.long()
        ));
    }
    out
}

/// Replaces what stands between the lines holding `begin` and `end` in
/// `text` with `generated`; `None` when the markers are missing.
pub fn splice(text: &str, begin: &str, end: &str, generated: &str) -> Option<String> {
    let start = text.find(begin)?;
    let start = start + text[start..].find('\n')? + 1;
    let stop = start + text[start..].find(end)?;
    let stop = text[..stop].rfind('\n').map_or(start, |n| n + 1).max(start);
    Some(format!("{}{generated}{}", &text[..start], &text[stop..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_form_names_an_option_and_every_option_has_a_flag() {
        let options = fetch_options();
        for f in FORMS {
            assert!(
                options.iter().any(|o| o.name == f.option),
                "{} is no option",
                f.option
            );
        }
        let mut longs: Vec<String> = options.iter().map(FetchOption::long).collect();
        longs.sort_unstable();
        let before = longs.len();
        longs.dedup();
        assert_eq!(before, longs.len(), "two options share a flag");
        let render = options.iter().find(|o| o.name == "render").unwrap();
        assert_eq!(render.default_text().as_deref(), Some("always"));
        let timeout = options.iter().find(|o| o.name == "timeout_ms").unwrap();
        assert_eq!(timeout.default_text().as_deref(), Some("30000"));
        let headed = options.iter().find(|o| o.name == "headless").unwrap();
        assert!(headed.is_switch() && headed.long() == "headed");
    }

    #[test]
    fn every_option_the_config_takes_shows_a_value() {
        for o in fetch_options() {
            if crate::defaults::NOT_IN_CONFIG.iter().any(|(n, _)| *n == o.name) {
                continue;
            }
            assert!(
                o.default().is_some() || o.schema.get("examples").is_some(),
                "{} has neither a default nor an example",
                o.name
            );
        }
        let section = example_config_section();
        // Each key, uncommented, is a valid `[fetch]` of its own.
        for line in section.lines().filter(|l| l.contains(" = ")) {
            let key_line = line.trim_start_matches("# ").split("    #").next().unwrap();
            let parsed: crate::FetchDefaults =
                toml::from_str(key_line).unwrap_or_else(|e| panic!("{key_line}: {e}"));
            assert_ne!(parsed, crate::FetchDefaults::default(), "{key_line}");
        }
    }

    #[test]
    fn splice_replaces_between_the_markers_only() {
        let text = "a\n<!-- begin -->\nold\nold\n<!-- end -->\nz\n";
        assert_eq!(
            splice(text, "<!-- begin", "<!-- end", "new\n").unwrap(),
            "a\n<!-- begin -->\nnew\n<!-- end -->\nz\n"
        );
        assert!(splice("no markers", "<!-- begin", "<!-- end", "x").is_none());
    }
}
