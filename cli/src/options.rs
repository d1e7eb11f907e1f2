//! Command-line flags shared by several commands: the global ones and
//! the LLM's. The fetch flags are generated (`fetch_flags`).

use std::path::PathBuf;

use clap::Args;
use oxwright_policy::HostRule;

/// Global flags: configuration, output, policy.
#[derive(Debug, Clone, Args)]
pub struct CommonArgs {
    /// Log what the command does (INFO and up) on stderr; without it a
    /// one-shot command prints only warnings, errors and its results.
    #[arg(short = 'v', long, global = true)]
    pub verbose: bool,
    /// How log lines are written: `json` (one object a line), `human`, or
    /// `auto` (plain lines for a command a person runs; for a daemon,
    /// human on a terminal and JSON otherwise).
    #[arg(long, global = true, env = "OXWRIGHT_LOG_FORMAT", value_name = "FORMAT",
          value_parser = ["auto", "human", "json"])]
    pub log_format: Option<String>,
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
    /// The log format `--log-format` names (`auto` without it).
    pub fn log_format(&self) -> oxwright_telemetry::LogFormat {
        match self.log_format.as_deref() {
            Some("json") => oxwright_telemetry::LogFormat::Json,
            Some("human") => oxwright_telemetry::LogFormat::Human,
            _ => oxwright_telemetry::LogFormat::Auto,
        }
    }

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
        let merged = oxwright_llm::LlmSection {
            base_url: self.llm_base_url.clone().or_else(|| section.base_url.clone()),
            model: self.model.clone().or_else(|| section.model.clone()),
            large_model: self.large_model.clone().or_else(|| section.large_model.clone()),
            api_key_env: self.api_key_env.clone().or_else(|| section.api_key_env.clone()),
            timeout_ms: self.llm_timeout_ms.unwrap_or(section.timeout_ms),
        };
        let client = merged.client(env).map_err(crate::exit::usage)?;
        Ok(client.map(|c| std::sync::Arc::new(c) as std::sync::Arc<dyn oxwright_llm::ChatModel>))
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
