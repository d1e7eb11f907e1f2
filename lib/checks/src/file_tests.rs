use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::*;

const STEPS: &str = "fill: textbox \"Password\" = {{PASSWORD}}\nclick: button \"Sign in\"\n";

/// Parses `text` as `dir/login.check.toml`, with `files` readable as steps files.
fn parse_with(text: &str, files: &[(&str, &str)]) -> Result<Check, CheckError> {
    let files: BTreeMap<PathBuf, String> = files
        .iter()
        .map(|(p, t)| (Path::new("/checks").join(p), t.to_string()))
        .collect();
    let read = move |p: &Path| {
        files
            .get(p)
            .cloned()
            .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::NotFound, "no such file"))
    };
    parse_in(
        Path::new("/checks/login.check.toml"),
        "login",
        text,
        Path::new("/checks"),
        &read,
    )
}

fn parse(text: &str) -> Result<Check, CheckError> {
    parse_with(text, &[])
}

/// The invalid-file detail of a refused `text`.
fn refused(text: &str) -> Invalid {
    let err = parse(text).expect_err("refused");
    err.invalid()
        .cloned()
        .unwrap_or_else(|| panic!("not an invalid-file error: {err}"))
}

#[test]
fn every_key_is_read() {
    let text = format!(
        "url = \"https://shop.example/app/login?next=%2Fhome\"\n\
         steps = '''\n{STEPS}'''\n\
         every = \"30s\"\n\
         timeout = \"1m 30s\"\n\
         retries = 2\n\
         retry_delay = \"500ms\"\n\
         storage_state = \"state/login.json\"\n\
         tags = [\"smoke\", \"billing\"]\n\
         [alert]\n\
         after = 3\n\
         webhook = \"https://hooks.example/ox\"\n\
         reminder_every = \"1h\"\n"
    );
    let check = parse(&text).unwrap();
    assert_eq!(check.name, "login");
    assert_eq!(check.url.as_str(), "https://shop.example/app/login?next=%2Fhome");
    assert_eq!(check.steps, STEPS);
    assert_eq!(check.steps_file, None);
    assert_eq!(check.schedule, Some(Schedule::Every(Duration::from_secs(30))));
    assert_eq!(check.timeout, Duration::from_secs(90));
    assert_eq!(check.retries, 2);
    assert_eq!(check.retry_delay, Duration::from_millis(500));
    assert_eq!(
        check.storage_state,
        Some(PathBuf::from("/checks/state/login.json"))
    );
    assert_eq!(check.tags, ["smoke", "billing"]);
    assert_eq!(
        check.alert,
        Alert {
            after: 3,
            webhook: Some(url::Url::parse("https://hooks.example/ox").unwrap()),
            reminder_every: Some(Duration::from_secs(3600)),
        }
    );
    assert_eq!(check.placeholders(), ["PASSWORD"]);
    // The secret stays a placeholder: nothing here resolves it.
    assert!(check.workflow_spec(None).workflow.contains("{{PASSWORD}}"));
}

#[test]
fn defaults_fill_what_is_left_out() {
    let check = parse(&format!("url = \"http://a.test/\"\nsteps = '''{STEPS}'''\n")).unwrap();
    assert_eq!(check.schedule, None);
    assert_eq!(check.timeout, DEFAULT_TIMEOUT);
    assert_eq!(check.retries, 0);
    assert_eq!(check.retry_delay, DEFAULT_RETRY_DELAY);
    assert_eq!(check.alert, Alert::default());
    assert_eq!(check.alert.after, 1);
    assert!(check.tags.is_empty() && check.storage_state.is_none());
    assert!(!check.may_retry());
}

#[test]
fn cron_uses_the_schedulers_format() {
    let check = parse(&format!(
        "url = \"http://a.test/\"\nsteps = '''{STEPS}'''\ncron = \"0 */5 * * * *\"\n"
    ))
    .unwrap();
    let Some(Schedule::Cron(cron)) = &check.schedule else {
        panic!("{:?}", check.schedule);
    };
    assert_eq!(cron.expression(), "0 */5 * * * *");
    let at = chrono::DateTime::parse_from_rfc3339("2026-01-01T10:02:00Z")
        .unwrap()
        .with_timezone(&chrono::Utc);
    let next = check.schedule.as_ref().unwrap().next_after(at).unwrap();
    assert_eq!(next.to_rfc3339(), "2026-01-01T10:05:00+00:00");
    let every = Schedule::Every(Duration::from_secs(30)).next_after(at).unwrap();
    assert_eq!(every.to_rfc3339(), "2026-01-01T10:02:30+00:00");
    // Five fields (no seconds) is not the scheduler's format.
    let bad = refused(&format!(
        "url = \"http://a.test/\"\nsteps = '''{STEPS}'''\ncron = \"*/5 * * *\"\n"
    ));
    assert_eq!(bad.key.as_deref(), Some("cron"));
    assert_eq!(bad.line, Some(5));
    assert!(bad.message.contains("not a cron expression"), "{bad}");
}

#[test]
fn an_unknown_key_is_refused_naming_key_and_line() {
    let bad = refused(&format!(
        "url = \"http://a.test/\"\nsteps = '''{STEPS}'''\nevry = \"30s\"\n"
    ));
    assert_eq!(bad.key.as_deref(), Some("evry"), "{bad}");
    assert_eq!(bad.line, Some(5), "{bad}");
    assert!(bad.message.contains("unknown field `evry`"), "{bad}");
    let shown = bad.to_string();
    assert!(
        shown.starts_with("/checks/login.check.toml:5: `evry`: "),
        "{shown}"
    );
    // Inside [alert], the key is named with its table.
    let bad = refused(&format!(
        "url = \"http://a.test/\"\nsteps = '''{STEPS}'''\n[alert]\nafter = 2\nwebhok = \"https://h.example/\"\n"
    ));
    assert_eq!(bad.key.as_deref(), Some("alert.webhok"), "{bad}");
    assert_eq!(bad.line, Some(7), "{bad}");
}

#[test]
fn a_value_of_the_wrong_type_names_its_key_and_line() {
    let bad = refused(&format!(
        "url = \"http://a.test/\"\nretries = \"two\"\nsteps = '''{STEPS}'''\n"
    ));
    assert_eq!(bad.key.as_deref(), Some("retries"), "{bad}");
    assert_eq!(bad.line, Some(2), "{bad}");
    let bad = refused(&format!(
        "url = \"http://a.test/\"\nsteps = '''{STEPS}'''\nretries = 11\n"
    ));
    assert_eq!(bad.key.as_deref(), Some("retries"), "{bad}");
    let bad = refused(&format!(
        "url = \"http://a.test/\"\nsteps = '''{STEPS}'''\n[alert]\nafter = 0\n"
    ));
    assert_eq!(bad.key.as_deref(), Some("alert.after"), "{bad}");
    assert_eq!(bad.line, Some(6), "{bad}");
    let bad = refused(&format!("url = \"ftp://a.test/\"\nsteps = '''{STEPS}'''\n"));
    assert_eq!((bad.key.as_deref(), bad.line), (Some("url"), Some(1)), "{bad}");
    let bad = refused(&format!("steps = '''{STEPS}'''\n"));
    assert!(bad.message.contains("missing field `url`"), "{bad}");
    assert_eq!((bad.key.as_deref(), bad.line), (Some("url"), None), "{bad}");
}

#[test]
fn steps_or_steps_file_exactly_one() {
    let check = parse_with(
        "url = \"http://a.test/\"\nsteps_file = \"flows/login.steps\"\n",
        &[("flows/login.steps", STEPS)],
    )
    .unwrap();
    assert_eq!(check.steps, STEPS);
    assert_eq!(check.steps_file, Some(PathBuf::from("/checks/flows/login.steps")));
    let both = refused(&format!(
        "url = \"http://a.test/\"\nsteps = '''{STEPS}'''\nsteps_file = \"x.steps\"\n"
    ));
    assert_eq!(both.key.as_deref(), Some("steps_file"), "{both}");
    assert_eq!(both.line, Some(5), "{both}");
    assert!(both.message.contains("not both"), "{both}");
    let none = refused("url = \"http://a.test/\"\nevery = \"1m\"\n");
    assert_eq!(none.key.as_deref(), Some("steps"), "{none}");
    assert!(none.message.contains("no steps"), "{none}");
    let missing = refused("url = \"http://a.test/\"\nsteps_file = \"gone.steps\"\n");
    assert_eq!(
        (missing.key.as_deref(), missing.line),
        (Some("steps_file"), Some(2))
    );
    assert!(missing.message.contains("/checks/gone.steps"), "{missing}");
    let empty = refused("url = \"http://a.test/\"\nsteps = \"  \"\n");
    assert_eq!(empty.key.as_deref(), Some("steps"), "{empty}");
}

#[test]
fn every_and_cron_are_exclusive() {
    let bad = refused(&format!(
        "url = \"http://a.test/\"\nsteps = '''{STEPS}'''\nevery = \"1m\"\ncron = \"0 * * * * *\"\n"
    ));
    assert_eq!((bad.key.as_deref(), bad.line), (Some("cron"), Some(6)), "{bad}");
    assert!(bad.message.contains("not both"), "{bad}");
}

#[test]
fn bad_durations_are_refused() {
    for (key, value) in [
        ("every", "often"),
        ("every", "0s"),
        ("timeout", "30"),
        ("timeout", "2h"),
        ("retry_delay", "-1s"),
    ] {
        let bad = refused(&format!(
            "url = \"http://a.test/\"\nsteps = '''{STEPS}'''\n{key} = \"{value}\"\n"
        ));
        assert_eq!(bad.key.as_deref(), Some(key), "{key} = {value}: {bad}");
        assert_eq!(bad.line, Some(5), "{key} = {value}: {bad}");
    }
    let bad = refused(&format!(
        "url = \"http://a.test/\"\nsteps = '''{STEPS}'''\n[alert]\nreminder_every = \"soon\"\n"
    ));
    assert_eq!(bad.key.as_deref(), Some("alert.reminder_every"), "{bad}");
}

#[test]
fn the_name_is_the_file_stem_and_a_safe_key() {
    assert_eq!(name_of(Path::new("/x/login.check.toml")).unwrap(), "login");
    assert_eq!(
        name_of(Path::new("checkout-v2.check.toml")).unwrap(),
        "checkout-v2"
    );
    for bad in [
        "/x/login.toml",
        "/x/.check.toml",
        "/x/.hidden.check.toml",
        "/x/a b.check.toml",
        "/x/a..b.check.toml",
        "/x/é.check.toml",
    ] {
        assert!(name_of(Path::new(bad)).is_err(), "{bad} accepted");
    }
    assert!(validate_name(&"a".repeat(MAX_NAME_LEN)).is_ok());
    assert!(validate_name(&"a".repeat(MAX_NAME_LEN + 1)).is_err());
}

#[test]
fn load_dir_reads_sorted_check_files_and_refuses_duplicate_names() {
    let dir = tempfile::tempdir().unwrap();
    let write = |p: &str, t: &str| {
        let path = dir.path().join(p);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, t).unwrap();
    };
    let body = format!("url = \"http://a.test/\"\nsteps = '''{STEPS}'''\n");
    write("b.check.toml", &body);
    write("a.check.toml", &body);
    write("notes.toml", "not a check");
    write(
        "flows/c.check.toml",
        "url = \"http://a.test/\"\nsteps_file = \"c.steps\"\n",
    );
    write("flows/c.steps", STEPS);
    let checks = load_dir(dir.path()).unwrap();
    let names: Vec<&str> = checks.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["a", "b", "c"]);
    assert_eq!(checks[2].steps, STEPS);
    write("more/a.check.toml", &body);
    let err = load_dir(dir.path()).unwrap_err();
    assert!(
        matches!(&err, CheckError::Duplicate { name, .. } if name == "a"),
        "{err}"
    );
    // A bad file names itself.
    std::fs::remove_file(dir.path().join("more/a.check.toml")).unwrap();
    write("z.check.toml", "url = 3\n");
    let err = load_dir(dir.path()).unwrap_err().to_string();
    assert!(err.contains("z.check.toml:1: `url`"), "{err}");
}

#[test]
fn url_override_swaps_the_origin_and_keeps_path_and_query() {
    let check = parse(&format!(
        "url = \"http://127.0.0.1:8080/app/login?next=%2Fhome#top\"\nsteps = '''{STEPS}'''\n"
    ))
    .unwrap();
    let base = parse_base_url("https://pr-42.preview.example").unwrap();
    let spec = check.workflow_spec(Some(&base));
    assert_eq!(
        spec.start_url.as_str(),
        "https://pr-42.preview.example/app/login?next=%2Fhome#top"
    );
    assert_eq!(spec.name.as_deref(), Some("login"));
    assert_eq!(spec.workflow, STEPS);
    let base = parse_base_url("http://localhost:3000/").unwrap();
    assert_eq!(
        check.start_url(Some(&base)).as_str(),
        "http://localhost:3000/app/login?next=%2Fhome#top"
    );
    // The default port of the new scheme is not carried over.
    let base = parse_base_url("https://staging.example").unwrap();
    assert_eq!(
        check.start_url(Some(&base)).as_str(),
        "https://staging.example/app/login?next=%2Fhome#top"
    );
    assert_eq!(check.workflow_spec(None).start_url, check.url);
    for bad in [
        "https://x.example/preview",
        "https://x.example/?a=1",
        "file:///tmp",
        "x.example",
    ] {
        assert!(parse_base_url(bad).is_err(), "{bad} accepted");
    }
}

#[test]
fn once_steps_are_never_retried_and_retries_back_off() {
    let check = parse(&format!(
        "url = \"http://a.test/\"\nsteps = '''{STEPS}'''\nretries = 3\n"
    ))
    .unwrap();
    assert!(check.may_retry());
    assert_eq!(check.retry_wait(1), Duration::from_secs(1));
    assert_eq!(check.retry_wait(2), Duration::from_secs(2));
    assert_eq!(check.retry_wait(3), Duration::from_secs(4));
    assert_eq!(check.retry_wait(30), MAX_RETRY_DELAY);
    let once = parse(
        "url = \"http://a.test/\"\nsteps = '''\nclick: button \"Add\"\nONCE: click: button \"Pay\"\n'''\nretries = 3\n",
    )
    .unwrap();
    assert!(once.has_once_step());
    assert!(!once.may_retry());
}

#[test]
fn the_schemas_extract_steps_name_are_read_beside_the_steps_and_go_with_the_job() {
    const SCHEMA: &str = r#"{"type": "object", "properties": {"plan": {"type": "string"}}}"#;
    let steps = "extract: plan.json as account\nexpect: output account.plan = Pro\n";
    // Inline steps: beside the check file.
    let check = parse_with(
        &format!("url = \"http://a.test/\"\nsteps = '''\n{steps}'''\n"),
        &[("plan.json", SCHEMA)],
    )
    .unwrap();
    let spec = check.workflow_spec(None);
    assert_eq!(spec.schemas.keys().collect::<Vec<_>>(), ["plan.json"]);
    assert_eq!(
        spec.schemas["plan.json"].as_value()["properties"]["plan"]["type"],
        "string"
    );
    // A steps file: beside it.
    let check = parse_with(
        "url = \"http://a.test/\"\nsteps_file = \"flows/account.steps\"\n",
        &[("flows/account.steps", steps), ("flows/plan.json", SCHEMA)],
    )
    .unwrap();
    assert!(check.schemas.contains_key("plan.json"));
    // Missing, not JSON, or not a schema: refused, naming the file.
    for (files, says) in [
        (&[][..], "/checks/plan.json"),
        (&[("plan.json", "{")][..], "is not JSON"),
        (
            &[("plan.json", r#"{"type": "string"}"#)][..],
            "\"object\" or \"array\"",
        ),
    ] {
        let err = parse_with(
            &format!("url = \"http://a.test/\"\nsteps = '''\n{steps}'''\n"),
            files,
        )
        .expect_err("refused");
        let bad = err.invalid().cloned().expect("an invalid file");
        assert_eq!((bad.key.as_deref(), bad.line), (Some("steps"), Some(2)), "{bad}");
        assert!(
            bad.message.contains("extract: plan.json") && bad.message.contains(says),
            "{bad}"
        );
    }
}
