//! `oxwright report` and `oxwright codegen` as a user runs them, after an
//! `oxwright run` of a structured login flow against the fixture app: the
//! report is written again at the printed path; the spec passes its
//! Playwright run and is written to `-o`; a spec whose expectation the
//! page no longer meets is kept as `failed.spec.ts` and the command exits 1.

use std::path::Path;
use std::process::{Command, Output};

use oxwright_fixtures::{APP_PASSWORD, FixtureServer};

const LOGIN: &str = "fill: textbox \"Username\" = {{LOGIN_ID}}\n\
                     fill: textbox \"Password\" = {{PASSWORD}}\n\
                     click: button \"Sign in\"\n\
                     expect: text \"Signed in as\"\n";

async fn oxwright(out: &Path, args: Vec<String>) -> Output {
    let out = out.to_path_buf();
    tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_oxwright"))
            .arg("--out")
            .arg(&out)
            .args(&args)
            .env_remove("OXWRIGHT_CONFIG")
            .env_remove("OXWRIGHT_S3")
            .output()
            .expect("oxwright runs")
    })
    .await
    .unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn report_and_codegen_from_a_run_session() {
    let site = FixtureServer::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let workflow = dir.path().join("login.steps");
    std::fs::write(&workflow, LOGIN).unwrap();
    let secrets = dir.path().join("secrets.env");
    std::fs::write(&secrets, format!("LOGIN_ID=alice\nPASSWORD={APP_PASSWORD}\n")).unwrap();
    let s = |p: &Path| p.to_string_lossy().into_owned();

    let run = oxwright(
        &out,
        vec![
            "--allow-host".into(),
            site.addr().to_string(),
            "run".into(),
            s(&workflow),
            "--url".into(),
            site.url("/app/login"),
            "--session".into(),
            "login".into(),
            "--secrets".into(),
            s(&secrets),
        ],
    )
    .await;
    assert!(run.status.success(), "{}", text(&run));
    let report = out.join("sessions/login/report.html");
    assert!(report.is_file(), "the run wrote its report");
    std::fs::remove_file(&report).unwrap();

    let again = oxwright(&out, vec!["report".into(), "login".into()]).await;
    assert!(again.status.success(), "{}", text(&again));
    assert_eq!(
        String::from_utf8_lossy(&again.stdout).trim(),
        report.display().to_string()
    );
    let html = std::fs::read_to_string(&report).unwrap();
    assert!(html.contains("COMPLETED") && !html.contains(APP_PASSWORD));

    let spec = dir.path().join("login.spec.ts");
    let codegen = |args: Vec<String>| oxwright(&out, args);
    let args = |extra: &[&str]| {
        let mut v = vec![
            "codegen".to_string(),
            "login".into(),
            "--secrets".into(),
            s(&secrets),
        ];
        v.extend(extra.iter().map(|a| a.to_string()));
        v
    };
    let ok = codegen(args(&["-o", &s(&spec)])).await;
    assert!(ok.status.success(), "{}", text(&ok));
    let code = std::fs::read_to_string(&spec).unwrap();
    assert!(
        code.contains("await expect(page.getByText('Signed in as')).toBeVisible();"),
        "{code}"
    );
    assert!(code.contains(".fill(env('PASSWORD'))"), "{code}");
    assert!(!code.contains(APP_PASSWORD) && !code.contains("alice"), "{code}");
    assert!(out.join("sessions/login/codegen/spec.ts").is_file());

    // The page "changed": the recorded expectation no longer holds.
    let steps = out.join("sessions/login/steps.jsonl");
    let recorded = std::fs::read_to_string(&steps).unwrap();
    std::fs::write(&steps, recorded.replace("Signed in as", "Welcome back")).unwrap();
    let broken = dir.path().join("broken.spec.ts");
    let failed = codegen(args(&["-o", &s(&broken)])).await;
    assert_eq!(failed.status.code(), Some(1), "{}", text(&failed));
    let stderr = String::from_utf8_lossy(&failed.stderr);
    assert!(
        stderr.contains("failed.spec.ts") && stderr.contains("Welcome back"),
        "{stderr}"
    );
    assert!(!stderr.contains(APP_PASSWORD), "{stderr}");
    assert!(!broken.exists(), "a failing spec is not published");
    assert!(out.join("sessions/login/codegen/failed.spec.ts").is_file());
    assert!(out.join("sessions/login/codegen/failure.txt").is_file());

    // Without a session there is nothing to report: a usage error.
    let none = oxwright(&out, vec!["report".into(), "nope".into()]).await;
    assert_eq!(none.status.code(), Some(2), "{}", text(&none));
}
