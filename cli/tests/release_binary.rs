//! What the binary users get is built from: the fixture crate without its
//! `test-support` stand-ins (scripted LLM, private broker and S3 servers,
//! cut-body server); only the sample site comes along.

#[test]
fn the_binary_carries_no_test_stand_ins() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = std::process::Command::new(cargo)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "tree",
            "--offline",
            "-p",
            "oxwright",
            "-e",
            "normal",
            "-f",
            "{p} [{f}]",
        ])
        .output()
        .expect("cargo tree runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let tree = String::from_utf8_lossy(&out.stdout);
    let fixtures: Vec<&str> = tree.lines().filter(|l| l.contains("oxwright-fixtures")).collect();
    assert!(
        !fixtures.is_empty(),
        "the sample site's crate is a dependency:\n{tree}"
    );
    for line in fixtures {
        assert!(!line.contains("test-support"), "{line}");
    }
}

/// The binary allocates with jemalloc and hands it our options (see
/// `oxwright_config::heap`): glibc's malloc let RSS creep over a long batch
/// with no live growth behind it.
#[test]
fn the_binary_allocates_with_jemalloc_and_its_options() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_oxwright"))
        .arg("--version")
        .env("_RJEM_MALLOC_CONF", "stats_print:true")
        .output()
        .expect("oxwright runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stats = String::from_utf8_lossy(&out.stderr);
    assert!(stats.contains("jemalloc statistics"), "{stats}");
    for option in [
        "opt.background_thread: true",
        "opt.narenas: 2",
        "opt.dirty_decay_ms: 1000",
        "opt.muzzy_decay_ms: 0",
    ] {
        assert!(stats.contains(option), "{option} missing from:\n{stats}");
    }
}
