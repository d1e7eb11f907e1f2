//! The function's configuration: the names `oxwright`'s environment
//! overrides use (a Lambda has no configuration file and no flags).

use std::collections::BTreeMap;
use std::sync::Arc;

use oxwright_config::{Config, Setup, UsageError};

/// `OXWRIGHT_ALLOW_PRIVATE`: `1`/`true`/`yes` lets every private address through.
pub const ALLOW_PRIVATE: &str = "OXWRIGHT_ALLOW_PRIVATE";

/// Builds the worker's setup from `env` alone: no file is looked for,
/// whatever the current directory holds. Unreadable values are usage errors.
pub fn setup_from_env(env: BTreeMap<String, String>) -> anyhow::Result<Setup> {
    let mut config = Config::load(None, &env).map_err(UsageError::from_any)?;
    if let Some(raw) = env.get(ALLOW_PRIVATE) {
        config.policy.allow_private |= parse_flag(ALLOW_PRIVATE, raw)?;
    }
    let policy = Arc::new(config.policy.clone());
    Ok(Setup {
        config,
        policy,
        env,
        config_file: None,
    })
}

fn parse_flag(name: &str, raw: &str) -> anyhow::Result<bool> {
    match raw.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" => Ok(true),
        "" | "0" | "false" | "no" => Ok(false),
        other => Err(UsageError::from_any(format!(
            "{name}={other:?}: expected true or false"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn settings_come_from_the_environment() {
        let setup = setup_from_env(env(&[
            ("OXWRIGHT_OUT", "/tmp/out"),
            ("OXWRIGHT_ALLOW_HOSTS", "127.0.0.1:8080, 10.0.0.5"),
            ("OXWRIGHT_ALLOW_PRIVATE", "true"),
            ("OXWRIGHT_BROWSER__PAGES_PER_BROWSER", "2"),
            ("OXWRIGHT_AMQP_URL", "amqp://u:p@127.0.0.1:5672/%2f"),
        ]))
        .unwrap();
        assert_eq!(setup.config.out_dir, std::path::PathBuf::from("/tmp/out"));
        assert_eq!(setup.config.policy.allow_hosts.len(), 2);
        assert!(setup.policy.allow_private);
        assert_eq!(setup.config.browser.pages_per_browser, 2);
        assert!(setup.config_file.is_none());
    }

    #[test]
    fn a_bad_flag_is_a_usage_error() {
        let err = setup_from_env(env(&[("OXWRIGHT_ALLOW_PRIVATE", "maybe")])).unwrap_err();
        assert!(UsageError::is_in(&err), "{err:#}");
        assert!(!setup_from_env(env(&[])).unwrap().policy.allow_private);
    }
}
