//! The 500-job chaos run (`oxwright-bench chaos`, BENCHMARKS.md §13) as a
//! test: workers SIGKILLed every 8 s and restarted, the broker and the S3
//! server stopped and started again, the scheduler SIGKILLed once — and
//! every job has exactly one manifest line, its artefacts, no Chromium of
//! a killed worker is left and no job is left in a queue. Needs the
//! `oxwright` binary beside the bench's (the workspace test build makes
//! it) and RabbitMQ and s3s-fs installed (`infra/services.sh install`).

use std::process::Command;

#[test]
fn five_hundred_jobs_survive_kills_and_outages() {
    let bench = env!("CARGO_BIN_EXE_oxwright-bench");
    let out_dir = tempfile::tempdir().unwrap();
    let out = Command::new(bench)
        .args([
            "--out-dir",
            &out_dir.path().display().to_string(),
            "--name",
            "chaos-ci",
        ])
        .args([
            "chaos",
            "--jobs",
            "500",
            "--workers",
            "3",
            "--kill-every-s",
            "8",
            "--timeout-s",
            "1200",
        ])
        .output()
        .expect("oxwright-bench runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "chaos run failed\n{stdout}\n{stderr}");
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out_dir.path().join("chaos-ci.json")).unwrap()).unwrap();
    let r = &report["results"];
    assert_eq!(r["passed"], true, "{r}");
    assert_eq!(r["jobs"], 500);
    assert_eq!(
        r["ok"].as_u64().unwrap() + r["failed"].as_u64().unwrap(),
        500,
        "{r}"
    );
    assert!(
        r["worker_kills"].as_u64().unwrap() >= 3,
        "the run was too short to kill anything: {r}"
    );
    assert_eq!(r["broker_restarts"], 1, "{r}");
    assert_eq!(r["s3_restarts"], 1, "{r}");
    assert_eq!(r["scheduler_kills"], 1, "{r}");
}
