//! The configuration file as a user meets it: found without a flag
//! (`./oxwright.toml`, then `$XDG_CONFIG_HOME/oxwright/config.toml`),
//! `--config` still first, and `oxwright config show` printing what is in
//! effect with passwords masked.

use std::path::Path;
use std::process::{Command, Output};

/// Runs `oxwright ARGS` in `cwd` with `xdg` as `XDG_CONFIG_HOME` and
/// nothing else from the environment that the configuration reads.
fn oxwright_in(cwd: &Path, xdg: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_oxwright"));
    cmd.current_dir(cwd).args(args).env("XDG_CONFIG_HOME", xdg);
    for var in [
        "OXWRIGHT_CONFIG",
        "OXWRIGHT_OUT",
        "OXWRIGHT_AMQP_URL",
        "OXWRIGHT_QUEUE_PREFIX",
        "OXWRIGHT_S3",
        "OXWRIGHT_S3_ENDPOINT",
        "AWS_ENDPOINT_URL",
        "OXWRIGHT_ALLOW_HOSTS",
        "CHROME_PATH",
        "CHROME_URL",
    ] {
        cmd.env_remove(var);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("oxwright runs")
}

/// Runs [`oxwright_in`] on a blocking thread (the fixture server runs on the test's runtime).
fn oxwright_blocking(
    cwd: &Path,
    xdg: &Path,
    args: Vec<String>,
    env: Vec<(&'static str, &'static str)>,
) -> tokio::task::JoinHandle<Output> {
    let (cwd, xdg) = (cwd.to_path_buf(), xdg.to_path_buf());
    tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        oxwright_in(&cwd, &xdg, &args, &env)
    })
}

/// `--allow-host ADDR fetch --json EXTRA… URL`.
fn fetch_json_args(addr: &str, url: &str, extra: &[&str]) -> Vec<String> {
    let mut args = vec![
        "--allow-host".to_string(),
        addr.into(),
        "fetch".into(),
        "--json".into(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    args.push(url.into());
    args
}

fn show(out: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn config_show_reads_the_file_found_without_a_flag_and_masks_passwords() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().join("project");
    let xdg = dir.path().join("xdg");
    std::fs::create_dir_all(&cwd).unwrap();
    std::fs::create_dir_all(xdg.join("oxwright")).unwrap();

    // Nothing anywhere: the defaults, and where it looked.
    let out = oxwright_in(&cwd, &xdg, &["config", "show"], &[]);
    let text = show(&out);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("# file: none found (looked for "), "{text}");
    assert!(text.contains("project/oxwright.toml"), "{text}");
    assert!(text.contains("xdg/oxwright/config.toml"), "{text}");
    assert!(text.contains("out_dir = \"oxwright-out\""), "{text}");
    assert!(text.contains("listen = \"127.0.0.1:8080\""), "{text}");

    // The user's file under XDG_CONFIG_HOME.
    let user = xdg.join("oxwright/config.toml");
    std::fs::write(
        &user,
        "[browser]\nbrowsers = 3\n[queue]\namqp_url = \"amqp://ox:hunter2@broker:5672/%2f\"\n",
    )
    .unwrap();
    let out = oxwright_in(&cwd, &xdg, &["config", "show"], &[]);
    let text = show(&out);
    assert!(out.status.success(), "{text}");
    assert!(text.contains(&format!("# file: {}", user.display())), "{text}");
    assert!(text.contains("browsers = 3"), "{text}");
    assert!(text.contains("amqp://ox:***@broker:5672/%2f"), "{text}");
    assert!(!text.contains("hunter2"), "a password in the output:\n{text}");

    // ./oxwright.toml comes before the user's file; the environment and
    // flags still override it, and show says which variable did.
    let local = cwd.join("oxwright.toml");
    std::fs::write(&local, "out_dir = \"local-out\"\n[browser]\nbrowsers = 2\n").unwrap();
    let out = oxwright_in(
        &cwd,
        &xdg,
        &["--pages-per-browser", "7", "config", "show"],
        &[
            ("OXWRIGHT_QUEUE_PREFIX", "staging"),
            ("OXWRIGHT_QUEUE__MAX_ATTEMPTS", "6"),
            ("OXWRIGHT_LLM__BASE_URL", "http://me:s3cret@127.0.0.1:11434/v1"),
        ],
    );
    let text = show(&out);
    assert!(out.status.success(), "{text}");
    assert!(text.contains(&format!("# file: {}", local.display())), "{text}");
    assert!(text.contains("out_dir = \"local-out\""), "{text}");
    assert!(text.contains("browsers = 2"), "{text}");
    assert!(text.contains("pages_per_browser = 7"), "{text}");
    assert!(text.contains("prefix = \"staging\""), "{text}");
    assert!(
        text.contains("# environment: OXWRIGHT_QUEUE_PREFIX sets queue.prefix"),
        "{text}"
    );
    // The one rule for every key, listed too; an LLM URL's password masked.
    assert!(text.contains("max_attempts = 6"), "{text}");
    assert!(
        text.contains("# environment: OXWRIGHT_QUEUE__MAX_ATTEMPTS sets queue.max_attempts"),
        "{text}"
    );
    assert!(
        text.contains("[llm]") && text.contains("me:***@127.0.0.1"),
        "{text}"
    );
    assert!(!text.contains("s3cret"), "{text}");

    // --config keeps naming the file, over the one in the directory.
    let named = dir.path().join("named.toml");
    std::fs::write(&named, "out_dir = \"named-out\"\n").unwrap();
    let out = oxwright_in(
        &cwd,
        &xdg,
        &["--config", named.to_str().unwrap(), "config", "show"],
        &[],
    );
    let text = show(&out);
    assert!(text.contains("out_dir = \"named-out\""), "{text}");

    // A broken file found without a flag is a usage error naming it.
    std::fs::write(&local, "[browser]\nbrowserz = 2\n").unwrap();
    let out = oxwright_in(&cwd, &xdg, &["config", "show"], &[]);
    let text = show(&out);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(
        text.contains("oxwright.toml") && text.contains("browserz"),
        "{text}"
    );
}

#[test]
fn the_example_config_is_a_valid_config_file() {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../oxwright.example.toml");
    let dir = tempfile::tempdir().unwrap();
    let out = oxwright_in(
        dir.path(),
        dir.path(),
        &["--config", example.to_str().unwrap(), "config", "show"],
        &[],
    );
    assert!(out.status.success(), "{}", show(&out));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_fetch_section_sets_defaults_that_typed_flags_override() {
    let site = oxwright_fixtures::FixtureServer::start().await.unwrap();
    let url = site.url(oxwright_fixtures::ARTICLE_PATHS[0]);
    let addr = site.addr().to_string();
    let dir = tempfile::tempdir().unwrap();
    let xdg = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("oxwright.toml"),
        "[fetch]\ncontent = \"full\"\nwait_until = \"load\"\nmax_tokens = 100000\n",
    )
    .unwrap();
    let run = |args: Vec<String>, env: Vec<(&'static str, &'static str)>| {
        oxwright_blocking(dir.path(), xdg.path(), args, env)
    };
    let fetch = |extra: &[&str]| fetch_json_args(&addr, &url, extra);
    let mode = |out: &Output| -> String {
        let v: serde_json::Value =
            serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{}", show(out)));
        v["content_mode"].as_str().unwrap_or_default().to_string()
    };
    let out = run(fetch(&[]), vec![]).await.unwrap();
    assert_eq!(mode(&out), "full", "{}", show(&out));
    let out = run(fetch(&["--content", "main"]), vec![]).await.unwrap();
    assert_eq!(mode(&out), "main", "a typed flag wins: {}", show(&out));
    let out = run(fetch(&[]), vec![("OXWRIGHT_FETCH__CONTENT", "main")])
        .await
        .unwrap();
    assert_eq!(
        mode(&out),
        "main",
        "the variable overrides the file: {}",
        show(&out)
    );
    let out = run(vec!["config".into(), "show".into()], vec![]).await.unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("[fetch]") && text.contains("content = \"full\""),
        "{text}"
    );

    std::fs::write(dir.path().join("oxwright.toml"), "[fetch]\ntimeout_ms = 0\n").unwrap();
    let out = run(fetch(&[]), vec![]).await.unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("[fetch] timeout_ms"),
        "{}",
        show(&out)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_fetch_section_turns_the_cache_on_and_a_typed_max_age_turns_it_off() {
    let site = oxwright_fixtures::FixtureServer::start().await.unwrap();
    let url = site.url("/cache/page");
    let addr = site.addr().to_string();
    let dir = tempfile::tempdir().unwrap();
    let xdg = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("oxwright.toml"), "[fetch]\nmax_age_ms = 600000\n").unwrap();
    let run_env = |extra: &[&str], env: Vec<(&'static str, &'static str)>| {
        oxwright_blocking(dir.path(), xdg.path(), fetch_json_args(&addr, &url, extra), env)
    };
    let run = |extra: &[&str]| run_env(extra, Vec::new());
    let cache = |out: &Output| -> String {
        let v: serde_json::Value =
            serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{}", show(out)));
        v["cache"].as_str().unwrap_or_default().to_string()
    };
    let first = run(&[]).await.unwrap();
    assert_eq!(cache(&first), "miss", "{}", show(&first));
    let second = run(&[]).await.unwrap();
    assert_eq!(cache(&second), "hit", "{}", show(&second));
    assert_eq!(site.hits("/cache/page"), 1, "the hit made no request");
    // A page the cache answers starts no browser: with no Chromium to
    // start, the hit is still answered.
    let no_browser = run_env(&[], vec![("CHROME_PATH", "/nonexistent/chromium")])
        .await
        .unwrap();
    assert!(no_browser.status.success(), "{}", show(&no_browser));
    assert_eq!(cache(&no_browser), "hit", "{}", show(&no_browser));
    assert!(
        dir.path().join("oxwright-out/cache/fetch").is_dir(),
        "the entry is in the default store"
    );
    let typed = run(&["--max-age-ms", "0"]).await.unwrap();
    assert_eq!(cache(&typed), "miss", "a typed flag wins: {}", show(&typed));
    assert_eq!(site.hits("/cache/page"), 2);
}
