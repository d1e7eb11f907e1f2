//! Exit codes as a script sees them (`docs/src/exit-codes.md`): 1 when some
//! jobs failed, 2 for a bad flag, configuration or input or a browser that
//! cannot start as asked, on the built binary.

use std::process::Output;

use oxwright_fixtures::{ARTICLE_PATHS, FixtureServer};
use support::show;

mod support;

/// Runs the binary with `args`; headed mode must find no display (the last
/// test relies on it).
async fn oxwright(args: Vec<String>) -> Output {
    support::oxwright_output(args, &["DISPLAY"]).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_with_a_failed_page_exits_1() {
    let site = FixtureServer::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let list = dir.path().join("urls.txt");
    std::fs::write(
        &list,
        format!(
            "{}\n{}\n",
            site.url(ARTICLE_PATHS[0]),
            site.url("/flaky/exit-404?fail=9&status=404")
        ),
    )
    .unwrap();
    let out = oxwright(vec![
        "--allow-host".into(),
        site.addr().to_string(),
        "--out".into(),
        dir.path().join("out").display().to_string(),
        "batch".into(),
        "--json".into(),
        list.display().to_string(),
    ])
    .await;
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).expect("summary JSON");
    assert_eq!(summary["ok"], 1, "{summary}");
    assert_eq!(summary["failed"], 1, "{summary}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_config_file_exits_2_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("oxwright.toml");
    std::fs::write(&config, "no_such_key = 1\n").unwrap();
    let out = oxwright(vec![
        "--config".into(),
        config.display().to_string(),
        "fetch".into(),
        "https://example.com/".into(),
    ])
    .await;
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no_such_key"),
        "{}",
        show(&out)
    );

    let missing = dir.path().join("missing.toml").display().to_string();
    let out = oxwright(vec![
        "--config".into(),
        missing,
        "fetch".into(),
        "https://example.com/".into(),
    ])
    .await;
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_flag_or_input_exits_2() {
    let out = oxwright(vec![
        "fetch".into(),
        "--no-such-flag".into(),
        "https://example.com/".into(),
    ])
    .await;
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    let out = oxwright(vec!["fetch".into(), "ftp://example.com/file".into()]).await;
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-list.txt").display().to_string();
    let out = oxwright(vec![
        "--out".into(),
        dir.path().join("out").display().to_string(),
        "batch".into(),
        missing,
    ])
    .await;
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn headed_without_a_display_is_not_retried_and_exits_2() {
    let site = FixtureServer::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let started = std::time::Instant::now();
    let out = oxwright(vec![
        "--allow-host".into(),
        site.addr().to_string(),
        "--out".into(),
        dir.path().display().to_string(),
        "fetch".into(),
        "--headed".into(),
        "--retries".into(),
        "3".into(),
        "--retry-delay-ms".into(),
        "2000".into(),
        site.url(ARTICLE_PATHS[0]),
    ])
    .await;
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("browser_misconfigured"), "{}", show(&out));
    assert!(stderr.contains("DISPLAY"), "{}", show(&out));
    assert!(stderr.contains("not retried"), "{}", show(&out));
    // Three retries at 2, 4 and 8 s would take 14 s.
    assert!(
        started.elapsed() < std::time::Duration::from_secs(12),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(site.hits(ARTICLE_PATHS[0]), 0);
}
