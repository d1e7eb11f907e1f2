//! Helpers shared by the tests that run the `oxwright` binary: the
//! process table, the Chromium processes a parent launched, and polling.

#![allow(dead_code)]

use std::time::{Duration, Instant};

pub mod otlp;

/// Returns (pid, ppid, pgrp) of every process.
pub fn processes() -> Vec<(i32, i32, i32)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let Some((_, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.len() > 3 && fields[0] != "Z" {
            out.push((
                pid,
                fields[1].parse().unwrap_or(0),
                fields[2].parse().unwrap_or(0),
            ));
        }
    }
    out
}

/// Returns the process groups of the Chromiums `parent` launched.
pub fn chromium_groups(parent: i32) -> Vec<i32> {
    processes()
        .into_iter()
        .filter(|(pid, ppid, _)| {
            *ppid == parent
                && std::fs::read_to_string(format!("/proc/{pid}/cmdline"))
                    .map(|c| c.contains("oxwright-chromium-"))
                    .unwrap_or(false)
        })
        .map(|(_, _, pgrp)| pgrp)
        .collect()
}

pub fn members(groups: &[i32]) -> Vec<i32> {
    processes()
        .into_iter()
        .filter(|(_, _, g)| groups.contains(g))
        .map(|(p, _, _)| p)
        .collect()
}

pub async fn wait_until(what: &str, limit: Duration, mut check: impl FnMut() -> bool) {
    let start = Instant::now();
    while !check() {
        assert!(start.elapsed() < limit, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Returns every live process whose command line contains `needle`.
pub fn processes_matching(needle: &str) -> Vec<i32> {
    processes()
        .into_iter()
        .filter(|(pid, _, _)| {
            std::fs::read_to_string(format!("/proc/{pid}/cmdline"))
                .map(|c| c.contains(needle))
                .unwrap_or(false)
        })
        .map(|(pid, _, _)| pid)
        .collect()
}

/// Returns the Chromium processes (browsers and their children) whose
/// profile directory names `owner` (`oxwright-chromium-<owner pid>-…`).
pub fn chromium_of(owner: u32) -> Vec<i32> {
    processes_matching(&format!("oxwright-chromium-{owner}-"))
}

/// Runs the built binary with `args` off the async runtime, without a
/// configuration file from the environment and without the variables in `unset`.
pub async fn oxwright_output(args: Vec<String>, unset: &'static [&'static str]) -> std::process::Output {
    tokio::task::spawn_blocking(move || {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_oxwright"));
        cmd.args(&args).env_remove("OXWRIGHT_CONFIG");
        for var in unset {
            cmd.env_remove(var);
        }
        cmd.output().expect("oxwright runs")
    })
    .await
    .unwrap()
}

/// Formats an output for an assertion message.
pub fn show(out: &std::process::Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Appends (path, text) of `path` (a file) or of every file under it (a
/// directory), for a test that looks for what must be written nowhere.
pub fn walk(path: &std::path::Path, out: &mut Vec<(String, String)>) {
    if path.is_dir() {
        for entry in std::fs::read_dir(path).unwrap().flatten() {
            walk(&entry.path(), out);
        }
    } else if let Ok(body) = std::fs::read(path) {
        out.push((
            path.display().to_string(),
            String::from_utf8_lossy(&body).into_owned(),
        ));
    }
}
