//! Command-line flags shared by the commands that fetch pages.

use std::path::PathBuf;

use clap::Args;
use oxwright_jobs::{
    BasicAuth, BlockResource, ContentMode, CookieSpec, DialogAction, FetchSpec, Format, Frames, Render,
    Viewport, WaitUntil,
};
use oxwright_policy::HostRule;

/// Global flags: configuration, output, policy.
#[derive(Debug, Clone, Args)]
pub struct CommonArgs {
    /// Log what the command does (INFO and up) on stderr; without it a
    /// one-shot command prints only warnings, errors and its results.
    #[arg(short = 'v', long, global = true)]
    pub verbose: bool,
    /// Configuration file (TOML).
    #[arg(long, global = true, env = "OXWRIGHT_CONFIG")]
    pub config: Option<PathBuf>,
    /// Artefact directory (default ./oxwright-out).
    #[arg(long, global = true)]
    pub out: Option<PathBuf>,
    /// Allow a private host or host:port (repeatable).
    #[arg(long = "allow-host", global = true, value_name = "HOST[:PORT]")]
    pub allow_hosts: Vec<HostRule>,
    /// Allow every private, loopback and link-local address (demos only).
    #[arg(long, global = true)]
    pub allow_private: bool,
    /// Warm browsers (overrides the config file).
    #[arg(long, global = true)]
    pub browsers: Option<usize>,
    /// Pages per browser at once (overrides the config file).
    #[arg(long, global = true)]
    pub pages_per_browser: Option<usize>,
    /// The most pages per browser at once when the CPU has room (default:
    /// twice --pages-per-browser; equal to it keeps the number fixed).
    #[arg(long, global = true)]
    pub max_pages_per_browser: Option<usize>,
    /// RabbitMQ URL of the distributed mode (else `[queue] amqp_url`,
    /// `OXWRIGHT_AMQP_URL`).
    #[arg(long, global = true, value_name = "URL")]
    pub amqp: Option<String>,
    /// Prefix of the queue and exchange names (deployments sharing a broker).
    #[arg(long, global = true, value_name = "PREFIX")]
    pub queue_prefix: Option<String>,
    /// Artefacts in S3: `s3://bucket/prefix` (else `[store] s3`, `OXWRIGHT_S3`;
    /// without any, the file store under --out).
    #[arg(long, global = true, value_name = "s3://BUCKET/PREFIX")]
    pub s3: Option<String>,
    /// A custom S3 endpoint, e.g. http://127.0.0.1:9000 (else
    /// `OXWRIGHT_S3_ENDPOINT`, `AWS_ENDPOINT_URL`).
    #[arg(long, global = true, value_name = "URL")]
    pub s3_endpoint: Option<String>,
}

impl CommonArgs {
    /// The overrides these flags make to the file and the environment.
    pub fn overrides(&self) -> oxwright_config::Overrides {
        oxwright_config::Overrides {
            config: self.config.clone(),
            out: self.out.clone(),
            allow_hosts: self.allow_hosts.clone(),
            allow_private: self.allow_private,
            browsers: self.browsers,
            pages_per_browser: self.pages_per_browser,
            max_pages_per_browser: self.max_pages_per_browser,
            amqp: self.amqp.clone(),
            queue_prefix: self.queue_prefix.clone(),
            s3: self.s3.clone(),
            s3_endpoint: self.s3_endpoint.clone(),
        }
    }
}

/// Flags that shape each page fetch.
#[derive(Debug, Clone, Args)]
pub struct FetchArgs {
    /// The ids of the flags given (not defaulted): `[fetch]` fills the rest.
    #[arg(skip)]
    pub given: std::collections::BTreeSet<String>,
    /// Deadline of one attempt, in milliseconds.
    #[arg(long, default_value_t = 30_000,
          value_parser = clap::value_parser!(u64).range(1..=oxwright_jobs::limits::MAX_TIMEOUT_MS))]
    pub timeout_ms: u64,
    /// Whether pages are rendered in Chromium: `always`; `never` (read the
    /// HTML the server sent, without running scripts); or `auto` (read
    /// it, and render only when it does not hold the page: an application
    /// shell, a `<noscript>` wall, a script or meta redirect). The result
    /// says `rendered` and why.
    #[arg(long, value_enum, default_value = "always")]
    pub render: Render,
    /// What to wait for before reading the page: `ready` = after
    /// DOMContentLoaded, until the page's text has stopped changing for
    /// 500 ms (at most 5 s; `load` not needed), or a lifecycle event.
    #[arg(long, value_enum, default_value = "ready")]
    pub wait_until: WaitUntil,
    /// A fixed extra wait, in milliseconds, after the `--wait-until`
    /// state and `--wait-for`, before the page is read (within
    /// `--timeout-ms`).
    #[arg(long, default_value_t = 0, value_name = "N",
          value_parser = clap::value_parser!(u64).range(0..=oxwright_jobs::limits::MAX_WAIT_MS))]
    pub wait_ms: u64,
    /// CSS selector that must appear before the page is read.
    #[arg(long)]
    pub wait_for: Option<String>,
    /// Retries of transient failures (timeouts, connection errors, 5xx,
    /// 408, 429, browser crashes); others fail at once and say why.
    #[arg(long, visible_alias = "retry-count", default_value_t = 2,
          value_parser = clap::value_parser!(u32).range(0..=oxwright_jobs::limits::MAX_RETRY_COUNT as i64))]
    pub retries: u32,
    /// Base delay between retries (doubles each time), in milliseconds.
    #[arg(long, default_value_t = 1_000,
          value_parser = clap::value_parser!(u64).range(0..=oxwright_jobs::limits::MAX_RETRY_DELAY_MS))]
    pub retry_delay_ms: u64,
    /// Resource types never downloaded (comma-separated).
    #[arg(long, visible_alias = "block-resources", value_enum, value_delimiter = ',')]
    pub block: Vec<BlockResource>,
    /// The page's frames (`<iframe>`, `<frame>`): `skip` takes each out of
    /// the document as it is inserted, so none is built or loaded (their
    /// content is never in the Markdown); `load` loads them.
    #[arg(long, value_enum, default_value = "skip")]
    pub frames: Frames,
    /// Main content or the full page.
    #[arg(long, value_enum, default_value = "main")]
    pub content: ContentMode,
    /// Keep the rendered HTML as page.html.
    #[arg(long)]
    pub include_html: bool,
    /// Take a PNG screenshot.
    #[arg(long)]
    pub screenshot: bool,
    /// Run a visible browser (needs a display).
    #[arg(long)]
    pub headed: bool,
    /// Convert only what this CSS selector matches, in place of main-content
    /// detection (repeatable).
    #[arg(long, value_name = "SELECTOR")]
    pub include: Vec<String>,
    /// Remove what this CSS selector matches before the page is read (repeatable).
    #[arg(long, value_name = "SELECTOR")]
    pub exclude: Vec<String>,
    /// Keep cookie banners, consent walls and modal overlays (main mode removes them).
    #[arg(long)]
    pub keep_overlays: bool,
    /// Extra request header for the fetched URL's host (repeatable).
    #[arg(long = "header", value_name = "NAME: VALUE", value_parser = parse_header)]
    pub headers: Vec<(String, String)>,
    /// Cookie set before the page is requested, for the fetched URL's host (repeatable).
    #[arg(long = "cookie", value_name = "NAME=VALUE", value_parser = parse_cookie)]
    pub cookies: Vec<CookieSpec>,
    /// The User-Agent of the page's requests and of `navigator.userAgent`.
    #[arg(long, value_name = "UA")]
    pub user_agent: Option<String>,
    /// Locale: Accept-Language, navigator.language and Intl (e.g. de-DE).
    #[arg(long, value_name = "LOCALE")]
    pub locale: Option<String>,
    /// IANA time zone the page's clock runs in (e.g. Asia/Tokyo).
    #[arg(long, value_name = "ZONE")]
    pub timezone: Option<String>,
    /// Viewport size in CSS pixels.
    #[arg(long, value_name = "WIDTHxHEIGHT", value_parser = parse_viewport)]
    pub viewport: Option<Viewport>,
    /// Emulate a phone: its viewport (unless --viewport), touch, a mobile user agent.
    #[arg(long)]
    pub mobile: bool,
    /// Basic credentials for the fetched URL's host and port (or --basic-auth-host).
    #[arg(
        long,
        value_name = "USER:PASSWORD",
        env = "OXWRIGHT_BASIC_AUTH",
        hide_env_values = true
    )]
    pub basic_auth: Option<String>,
    /// An upstream proxy every request of the page leaves through, after
    /// the URL policy: http://[USER:PASSWORD@]HOST:PORT, socks5://… (the
    /// proxy connects to the checked address) or socks5h://… (it resolves).
    #[arg(long, value_name = "URL", env = "OXWRIGHT_PROXY", hide_env_values = true)]
    pub proxy: Option<String>,
    /// A token budget (cl100k) for the Markdown: cut at a block boundary, and the result says so.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=u64::from(u32::MAX)))]
    pub max_tokens: Option<u64>,
    /// Outputs to add to the result, comma-separated: html (cleaned),
    /// raw-html, text, screenshot, screenshot-full-page (markdown, links,
    /// images and metadata are always there).
    #[arg(long = "format", value_enum, value_delimiter = ',', value_name = "LIST")]
    pub formats: Vec<Format>,
    /// A response header of the page to report in metadata.response_headers (repeatable).
    #[arg(long = "response-header", value_name = "NAME")]
    pub response_headers: Vec<String>,
    /// The host[:port] the --basic-auth credentials go to.
    #[arg(long, value_name = "HOST[:PORT]", requires = "basic_auth")]
    pub basic_auth_host: Option<String>,
    /// How the page's JavaScript dialogs (alert, confirm, prompt) are
    /// answered; each is listed in the result's warnings.
    #[arg(long, value_enum, default_value = "dismiss", value_name = "ANSWER")]
    pub dialogs: DialogAction,
    /// A structured workflow step run on the ready page before it is read,
    /// in `oxwright run`'s syntax, e.g. `click: button "Load more"` or
    /// `wait: text "Item 40"` (repeatable; in order).
    #[arg(long = "action", value_name = "STEP", value_parser = parse_action)]
    pub actions: Vec<String>,
    /// Answer from the artefact store's cache when it holds this request's
    /// result from less than N ms ago (no navigation); an older entry is
    /// revalidated with If-None-Match / If-Modified-Since. 0 always fetches.
    #[arg(long, default_value_t = 0, value_name = "N",
          value_parser = clap::value_parser!(u64).range(0..=oxwright_jobs::limits::MAX_AGE_MS))]
    pub max_age_ms: u64,
    /// Every other option, a flag generated from the job's schema (kept
    /// last: it leaves out the options the flags above stand for).
    #[command(flatten)]
    pub more: crate::fetch_flags::GeneratedFlags,
}

/// Checks one `--action` with the structured-workflow parser.
fn parse_action(raw: &str) -> Result<String, String> {
    oxwright_steps::parse_steps(&[raw.to_string()])
        .map(|_| raw.trim().to_string())
        .map_err(|e| e.message)
}

fn parse_header(raw: &str) -> Result<(String, String), String> {
    let (name, value) = raw
        .split_once(':')
        .ok_or_else(|| format!("{raw:?}: give NAME: VALUE"))?;
    Ok((name.trim().to_string(), value.trim().to_string()))
}

fn parse_cookie(raw: &str) -> Result<CookieSpec, String> {
    let (name, value) = raw
        .split_once('=')
        .ok_or_else(|| format!("{raw:?}: give NAME=VALUE"))?;
    Ok(CookieSpec {
        name: name.trim().to_string(),
        value: value.trim().to_string(),
        domain: None,
        path: None,
    })
}

fn parse_viewport(raw: &str) -> Result<Viewport, String> {
    let (w, h) = raw
        .split_once(['x', 'X'])
        .ok_or_else(|| format!("{raw:?}: give WIDTHxHEIGHT, e.g. 1280x800"))?;
    let side = |s: &str| {
        s.trim()
            .parse::<u32>()
            .ok()
            .filter(|v| (1..=10_000).contains(v))
            .ok_or_else(|| format!("{raw:?}: each side is a number from 1 to 10000"))
    };
    Ok(Viewport {
        width: side(w)?,
        height: side(h)?,
    })
}

impl FetchArgs {
    /// Notes which of these flags `matches` (the subcommand's) holds from
    /// the command line or the environment rather than their defaults.
    pub fn note_given(&mut self, matches: &clap::ArgMatches) {
        for id in matches.ids() {
            let source = matches.value_source(id.as_str());
            if source.is_some_and(|s| s != clap::parser::ValueSource::DefaultValue) {
                let id = id.as_str();
                let option = crate::fetch_flags::option_of_id(id).unwrap_or(id);
                self.given.insert(option.to_string());
            }
        }
    }

    /// Builds a spec for `url` from these flags, with `[fetch]`'s keys for
    /// the flags not given.
    pub fn spec_with(&self, url: url::Url, defaults: &oxwright_jobs::FetchDefaults) -> FetchSpec {
        let mut spec = self.spec(url);
        let applied = defaults.apply(&mut spec, |key| {
            let flag = match key {
                "retry_count" => "retries",
                "block_resources" => "block",
                other => other,
            };
            self.given.contains(flag)
        });
        if let Err(e) = applied {
            tracing::warn!(error = %e, "[fetch] not applied");
        }
        spec
    }

    /// Builds a spec for `url` from these flags.
    pub fn spec(&self, url: url::Url) -> FetchSpec {
        let mut spec = FetchSpec::new(url);
        spec.headless = !self.headed;
        spec.timeout_ms = self.timeout_ms;
        spec.render = self.render;
        spec.wait_until = self.wait_until;
        spec.wait_for = self.wait_for.clone();
        spec.wait_ms = self.wait_ms;
        spec.retry_count = self.retries;
        spec.retry_delay_ms = self.retry_delay_ms;
        spec.block_resources = self.block.clone();
        spec.frames = self.frames;
        spec.content = self.content;
        spec.include_html = self.include_html;
        spec.screenshot = self.screenshot;
        spec.include = self.include.clone();
        spec.exclude = self.exclude.clone();
        spec.keep_overlays = self.keep_overlays;
        spec.headers = self.headers.iter().cloned().collect();
        spec.cookies = self.cookies.clone();
        spec.user_agent = self.user_agent.clone();
        spec.locale = self.locale.clone();
        spec.timezone = self.timezone.clone();
        spec.viewport = self.viewport;
        spec.mobile = self.mobile;
        spec.max_tokens = self.max_tokens;
        spec.response_headers = self.response_headers.clone();
        spec.formats = self.formats.clone();
        spec.basic_auth = self.basic_auth.as_ref().map(|raw| {
            let (username, password) = raw.split_once(':').unwrap_or((raw, ""));
            BasicAuth {
                username: username.to_string(),
                password: password.to_string(),
                host: self.basic_auth_host.clone(),
            }
        });
        spec.proxy = self.proxy.clone().map(oxwright_jobs::ProxyUrl);
        spec.dialogs = self.dialogs;
        spec.actions = self.actions.clone();
        spec.max_age_ms = self.max_age_ms;
        // Checked against their fields when the command line was read.
        if let Err(e) = self.more.patch.apply(&mut spec) {
            tracing::warn!(error = %e, "a fetch flag not applied");
        }
        spec
    }
}

/// The LLM a plain-language workflow talks to (`run`, `mcp`).
#[derive(Debug, Clone, Args)]
pub struct LlmArgs {
    /// Base URL of an OpenAI-compatible API (e.g. http://127.0.0.1:11434/v1).
    #[arg(long, env = "OXWRIGHT_LLM_BASE_URL")]
    pub llm_base_url: Option<String>,
    /// Model name.
    #[arg(long, env = "OXWRIGHT_LLM_MODEL")]
    pub model: Option<String>,
    /// Environment variable holding the API key.
    #[arg(long, env = "OXWRIGHT_LLM_API_KEY_ENV")]
    pub api_key_env: Option<String>,
    /// Larger model on the same endpoint for emergency mode (a step that
    /// keeps failing, stalls or decides with low confidence).
    #[arg(long, env = "OXWRIGHT_LLM_LARGE_MODEL")]
    pub large_model: Option<String>,
    /// Deadline of one LLM request, in milliseconds [default: 30000, or `[llm] timeout_ms`].
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=600_000))]
    pub llm_timeout_ms: Option<u64>,
}

impl LlmArgs {
    /// The chat model these flags, else the `[llm]` section, name, if any
    /// (both or neither of base URL and model).
    #[cfg(feature = "browser")]
    pub fn model(
        &self,
        env: &std::collections::BTreeMap<String, String>,
        section: &oxwright_llm::LlmSection,
    ) -> anyhow::Result<Option<std::sync::Arc<dyn oxwright_llm::ChatModel>>> {
        let base = self.llm_base_url.clone().or_else(|| section.base_url.clone());
        let model = self.model.clone().or_else(|| section.model.clone());
        match (base, model) {
            (Some(base), Some(model)) => {
                let mut cfg = oxwright_llm::LlmConfig::new(base, model);
                // A named variable must be set; the default one only when it is.
                cfg.model.api_key_env = self
                    .api_key_env
                    .clone()
                    .or_else(|| section.api_key_env.clone())
                    .or_else(|| {
                        let default = oxwright_llm::DEFAULT_API_KEY_ENV;
                        env.get(default)
                            .is_some_and(|v| !v.is_empty())
                            .then(|| default.to_string())
                    });
                cfg.timeout_ms = self.llm_timeout_ms.unwrap_or(section.timeout_ms);
                let large = self.large_model.clone().or_else(|| section.large_model.clone());
                let cfg = cfg.with_large_model(large);
                let client = oxwright_llm::LlmClient::new(cfg, env).map_err(crate::exit::usage)?;
                Ok(Some(std::sync::Arc::new(client)))
            }
            (None, None) => Ok(None),
            (Some(_), None) => Err(crate::exit::usage(
                "an LLM base URL needs a model too: --model NAME (or [llm] model, OXWRIGHT_LLM_MODEL)",
            )),
            (None, Some(_)) => Err(crate::exit::usage(
                "an LLM model needs a base URL too: --llm-base-url URL (or [llm] base_url, OXWRIGHT_LLM_BASE_URL)",
            )),
        }
    }
}

#[cfg(test)]
mod llm_tests {
    use super::*;
    use oxwright_llm::LlmSection;

    fn flags() -> LlmArgs {
        LlmArgs {
            llm_base_url: None,
            model: None,
            api_key_env: None,
            large_model: None,
            llm_timeout_ms: None,
        }
    }

    #[test]
    fn the_llm_section_stands_in_for_the_flags() {
        let env = std::collections::BTreeMap::new();
        let section = LlmSection {
            base_url: Some("http://127.0.0.1:11434/v1".into()),
            model: Some("qwen2.5".into()),
            ..LlmSection::default()
        };
        assert!(flags().model(&env, &section).unwrap().is_some());
        assert!(flags().model(&env, &LlmSection::default()).unwrap().is_none());
        // A key variable the file names must be set; the default one need not be.
        let named = LlmSection {
            api_key_env: Some("MY_KEY".into()),
            ..section.clone()
        };
        assert!(flags().model(&env, &named).is_err());
        let half = LlmArgs {
            llm_base_url: Some("http://127.0.0.1:1/v1".into()),
            ..flags()
        };
        let err = half
            .model(&env, &LlmSection::default())
            .err()
            .expect("refused")
            .to_string();
        assert!(err.contains("--model"), "{err}");
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;
    use oxwright_jobs::LinkStyle;

    use super::*;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        fetch: FetchArgs,
    }

    #[test]
    fn fetch_option_flags_build_the_spec() {
        let cli = Cli::try_parse_from([
            "x",
            "--include",
            "article",
            "--include",
            ".post",
            "--exclude",
            ".ad",
            "--keep-overlays",
            "--header",
            "X-Team: blue: green",
            "--cookie",
            "s=a=b",
            "--user-agent",
            "Bot/1",
            "--locale",
            "de-DE",
            "--timezone",
            "Asia/Tokyo",
            "--viewport",
            "800x600",
            "--mobile",
            "--basic-auth",
            "ada:pa:ss",
            "--basic-auth-host",
            "a.example:8443",
        ])
        .unwrap();
        let spec = cli.fetch.spec("https://a.example/".parse().unwrap());
        assert_eq!(spec.include, ["article", ".post"]);
        assert_eq!(spec.exclude, [".ad"]);
        assert!(spec.keep_overlays && spec.mobile);
        assert_eq!(spec.headers["X-Team"], "blue: green");
        assert_eq!(
            (spec.cookies[0].name.as_str(), spec.cookies[0].value.as_str()),
            ("s", "a=b")
        );
        assert_eq!(
            spec.viewport,
            Some(Viewport {
                width: 800,
                height: 600
            })
        );
        let auth = spec.basic_auth.unwrap();
        assert_eq!((auth.username.as_str(), auth.password.as_str()), ("ada", "pa:ss"));
        assert_eq!(auth.host.as_deref(), Some("a.example:8443"));
        for bad in [
            ["--viewport", "800"],
            ["--viewport", "0x5"],
            ["--header", "novalue"],
            ["--cookie", "x"],
            ["--action", "clik: button \"Go\""],
            ["--action", "fill: textbox \"Password\" = {{PASSWORD}}"],
        ] {
            assert!(Cli::try_parse_from(["x", bad[0], bad[1]]).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn actions_and_max_age_build_the_spec() {
        let cli = Cli::try_parse_from([
            "x",
            "--action",
            "click: button \"Accept\"",
            "--action",
            " wait: text \"Item 40\" ",
            "--max-age-ms",
            "60000",
        ])
        .unwrap();
        let spec = cli.fetch.spec("https://a.example/".parse().unwrap());
        assert_eq!(
            spec.actions,
            ["click: button \"Accept\"", "wait: text \"Item 40\""]
        );
        assert_eq!(spec.max_age_ms, 60_000);
        let plain = Cli::try_parse_from(["x"])
            .unwrap()
            .fetch
            .spec("https://a.example/".parse().unwrap());
        assert!(plain.actions.is_empty());
        assert_eq!(plain.max_age_ms, 0, "the cache is off unless asked for");
    }

    #[test]
    fn a_generated_flag_builds_the_spec_and_wins_over_the_config() {
        use clap::FromArgMatches as _;
        let url: url::Url = "https://a.example/".parse().unwrap();
        let defaults: oxwright_jobs::FetchDefaults = toml::from_str("link_style = \"text\"").unwrap();
        let parse = |args: &[&str]| {
            let matches = <Cli as clap::CommandFactory>::command()
                .try_get_matches_from(args)
                .unwrap();
            let mut cli = Cli::from_arg_matches(&matches).unwrap();
            cli.fetch.note_given(&matches);
            cli
        };
        let typed = parse(&["x", "--link-style", "inline"]);
        assert!(
            typed.fetch.given.contains("link_style"),
            "{:?}",
            typed.fetch.given
        );
        assert_eq!(
            typed.fetch.spec_with(url.clone(), &defaults).link_style,
            LinkStyle::Inline
        );
        let untyped = parse(&["x"]);
        assert_eq!(
            untyped.fetch.spec_with(url.clone(), &defaults).link_style,
            LinkStyle::Text
        );
        assert_eq!(
            parse(&["x", "--link-style", "text"]).fetch.spec(url).link_style,
            LinkStyle::Text
        );
        assert!(Cli::try_parse_from(["x", "--link-style", "footnotes"]).is_err());
    }

    #[test]
    fn no_flag_leaves_every_option_at_the_jobs_default() {
        let url: url::Url = "https://a.example/".parse().unwrap();
        let spec = Cli::try_parse_from(["x"]).unwrap().fetch.spec(url.clone());
        assert_eq!(spec, FetchSpec::new(url));
    }
}
