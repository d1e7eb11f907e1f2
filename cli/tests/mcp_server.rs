//! `oxwright mcp` driven by the official Python MCP SDK (installed by
//! `infra/install.sh` into `infra/.venv`) over stdio and over HTTP, through
//! every tool and error case (`tests/mcp/drive.py`), two clients at once;
//! by the official TypeScript SDK (`infra/node`), schemas compiled in
//! strict mode (`tests/mcp/drive.mjs`); and no Chromium left after the
//! server is killed with SIGKILL.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use oxwright_fixtures::llm::{Reply, ScriptedLlm};
use oxwright_fixtures::{APP_PASSWORD, FixtureServer};
use support::wait_until;

mod support;

fn python() -> PathBuf {
    let py = Path::new(env!("CARGO_MANIFEST_DIR")).join("../infra/.venv/bin/python");
    assert!(
        py.exists(),
        "{} is missing: run `bash infra/install.sh` (it installs the Python MCP SDK the MCP tests drive)",
        py.display()
    );
    py
}

fn driver() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/drive.py")
}

/// A work directory with an upload directory, a file to upload and a
/// secrets file; returns the server flags that use them.
fn workdir(site: &FixtureServer) -> (tempfile::TempDir, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir_all(d.join("uploads")).unwrap();
    std::fs::write(d.join("uploads/note.txt"), "hello").unwrap();
    std::fs::write(d.join("secrets.env"), format!("APP_PASSWORD={APP_PASSWORD}\n")).unwrap();
    let s = |p: &str| d.join(p).display().to_string();
    let args = vec![
        // The fixture host on any port (a closed port must be reachable to be reported).
        "--allow-host".into(),
        site.addr().ip().to_string(),
        "--allow-host".into(),
        "localhost".into(),
        "--out".into(),
        s("out"),
        "--browsers".into(),
        "1".into(),
        "--pages-per-browser".into(),
        "4".into(),
        "mcp".into(),
        "--screenshot-dir".into(),
        s("shots"),
        "--upload-dir".into(),
        s("uploads"),
        "--secrets".into(),
        s("secrets.env"),
        // Long enough for a loaded CI machine (3 s once timed out on a
        // fixture page there); the one page that stalls pays it once.
        "--navigation-timeout-ms".into(),
        "8000".into(),
    ];
    (dir, args)
}

fn run_driver(args: &[String], envs: &[(&str, String)]) {
    let out = Command::new(python())
        .arg(driver())
        .args(args)
        .envs(envs.iter().map(|(k, v)| (*k, v.as_str())))
        .stdin(Stdio::null())
        .output()
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains("checks ok"),
        "driver failed ({}):\n{stdout}\n{}",
        out.status,
        tail(&stderr, 6000)
    );
    println!("{stdout}");
}

/// Runs the TypeScript SDK's driver; panics with its output on failure.
fn run_ts_driver(args: &[String]) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/drive.mjs");
    let sdk =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../infra/node/node_modules/@modelcontextprotocol/sdk");
    assert!(
        sdk.exists(),
        "{} is missing: run `bash infra/install.sh` (it installs the TypeScript MCP SDK)",
        sdk.display()
    );
    let out = Command::new("node")
        .arg(script)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("node runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains("ts checks ok"),
        "TypeScript driver failed ({}):\n{stdout}\n{}",
        out.status,
        tail(&stderr, 6000)
    );
    println!("{stdout}");
}

/// Starts `oxwright mcp --listen` on a free port with `token`; returns the
/// child and its /mcp URL once it listens.
fn serve_http(mut args: Vec<String>, token: &str) -> (std::process::Child, String) {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    args.extend(["--listen".into(), format!("127.0.0.1:{port}")]);
    let server = Command::new(env!("CARGO_BIN_EXE_oxwright"))
        .args(&args)
        .env("OXWRIGHT_MCP_TOKEN", token)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("oxwright mcp starts");
    let listening = (0..600).any(|_| {
        std::thread::sleep(Duration::from_millis(50));
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    assert!(listening, "the MCP server listens on {port}");
    (server, format!("http://127.0.0.1:{port}/mcp"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_sdk_over_stdio_and_http() {
    let site = FixtureServer::start().await.unwrap();
    let base = format!("http://{}", site.addr());
    let (_dir, args) = workdir(&site);
    run_ts_driver(&[
        "stdio".into(),
        env!("CARGO_BIN_EXE_oxwright").into(),
        base.clone(),
        serde_json::to_string(&args).unwrap(),
    ]);
    let (_dir, args) = workdir(&site);
    let token = "ts-t0ken-for-the-test";
    let (mut server, url) = serve_http(args, token);
    run_ts_driver(&["http".into(), url, base, token.into()]);
    unsafe { libc::kill(server.id() as i32, libc::SIGTERM) };
    let status = server.wait().unwrap();
    assert!(status.success(), "the server exits 0 on SIGTERM: {status}");
}

fn tail(s: &str, n: usize) -> &str {
    let start = s.len().saturating_sub(n);
    let start = (start..s.len())
        .find(|i| s.is_char_boundary(*i))
        .unwrap_or(s.len());
    &s[start..]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_over_stdio_through_every_tool() {
    let site = FixtureServer::start().await.unwrap();
    // A second port of the fixture host, for a frame of another origin.
    let second = FixtureServer::start().await.unwrap();
    let (dir, mut args) = workdir(&site);
    let base = format!("http://{}", site.addr());
    // One plain-language run_workflow with site profiles and sitemap hints.
    let llm = ScriptedLlm::start().await.unwrap();
    llm.push(Reply::text(r#"["Type rust into the search box"]"#));
    llm.push(Reply::json(serde_json::json!({
        "method": "getByRole", "selector": {"role": "searchbox", "name": "Search products"},
        "action": "fill", "value": {"kind": "literal", "value": "rust"}, "confidence": 0.9,
    })));
    llm.push(Reply::text("true"));
    args.extend([
        "--llm-base-url".into(),
        llm.base_url(),
        "--model".into(),
        "scripted".into(),
    ]);
    run_driver(
        &[
            "stdio".into(),
            env!("CARGO_BIN_EXE_oxwright").into(),
            base.clone(),
            dir.path().display().to_string(),
        ],
        &[
            ("OXWRIGHT_MCP_ARGS", serde_json::to_string(&args).unwrap()),
            ("OXWRIGHT_DRIVE_LLM", "1".into()),
            ("OXWRIGHT_DRIVE_SECOND_PORT", second.addr().port().to_string()),
        ],
    );
    let calls = llm.received();
    assert_eq!(calls.len(), 3, "checklist, decision, judgement");
    let prompt = calls[1].prompt();
    assert!(
        prompt.contains("Shop fixture") && prompt.contains("any username works"),
        "{prompt}"
    );
    assert!(prompt.contains("The site's sitemap"), "{prompt}");
    assert!(prompt.contains(&format!("{base}/articles/")), "{prompt}");
    // The secret never reached the server's log either (stderr went to the driver's
    // stderr; the run's artefacts are checked here).
    let store = dir.path().join("out");
    for entry in walk(&store) {
        let body = std::fs::read(&entry).unwrap_or_default();
        assert!(
            !String::from_utf8_lossy(&body).contains(APP_PASSWORD),
            "{} holds the secret",
            entry.display()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_over_http_with_a_token_and_two_clients() {
    let site = FixtureServer::start().await.unwrap();
    let (dir, mut args) = workdir(&site);
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    args.extend(["--listen".into(), format!("127.0.0.1:{port}")]);
    let token = "t0ken-for-the-test";
    let mut server = Command::new(env!("CARGO_BIN_EXE_oxwright"))
        .args(&args)
        .env("OXWRIGHT_MCP_TOKEN", token)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("oxwright mcp starts");
    let stderr = server.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let listening = (0..600).any(|_| {
        std::thread::sleep(Duration::from_millis(50));
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    assert!(listening, "the MCP server listens on {port}");
    run_driver(
        &[
            "http".into(),
            format!("http://127.0.0.1:{port}/mcp"),
            format!("http://{}", site.addr()),
            dir.path().display().to_string(),
            token.into(),
        ],
        &[],
    );
    unsafe { libc::kill(server.id() as i32, libc::SIGTERM) };
    let status = server.wait().unwrap();
    assert!(status.success(), "the server exits 0 on SIGTERM: {status}");
    let log: Vec<String> = rx.try_iter().collect();
    assert!(
        !log.iter().any(|l| l.contains(APP_PASSWORD)),
        "the secret reached the server log"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_chromium_outlives_a_killed_server() {
    let site = FixtureServer::start().await.unwrap();
    let (_dir, args) = workdir(&site);
    let mut server = Command::new(env!("CARGO_BIN_EXE_oxwright"))
        .args(&args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("oxwright mcp starts");
    let pid = server.id();
    let mut stdin = server.stdin.take().unwrap();
    let mut stdout = BufReader::new(server.stdout.take().unwrap());
    let mut send = |v: serde_json::Value| {
        writeln!(stdin, "{v}").unwrap();
        stdin.flush().unwrap();
    };
    send(
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}),
    );
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    assert!(line.contains("\"result\""), "{line}");
    send(serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    send(
        serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "browser_navigate", "arguments": {"url": site.url("/app/login")}}}),
    );
    line.clear();
    stdout.read_line(&mut line).unwrap();
    assert!(line.contains("Navigated to"), "{line}");
    let chromium = support::chromium_of(pid);
    assert!(!chromium.is_empty(), "the server runs Chromium");
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    server.wait().unwrap();
    wait_until("Chromium to exit after SIGKILL", Duration::from_secs(20), || {
        support::chromium_of(pid).is_empty()
    })
    .await;
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_saved_login_starts_the_first_tab_signed_in() {
    use oxwright_fixtures::{MEMBERS_COOKIE, members_token};
    let site = FixtureServer::start().await.unwrap();
    let (dir, mut args) = workdir(&site);
    let base = format!("http://{}", site.addr());
    // Saved as Playwright saves one.
    let state = serde_json::json!({
        "cookies": [{"name": MEMBERS_COOKIE, "value": members_token("ada"), "domain": site.addr().ip().to_string(),
                     "path": "/", "expires": -1, "httpOnly": true, "secure": false, "sameSite": "Lax"}],
        "origins": [{"origin": base, "localStorage": [{"name": "members.theme", "value": "dark"}]}]
    });
    let path = dir.path().join("state.json");
    std::fs::write(&path, state.to_string()).unwrap();
    args.extend(["--storage-state".into(), path.display().to_string()]);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/login_state.py");
    let out = Command::new(python())
        .arg(script)
        .args([env!("CARGO_BIN_EXE_oxwright"), &base, &members_token("ada")])
        .env("OXWRIGHT_MCP_ARGS", serde_json::to_string(&args).unwrap())
        .stdin(Stdio::null())
        .output()
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("checks ok"),
        "driver failed ({}):\n{stdout}\n{}",
        out.status,
        tail(&String::from_utf8_lossy(&out.stderr), 6000)
    );
    let login = site
        .requests()
        .into_iter()
        .filter(|r| r.path == "/members/login")
        .count();
    assert_eq!(login, 0, "the tab started signed in");
}
