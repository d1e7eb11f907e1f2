//! `oxwright run` as a user runs it: a plain-language workflow against the
//! fixture app and the scripted LLM server, a real password in a secrets
//! file, and the process's console output, artefacts and the LLM requests
//! checked for the password. A structured file runs with no LLM flags, on
//! Chromium and on the Playwright MCP backend (`--browser playwright-mcp`).

use std::process::Command;

use oxwright_fixtures::llm::{Reply, ScriptedLlm};
use oxwright_fixtures::{APP_PASSWORD, FixtureServer};
use support::walk;

mod support;

fn oxwright() -> Command {
    Command::new(env!("CARGO_BIN_EXE_oxwright"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_command_keeps_the_password_out_of_console_and_artifacts() {
    let site = FixtureServer::start().await.unwrap();
    let llm = ScriptedLlm::start().await.unwrap();
    let role = |role: &str, name: &str, action: &str, value: Option<serde_json::Value>| {
        let mut d = serde_json::json!({"method": "getByRole", "selector": {"role": role, "name": name}, "action": action});
        if let Some(v) = value {
            d["value"] = v;
        }
        Reply::json(d)
    };
    llm.push(Reply::json(serde_json::json!([
        "Type {{LOGIN_ID}} into Username",
        "Type {{PASSWORD}} into Password",
        "Click Sign in"
    ])));
    llm.push(role(
        "textbox",
        "Username",
        "fill",
        Some(serde_json::json!({"kind": "placeholder", "value": "{{LOGIN_ID}}"})),
    ));
    llm.push(Reply::text("true"));
    llm.push(role(
        "textbox",
        "Password",
        "fill",
        Some(serde_json::json!({"kind": "placeholder", "value": "{{PASSWORD}}"})),
    ));
    llm.push(Reply::text("true"));
    llm.push(role("button", "Sign in", "click", None));
    llm.push(Reply::text("true"));

    let dir = tempfile::tempdir().unwrap();
    let workflow = dir.path().join("login.txt");
    std::fs::write(&workflow, "Log in as {{LOGIN_ID}} with password {{PASSWORD}}\n").unwrap();
    let secrets = dir.path().join("secrets.env");
    std::fs::write(&secrets, format!("LOGIN_ID=alice\nPASSWORD={APP_PASSWORD}\n")).unwrap();
    let out_dir = dir.path().join("out");

    let base_url = llm.base_url();
    let site_addr = site.addr().to_string();
    let start = site.url("/app/login");
    let output = tokio::task::spawn_blocking({
        let (workflow, secrets, out_dir) = (workflow.clone(), secrets.clone(), out_dir.clone());
        move || {
            oxwright()
                .args(["--allow-host", &site_addr, "--out"])
                .arg(&out_dir)
                .arg("run")
                .arg(&workflow)
                .args([
                    "--url",
                    &start,
                    "--llm-base-url",
                    &base_url,
                    "--model",
                    "scripted",
                    "--session",
                    "cli",
                    "--json",
                ])
                .arg("--secrets")
                .arg(&secrets)
                .env("RUST_LOG", "debug")
                .output()
                .expect("oxwright runs")
        }
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "exit {:?}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        output.status
    );
    // With --json, stdout is the result alone (session id intact) and the
    // progress lines go to stderr.
    let result: serde_json::Value = serde_json::from_str(&stdout).expect("stdout is the result JSON");
    assert_eq!(result["session_id"], "cli", "{result}");
    assert_eq!(result["status"], "completed", "{result}");
    assert!(
        stderr.contains("step 2/3: Type {{PASSWORD}} into Password"),
        "{stderr}"
    );
    assert!(stderr.contains("completed: 3/3 steps"), "{stderr}");
    assert!(!stdout.contains(APP_PASSWORD), "password on stdout:\n{stdout}");
    assert!(!stderr.contains(APP_PASSWORD), "password on stderr:\n{stderr}");

    let mut files = Vec::new();
    walk(&out_dir, &mut files);
    assert!(
        files.iter().any(|(p, _)| p.ends_with("sessions/cli/steps.jsonl")),
        "{files:?}"
    );
    for (path, text) in &files {
        assert!(!text.contains(APP_PASSWORD), "password in {path}");
    }
    for call in llm.received() {
        assert!(!call.body.contains(APP_PASSWORD), "password sent to the LLM");
    }

    // The run recorded its actions (placeholders, never the password): the
    // session replays with no LLM flags at all, so no LLM request.
    let calls = llm.received().len();
    let site_addr = site.addr().to_string();
    let replay = tokio::task::spawn_blocking({
        let (secrets, out_dir) = (secrets.clone(), out_dir.clone());
        move || {
            oxwright()
                .args(["--allow-host", &site_addr, "--out"])
                .arg(&out_dir)
                .args([
                    "replay",
                    "cli",
                    "--trust-after",
                    "1",
                    "--session",
                    "again",
                    "--secrets",
                ])
                .arg(&secrets)
                .output()
                .expect("oxwright runs")
        }
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&replay.stdout);
    assert!(
        replay.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&replay.stderr)
    );
    assert!(
        stdout.contains("(cached)") && stdout.contains("completed: 3/3 steps, 0 tokens"),
        "{stdout}"
    );
    assert_eq!(llm.received().len(), calls, "the replay asked the LLM");
    let mut files = Vec::new();
    walk(&out_dir, &mut files);
    let view = files
        .iter()
        .find(|(p, _)| p.ends_with("workflows/login/actions.json"))
        .expect("the action cache's view");
    assert!(view.1.contains("{{PASSWORD}}"), "{}", view.1);
    for (path, text) in &files {
        assert!(!text.contains(APP_PASSWORD), "password in {path}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_command_runs_structured_steps_without_an_llm() {
    structured_run("chromium").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_command_runs_structured_steps_on_playwright_mcp() {
    structured_run("playwright-mcp").await;
}

async fn structured_run(browser: &'static str) {
    let site = FixtureServer::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let workflow = dir.path().join("late.steps");
    std::fs::write(
        &workflow,
        "click: button \"Download report\"\nexpect: text \"Report downloaded\"\n",
    )
    .unwrap();
    let site_addr = site.addr().to_string();
    let start = site.url("/app/late");
    let out_dir = dir.path().join("out");
    let output = tokio::task::spawn_blocking(move || {
        oxwright()
            .args(["--allow-host", &site_addr, "--out"])
            .arg(&out_dir)
            .arg("run")
            .arg(&workflow)
            .args(["--url", &start, "--browser", browser])
            .env_remove("OXWRIGHT_LLM_BASE_URL")
            .env_remove("OXWRIGHT_LLM_MODEL")
            .output()
            .expect("oxwright runs")
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("completed: 2/2 steps"), "{stdout}");
}

/// Runs `oxwright run` on `workflow` with no browser able to start
/// (`CHROME_PATH` names nothing): what it reports must come before Chromium.
fn run_without_a_browser(workflow: &str, extra: &[&str]) -> std::process::Output {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("flow.steps");
    std::fs::write(&file, workflow).unwrap();
    oxwright()
        .args(["--allow-host", "127.0.0.1:9", "--out"])
        .arg(dir.path().join("out"))
        .arg("run")
        .arg(&file)
        .args(["--url", "http://127.0.0.1:9/app/login"])
        .args(extra)
        .env("CHROME_PATH", dir.path().join("no-chromium"))
        .env_remove("OXWRIGHT_CONFIG")
        .env_remove("OXWRIGHT_SECRET_PASSWORD")
        .env_remove("OXWRIGHT_SECRET_LOGIN_ID")
        .env_remove("OXWRIGHT_LLM_BASE_URL")
        .env_remove("OXWRIGHT_LLM_MODEL")
        .output()
        .expect("oxwright runs")
}

#[test]
fn missing_secrets_are_reported_before_a_browser_starts() {
    let out = run_without_a_browser(
        "fill: textbox \"Username\" = {{LOGIN_ID}}\nfill: textbox \"Password\" = {{PASSWORD}}\n",
        &[],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("the workflow needs {{LOGIN_ID}}, {{PASSWORD}}"),
        "{stderr}"
    );
    assert!(stderr.contains("--secrets FILE"), "{stderr}");
    assert!(
        stderr.contains("OXWRIGHT_SECRET_LOGIN_ID, OXWRIGHT_SECRET_PASSWORD"),
        "{stderr}"
    );
    assert!(!stderr.to_lowercase().contains("chromium"), "{stderr}");

    // A secrets file that has one of the two names: only the other is missing.
    let dir = tempfile::tempdir().unwrap();
    let secrets = dir.path().join("secrets.env");
    std::fs::write(&secrets, "LOGIN_ID=alice\n").unwrap();
    let out = run_without_a_browser(
        "fill: textbox \"Username\" = {{LOGIN_ID}}\nfill: textbox \"Password\" = {{PASSWORD}}\n",
        &["--secrets", secrets.to_str().unwrap()],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("the workflow needs {{PASSWORD}}, not found in secrets file"),
        "{stderr}"
    );
}

#[test]
fn a_typo_in_the_first_verb_is_an_unknown_verb() {
    let out = run_without_a_browser("clik: button \"Sign in\"\nexpect: text \"Welcome\"\n", &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("line 1: unknown verb \"clik\": did you mean `click:`?"),
        "{stderr}"
    );
    // Not sent to an LLM as plain language.
    assert!(!stderr.contains("need an LLM"), "{stderr}");
}

/// A run killed mid-way leaves its checkpoint; `run --resume SESSION`
/// continues it at the next step with its storage restored, and nothing
/// it had done is done again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_run_continues_by_hand_from_its_checkpoint() {
    let site = FixtureServer::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let workflow = dir.path().join("ledger.steps");
    std::fs::write(
        &workflow,
        "goto: /app/ledger?owner=owner-3c\nfill: textbox \"Entry\" = first\nclick: button \"Sign\"\n\
         expect: text \"Signed: first\"\nwait: 5s\nfill: textbox \"Entry\" = second\nclick: button \"Sign\"\n\
         expect: text \"Signed: second\"\nexpect: text \"Owner: owner-3c\"\n",
    )
    .unwrap();
    let out_dir = dir.path().join("out");
    let command = |extra: &[&str]| keyed_run(&site, &out_dir, &workflow, extra);
    let mut first = command(&["--session", "by-hand"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let checkpoint = out_dir.join("sessions/by-hand/checkpoint.json");
    checkpoint_at(&checkpoint, 4).await;
    first.kill().unwrap();
    first.wait().unwrap();
    let output = tokio::task::spawn_blocking({
        let mut cmd = command(&["--resume", "by-hand", "--json"]);
        move || cmd.output().unwrap()
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    let result: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(result["status"], "completed", "{result:#}");
    assert_eq!(result["resumed"][0]["reason"], "by_hand", "{result:#}");
    assert_eq!(result["resumed"][0]["at_step"], 5, "{result:#}");
    assert!(stderr.contains("resuming at step 5 of 9"), "{stderr}");
    assert_eq!(site.ledger_entries(), ["first", "second"]);
    assert!(!checkpoint.exists(), "the checkpoint outlived the run");
    // Nothing to continue any more: a usage error that says why.
    let again = command(&["--resume", "by-hand"]).output().unwrap();
    assert_eq!(again.status.code(), Some(2), "{again:?}");
    assert!(
        String::from_utf8_lossy(&again.stderr).contains("no checkpoint at sessions/by-hand/checkpoint.json"),
        "{again:?}"
    );
}

/// `oxwright run WORKFLOW` on the fixture site with a checkpoint key,
/// artefacts under `out_dir`, no LLM.
fn keyed_run(
    site: &FixtureServer,
    out_dir: &std::path::Path,
    workflow: &std::path::Path,
    extra: &[&str],
) -> Command {
    let mut cmd = oxwright();
    cmd.args(["--allow-host", &site.addr().to_string(), "--out"])
        .arg(out_dir)
        .arg("run")
        .arg(workflow)
        .args(["--url", &site.url("/app/ledger")])
        .args(extra)
        .env(
            "OXWRIGHT_CHECKPOINT_KEY",
            "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff",
        )
        .env_remove("OXWRIGHT_LLM_BASE_URL")
        .env_remove("OXWRIGHT_LLM_MODEL")
        .stdin(std::process::Stdio::null());
    cmd
}

/// Waits until the checkpoint at `path` says `next_step` is `next`; returns it.
async fn checkpoint_at(path: &std::path::Path, next: u32) -> serde_json::Value {
    let started = std::time::Instant::now();
    loop {
        if let Some(cp) = std::fs::read(path)
            .ok()
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
            .filter(|cp| cp["next_step"] == next)
        {
            return cp;
        }
        assert!(started.elapsed().as_secs() < 60, "no checkpoint at step {next}");
        tokio::time::sleep(std::time::Duration::from_millis(40)).await;
    }
}

/// A checkpoint set back in the store to before a finished click (its
/// progress fields edited, its seal untouched) is refused by hand as by a
/// worker: exit 2, the checkpoint kept, nothing signed twice; one cut
/// short gives the same code.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_checkpoint_set_back_in_the_store_is_refused_by_hand() {
    let site = FixtureServer::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let workflow = dir.path().join("sign.steps");
    std::fs::write(
        &workflow,
        "goto: /app/ledger?owner=owner-5d\nfill: textbox \"Entry\" = once\nclick: button \"Sign\"\n\
         expect: text \"Signed: once\"\nwait: 5s\nexpect: text \"Owner: owner-5d\"\n",
    )
    .unwrap();
    let out_dir = dir.path().join("out");
    let command = |extra: &[&str]| keyed_run(&site, &out_dir, &workflow, extra);
    let mut first = command(&["--session", "rewound"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let checkpoint = out_dir.join("sessions/rewound/checkpoint.json");
    // In the pause, the click and its check done.
    let mut rewound = checkpoint_at(&checkpoint, 4).await;
    first.kill().unwrap();
    first.wait().unwrap();
    assert_eq!(site.ledger_entries(), ["once"]);
    rewound["next_step"] = serde_json::json!(2);
    rewound["document_step"] = serde_json::json!(1);
    rewound["outcomes"].as_array_mut().unwrap().truncate(2);
    let body = serde_json::to_vec(&rewound).unwrap();
    std::fs::write(&checkpoint, &body).unwrap();
    let output = tokio::task::spawn_blocking({
        let mut cmd = command(&["--resume", "rewound"]);
        move || cmd.output().unwrap()
    })
    .await
    .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        site.ledger_entries(),
        ["once"],
        "the click ran a second time:\n{stderr}"
    );
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("edited"), "{stderr}");
    assert_eq!(
        std::fs::read(&checkpoint).unwrap(),
        body,
        "the checkpoint was not kept"
    );

    std::fs::write(&checkpoint, &body[..body.len() / 2]).unwrap();
    let cut = command(&["--resume", "rewound"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&cut.stderr);
    assert_eq!(cut.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("not a usable checkpoint"), "{stderr}");
    assert_eq!(site.ledger_entries(), ["once"]);
}
