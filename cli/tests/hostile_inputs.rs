//! Hostile inputs through the `oxwright` binary: durations no job could
//! wait out are refused at once, and a batch line too large for a queue
//! message becomes that line's typed failure while the others still run.

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use oxwright_fixtures::FixtureServer;

/// Runs `oxwright` with `args`, failing the test when it has not exited
/// within `limit` (it is killed then).
fn run_within(args: &[&str], limit: Duration) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_oxwright"))
        .args(args)
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
        assert!(stderr.contains("not in"), "{args:?}: {stderr}");
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
