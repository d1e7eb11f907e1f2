//! `oxwright dashboard` over a laptop's `--out` directory: what `oxwright
//! batch` wrote, seen without a broker or a browser; nothing submitted or
//! cancelled from it; loopback names only when no token is set.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use oxwright_fixtures::{ARTICLE_PATHS, FixtureServer};

mod support;

struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_shows_a_laptop_batch_and_acts_on_nothing() {
    let site = FixtureServer::start().await.unwrap();
    let out = tempfile::tempdir().unwrap();
    let urls = out.path().join("urls.txt");
    let list = [
        site.url(ARTICLE_PATHS[0]),
        site.url(ARTICLE_PATHS[1]),
        site.url("/status/404"),
    ];
    std::fs::write(&urls, list.join("\n")).unwrap();
    let dir = out.path().join("out").display().to_string();
    let addr = site.addr().to_string();
    let batch = support::oxwright_output(
        vec![
            "--allow-host".into(),
            addr,
            "--out".into(),
            dir.clone(),
            "batch".into(),
            "--json".into(),
            urls.display().to_string(),
        ],
        &["OXWRIGHT_AMQP_URL", "OXWRIGHT_S3"],
    )
    .await;
    let summary: serde_json::Value =
        serde_json::from_slice(&batch.stdout).unwrap_or_else(|_| panic!("{}", support::show(&batch)));
    let batch_id = summary["batch_id"].as_str().unwrap().to_owned();

    let mut child = Command::new(env!("CARGO_BIN_EXE_oxwright"))
        .args(["--out", &dir, "dashboard", "--listen", "127.0.0.1:0"])
        .env_remove("OXWRIGHT_CONFIG")
        .env_remove("OXWRIGHT_API_TOKEN")
        .env_remove("OXWRIGHT_AMQP_URL")
        .env_remove("OXWRIGHT_S3")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("oxwright dashboard starts");
    let line = BufReader::new(child.stdout.take().unwrap())
        .lines()
        .next()
        .unwrap()
        .unwrap();
    let _child = Killed(child);
    let base = line
        .strip_prefix("listening on ")
        .expect("the address line")
        .to_owned();
    let _ = rustls::crypto::ring::default_provider().install_default();
    let http = reqwest::Client::new();
    let get = |path: &str| http.get(format!("{base}{path}")).send();

    let list = get("/ui").await.unwrap();
    assert_eq!(list.status().as_u16(), 200);
    assert!(list.text().await.unwrap().contains(&batch_id));
    let failed = get(&format!("/ui/batches/{batch_id}?status=failed"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(failed.matches("<tr class=\"failed\">").count(), 1, "{failed}");
    assert!(
        failed.contains("/status/404") && failed.contains("http_status"),
        "{failed}"
    );
    assert!(
        !failed.contains("/resubmit") && !failed.contains("/cancel"),
        "no action offered"
    );
    let ok = get(&format!("/ui/batches/{batch_id}?status=ok"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(ok.matches("<tr class=\"ok\">").count(), 2, "{ok}");

    // It acts on nothing: no re-submit, and no submission route at all.
    let acted = http
        .post(format!("{base}/ui/batches/{batch_id}/resubmit"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body("csrf=x")
        .send()
        .await
        .unwrap();
    assert_eq!(acted.status().as_u16(), 409);
    let submitted = http
        .post(format!("{base}/v1/batches"))
        .header("content-type", "application/json")
        .body(r#"{"urls": ["https://example.com/"]}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(submitted.status().as_u16(), 404);

    // Without a token, a name that is not loopback gets nothing (a page
    // that rebinds its own name to 127.0.0.1 reads nothing).
    let rebound = http
        .get(format!("{base}/ui"))
        .header("host", "attacker.example")
        .send()
        .await
        .unwrap();
    assert_eq!(rebound.status().as_u16(), 403);
    assert!(!rebound.text().await.unwrap().contains(&batch_id));
    let csp = get("/ui").await.unwrap();
    let policy = csp.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        policy.contains("default-src 'none'") && policy.contains("script-src 'self'"),
        "{policy}"
    );
}

/// The address the dashboard prints opens it (`/` leads to `/ui`), and a
/// dashboard at the default level writes no routine log line (no INFO, no
/// JSON) with stderr going to a file: only its address, for the person.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_opens_at_the_address_it_prints_and_logs_nothing_routine() {
    let out = tempfile::tempdir().unwrap();
    let stderr = out.path().join("stderr.log");
    let mut child = Command::new(env!("CARGO_BIN_EXE_oxwright"))
        .args(["--out", &out.path().join("out").display().to_string()])
        .args(["dashboard", "--listen", "127.0.0.1:0"])
        .env_remove("OXWRIGHT_CONFIG")
        .env_remove("OXWRIGHT_API_TOKEN")
        .env_remove("OXWRIGHT_AMQP_URL")
        .env_remove("OXWRIGHT_S3")
        .env_remove("RUST_LOG")
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&stderr).unwrap())
        .spawn()
        .expect("oxwright dashboard starts");
    let line = BufReader::new(child.stdout.take().unwrap())
        .lines()
        .next()
        .unwrap()
        .unwrap();
    let child = Killed(child);
    let base = line
        .strip_prefix("listening on ")
        .expect("the address line")
        .to_owned();
    let _ = rustls::crypto::ring::default_provider().install_default();
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let root = http.get(format!("{base}/")).send().await.unwrap();
    assert!(root.status().is_redirection(), "{}", root.status());
    assert_eq!(root.headers()["location"], "/ui");
    let ui = http.get(format!("{base}/ui")).send().await.unwrap();
    assert_eq!(ui.status().as_u16(), 200);
    drop(child);
    // The one line it writes for the person, its address; no log line.
    let logged = std::fs::read_to_string(&stderr).unwrap();
    let lines: Vec<&str> = logged.lines().collect();
    assert_eq!(lines.len(), 1, "the dashboard logged: {logged}");
    assert!(
        lines[0].starts_with("dashboard of ") && lines[0].ends_with("/ui"),
        "{logged}"
    );
}
