// Stamps the commit a binary is built from into `OXWRIGHT_COMMIT`, for
// `oxwright --version` and the benches' results: `$OXWRIGHT_COMMIT` when
// set (an image build has no `.git`), else git's `HEAD` with `-modified`
// when the tracked sources differ from it, else `unknown`. `bench/build.rs`
// includes this file.

use std::process::Command;

/// The sources a binary is built from, relative to the repository's root.
const SOURCES: &[&str] = &[
    "Cargo.toml",
    "Cargo.lock",
    "lib",
    "scheduler",
    "workers",
    "lambda",
    "cli/src",
    "bench/src",
];

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn from_git() -> Option<String> {
    let root = git(&["rev-parse", "--show-toplevel"])?;
    let git_dir = git(&["rev-parse", "--absolute-git-dir"])?;
    for file in ["HEAD", "index"] {
        println!("cargo:rerun-if-changed={git_dir}/{file}");
    }
    for source in SOURCES {
        println!("cargo:rerun-if-changed={root}/{source}");
    }
    let head = git(&["rev-parse", "--short=7", "HEAD"])?;
    let mut status = vec![
        "-C",
        root.as_str(),
        "status",
        "--porcelain",
        "--untracked-files=no",
        "--",
    ];
    status.extend(SOURCES);
    let modified = git(&status).is_some_and(|s| !s.is_empty());
    Some(if modified {
        format!("{head}-modified")
    } else {
        head
    })
}

fn main() {
    println!("cargo:rerun-if-env-changed=OXWRIGHT_COMMIT");
    let commit = std::env::var("OXWRIGHT_COMMIT")
        .ok()
        .filter(|c| !c.trim().is_empty())
        .or_else(from_git)
        .unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=OXWRIGHT_COMMIT={commit}");
}
