//! `oxwright config show`: prints the configuration in effect (the file,
//! then the environment, then flags) as TOML, with the file it came from
//! and the environment variables that changed it; passwords in URLs are
//! masked.

use clap::{Args, Subcommand};
use oxwright_config::Setup;
use oxwright_config::{ENV_OVERRIDES, config_candidates, env_keys};

/// Arguments of `oxwright config`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  oxwright config show                            # the effective configuration, where each value came from")]
pub struct ConfigCmd {
    #[command(subcommand)]
    pub what: ConfigWhat,
}

/// What to do with the configuration.
#[derive(Debug, Subcommand)]
pub enum ConfigWhat {
    /// Print the effective configuration as TOML, secrets masked.
    Show,
}

/// What replaces a password.
const MASK: &str = "***";

/// Runs the command; returns the process exit code.
pub async fn run(setup: Setup, cmd: ConfigCmd) -> anyhow::Result<i32> {
    match cmd.what {
        ConfigWhat::Show => print!("{}", show(&setup)?),
    }
    Ok(crate::exit::OK)
}

/// Renders the effective configuration of `setup`.
fn show(setup: &Setup) -> anyhow::Result<String> {
    let mut out = String::new();
    match &setup.config_file {
        Some(path) => out.push_str(&format!("# file: {}\n", path.display())),
        None => {
            let cwd = std::env::current_dir().unwrap_or_default();
            let looked: Vec<String> = config_candidates(&cwd, &setup.env)
                .iter()
                .map(|p| p.display().to_string())
                .collect();
            out.push_str(&format!(
                "# file: none found (looked for {}); defaults\n",
                looked.join(", ")
            ));
        }
    }
    for (var, key) in ENV_OVERRIDES {
        if setup.env.get(*var).is_some_and(|v| !v.trim().is_empty()) {
            out.push_str(&format!("# environment: {var} sets {key}\n"));
        }
    }
    for (var, key) in env_keys(&setup.env) {
        out.push_str(&format!("# environment: {var} sets {key}\n"));
    }
    let mut cfg = setup.config.clone();
    cfg.llm.base_url = cfg.llm.base_url.map(|u| mask_url(&u));
    // What the pool will use, its default Chromium included.
    #[cfg(feature = "browser")]
    {
        let pool = oxwright_worker::pool_config(&cfg.browser, &setup.env);
        cfg.browser.chrome_path = Some(pool.chrome_path);
        cfg.browser.chrome_url = pool.chrome_url;
    }
    cfg.browser.chrome_url = cfg.browser.chrome_url.map(|u| mask_url(&u));
    cfg.queue.amqp_url = cfg.queue.amqp_url.map(|u| mask_url(&u));
    cfg.store.s3_endpoint = cfg.store.s3_endpoint.map(|u| mask_url(&u));
    out.push_str(&toml::to_string_pretty(&cfg)?);
    if !out.ends_with('\n') {
        out.push('\n');
    }
    Ok(out)
}

/// Returns `raw` with the password of its user info masked.
fn mask_url(raw: &str) -> String {
    match url::Url::parse(raw) {
        Ok(mut url) if url.has_host() => {
            if url.password().is_some() {
                let _ = url.set_password(Some(MASK));
            }
            url.to_string()
        }
        // Not a URL with an authority: show no part that could be a password.
        _ if raw.contains('@') => MASK.to_string(),
        _ => raw.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_in_urls_are_masked() {
        assert_eq!(
            mask_url("amqp://user:hunter2@broker:5672/%2f"),
            "amqp://user:***@broker:5672/%2f"
        );
        assert_eq!(mask_url("amqp://broker:5672/"), "amqp://broker:5672/");
        assert_eq!(mask_url("user:hunter2@broker"), MASK);
    }
}
