//! Hostile inputs through the `oxwright` binary: durations no job could
//! wait out are refused at once (flags and the configuration file), a
//! batch line too large for a queue message becomes that line's typed
//! failure while the others still run, and so does a `fetch` argument the
//! URL policy refuses; JavaScript dialogs never block a fetch.

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use oxwright_fixtures::FixtureServer;

/// Runs `oxwright` with `args`, failing the test when it has not exited
/// within `limit` (it is killed then).
fn run_within(args: &[&str], limit: Duration) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_oxwright"))
        .args(args)
        .env_remove("RUST_LOG")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("oxwright starts");
    let started = Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if started.elapsed() > limit {
            child.kill().expect("kill");
            let out = child.wait_with_output().expect("output");
            panic!(
                "oxwright {args:?} still running after {limit:?}; stderr: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().expect("output")
}

#[test]
fn unbounded_durations_are_refused_at_once() {
    let huge = u64::MAX.to_string();
    // A closed port: with the delay accepted, the retries would wait it out.
    let url = format!("http://127.0.0.1:{}/", closed_port());
    let (huge, url) = (huge.as_str(), url.as_str());
    let cases: [&[&str]; 7] = [
        &["--allow-private", "fetch", "--retry-delay-ms", huge, url],
        &["--allow-private", "fetch", "--wait-ms", huge, url],
        &["--allow-private", "fetch", "--wait-ms", "60001", url],
        &["--allow-private", "fetch", "--timeout-ms", huge, url],
        &["--allow-private", "fetch", "--retries", "4294967295", url],
        &["worker", "--retry-delay-ms", huge],
        &["worker", "--drain-timeout-s", huge],
    ];
    for args in cases {
        let out = run_within(args, Duration::from_secs(20));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains("not in") || stderr.contains("out of range"),
            "{args:?}: {stderr}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_batch_line_is_that_lines_failure() {
    let site = FixtureServer::start().await.unwrap();
    let out = tempfile::tempdir().unwrap();
    let good_a = site.url(oxwright_fixtures::ARTICLE_PATHS[0]);
    let good_b = site.url(oxwright_fixtures::ARTICLE_PATHS[1]);
    // A valid URL whose job message exceeds the queue's 1 MiB limit.
    let huge = format!("{}?q={}", site.url("/"), "a".repeat(1_100_000));
    let list = out.path().join("urls.txt");
    std::fs::write(&list, format!("{good_a}\n{huge}\n{good_b}\n")).unwrap();
    let store = out.path().join("store");
    let addr = site.addr().to_string();
    let run = tokio::task::spawn_blocking({
        let (list, store) = (list.display().to_string(), store.display().to_string());
        move || {
            run_within(
                &[
                    "--allow-host",
                    &addr,
                    "--out",
                    &store,
                    "batch",
                    "--json",
                    "--retries",
                    "0",
                    &list,
                ],
                Duration::from_secs(120),
            )
        }
    })
    .await
    .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    // The exit-code table: 1 when some jobs failed (the batch itself ran).
    assert_eq!(run.status.code(), Some(1), "{stderr}");
    let summary: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
    assert_eq!(summary["total"], 3, "{summary}");
    assert_eq!(summary["ok"], 2, "{summary}");
    assert_eq!(summary["failed_by_kind"]["invalid_input"], 1, "{summary}");
    let manifest = std::fs::read_to_string(store.join(summary["manifest"].as_str().unwrap())).unwrap();
    let lines: Vec<serde_json::Value> = manifest
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3);
    let failed: Vec<_> = lines.iter().filter(|l| l["status"] == "failed").collect();
    assert_eq!(failed.len(), 1, "{manifest:.2000}");
    assert_eq!(failed[0]["error"]["kind"], "invalid_input");
    assert!(
        failed[0]["error"]["message"].as_str().unwrap().contains("limit"),
        "{}",
        failed[0]["error"]
    );
    // The manifest line names the URL without carrying the whole megabyte.
    assert!(failed[0]["url"].as_str().unwrap().len() < 10_000);
}

/// Returns a loopback port nothing listens on (bound, noted, released).
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("addr").port()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fetch_reports_each_refused_input_with_its_kind_and_runs_the_others() {
    let site = FixtureServer::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let good = site.url(oxwright_fixtures::ARTICLE_PATHS[0]);
    let refused = [
        ("file:///etc/passwd", "policy_denied"),
        ("data:text/html,<p>x</p>", "policy_denied"),
        ("javascript:alert(1)", "policy_denied"),
        ("ftp://example.com/file", "policy_denied"),
        ("http://169.254.169.254/latest/meta-data/", "policy_denied"),
        ("http://10.0.0.1/", "policy_denied"),
        ("", "invalid_input"),
        ("http://", "invalid_input"),
    ];
    let addr = site.addr().to_string();
    let store = dir.path().display().to_string();
    let mut args: Vec<&str> = vec![
        "--allow-host",
        &addr,
        "--out",
        &store,
        "fetch",
        "--json",
        "--retries",
        "0",
        &good,
    ];
    args.extend(refused.iter().map(|(url, _)| *url));
    let run = tokio::task::spawn_blocking({
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        move || {
            run_within(
                &args.iter().map(String::as_str).collect::<Vec<_>>(),
                Duration::from_secs(120),
            )
        }
    })
    .await
    .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    // Some pages failed, one ran: the exit-code table's 1.
    assert_eq!(run.status.code(), Some(1), "{stderr}");
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&run.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // One JSON line per argument, in the order given.
    assert_eq!(lines.len(), 1 + refused.len(), "{stderr}");
    assert!(
        lines[0]["markdown"].as_str().is_some_and(|m| !m.is_empty()),
        "{}",
        lines[0]
    );
    for ((url, kind), line) in refused.iter().zip(&lines[1..]) {
        assert_eq!(line["url"], *url, "{line}");
        assert_eq!(line["error"]["kind"], *kind, "{url}: {line}");
        assert!(line["error"]["message"].as_str().is_some_and(|m| !m.is_empty()));
    }
    // docs/src/fetch.md: `error: URL: kind: message`.
    assert!(
        stderr.contains("error: file:///etc/passwd: policy_denied: "),
        "{stderr}"
    );
    assert!(
        stderr.contains("error: http://169.254.169.254/latest/meta-data/: policy_denied: "),
        "{stderr}"
    );
    assert!(site.hits(oxwright_fixtures::ARTICLE_PATHS[0]) >= 1);

    // Nothing but refused inputs: every one reported, nothing ran, exit 2.
    let only_bad = run_within(
        &["fetch", "--json", "file:///etc/passwd", "http://127.0.0.1/"],
        Duration::from_secs(60),
    );
    let stderr = String::from_utf8_lossy(&only_bad.stderr);
    assert_eq!(only_bad.status.code(), Some(2), "{stderr}");
    assert_eq!(
        String::from_utf8_lossy(&only_bad.stdout).lines().count(),
        2,
        "{stderr}"
    );
    assert!(
        stderr.contains("error: http://127.0.0.1/: policy_denied: "),
        "{stderr}"
    );
}

#[test]
fn unbounded_durations_in_the_config_file_are_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("oxwright.toml");
    let config_arg = config.display().to_string();
    // TOML integers stop at i64::MAX; that many milliseconds is for ever too.
    let huge = i64::MAX;
    let url = format!("http://127.0.0.1:{}/", closed_port());
    let cases: [(String, &[&str]); 3] = [
        (format!("[browser]\ncall_timeout_ms = {huge}\n"), &["fetch", &url]),
        (
            format!("[queue]\nretry_delay_ms = {huge}\n"),
            &["worker", "--amqp", "amqp://127.0.0.1:1/"],
        ),
        (
            format!("[scheduler]\nflush_interval_ms = {huge}\n"),
            &["scheduler", "--no-api", "--amqp", "amqp://127.0.0.1:1/"],
        ),
    ];
    for (text, args) in cases {
        std::fs::write(&config, &text).unwrap();
        let mut all = vec!["--config", &config_arg, "--allow-private"];
        all.extend_from_slice(args);
        let out = run_within(&all, Duration::from_secs(20));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{text}: {stderr}");
        assert!(stderr.contains("out of range"), "{text}: {stderr}");
    }
}

/// Fetches the fixture's `/dialogs` page (an alert, a confirm and a prompt
/// before load, an alert after it) with `extra` flags; returns its result.
async fn fetch_dialogs(site: &FixtureServer, extra: &'static [&'static str]) -> serde_json::Value {
    let (addr, url) = (site.addr().to_string(), site.url("/dialogs"));
    tokio::task::spawn_blocking(move || fetch_dialogs_blocking(&addr, &url, extra))
        .await
        .unwrap()
}

fn fetch_dialogs_blocking(addr: &str, url: &str, extra: &[&str]) -> serde_json::Value {
    let mut args = vec!["--allow-host", addr, "fetch", "--json", "--retries", "0"];
    args.extend_from_slice(extra);
    args.push(url);
    let out = run_within(&args, Duration::from_secs(90));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{args:?}: {stderr}");
    serde_json::from_slice(&out.stdout).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn js_dialogs_are_answered_as_asked_and_reported() {
    let site = FixtureServer::start().await.unwrap();
    let warnings = |r: &serde_json::Value| -> Vec<String> {
        r["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w.as_str().unwrap().to_owned())
            .collect()
    };
    // By default every dialog is dismissed: the page goes on and is read.
    let r = fetch_dialogs(&site, &[]).await;
    let markdown = r["markdown"].as_str().unwrap();
    assert!(
        markdown.contains("Dialog answers: confirm false, prompt null."),
        "{markdown}"
    );
    let w = warnings(&r);
    for (kind, text) in [
        ("alert", "Welcome to the dialog page"),
        ("confirm", "Accept cookies?"),
        ("prompt", "Your name?"),
    ] {
        assert!(
            w.iter()
                .any(|w| w.contains(kind) && w.contains(text) && w.contains("dismissed")),
            "{kind}: {w:?}"
        );
    }
    // `--dialogs accept` presses OK; a prompt gets its default text.
    let r = fetch_dialogs(&site, &["--dialogs", "accept"]).await;
    let markdown = r["markdown"].as_str().unwrap();
    assert!(
        markdown.contains("Dialog answers: confirm true, prompt Ada."),
        "{markdown}"
    );
    let w = warnings(&r);
    assert!(
        w.iter().any(|w| w.contains("confirm") && w.contains("accepted")),
        "{w:?}"
    );
}

/// `oxwright [global…] fetch --render never [rest…]` against `site`, its
/// store in `dir`.
fn served_fetch(site: &FixtureServer, dir: &std::path::Path, global: &[&str], rest: &[&str]) -> Vec<String> {
    let mut args = vec![
        "--allow-host".to_string(),
        site.addr().to_string(),
        "--out".into(),
        dir.display().to_string(),
    ];
    args.extend(global.iter().map(|a| a.to_string()));
    args.extend(["fetch", "--render", "never"].map(String::from));
    args.extend(rest.iter().map(|a| a.to_string()));
    args
}

/// Runs `oxwright` with `args` off the async runtime.
async fn run_blocking(args: Vec<String>) -> Output {
    tokio::task::spawn_blocking(move || {
        run_within(
            &args.iter().map(String::as_str).collect::<Vec<_>>(),
            Duration::from_secs(60),
        )
    })
    .await
    .unwrap()
}

/// An argument holding a line break (or an escape sequence) is echoed
/// escaped in every message, so it cannot write a line of its own to
/// stderr nor drive the terminal; the JSON result carries it as a string.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn input_echoed_in_a_message_stays_on_its_line() {
    let site = FixtureServer::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let hostile = format!("{}\r\nX-Injected: yes\u{1b}[2J", site.url("/echo"));
    for json in [false, true] {
        let rest: &[&str] = if json { &["--json", &hostile] } else { &[&hostile] };
        let out = run_blocking(served_fetch(&site, dir.path(), &[], rest)).await;
        let stderr = String::from_utf8_lossy(&out.stderr);
        // Nothing ran: every input was refused (a usage error).
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(
            stderr.lines().all(|l| !l.starts_with("X-Injected")) && !stderr.contains('\u{1b}'),
            "the input wrote to stderr raw: {stderr:?}"
        );
        assert!(
            stderr.contains("/echo\\r\\nX-Injected: yes\\u{1b}[2J"),
            "{stderr:?}"
        );
        if json {
            let line: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON line");
            assert_eq!(line["url"], hostile.as_str());
            assert_eq!(line["error"]["kind"], "invalid_input");
        }
    }
}

/// A one-shot command prints only warnings, errors and its results, with
/// stderr redirected as on a terminal; `-v` brings the logs back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_shot_commands_are_quiet_unless_asked() {
    let site = FixtureServer::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let url = site.url(oxwright_fixtures::ARTICLE_PATHS[0]);
    for verbose in [false, true] {
        let global: &[&str] = if verbose { &["-v"] } else { &[] };
        let args = served_fetch(&site, dir.path(), global, &[&url]);
        let out = run_blocking(args).await;
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        assert!(!out.stdout.is_empty());
        // Plain lines a person reads, not JSON, though stderr is no terminal.
        assert!(!stderr.contains("\"level\""), "{stderr}");
        if verbose {
            assert!(
                stderr
                    .lines()
                    .any(|l| l.starts_with("info: telemetry initialised")),
                "{stderr}"
            );
        } else {
            // The one warning a root run gives (Chromium without its sandbox).
            let rest: Vec<&str> = stderr
                .lines()
                .filter(|l| !l.contains("CHROMIUM RUNS WITHOUT ITS SANDBOX"))
                .collect();
            assert!(rest.is_empty(), "a quiet command logged: {stderr}");
            for line in stderr.lines() {
                assert!(line.starts_with("warning: "), "{stderr}");
            }
        }
    }
}
