//! The `oxwright` binary owns its Chromium processes: after it exits —
//! normally, on SIGTERM or on SIGKILL — none of them remains, and an
//! interrupted batch still writes one manifest line per URL.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use oxwright_fixtures::FixtureServer;
use support::{chromium_groups, members, wait_until};

mod support;

struct Run {
    child: Child,
    out: tempfile::TempDir,
    urls: usize,
}

/// Starts `oxwright batch` over `urls` slow pages from `site`.
fn start_batch(site: &FixtureServer, urls: usize, slow_ms: u64) -> Run {
    let out = tempfile::tempdir().unwrap();
    let list: String = (0..urls)
        .map(|i| format!("{}\n", site.url(&format!("/slow?ms={slow_ms}&n={i}"))))
        .collect();
    let file = out.path().join("urls.txt");
    std::fs::write(&file, list).unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_oxwright"))
        .args(["--allow-host", &site.addr().to_string(), "--out"])
        .arg(out.path().join("store"))
        .args(["--browsers", "2", "--pages-per-browser", "2", "batch"])
        .arg(&file)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("oxwright starts");
    Run { child, out, urls }
}

async fn browsers_of(run: &Run, site: &FixtureServer) -> Vec<i32> {
    let pid = run.child.id() as i32;
    wait_until("two chromium browsers", Duration::from_secs(30), || {
        chromium_groups(pid).len() == 2
    })
    .await;
    wait_until("pages in flight", Duration::from_secs(30), || {
        site.hits("/slow") >= 2
    })
    .await;
    let groups = chromium_groups(pid);
    assert!(
        members(&groups).len() > groups.len(),
        "renderers should be running too"
    );
    groups
}

fn manifest_lines(store: &Path) -> Vec<serde_json::Value> {
    let batches = store.join("batches");
    let dir = std::fs::read_dir(&batches)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    std::fs::read_to_string(dir.join("manifest.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_leaves_no_chromium_behind() {
    let site = FixtureServer::start().await.unwrap();
    let mut run = start_batch(&site, 40, 3_000);
    let groups = browsers_of(&run, &site).await;
    // SAFETY: plain syscall on our own child.
    unsafe { libc::kill(run.child.id() as i32, libc::SIGKILL) };
    run.child.wait().unwrap();
    wait_until(
        "every chromium process to exit after SIGKILL",
        Duration::from_secs(10),
        || members(&groups).is_empty(),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_finishes_in_flight_pages_and_writes_the_manifest() {
    let site = FixtureServer::start().await.unwrap();
    let mut run = start_batch(&site, 40, 1_500);
    let groups = browsers_of(&run, &site).await;
    // SAFETY: plain syscall on our own child.
    unsafe { libc::kill(run.child.id() as i32, libc::SIGTERM) };
    let status = run.child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "interrupted batches exit with 130");
    wait_until(
        "every chromium process to exit after SIGTERM",
        Duration::from_secs(10),
        || members(&groups).is_empty(),
    )
    .await;
    let lines = manifest_lines(&run.out.path().join("store"));
    assert_eq!(lines.len(), run.urls, "one manifest line per URL");
    let ok = lines.iter().filter(|l| l["status"] == "ok").count();
    let cancelled = lines.iter().filter(|l| l["error"]["kind"] == "cancelled").count();
    assert!(ok >= 1, "in-flight pages finish");
    assert_eq!(ok + cancelled, run.urls, "{lines:?}");
    let ids: std::collections::HashSet<_> = lines
        .iter()
        .map(|l| l["job_id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids.len(), run.urls, "no duplicate lines");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finished_batch_leaves_no_chromium_behind() {
    let site = FixtureServer::start().await.unwrap();
    let mut run = start_batch(&site, 6, 10);
    let pid = run.child.id() as i32;
    let mut groups = Vec::new();
    wait_until("chromium to start", Duration::from_secs(30), || {
        groups = chromium_groups(pid);
        !groups.is_empty() || run.child.try_wait().unwrap().is_some()
    })
    .await;
    let status = run.child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
    wait_until("every chromium process to exit", Duration::from_secs(10), || {
        members(&groups).is_empty()
    })
    .await;
    let lines = manifest_lines(&run.out.path().join("store"));
    assert_eq!(lines.len(), 6);
    assert!(lines.iter().all(|l| l["status"] == "ok"), "{lines:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_tmpdir_does_not_break_chromium() {
    let site = FixtureServer::start().await.unwrap();
    // Like /tmp/some-service/run-20261123T100623Z/tmp, only longer: a
    // profile under it would put Chromium's singleton socket past the
    // 107-byte limit of a Unix socket path.
    let root = tempfile::tempdir().unwrap();
    let tmpdir = root
        .path()
        .join("some-service/run-20261123T100623Z/a-rather-long-directory-name/tmp");
    std::fs::create_dir_all(&tmpdir).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_oxwright"))
        .env("TMPDIR", &tmpdir)
        .env_remove("OXWRIGHT_CONFIG")
        .args(["--allow-host", &site.addr().to_string(), "--out"])
        .arg(root.path().join("store"))
        .args(["fetch", "--json"])
        .arg(site.url("/slow?ms=1"))
        .output()
        .expect("oxwright runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "stderr:\n{stderr}");
    let result: serde_json::Value = serde_json::from_slice(&out.stdout).expect("a FetchResult line");
    assert_eq!(result["status"], 200, "{result}");
    let left: Vec<_> = std::fs::read_dir(&tmpdir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert!(left.is_empty(), "left in TMPDIR: {left:?}");
}
