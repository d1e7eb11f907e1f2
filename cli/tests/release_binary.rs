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
