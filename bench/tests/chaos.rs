//! The 500-job chaos run (`oxwright-bench chaos`, BENCHMARKS.md §13) as a
//! test: workers SIGKILLed every 8 s and restarted, the broker and the S3
//! server stopped and started again, the scheduler SIGKILLed once — and
//! every job has exactly one manifest line, its artefacts, no Chromium of
//! a killed worker is left and no job is left in a queue. The same for a
//! crawl of a 300-page site: every page taken once, none lost. Needs the
//! `oxwright` binary beside the bench's (the workspace test build makes
//! it) and RabbitMQ and s3s-fs installed (`infra/services.sh install`).

use std::process::Command;

/// Runs `oxwright-bench chaos` with `args`; returns its results.
fn chaos(name: &str, args: &[&str]) -> serde_json::Value {
    let bench = env!("CARGO_BIN_EXE_oxwright-bench");
    let out_dir = tempfile::tempdir().unwrap();
    let out = Command::new(bench)
        .args(["--out-dir", &out_dir.path().display().to_string(), "--name", name])
        .arg("chaos")
        .args(args)
        .args(["--workers", "3", "--kill-every-s", "8", "--timeout-s", "1200"])
        .output()
        .expect("oxwright-bench runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "chaos run failed\n{stdout}\n{stderr}");
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out_dir.path().join(format!("{name}.json"))).unwrap()).unwrap();
    let r = report["results"].clone();
    assert_eq!(r["passed"], true, "{r}");
    assert!(
        r["worker_kills"].as_u64().unwrap() >= 3,
        "the run was too short to kill anything: {r}"
    );
    assert_eq!(r["broker_restarts"], 1, "{r}");
    assert_eq!(r["s3_restarts"], 1, "{r}");
    assert_eq!(r["scheduler_kills"], 1, "{r}");
    r
}

#[test]
fn five_hundred_jobs_survive_kills_and_outages() {
    let r = chaos("chaos-ci", &["--jobs", "500"]);
    assert_eq!(r["jobs"], 500);
    assert_eq!(
        r["ok"].as_u64().unwrap() + r["failed"].as_u64().unwrap(),
        500,
        "{r}"
    );
}

#[test]
fn a_crawl_of_three_hundred_pages_survives_kills_and_outages() {
    let r = chaos("chaos-crawl-ci", &["--crawl", "--jobs", "300"]);
    // The tree's 300 pages and the 6 pages it links that answer 404.
    assert_eq!(r["jobs"], 306, "{r}");
    assert_eq!(
        (r["ok"].as_u64(), r["failed"].as_u64()),
        (Some(300), Some(6)),
        "{r}"
    );
}
