//! The manual's fetch option table and the example configuration's
//! `[fetch]` keys are generated from `FetchSpec`: the checked-in copies
//! must be what the declaration produces. `OXWRIGHT_BLESS=1 cargo test -p
//! oxwright-jobs --test generated_faces` writes them anew.

use std::path::PathBuf;

use oxwright_jobs::options::{example_config_section, manual_table, splice};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Checks (or, blessed, rewrites) the generated part of `file`.
fn holds(file: &str, begin: &str, end: &str, generated: &str) {
    let path = root().join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{file}: {e}"));
    let want = splice(&text, begin, end, generated)
        .unwrap_or_else(|| panic!("{file} lacks the markers {begin:?} … {end:?}"));
    if std::env::var_os("OXWRIGHT_BLESS").is_some() {
        std::fs::write(&path, &want).unwrap();
        return;
    }
    assert!(
        text == want,
        "{file} differs from what FetchSpec's declaration produces: run \
         `OXWRIGHT_BLESS=1 cargo test -p oxwright-jobs --test generated_faces`"
    );
}

#[test]
fn the_manuals_option_table_is_the_generated_one() {
    holds(
        "docs/src/fetch.md",
        "<!-- generated from FetchSpec: begin",
        "<!-- generated from FetchSpec: end",
        &manual_table(),
    );
}

#[test]
fn the_example_configs_fetch_keys_are_the_generated_ones() {
    holds(
        "oxwright.example.toml",
        "# generated from FetchSpec: begin",
        "# generated from FetchSpec: end",
        &example_config_section(),
    );
}
