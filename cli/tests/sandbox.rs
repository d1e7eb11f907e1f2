//! Chromium's own sandbox: a fetch run by an unprivileged user (the
//! `oxwright-sandbox` account `infra/install.sh` creates) runs its
//! renderers inside the sandbox — their own user and PID namespaces and a
//! seccomp-BPF filter, read from `/proc` while the page is open — and says
//! nothing about it; run by root, the same fetch says loudly, once, that
//! Chromium runs without its sandbox, and its renderers have neither.

use std::ffi::CString;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use oxwright_fixtures::FixtureServer;

mod support;

/// The account `infra/install.sh` creates for this test.
const USER: &str = "oxwright-sandbox";

/// The uid and gid of `name`.
fn account(name: &str) -> Option<(u32, u32)> {
    let c = CString::new(name).unwrap();
    // SAFETY: getpwnam reads a NUL-terminated name; the result is read at once.
    unsafe {
        let pw = libc::getpwnam(c.as_ptr());
        (!pw.is_null()).then(|| ((*pw).pw_uid, (*pw).pw_gid))
    }
}

/// Every process below `root`.
fn descendants(root: i32) -> Vec<i32> {
    let all = support::processes();
    let mut out = Vec::new();
    let mut frontier = vec![root];
    while let Some(p) = frontier.pop() {
        for (pid, ppid, _) in &all {
            if *ppid == p {
                out.push(*pid);
                frontier.push(*pid);
            }
        }
    }
    out
}

/// What `/proc` says of one renderer.
#[derive(Debug)]
struct Renderer {
    pid: i32,
    seccomp: String,
    own_user_ns: bool,
    own_pid_ns: bool,
}

fn ns(pid: i32, kind: &str) -> String {
    std::fs::read_link(format!("/proc/{pid}/ns/{kind}"))
        .map(|p| p.display().to_string())
        .unwrap_or_default()
}

/// The renderers below `owner`, as `/proc` shows them.
fn renderers(owner: i32) -> Vec<Renderer> {
    descendants(owner)
        .into_iter()
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .map(|c| String::from_utf8_lossy(&c).contains("--type=renderer"))
                .unwrap_or(false)
        })
        .filter_map(|pid| {
            let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
            let seccomp = status
                .lines()
                .find_map(|l| l.strip_prefix("Seccomp:"))?
                .trim()
                .to_string();
            Some(Renderer {
                pid,
                seccomp,
                own_user_ns: ns(pid, "user") != ns(owner, "user"),
                own_pid_ns: ns(pid, "pid") != ns(owner, "pid"),
            })
        })
        .collect()
}

/// Runs a fetch of a page that stays open for a while, as `user` (or as
/// this process), and returns the renderers seen while it ran with the
/// command's output.
fn fetch_watching(
    site: &FixtureServer,
    dir: &std::path::Path,
    user: Option<(u32, u32)>,
) -> (Vec<Renderer>, std::process::Output) {
    let url = site.url(oxwright_fixtures::ARTICLE_PATHS[0]);
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_oxwright"));
    cmd.args(["--allow-host", &site.addr().to_string(), "--out"])
        .arg(dir.join("out"))
        .args(["fetch", "--wait-ms", "3000", &url])
        .env_remove("OXWRIGHT_CONFIG")
        .env("HOME", dir)
        .env("TMPDIR", dir)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some((uid, gid)) = user {
        cmd.uid(uid).gid(gid);
    }
    let child = cmd.spawn().expect("oxwright runs");
    let owner = child.id() as i32;
    let started = Instant::now();
    // A renderer forked a moment ago has its namespaces but installs its
    // seccomp filter a little later, during its own start; so the renderers
    // are read again until every one is filtered (or two seconds have
    // passed since the first was seen), and the last reading is judged.
    let mut seen = Vec::new();
    let mut first_seen = None;
    while started.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(100));
        let now = renderers(owner);
        if now.is_empty() {
            if first_seen.is_some() {
                break;
            }
            continue;
        }
        seen = now;
        let since = *first_seen.get_or_insert_with(Instant::now);
        if seen.iter().all(|r| r.seccomp == "2") || since.elapsed() > Duration::from_secs(2) {
            break;
        }
    }
    (seen, child.wait_with_output().expect("oxwright ends"))
}

#[test]
fn an_unprivileged_fetch_runs_its_renderers_in_the_sandbox() {
    let site_rt = tokio::runtime::Runtime::new().unwrap();
    let site = site_rt.block_on(FixtureServer::start()).unwrap();
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let user =
        if root {
            Some(account(USER).unwrap_or_else(|| {
                panic!("no {USER} account: run `bash infra/install.sh`, which creates it")
            }))
        } else {
            None
        };
    let dir = tempfile::tempdir().unwrap();
    if let Some((uid, gid)) = user {
        let c = CString::new(dir.path().as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: chown of a directory this test created.
        assert_eq!(unsafe { libc::chown(c.as_ptr(), uid, gid) }, 0);
    }
    let (seen, out) = fetch_watching(&site, dir.path(), user);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{}", support::show(&out));
    assert!(!out.stdout.is_empty());
    assert!(
        !stderr.contains("WITHOUT ITS SANDBOX"),
        "a sandboxed run warned: {stderr}"
    );
    assert!(!seen.is_empty(), "no renderer was seen while the page was open");
    for r in &seen {
        assert_eq!(r.seccomp, "2", "renderer {} has no seccomp filter: {r:?}", r.pid);
        assert!(
            r.own_user_ns && r.own_pid_ns,
            "renderer {} shares namespaces: {r:?}",
            r.pid
        );
    }

    // Root cannot have the sandbox: said once, loudly, and measurably so.
    if root {
        let dir = tempfile::tempdir().unwrap();
        let (seen, out) = fetch_watching(&site, dir.path(), None);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{}", support::show(&out));
        assert_eq!(
            stderr.matches("CHROMIUM RUNS WITHOUT ITS SANDBOX").count(),
            1,
            "{stderr}"
        );
        assert!(!seen.is_empty());
        assert!(
            seen.iter().all(|r| r.seccomp == "0" && !r.own_user_ns),
            "{seen:?}"
        );
    }
}
