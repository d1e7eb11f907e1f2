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
