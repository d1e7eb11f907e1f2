//! The `crawl` tool: its arguments (a start URL, the crawl's options by
//! the job JSON's names, every `fetch_markdown` option) and the contract
//! of what runs it. The crawl itself is the application's: a server given
//! a [`SiteCrawler`] offers the tool, and this library names no scheduler
//! type.

use std::collections::BTreeMap;
use std::time::Duration;

use async_trait::async_trait;
use oxwright_jobs::{CrawlOptions, FetchSpec};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use url::Url;

use crate::args::{camel, fetch_options, snake};

/// Pages one call takes at most; `oxwright crawl` and `POST /v1/crawls`
/// take more.
pub const MAX_CRAWL_PAGES: usize = 100;

/// Pages a call takes when it names no `limit`.
pub const DEFAULT_CRAWL_PAGES: usize = 20;

/// How long one call may crawl; what is not taken by then is left, and
/// the answer says the crawl was interrupted.
pub const CRAWL_CALL_LIMIT: Duration = Duration::from_secs(15 * 60);

/// Characters of Markdown the answer holds at most by default, across
/// every page; the structured result lists every page whatever it holds.
pub const DEFAULT_CRAWL_MAX_CHARS: usize = 50_000;

/// The crawl options a call does not take, and why.
const CRAWL_NOT_IN_MCP: &[(&str, &str)] = &[(
    "normalise",
    "the tracking parameters dropped are the documented list; `ignoreQuery` drops the whole query",
)];

/// One crawl a tool call asks for.
#[derive(Debug, Clone)]
pub struct CrawlCall {
    /// Where it starts (depth 0).
    pub starts: Vec<Url>,
    /// What it follows and how politely.
    pub options: CrawlOptions,
    /// The options every page is fetched with (its URL is replaced per page).
    pub template: FetchSpec,
    /// How long it may run.
    pub within: Duration,
}

/// How a crawl ended: the counts, and where its manifest and skip list are.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CrawlOutcome {
    /// The crawl's batch id (its folder under `batches/`).
    pub batch_id: String,
    /// Pages that produced their result.
    pub ok: usize,
    /// Pages that failed for good.
    pub failed: usize,
    /// Whether it stopped before every page found was taken (the call's
    /// time ran out, or the server is stopping).
    pub interrupted: bool,
    /// URLs found and not taken, by reason (`robots`, `excluded`, `limit`,
    /// `depth`, `duplicate`, `off_host`, …).
    pub skipped: BTreeMap<String, usize>,
    /// The manifest's key: one JSON line per page taken, with its depth.
    pub manifest: String,
    /// The skip list's key: one JSON line per URL not taken, with why.
    pub skipped_list: String,
    /// Wall time, in seconds.
    pub elapsed_s: f64,
}

/// Runs the crawls `crawl` tool calls ask for, over the server's own
/// browsers and store.
#[async_trait]
pub trait SiteCrawler: Send + Sync + std::fmt::Debug {
    /// Runs `call` to its end (or its time limit); an error is a message
    /// for the agent.
    async fn crawl(&self, call: CrawlCall) -> Result<CrawlOutcome, String>;
}

/// The `crawl` tool's arguments.
#[derive(Debug)]
pub struct CrawlArgs {
    /// Where the crawl starts; it stays on this host unless told otherwise.
    pub url: String,
    /// The crawl's options, over the tool's defaults.
    pub crawl: CrawlOptions,
    /// The fetch options every page is fetched with.
    pub options: oxwright_jobs::FetchPatch,
    /// Characters of Markdown the answer holds at most.
    pub max_chars: usize,
}

/// The crawl options a call names otherwise than the job JSON does: the
/// fetch options `include` and `exclude` (selectors) keep their names, and
/// the crawl's path patterns are `includePaths` and `excludePaths`.
const RENAMED: &[(&str, &str)] = &[("include", "include_paths"), ("exclude", "exclude_paths")];

/// The argument name (snake case) of the crawl option `name`.
fn argument_name(name: &str) -> String {
    RENAMED
        .iter()
        .find(|(option, _)| *option == name)
        .map_or_else(|| name.to_owned(), |(_, argument)| (*argument).to_owned())
}

/// The crawl option the argument `name` (snake case) sets, if it is one.
fn option_name(name: &str) -> Option<String> {
    if let Some((option, _)) = RENAMED.iter().find(|(_, argument)| *argument == name) {
        return Some((*option).to_owned());
    }
    static NAMES: std::sync::LazyLock<serde_json::Map<String, serde_json::Value>> =
        std::sync::LazyLock::new(crawl_properties);
    let taken = name == "ignore_query"
        || (NAMES.contains_key(name) && !RENAMED.iter().any(|(option, _)| *option == name));
    taken.then(|| name.to_owned())
}

/// `CrawlOptions`' properties but those not taken, by the job JSON's names.
fn crawl_properties() -> serde_json::Map<String, serde_json::Value> {
    match oxwright_jobs::schema::schema_of::<CrawlOptions>().remove("properties") {
        Some(serde_json::Value::Object(mut props)) => {
            props.retain(|k, _| !CRAWL_NOT_IN_MCP.iter().any(|(r, _)| r == k));
            props
        }
        _ => serde_json::Map::new(),
    }
}

impl CrawlArgs {
    /// Reads the arguments of one call: the crawl's own first, every other
    /// one as a fetch option.
    fn from_object(mut object: serde_json::Map<String, serde_json::Value>) -> Result<Self, String> {
        let url = match object.remove("url") {
            Some(serde_json::Value::String(url)) => url,
            Some(other) => return Err(format!("`url` is a string, not {other}")),
            None => return Err("missing field `url`".into()),
        };
        let max_chars = match object.remove("maxChars").or_else(|| object.remove("max_chars")) {
            None | Some(serde_json::Value::Null) => DEFAULT_CRAWL_MAX_CHARS,
            Some(v) => v
                .as_u64()
                .and_then(|n| usize::try_from(n).ok())
                .filter(|n| *n > 0)
                .ok_or_else(|| format!("`maxChars` is a positive whole number, not {v}"))?,
        };
        let mut crawl = serde_json::Map::new();
        let mut sent = BTreeMap::new();
        let mut fetch = serde_json::Map::new();
        for (key, value) in object.into_iter().filter(|(_, v)| !v.is_null()) {
            let name = snake(&key);
            if let Some((_, why)) = CRAWL_NOT_IN_MCP.iter().find(|(n, _)| *n == name) {
                return Err(format!("`{key}` is not taken here: {why}"));
            }
            if let Some(option) = option_name(&name) {
                sent.insert(option.clone(), key);
                crawl.insert(option, value);
            } else {
                fetch.insert(key, value);
            }
        }
        let ignore_query = match crawl.remove("ignore_query") {
            None => false,
            Some(serde_json::Value::Bool(b)) => b,
            Some(other) => return Err(format!("`ignoreQuery` is true or false, not {other}")),
        };
        let limit_given = crawl.contains_key("limit");
        // Each option alone first, so an error names the argument.
        for (name, value) in &crawl {
            let alone = serde_json::Map::from_iter([(name.clone(), value.clone())]);
            serde_json::from_value::<CrawlOptions>(serde_json::Value::Object(alone))
                .map_err(|e| format!("`{}`: {e}", sent.get(name).unwrap_or(name)))?;
        }
        let mut options: CrawlOptions =
            serde_json::from_value(serde_json::Value::Object(crawl)).map_err(|e| e.to_string())?;
        options.normalise.ignore_query = ignore_query;
        if !limit_given {
            options.limit = DEFAULT_CRAWL_PAGES;
        }
        if options.limit == 0 || options.limit > MAX_CRAWL_PAGES {
            return Err(format!(
                "`limit` is 1 to {MAX_CRAWL_PAGES} pages a call, not {}: `oxwright crawl` or POST /v1/crawls take more",
                options.limit
            ));
        }
        let options_given = fetch_options(fetch)?;
        Ok(Self {
            url,
            crawl: options,
            options: options_given,
            max_chars,
        })
    }
}

impl<'de> Deserialize<'de> for CrawlArgs {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error as _;
        let object = serde_json::Map::<String, serde_json::Value>::deserialize(d)?;
        Self::from_object(object).map_err(D::Error::custom)
    }
}

impl JsonSchema for CrawlArgs {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "CrawlArgs".into()
    }

    /// `url`, the crawl's options, `maxChars`, then `fetch_markdown`'s
    /// options, in camelCase.
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let mut properties = serde_json::Map::new();
        properties.insert(
            "url".into(),
            serde_json::json!({
                "type": "string",
                "description": "Where the crawl starts (http or https); it stays on this host unless told otherwise."
            }),
        );
        for (name, mut schema) in crawl_properties() {
            if name == "limit" {
                schema = serde_json::json!({
                    "type": "integer", "minimum": 1, "maximum": MAX_CRAWL_PAGES,
                    "description": format!(
                        "Pages taken at most, the start URL included. Default: {DEFAULT_CRAWL_PAGES}; at most {MAX_CRAWL_PAGES} a call."
                    )
                });
            }
            properties.insert(camel(&argument_name(&name)), schema);
        }
        properties.insert(
            "ignoreQuery".into(),
            serde_json::json!({
                "type": "boolean",
                "description": "Treat URLs that differ only in their query as one page. Default: false."
            }),
        );
        properties.insert(
            "maxChars".into(),
            serde_json::json!({
                "type": "integer", "minimum": 1,
                "description": format!(
                    "Characters of Markdown the answer holds at most, across every page (default {DEFAULT_CRAWL_MAX_CHARS}); the structured result lists every page."
                )
            }),
        );
        for (name, schema) in oxwright_jobs::schema::fetch_option_properties(crate::FETCH_NOT_IN_MCP) {
            properties.entry(camel(&name)).or_insert(schema);
        }
        let mut object = serde_json::Map::new();
        object.insert("type".into(), "object".into());
        object.insert("properties".into(), serde_json::Value::Object(properties));
        object.insert("required".into(), serde_json::json!(["url"]));
        object.into()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn crawl_arguments_split_into_the_crawls_and_the_fetchs() {
        let a: CrawlArgs = serde_json::from_value(json!({
            "url": "https://a.test/", "maxDepth": 2, "includePaths": ["/docs/**"], "ignoreQuery": true,
            "render": "never", "per_host_delay_ms": 0, "maxChars": 900, "exclude": ["nav"]
        }))
        .unwrap();
        assert_eq!(a.crawl.max_depth, 2);
        assert_eq!(a.crawl.include, ["/docs/**"]);
        assert!(a.crawl.normalise.ignore_query);
        assert_eq!(a.crawl.per_host_delay_ms, 0);
        assert_eq!(a.crawl.limit, DEFAULT_CRAWL_PAGES);
        assert_eq!(a.max_chars, 900);
        assert!(a.crawl.exclude.is_empty(), "`exclude` is the fetch's selectors");
        assert_eq!(a.options.keys().collect::<Vec<_>>(), ["exclude", "render"]);
        for (args, says) in [
            (
                json!({ "url": "https://a.test/", "limit": 101 }),
                "`limit` is 1 to 100",
            ),
            (
                json!({ "url": "https://a.test/", "maxDepth": "deep" }),
                "`maxDepth`",
            ),
            (
                json!({ "url": "https://a.test/", "headers": { "Authorization": "Bearer s3cret" } }),
                "`headers` is not taken here: credentials",
            ),
            (
                json!({ "url": "https://a.test/", "normalise": {} }),
                "`normalise` is not taken here",
            ),
            (
                json!({ "url": "https://a.test/", "colour": 1 }),
                "`colour` is no argument",
            ),
            (json!({ "limit": 3 }), "url"),
        ] {
            let err = serde_json::from_value::<CrawlArgs>(args).unwrap_err().to_string();
            assert!(err.contains(says), "{err}");
            assert!(!err.contains("s3cret"), "{err}");
        }
    }

    #[test]
    fn the_schema_names_every_crawl_option_and_every_fetch_option() {
        let schema = oxwright_jobs::schema::schema_of::<CrawlArgs>();
        let props = schema["properties"].as_object().unwrap();
        for name in [
            "url",
            "maxDepth",
            "limit",
            "includePaths",
            "excludePaths",
            "include",
            "exclude",
            "allowSubdomains",
            "allowHosts",
            "ignoreRobots",
            "ignoreQuery",
            "perHostConcurrency",
            "perHostDelayMs",
            "sitemap",
            "maxChars",
            "render",
            "content",
            "scroll",
        ] {
            assert!(
                props.contains_key(name),
                "{name} missing: {:?}",
                props.keys().collect::<Vec<_>>()
            );
        }
        for name in ["normalise", "headers", "cookies"] {
            assert!(!props.contains_key(name), "{name} offered");
        }
        assert_eq!(props["limit"]["maximum"], MAX_CRAWL_PAGES);
    }
}
