//! Headed fetches under Xvfb: a job asking for `headless = false` gets its
//! own Chromium without `--headless` on the configured X display.

mod common;

use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::Env;
use oxwright_browser::PoolConfig;
use oxwright_fetch::fetch_page;
use oxwright_fixtures::ARTICLE_PATHS;

const XVFB: &str = "/usr/bin/Xvfb";

/// A running Xvfb, killed and reaped on drop (panics included).
struct Xvfb {
    child: Child,
    display: String,
}

impl Xvfb {
    /// Starts Xvfb on the first free display from :90 upward and waits
    /// until its socket accepts connections.
    fn start() -> Self {
        assert!(
            Path::new(XVFB).exists(),
            "{XVFB} is missing: headed tests need Xvfb (apt-get install xvfb)"
        );
        let mut failures = Vec::new();
        for n in 90..130 {
            let display = format!(":{n}");
            // Xvfb refuses a display whose lock names a live server and
            // clears stale locks and sockets itself.
            let mut child = Command::new(XVFB)
                .args([
                    display.as_str(),
                    "-screen",
                    "0",
                    "1280x800x24",
                    "-nolisten",
                    "tcp",
                ])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap_or_else(|e| panic!("spawning {XVFB} failed: {e}"));
            let socket = format!("/tmp/.X11-unix/X{n}");
            let started = Instant::now();
            loop {
                if let Ok(Some(status)) = child.try_wait() {
                    failures.push(format!("{display}: exited with {status}"));
                    break;
                }
                // A stale socket file refuses connections; a live server accepts.
                if Path::new(&socket).exists() && UnixStream::connect(&socket).is_ok() {
                    return Self { child, display };
                }
                if started.elapsed() > Duration::from_secs(15) {
                    stop(&mut child);
                    failures.push(format!("{display}: no server socket within 15 s"));
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        panic!("Xvfb did not start on any display :90-:129: {failures:?}");
    }
}

/// Stops Xvfb with SIGTERM so it removes its lock and socket; SIGKILL after 5 s.
fn stop(child: &mut Child) {
    // SAFETY: plain syscall on a child this test spawned and has not reaped.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGTERM);
    }
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(5) {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
}

impl Drop for Xvfb {
    fn drop(&mut self) {
        stop(&mut self.child);
    }
}

fn cmdline(pid: i32) -> Vec<String> {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .unwrap_or_default()
        .split(|b| *b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn headed_fetch_runs_a_non_headless_browser_on_xvfb() {
    let xvfb = Xvfb::start();
    let env = Env::with_config(PoolConfig {
        headless: true,
        display: Some(xvfb.display.clone()),
        ..common::pool_config()
    })
    .await;
    let headless_pids = env.pool.pids().await;
    for pid in &headless_pids {
        assert!(
            cmdline(*pid).iter().any(|a| a == "--headless"),
            "warm browser {pid} is not headless: {:?}",
            cmdline(*pid)
        );
    }

    let mut spec = env.spec(ARTICLE_PATHS[0]);
    spec.headless = false;
    spec.screenshot = true;
    let out = fetch_page(&env.pool, &env.policy, &spec)
        .await
        .expect("headed fetch succeeds");
    assert_eq!(out.result.status, 200);
    assert!(out.result.markdown.starts_with("# "), "{}", out.result.markdown);
    assert!(out.screenshot.is_some_and(|png| png.starts_with(b"\x89PNG")));

    let pids = env.pool.pids().await;
    let headed: Vec<i32> = pids
        .iter()
        .copied()
        .filter(|pid| !headless_pids.contains(pid))
        .collect();
    assert_eq!(headed.len(), 1, "pids {pids:?}, warm {headless_pids:?}");
    let args = cmdline(headed[0]);
    assert!(!args.is_empty(), "headed browser {} not running", headed[0]);
    assert!(
        !args.iter().any(|a| a.starts_with("--headless")),
        "headed browser runs headless: {args:?}"
    );
    let environ = std::fs::read(format!("/proc/{}/environ", headed[0])).unwrap_or_default();
    let wanted = format!("DISPLAY={}", xvfb.display);
    assert!(
        environ.split(|b| *b == 0).any(|v| v == wanted.as_bytes()),
        "headed browser is not on {}",
        xvfb.display
    );
    env.pool.shutdown().await;
    drop(xvfb);
}
