//! `oxwright batch` on a real terminal (a pseudo-terminal): the progress
//! bar, the failure lines, the summary, log lines printed above the bar
//! (never through it), no routine log line on a person's terminal, and
//! the Ctrl-C path.

use std::io::Read;
use std::os::fd::{FromRawFd, OwnedFd};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use oxwright_fixtures::{ARTICLE_PATHS, FixtureServer};

/// A child process on the slave side of a pty, and what it wrote.
struct OnPty {
    child: Child,
    output: std::sync::Arc<std::sync::Mutex<Vec<u8>>>,
    reader: Option<std::thread::JoinHandle<()>>,
}

impl OnPty {
    /// Starts the binary with `args` on a new 120×30 pty; `env` is added.
    fn start(args: &[String], env: &[(&str, &str)], config_home: &std::path::Path) -> Self {
        let (mut master, mut slave) = (0, 0);
        let size = libc::winsize {
            ws_row: 30,
            ws_col: COLUMNS as u16,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        // SAFETY: openpty writes two descriptors it opened into the two
        // integers; the name and termios pointers may be null.
        let rc = unsafe {
            libc::openpty(
                &mut master,
                &mut slave,
                std::ptr::null_mut(),
                std::ptr::null(),
                &size,
            )
        };
        assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
        // SAFETY: both descriptors were just opened and are owned here only.
        let (master, slave) = unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_oxwright"));
        cmd.args(args)
            .env_remove("OXWRIGHT_CONFIG")
            .env_remove("RUST_LOG")
            .env("XDG_CONFIG_HOME", config_home)
            .env("TERM", "xterm")
            .stdin(Stdio::from(slave.try_clone().unwrap()))
            .stdout(Stdio::from(slave.try_clone().unwrap()))
            .stderr(Stdio::from(slave));
        for (k, v) in env {
            cmd.env(k, v);
        }
        let child = cmd.spawn().expect("oxwright starts");
        // The parent's copies of the slave side are gone (moved into the
        // command, dropped with it): the master reads EOF/EIO at exit.
        drop(cmd);
        let output = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = output.clone();
        let mut file = std::fs::File::from(master);
        let reader = std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            loop {
                match file.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => sink.lock().unwrap().extend_from_slice(&buf[..n]),
                }
            }
        });
        Self {
            child,
            output,
            reader: Some(reader),
        }
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.output.lock().unwrap()).into_owned()
    }

    /// Waits (at most `limit`) until the output contains `needle`.
    fn wait_for(&self, needle: &str, limit: Duration) {
        let start = Instant::now();
        while !self.text().contains(needle) {
            assert!(
                start.elapsed() < limit,
                "no {needle:?} within {limit:?}:\n{}",
                plain(&self.text())
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits for the exit; returns the code and everything written.
    fn finish(mut self) -> (Option<i32>, String) {
        let start = Instant::now();
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            if start.elapsed() > Duration::from_secs(120) {
                let _ = self.child.kill();
                panic!("oxwright did not exit:\n{}", plain(&self.text()));
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        if let Some(reader) = self.reader.take() {
            reader.join().unwrap();
        }
        (status.code(), self.text())
    }
}

/// The output without ANSI escape sequences.
fn plain(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            if chars.peek() == Some(&'[') {
                chars.next();
                for c in chars.by_ref() {
                    if c.is_ascii_alphabetic() {
                        break;
                    }
                }
            }
            continue;
        }
        out.push(c);
    }
    out
}

/// Columns of the pty.
const COLUMNS: usize = 120;

/// What a person sees, line by line, all scrollback kept: a small
/// terminal that follows what indicatif and the log writer send (`\r`,
/// `\n`, cursor up/down, clear line, wrap at the width); other escape
/// sequences (colours) change nothing here.
fn screen_lines(raw: &str) -> Vec<String> {
    let mut rows: Vec<Vec<char>> = vec![Vec::new()];
    let (mut row, mut col) = (0usize, 0usize);
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' => col = 0,
            '\n' => {
                row += 1;
                col = 0;
            }
            '\u{1b}' => {
                if chars.peek() != Some(&'[') {
                    continue;
                }
                chars.next();
                let mut arg = String::new();
                let mut end = ' ';
                for c in chars.by_ref() {
                    if c.is_ascii_alphabetic() {
                        end = c;
                        break;
                    }
                    arg.push(c);
                }
                let n: usize = arg.parse().unwrap_or(1);
                match end {
                    'A' => row = row.saturating_sub(n),
                    'B' => row += n,
                    'K' if arg == "2" => rows[row].clear(),
                    'K' => rows[row].truncate(col),
                    'G' => col = n.saturating_sub(1),
                    _ => {}
                }
            }
            c if c.is_control() => {}
            c => {
                if col >= COLUMNS {
                    row += 1;
                    col = 0;
                }
                while rows.len() <= row {
                    rows.push(Vec::new());
                }
                let line = &mut rows[row];
                while line.len() < col {
                    line.push(' ');
                }
                if col < line.len() {
                    line[col] = c;
                } else {
                    line.push(c);
                }
                col += 1;
            }
        }
        while rows.len() <= row {
            rows.push(Vec::new());
        }
    }
    rows.into_iter()
        .map(|r| r.into_iter().collect::<String>().trim_end().to_string())
        .collect()
}

fn batch_args(site: &FixtureServer, dir: &std::path::Path, urls: &[String]) -> Vec<String> {
    let list = dir.join("urls.txt");
    std::fs::write(&list, urls.join("\n")).unwrap();
    vec![
        "--allow-host".into(),
        site.addr().to_string(),
        "--out".into(),
        dir.join("out").display().to_string(),
        "batch".into(),
        list.display().to_string(),
    ]
}

fn twenty_urls(site: &FixtureServer) -> Vec<String> {
    let mut urls: Vec<String> = (0..19)
        .map(|i| site.url(&format!("{}?copy={i}", ARTICLE_PATHS[i % ARTICLE_PATHS.len()])))
        .collect();
    urls.push(site.url("/flaky/term-404?fail=9&status=404"));
    urls
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batch_on_a_terminal_shows_a_bar_failures_once_and_a_summary_and_no_log_noise() {
    let site = FixtureServer::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let args = batch_args(&site, dir.path(), &twenty_urls(&site));
    let (code, raw) = tokio::task::spawn_blocking(move || OnPty::start(&args, &[], dir.path()).finish())
        .await
        .unwrap();
    let text = plain(&raw);
    assert_eq!(code, Some(1), "{text}");
    // The bar, with its rate rounded.
    assert!(text.contains("/20 pages ("), "{text}");
    assert!(text.contains(" pages/s, eta "), "{text}");
    assert!(!regex_like_long_rate(&text), "{text}");
    // Each failure once, on its own line; then the summary.
    let lines = screen_lines(&raw);
    let failed: Vec<&String> = lines
        .iter()
        .filter(|l| l.contains("failed [http_status]"))
        .collect();
    assert_eq!(failed.len(), 1, "{lines:#?}");
    assert!(failed[0].starts_with("failed [http_status]"), "{lines:#?}");
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("batch ") && l.contains("20 pages, 19 ok, 1 failed")),
        "{lines:#?}"
    );
    // No routine log line on a person's terminal: no telemetry line, no
    // queue jargon, no JSON.
    for noise in ["INFO", "telemetry initialised", "dead-lettered", "\"level\""] {
        assert!(!text.contains(noise), "{noise:?} on the terminal:\n{text}");
    }
}

/// Whether a rate with three or more decimals (`0.2607/s`) is shown.
fn regex_like_long_rate(text: &str) -> bool {
    text.split("/s").any(|before| {
        let digits: String = before.chars().rev().take_while(|c| c.is_ascii_digit()).collect();
        let rest = &before[..before.len() - digits.len()];
        digits.len() >= 3 && rest.ends_with('.')
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_lines_asked_for_are_printed_above_the_bar_not_through_it() {
    let site = FixtureServer::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let args = batch_args(&site, dir.path(), &twenty_urls(&site));
    let (code, raw) = tokio::task::spawn_blocking(move || {
        OnPty::start(&args, &[("RUST_LOG", "oxwright=debug")], dir.path()).finish()
    })
    .await
    .unwrap();
    assert_eq!(code, Some(1), "{}", plain(&raw));
    let lines = screen_lines(&raw);
    let logs: Vec<&String> = lines
        .iter()
        .filter(|l| l.contains("debug: ") || l.contains("info: "))
        .collect();
    assert!(!logs.is_empty(), "RUST_LOG asked for log lines:\n{lines:#?}");
    // Every log line starts a line of its own (its level), with no bar before it.
    for line in &logs {
        assert!(
            (line.starts_with("debug: ") || line.starts_with("info: ")) && !line.contains(" pages ("),
            "a log line shares its line with the bar: {line:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_stops_the_batch_keeps_the_bar_and_says_how_to_stop_now() {
    let site = FixtureServer::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let urls: Vec<String> = (0..20)
        .map(|i| site.url(&format!("/slow?ms=4000&copy={i}")))
        .collect();
    let args = batch_args(&site, dir.path(), &urls);
    let (code, raw) = tokio::task::spawn_blocking(move || {
        let run = OnPty::start(&args, &[], dir.path());
        run.wait_for("/20 pages (", Duration::from_secs(60));
        // SAFETY: a plain kill(2) of our own child.
        let rc = unsafe { libc::kill(run.child.id() as i32, libc::SIGINT) };
        assert_eq!(rc, 0);
        run.finish()
    })
    .await
    .unwrap();
    let text = plain(&raw);
    assert_eq!(code, Some(130), "{text}");
    assert_eq!(
        text.matches("stopping: finishing the pages in flight (Ctrl-C again to stop now)")
            .count(),
        1,
        "{text}"
    );
    let lines = screen_lines(&raw);
    let stop = lines
        .iter()
        .position(|l| l.starts_with("stopping: "))
        .unwrap_or_else(|| panic!("{lines:#?}"));
    // The bar is drawn again below the message and stays, then the summary.
    let bar = lines[stop + 1..]
        .iter()
        .position(|l| l.contains("/20 pages ("))
        .unwrap_or_else(|| panic!("no bar after the message: {lines:#?}"))
        + stop
        + 1;
    assert!(
        lines[bar + 1..]
            .iter()
            .any(|l| l.starts_with("batch ") && l.ends_with("— interrupted")),
        "{lines:#?}"
    );
    assert!(!text.contains("INFO"), "{text}");
}
