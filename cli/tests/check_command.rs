//! `oxwright check run` as CI runs it, with real Chromium against the
//! fixture app's `/app/account`, switched between healthy, broken and
//! flaky: the exit code, the JUnit file read by a JUnit reader (the
//! failure naming the failed step), the run records in the store, retries
//! that make a pass on retry `flaky`, a `once:` check never retried, and
//! no secret value (one the page shows back, one typed into a password
//! field) in the JUnit file, the records, the output or any artefact.

use std::path::PathBuf;

use oxwright_fixtures::{ACCOUNT_BROKEN, APP_PASSWORD, FixtureServer, SiteHealth};
use quick_junit::{NonSuccessKind, Report, TestCaseStatus};
use support::{oxwright_output, show, walk};

mod support;

/// The username, a secret the account page shows back ("Signed in as …").
const LOGIN_ID: &str = "alice-7Qx93kZ";

/// A login through a secret username and password, then the account page's plan.
const STEPS: &str = r#"fill: textbox "Username" = {{LOGIN_ID}}
fill: textbox "Password" = {{APP_PASSWORD}}
click: button "Sign in"
expect: url includes /app/search
goto: /app/account
expect: text main = "Plan: Pro"
"#;

/// The failed step's text and index when the account page is broken.
const FAILING_STEP: &str = r#"expect: text main = "Plan: Pro""#;

struct Workdir {
    dir: tempfile::TempDir,
}

impl Workdir {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("secrets.env"),
            format!("LOGIN_ID={LOGIN_ID}\nAPP_PASSWORD={APP_PASSWORD}\n"),
        )
        .unwrap();
        std::fs::create_dir_all(dir.path().join("checks")).unwrap();
        Self { dir }
    }

    fn path(&self, p: &str) -> PathBuf {
        self.dir.path().join(p)
    }

    /// Writes `checks/NAME.check.toml` starting at `url` with `extra` keys.
    fn check(&self, name: &str, url: &str, steps: &str, extra: &str) -> PathBuf {
        let path = self.path(&format!("checks/{name}.check.toml"));
        std::fs::write(
            &path,
            format!("url = \"{url}\"\nsteps = '''\n{steps}'''\n{extra}"),
        )
        .unwrap();
        path
    }

    /// Runs `check run` on `paths` with the JUnit report at `junit.xml`.
    async fn run(&self, site: &FixtureServer, paths: &[PathBuf], extra: &[&str]) -> std::process::Output {
        let mut args: Vec<String> = vec![
            "--allow-host".into(),
            site.addr().ip().to_string(),
            "--out".into(),
            self.path("out").display().to_string(),
            "--browsers".into(),
            "1".into(),
            "check".into(),
            "run".into(),
        ];
        args.extend(paths.iter().map(|p| p.display().to_string()));
        args.extend(
            [
                "--junit",
                &self.path("junit.xml").display().to_string(),
                "--secrets",
                &self.path("secrets.env").display().to_string(),
                // An assertion that fails waits this long, not the default 10 s.
                "--action-timeout-ms",
                "2000",
            ]
            .map(String::from),
        );
        args.extend(extra.iter().map(|s| s.to_string()));
        oxwright_output(args, &["CI"]).await
    }

    fn junit(&self) -> (String, Report) {
        let xml = std::fs::read_to_string(self.path("junit.xml")).expect("the JUnit file is written");
        let report = Report::deserialize_from_str(&xml).unwrap_or_else(|e| panic!("{e}\n{xml}"));
        (xml, report)
    }

    /// The run records of `check`, as JSON.
    fn records(&self, check: &str) -> Vec<serde_json::Value> {
        let dir = self.path(&format!("out/checks/{check}/runs"));
        let Ok(entries) = std::fs::read_dir(&dir) else {
            return Vec::new();
        };
        entries
            .flatten()
            .map(|e| serde_json::from_slice(&std::fs::read(e.path()).unwrap()).unwrap())
            .collect()
    }

    /// Fails if a secret value is in the output, the JUnit file or any file under `out/`.
    fn assert_no_secret(&self, out: &std::process::Output) {
        let mut texts = vec![
            (
                "stdout".to_string(),
                String::from_utf8_lossy(&out.stdout).into_owned(),
            ),
            (
                "stderr".to_string(),
                String::from_utf8_lossy(&out.stderr).into_owned(),
            ),
        ];
        walk(&self.path("out"), &mut texts);
        if self.path("junit.xml").exists() {
            walk(&self.path("junit.xml"), &mut texts);
        }
        assert!(texts.len() > 4, "nothing written: {texts:?}");
        for (name, text) in &texts {
            for secret in [LOGIN_ID, APP_PASSWORD] {
                assert!(!text.contains(secret), "a secret value in {name}:\n{text}");
            }
        }
    }
}

fn session_dir(work: &Workdir, record: &serde_json::Value, attempt: usize) -> PathBuf {
    let session = record["attempts"][attempt]["session_id"].as_str().unwrap();
    work.path(&format!("out/sessions/{session}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn healthy_exits_0_and_broken_exits_1_with_a_junit_failure_naming_the_step() {
    let site = FixtureServer::start().await.unwrap();
    let work = Workdir::new();
    // The file points at a port nothing listens on: `--url` moves it to the site.
    let login = work.check(
        "login",
        "http://127.0.0.1:9/app/login",
        STEPS,
        "tags = [\"smoke\"]\n",
    );

    let out = work
        .run(&site, std::slice::from_ref(&login), &["--url", &site.url("/")])
        .await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("passed  login"), "{stdout}");
    let (xml, report) = work.junit();
    let cases = &report.test_suites[0].test_cases;
    assert_eq!(cases.len(), 1, "{xml}");
    assert_eq!(cases[0].name.as_str(), "login");
    assert_eq!(cases[0].classname.as_ref().map(|c| c.as_str()), Some("smoke"));
    assert!(matches!(cases[0].status, TestCaseStatus::Success { .. }), "{xml}");
    let records = work.records("login");
    assert_eq!(records.len(), 1);
    assert_eq!(records[0]["status"], "passed", "{}", records[0]);
    assert_eq!(records[0]["trigger"], "manual");
    assert_eq!(records[0]["url"], site.url("/app/login"));
    assert!(session_dir(&work, &records[0], 0).join("steps.jsonl").exists());
    work.assert_no_secret(&out);

    // Broken: the plan is gone. A second check, marked `once:`, is never retried.
    site.set_health(SiteHealth::Broken);
    work.check("login", &site.url("/app/login"), STEPS, "");
    let once_steps = format!("once: {STEPS}");
    work.check("pay", &site.url("/app/login"), &once_steps, "retries = 2\n");
    let out = work.run(&site, &[work.path("checks")], &[]).await;
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("failed  login") && stdout.contains(&format!("step 6 ({FAILING_STEP})")),
        "{stdout}"
    );
    let (xml, report) = work.junit();
    let suite = &report.test_suites[0];
    assert_eq!((suite.tests, suite.failures), (2, 2), "{xml}");
    let case = suite
        .test_cases
        .iter()
        .find(|c| c.name.as_str() == "login")
        .expect("login's case");
    match &case.status {
        TestCaseStatus::NonSuccess {
            kind: NonSuccessKind::Failure,
            message,
            ty,
            description,
            ..
        } => {
            let message = message.as_ref().map(|m| m.as_str()).unwrap_or_default();
            assert!(
                message.starts_with(&format!("step 6 ({FAILING_STEP}) failed: ")),
                "{message}"
            );
            // The page's text, shown in the reason, carries the username: cleaned.
            assert!(message.contains(ACCOUNT_BROKEN), "{message}");
            assert!(message.contains("{{LOGIN_ID}}"), "{message}");
            assert_eq!(ty.as_ref().map(|t| t.as_str()), Some("assertion_failed"), "{xml}");
            let body = description.as_ref().map(|d| d.as_str()).unwrap_or_default();
            assert!(body.contains("hint: "), "{body}");
        }
        other => panic!("not a failure: {other:?}\n{xml}"),
    }
    let records = work.records("login");
    let failed = records
        .iter()
        .find(|r| r["status"] == "failed")
        .expect("the failed run's record");
    assert_eq!(failed["failed_step"]["index"], 6, "{failed}");
    assert_eq!(failed["failed_step"]["text"], FAILING_STEP, "{failed}");
    assert_eq!(
        failed["failed_step"]["error_kind"], "assertion_failed",
        "{failed}"
    );
    let session = session_dir(&work, failed, 0);
    assert!(
        session.join("errors").is_dir(),
        "no error artefact in {}",
        session.display()
    );
    let pay = work.records("pay");
    assert_eq!(pay.len(), 1, "{pay:?}");
    assert_eq!(pay[0]["status"], "failed", "{}", pay[0]);
    assert_eq!(
        pay[0]["attempts"].as_array().unwrap().len(),
        1,
        "a once: check was retried: {}",
        pay[0]
    );
    work.assert_no_secret(&out);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_failing_one_run_in_two_is_flaky_with_one_retry() {
    let site = FixtureServer::start().await.unwrap();
    site.set_health(SiteHealth::Flaky);
    let work = Workdir::new();
    let check = work.check(
        "account",
        &site.url("/app/login"),
        STEPS,
        "retries = 1\nretry_delay = \"200ms\"\n",
    );
    let out = work.run(&site, &[check], &[]).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("flaky   account"), "{stdout}");
    let (xml, report) = work.junit();
    let case = &report.test_suites[0].test_cases[0];
    assert!(matches!(case.status, TestCaseStatus::Success { .. }), "{xml}");
    let note = case.system_out.as_ref().map(|s| s.as_str()).unwrap_or_default();
    assert!(note.starts_with("flaky: passed on attempt 2 of 2"), "{xml}");
    assert!(note.contains(&format!("step 6 ({FAILING_STEP})")), "{xml}");
    let records = work.records("account");
    assert_eq!(records.len(), 1);
    let record = &records[0];
    assert_eq!(record["status"], "flaky", "{record}");
    let attempts = record["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 2, "{record}");
    assert_eq!(attempts[0]["status"], "failed", "{record}");
    assert_eq!(attempts[1]["status"], "passed", "{record}");
    assert_ne!(attempts[0]["session_id"], attempts[1]["session_id"]);
    // Each attempt kept its own artefacts.
    assert!(session_dir(&work, record, 0).join("errors").is_dir(), "{record}");
    assert!(
        session_dir(&work, record, 1).join("steps.jsonl").exists(),
        "{record}"
    );
    assert_eq!(site.hits("/app/account"), 2);
    work.assert_no_secret(&out);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_check_file_exits_2_naming_the_key_and_line() {
    let site = FixtureServer::start().await.unwrap();
    let work = Workdir::new();
    let check = work.check("typo", &site.url("/app/login"), STEPS, "evry = \"30s\"\n");
    let out = work.run(&site, &[check], &[]).await;
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("typo.check.toml:10: `evry`: unknown field `evry`"),
        "{stderr}"
    );
    assert_eq!(site.hits("/"), 0, "a check ran");

    // A start URL or an alert webhook the URL policy refuses: the same, at its line.
    let private = work.check("private", "http://10.1.2.3/app/login", STEPS, "");
    let hook = work.check(
        "hook",
        &site.url("/app/login"),
        STEPS,
        "[alert]\nwebhook = \"http://169.254.169.254/latest\"\n",
    );
    for (check, at) in [
        (private, "private.check.toml:1: `url`"),
        (hook, "hook.check.toml:11: `alert.webhook`"),
    ] {
        let out = work.run(&site, &[check], &[]).await;
        assert_eq!(out.status.code(), Some(2), "{}", show(&out));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(at) && stderr.contains("refused by the URL policy"),
            "{stderr}"
        );
    }
    assert_eq!(site.hits("/app/login"), 0, "a check ran");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_totp_secret_passes_a_second_factor_and_its_code_is_written_nowhere() {
    use oxwright_fixtures::{APP_TOTP_SEED, MFA_ACCEPTED, mfa_codes};
    let site = FixtureServer::start().await.unwrap();
    let work = Workdir::new();
    std::fs::write(
        work.path("secrets.env"),
        format!("LOGIN_ID={LOGIN_ID}\nAPP_PASSWORD={APP_PASSWORD}\nMFA=otpauth://totp/Shop:ada?secret={APP_TOTP_SEED}&issuer=Shop\n"),
    )
    .unwrap();
    let steps = format!(
        "fill: textbox \"Code\" = {{{{totp:MFA}}}}\nclick: button \"Verify\"\nexpect: text main = \"{MFA_ACCEPTED}\"\n"
    );
    let check = work.check("mfa", &site.url("/app/mfa"), &steps, "");
    let mut codes = mfa_codes();
    let out = work.run(&site, &[check], &[]).await;
    codes.extend(mfa_codes());
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let verified = site
        .requests()
        .into_iter()
        .filter(|r| r.path == "/app/mfa/verify")
        .count();
    assert_eq!(verified, 1, "one code typed and sent");
    work.assert_no_secret(&out);
    // A six-digit code could be any number in a record: look where it would be.
    let mut texts = Vec::new();
    walk(&work.path("out"), &mut texts);
    texts.push(("stdout".into(), String::from_utf8_lossy(&out.stdout).into_owned()));
    texts.push(("stderr".into(), String::from_utf8_lossy(&out.stderr).into_owned()));
    for (name, text) in &texts {
        assert!(!text.contains(APP_TOTP_SEED), "the seed in {name}");
        for code in &codes {
            for form in [format!("code={code}"), format!("\"{code}\""), format!("= {code}")] {
                assert!(!text.contains(&form), "the code in {name}: {form}\n{text}");
            }
        }
    }
    let steps_log = texts
        .iter()
        .find(|(name, _)| name.ends_with("steps.jsonl"))
        .map(|(_, t)| t.clone())
        .expect("the run's steps");
    assert!(
        steps_log.contains("{{totp:MFA}}") || steps_log.contains("totp%3AMFA"),
        "{steps_log}"
    );
}
