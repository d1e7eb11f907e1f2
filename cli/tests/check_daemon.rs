//! Checks in `oxwright scheduler --checks DIR`, embedded (the daemon runs
//! the jobs on its own Chromium), against the fixture site's account page,
//! which the test switches between healthy and broken: a check every 2 s
//! alerts exactly once when it turns failing after `after` failed runs and
//! once when it recovers, never while healthy; the run log, the state and
//! `POST /v1/checks/{name}/runs?wait=true` tell the same story; and a
//! daemon killed between a state change and its alert's delivery delivers
//! it once when it starts again.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use oxwright_fixtures::{FixtureServer, SiteHealth};
use serde_json::Value;

mod support;

/// A running `oxwright scheduler`, killed on drop.
struct Daemon {
    child: Child,
    base: String,
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(site: &FixtureServer, dir: &Path, checks: &Path, receiver: &str) -> Daemon {
    start_with(site, dir, checks, receiver, &[], &[])
}

/// [`start`], with `global` options before the command (`--config FILE`)
/// and `envs` set for the daemon.
fn start_with(
    site: &FixtureServer,
    dir: &Path,
    checks: &Path,
    receiver: &str,
    global: &[&str],
    envs: &[(&str, &str)],
) -> Daemon {
    let receiver_host = receiver
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap()
        .to_string();
    let mut child = Command::new(env!("CARGO_BIN_EXE_oxwright"))
        .args(global)
        .envs(envs.iter().copied())
        .args(["--out", &dir.join("out").display().to_string()])
        .args(["--allow-host", &site.addr().to_string()])
        .args(["--allow-host", &receiver_host])
        .args(["--browsers", "1", "--pages-per-browser", "2"])
        .args(["scheduler", "--listen", "127.0.0.1:0"])
        .args(["--checks", &checks.display().to_string()])
        .env_remove("OXWRIGHT_AMQP_URL")
        .env_remove("OXWRIGHT_S3")
        .env_remove("OXWRIGHT_API_TOKEN")
        .env("OXWRIGHT_WEBHOOK_SECRET", "whsec-checks")
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("oxwright scheduler starts");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let line = lines.next().expect("the daemon prints its address").unwrap();
    let addr = line
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .to_string();
    std::thread::spawn(move || for _ in lines {});
    Daemon { child, base: addr }
}

/// What the alert receiver saw: each delivery's event, body and id, and
/// whether it answered 2xx.
#[derive(Default)]
struct Received {
    deliveries: Vec<(String, Value, String, bool)>,
    /// While set, every delivery is answered 503.
    down: bool,
}

impl Received {
    fn taken(&self, event: &str) -> usize {
        self.deliveries
            .iter()
            .filter(|(e, _, _, ok)| e == event && *ok)
            .count()
    }
}

async fn receiver() -> (String, Arc<Mutex<Received>>) {
    use axum::http::{HeaderMap, StatusCode};
    let seen = Arc::new(Mutex::new(Received::default()));
    let app = axum::Router::new().route(
        "/alerts",
        axum::routing::post({
            let seen = seen.clone();
            move |headers: HeaderMap, body: String| {
                let seen = seen.clone();
                async move {
                    let header = |name: &str| {
                        headers
                            .get(name)
                            .and_then(|v| v.to_str().ok())
                            .unwrap_or_default()
                            .to_string()
                    };
                    let mut seen = seen.lock().unwrap();
                    let ok = !seen.down;
                    assert!(
                        header("x-oxwright-signature").starts_with("t="),
                        "alerts are signed"
                    );
                    let body: Value = serde_json::from_str(&body).unwrap();
                    seen.deliveries.push((
                        header("x-oxwright-event"),
                        body,
                        header("x-oxwright-delivery"),
                        ok,
                    ));
                    if ok {
                        StatusCode::OK
                    } else {
                        StatusCode::SERVICE_UNAVAILABLE
                    }
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}/alerts"), seen)
}

fn http() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::new()
}

async fn get(base: &str, path: &str) -> Value {
    let response = http().get(format!("{base}{path}")).send().await.unwrap();
    assert_eq!(response.status().as_u16(), 200, "GET {path}");
    response.json().await.unwrap()
}

/// Waits (up to `secs`) until `check` holds, polling every 200 ms.
async fn until(secs: u64, what: &str, mut check: impl AsyncFnMut() -> bool) {
    for _ in 0..secs * 5 {
        if check().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("gave up waiting: {what}");
}

async fn runs(base: &str) -> Vec<Value> {
    get(base, "/v1/checks/account/runs?limit=500")
        .await
        .as_array()
        .cloned()
        .unwrap()
}

fn write_check(dir: &Path, site: &FixtureServer, webhook: &str, every: &str) {
    std::fs::write(
        dir.join("account.check.toml"),
        format!(
            "url = \"{}\"\nsteps = '''\nexpect: text \"Plan: Pro\"\n'''\nevery = \"{every}\"\ntimeout = \"30s\"\n\n\
             [alert]\nafter = 2\nwebhook = \"{webhook}\"\n",
            site.url("/app/account")
        ),
    )
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scheduled_check_alerts_once_when_it_turns_and_once_when_it_heals() {
    let site = FixtureServer::start().await.unwrap();
    let (webhook, seen) = receiver().await;
    let dir = tempfile::tempdir().unwrap();
    let checks = dir.path().join("checks");
    std::fs::create_dir(&checks).unwrap();
    write_check(&checks, &site, &webhook, "2s");
    let daemon = start(&site, dir.path(), &checks, &webhook);
    let base = daemon.base.clone();

    // Healthy: runs pass and nobody hears of them.
    until(180, "three passing runs", async || runs(&base).await.len() >= 3).await;
    assert!(runs(&base).await.iter().all(|r| r["status"] == "passed"));
    assert!(seen.lock().unwrap().deliveries.is_empty());

    // Broken: one alert after two failed runs, none for the runs after.
    site.set_health(SiteHealth::Broken);
    until(180, "check.failed", async || {
        seen.lock().unwrap().taken("check.failed") == 1
    })
    .await;
    let failed_runs = |rs: &[Value]| rs.iter().filter(|r| r["status"] == "failed").count();
    let at_alert = failed_runs(&runs(&base).await);
    until(180, "two more failed runs", async || {
        failed_runs(&runs(&base).await) >= at_alert + 2
    })
    .await;
    {
        let seen = seen.lock().unwrap();
        assert_eq!(seen.taken("check.failed"), 1, "one alert per failing spell");
        let (_, body, _, _) = seen
            .deliveries
            .iter()
            .find(|(e, ..)| e == "check.failed")
            .unwrap();
        assert_eq!(body["check"], "account");
        assert_eq!(body["consecutive_failures"], 2);
        assert_eq!(body["failed_step"]["index"], 1, "{body}");
        assert!(
            body["failed_step"]["text"]
                .as_str()
                .unwrap()
                .contains("Plan: Pro"),
            "{body}"
        );
        assert!(
            body["links"]["report"].as_str().unwrap().contains("/report.html"),
            "{body}"
        );
    }
    let listed = get(&base, "/v1/checks").await;
    assert_eq!(listed[0]["name"], "account", "{listed}");
    assert_eq!(listed[0]["state"]["health"], "failing", "{listed}");

    // Healed: one recovery, and quiet again.
    site.set_health(SiteHealth::Healthy);
    until(180, "check.recovered", async || {
        seen.lock().unwrap().taken("check.recovered") == 1
    })
    .await;
    let passed = |rs: &[Value]| rs.iter().filter(|r| r["status"] == "passed").count();
    let at_recovery = passed(&runs(&base).await);
    until(180, "two more passing runs", async || {
        passed(&runs(&base).await) >= at_recovery + 2
    })
    .await;
    {
        let seen = seen.lock().unwrap();
        assert_eq!(seen.taken("check.failed"), 1);
        assert_eq!(seen.taken("check.recovered"), 1);
        assert_eq!(seen.deliveries.len(), 2, "no alert but the two");
    }
    let listed = get(&base, "/v1/checks").await;
    assert_eq!(listed[0]["state"]["health"], "passing", "{listed}");
    let rate = listed[0]["pass_rate_24h"].as_f64().unwrap();
    assert!(rate > 0.0 && rate < 1.0, "{listed}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_on_demand_answers_with_its_record_and_a_killed_daemon_still_alerts_once() {
    let site = FixtureServer::start().await.unwrap();
    let (webhook, seen) = receiver().await;
    let dir = tempfile::tempdir().unwrap();
    let checks = dir.path().join("checks");
    std::fs::create_dir(&checks).unwrap();
    // No schedule worth waiting for: the runs are triggered.
    write_check(&checks, &site, &webhook, "1h");
    let daemon = start(&site, dir.path(), &checks, &webhook);
    let trigger = async |base: &str, metadata: &str| {
        let response = http()
            .post(format!("{base}/v1/checks/account/runs?wait=true"))
            .header("content-type", "application/json")
            .body(format!(r#"{{"metadata": {{"commit": "{metadata}"}}}}"#))
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        (status, response.json::<Value>().await.unwrap())
    };
    let (status, run) = trigger(&daemon.base, "c0ffee").await;
    assert_eq!(status, 200, "{run}");
    assert_eq!(run["status"], "passed");
    assert_eq!(run["trigger"], "api");
    assert_eq!(run["metadata"]["commit"], "c0ffee");
    let unknown = http()
        .post(format!("{}/v1/checks/nope/runs", daemon.base))
        .send()
        .await
        .unwrap();
    assert_eq!(unknown.status().as_u16(), 404);

    // The receiver is down when the check turns failing; the daemon is
    // killed while the alert waits in its outbox.
    seen.lock().unwrap().down = true;
    site.set_health(SiteHealth::Broken);
    for n in 0..2 {
        let (status, run) = trigger(&daemon.base, &format!("broken-{n}")).await;
        assert_eq!(status, 502, "{run}");
        assert_eq!(run["status"], "failed");
    }
    until(90, "a refused delivery", async || {
        !seen.lock().unwrap().deliveries.is_empty()
    })
    .await;
    let outbox = dir.path().join("out/checks/account/outbox");
    assert_eq!(
        std::fs::read_dir(&outbox).unwrap().count(),
        1,
        "the alert waits in the outbox"
    );
    drop(daemon);
    assert_eq!(seen.lock().unwrap().taken("check.failed"), 0);

    // Started again with the receiver up: the alert goes, once.
    seen.lock().unwrap().down = false;
    let daemon = start(&site, dir.path(), &checks, &webhook);
    until(90, "the alert delivered", async || {
        seen.lock().unwrap().taken("check.failed") == 1
    })
    .await;
    until(30, "the outbox emptied", async || {
        std::fs::read_dir(&outbox).map(|d| d.count()).unwrap_or(0) == 0
    })
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let seen = seen.lock().unwrap();
    assert_eq!(seen.taken("check.failed"), 1);
    let ids: std::collections::BTreeSet<&String> = seen.deliveries.iter().map(|(_, _, id, _)| id).collect();
    assert_eq!(ids.len(), 1, "every try of the alert carries one delivery id");
    drop(daemon);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deploy_webhook_runs_its_checks_against_the_deployed_url() {
    let site = FixtureServer::start().await.unwrap();
    let (webhook, _seen) = receiver().await;
    let dir = tempfile::tempdir().unwrap();
    let checks = dir.path().join("checks");
    std::fs::create_dir(&checks).unwrap();
    // The file names production; each deploy names the URL it went to.
    std::fs::write(
        checks.join("account.check.toml"),
        format!(
            "url = \"https://shop.example/app/account\"\nsteps = \"expect: text \\\"Plan: Pro\\\"\"\n\
             [alert]\nwebhook = \"{webhook}\"\n"
        ),
    )
    .unwrap();
    let config = dir.path().join("oxwright.toml");
    std::fs::write(
        &config,
        "[[scheduler.webhooks]]\nname = \"deploy\"\nsecret_env = \"DEPLOY_HOOK_SECRET\"\n\
         checks = [\"account\"]\nurl_field = \"deployment.url\"\nmetadata_fields = [\"deployment.sha\"]\n",
    )
    .unwrap();
    let config = config.display().to_string();
    let daemon = start_with(
        &site,
        dir.path(),
        &checks,
        &webhook,
        &["--config", &config],
        &[("DEPLOY_HOOK_SECRET", "deploy-s3cret")],
    );
    let deploy = async |body: String, token: &str| {
        let response = http()
            .post(format!("{}/webhooks/deploy", daemon.base))
            .header("authorization", format!("Bearer {token}"))
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        (status, response.json::<Value>().await.unwrap_or(Value::Null))
    };
    let body = |url: &str| {
        serde_json::json!({
            "deployment": {"url": url, "sha": "3f2a9c1", "token": "not-for-the-run"},
            "environment": "preview"
        })
        .to_string()
    };
    let (status, _) = deploy(body(&site.url("/")), "wrong").await;
    assert_eq!(status, 401);
    // A URL the policy refuses, or none at all: nothing runs.
    let (status, answer) = deploy(body("http://169.254.169.254/"), "deploy-s3cret").await;
    assert_eq!(status, 400, "{answer}");
    let (status, answer) = deploy("{}".into(), "deploy-s3cret").await;
    assert_eq!(status, 400, "{answer}");
    assert!(
        answer["message"]
            .as_str()
            .unwrap_or_default()
            .contains("deployment.url"),
        "{answer}"
    );
    assert!(runs(&daemon.base).await.is_empty());

    let (status, answer) = deploy(body(&site.url("/")), "deploy-s3cret").await;
    assert_eq!(status, 202, "{answer}");
    assert_eq!(answer["checks"][0]["check"], "account", "{answer}");
    let run_id = answer["checks"][0]["run_id"].as_str().unwrap().to_string();
    until(180, "the deploy's run recorded", async || {
        !runs(&daemon.base).await.is_empty()
    })
    .await;
    let run = &runs(&daemon.base).await[0];
    assert_eq!(run["run_id"], run_id.as_str());
    assert_eq!(run["status"], "passed", "{run}");
    assert_eq!(run["trigger"], "webhook");
    assert_eq!(run["url"], site.url("/app/account"), "{run}");
    assert_eq!(run["metadata"]["deployment.sha"], "3f2a9c1", "{run}");
    assert_eq!(run["metadata"]["webhook"], "deploy", "{run}");
    assert!(
        !run.to_string().contains("not-for-the-run"),
        "only the allowed fields are kept: {run}"
    );
    assert_eq!(site.hits("/app/account"), 1);
}

/// A listener that records every request line: what markup that ran would call.
async fn canary() -> (std::net::SocketAddr, Arc<Mutex<Vec<String>>>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let hits = Arc::new(Mutex::new(Vec::new()));
    let seen = hits.clone();
    tokio::spawn(async move {
        while let Ok((mut conn, _)) = listener.accept().await {
            let seen = seen.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 4096];
                let n = conn.read(&mut buf).await.unwrap_or(0);
                let head = String::from_utf8_lossy(&buf[..n]);
                seen.lock()
                    .unwrap()
                    .push(head.lines().next().unwrap_or("").to_owned());
                let _ = conn
                    .write_all(b"HTTP/1.1 204 No Content\r\nAccess-Control-Allow-Origin: *\r\nContent-Length: 0\r\n\r\n")
                    .await;
            });
        }
    });
    (addr, hits)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_checks_pages_show_state_runs_and_a_chart_with_hostile_text_as_text() {
    use oxwright_browser::{BrowserPool, PoolConfig};
    use oxwright_engine::{BrowserEngine, GotoOptions, OpenOptions};

    let site = FixtureServer::start().await.unwrap();
    let (webhook, _seen) = receiver().await;
    let (canary, hits) = canary().await;
    let dir = tempfile::tempdir().unwrap();
    let checks = dir.path().join("checks");
    std::fs::create_dir(&checks).unwrap();
    write_check(&checks, &site, &webhook, "1h");
    let daemon = start(&site, dir.path(), &checks, &webhook);
    let hostile = format!(
        "<img src=http://{canary}/img onerror=\"fetch('http://{canary}/onerror')\"><script>fetch('http://{canary}/script')</script>"
    );
    let run = async |commit: &str| {
        http()
            .post(format!("{}/v1/checks/account/runs?wait=true", daemon.base))
            .header("content-type", "application/json")
            .body(serde_json::json!({"metadata": {"commit": commit}}).to_string())
            .send()
            .await
            .unwrap()
            .status()
            .as_u16()
    };
    assert_eq!(run(&hostile).await, 200);
    site.set_health(SiteHealth::Broken);
    assert_eq!(run("c0ffee").await, 502);

    let pool = BrowserPool::start(PoolConfig {
        browsers: 1,
        pages_per_browser: 1,
        ..PoolConfig::default()
    })
    .await
    .expect("chromium starts");
    let daemon_addr = daemon.base.trim_start_matches("http://").parse().unwrap();
    let policy = Arc::new(oxwright_policy::UrlPolicy::allowing([
        daemon_addr,
        canary.to_string().parse().unwrap(),
    ]));
    let page = pool.open(&OpenOptions::new(policy)).await.expect("a page");
    let goto = async |path: &str| {
        let url = format!("{}{path}", daemon.base).parse().unwrap();
        page.goto(&url, &GotoOptions::load(Duration::from_secs(30)))
            .await
            .unwrap_or_else(|e| panic!("{path}: {e}"))
            .status
    };
    let eval = async |script: &str| page.evaluate(script, Duration::from_secs(10)).await.unwrap();
    let shots = std::env::var_os("OXWRIGHT_DASHBOARD_SHOTS").map(std::path::PathBuf::from);
    let shot = async |name: &str| {
        if let Some(dir) = &shots {
            let png = page
                .screenshot(&oxwright_engine::ScreenshotOptions::default())
                .await
                .unwrap();
            std::fs::create_dir_all(dir).unwrap();
            std::fs::write(dir.join(format!("dashboard-{name}.png")), png).unwrap();
        }
    };

    // The board: the check, its state (one failure of the two `after` allows), its two runs.
    assert_eq!(goto("/ui/checks").await, 200);
    let text = eval("document.body.innerText").await;
    let text = text.as_str().unwrap();
    assert!(text.contains("account") && text.contains("passing"), "{text}");
    let strip = eval("Array.from(document.querySelectorAll('.strip a.run')).map(a => a.className)").await;
    assert_eq!(
        strip,
        serde_json::json!(["run passed", "run failed"]),
        "oldest first"
    );
    shot("checks").await;

    // The check's page: rates, the failing step, a dot per run, the metadata as text.
    assert_eq!(goto("/ui/checks/account").await, 200);
    let text = eval("document.body.innerText").await;
    let text = text.as_str().unwrap();
    assert!(
        text.contains("Fails most at") && text.contains("step 1"),
        "{text}"
    );
    assert!(
        text.contains("Passed, last 24 h") && text.contains("50 %"),
        "{text}"
    );
    assert!(
        text.contains(&hostile[..40]),
        "the metadata shows as text: {text}"
    );
    assert_eq!(
        eval("document.querySelectorAll('main img, main script').length").await,
        0
    );
    assert_eq!(
        eval("document.querySelectorAll('figure.chart circle').length").await,
        2
    );
    shot("check").await;
    // Each attempt links to its session's page.
    let session = eval("document.querySelector('table.runs tr.failed a').getAttribute('href')").await;
    let session = session.as_str().unwrap().to_string();
    assert!(session.starts_with("/ui/sessions/check-account-"), "{session}");
    assert_eq!(goto(&session).await, 200);
    // An unknown check, and a name no check file could have.
    let unknown = reqwest::get(format!("{}/ui/checks/nope", daemon.base))
        .await
        .unwrap();
    assert_eq!(unknown.status().as_u16(), 404);
    let odd = reqwest::get(format!("{}/ui/checks/..%2Fstate", daemon.base))
        .await
        .unwrap();
    assert_eq!(odd.status().as_u16(), 404);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        hits.lock().unwrap().is_empty(),
        "markup from a run ran: {:?}",
        hits.lock().unwrap()
    );
    drop(page);
    pool.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_check_with_a_saved_login_runs_signed_in_its_state_sealed_with_the_workers_key() {
    use oxwright_fixtures::{MEMBERS_COOKIE, MEMBERS_THEME, MEMBERS_WELCOME, members_token};
    let site = FixtureServer::start().await.unwrap();
    let (webhook, _seen) = receiver().await;
    let dir = tempfile::tempdir().unwrap();
    let checks = dir.path().join("checks");
    std::fs::create_dir(&checks).unwrap();
    // A login as Playwright saves one: the session cookie and the theme.
    let origin = site.url("/").trim_end_matches('/').to_string();
    let state = serde_json::json!({
        "cookies": [{"name": MEMBERS_COOKIE, "value": members_token("ada"), "domain": site.addr().ip().to_string(),
                     "path": "/", "expires": -1, "httpOnly": true, "secure": false, "sameSite": "Lax"}],
        "origins": [{"origin": origin, "localStorage": [{"name": "members.theme", "value": "dark"}]}]
    });
    std::fs::write(dir.path().join("ada.json"), state.to_string()).unwrap();
    std::fs::write(
        checks.join("members.check.toml"),
        format!(
            "url = \"{}\"\nsteps = '''\nexpect: text main = \"{MEMBERS_WELCOME}ada\"\nexpect: text main = \"{MEMBERS_THEME}\"\n'''\n\
             every = \"1h\"\ntimeout = \"30s\"\nstorage_state = \"../ada.json\"\n",
            site.url("/members/home")
        ),
    )
    .unwrap();

    // Without the workers' key the login cannot travel sealed: the
    // scheduler refuses to start, naming the check's key and line.
    let mut refused = Command::new(env!("CARGO_BIN_EXE_oxwright"))
        .args(["--out", &dir.path().join("out").display().to_string()])
        .args(["--allow-host", &site.addr().to_string()])
        .args(["scheduler", "--listen", "127.0.0.1:0"])
        .args(["--checks", &checks.display().to_string()])
        .env_remove("OXWRIGHT_AMQP_URL")
        .env_remove("OXWRIGHT_CHECKPOINT_KEY")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut code = None;
    for _ in 0..150 {
        if let Some(status) = refused.try_wait().unwrap() {
            code = status.code();
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let _ = refused.kill();
    let mut err = String::new();
    std::io::Read::read_to_string(&mut refused.stderr.take().unwrap(), &mut err).unwrap();
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("members.check.toml:8") && err.contains("OXWRIGHT_CHECKPOINT_KEY"),
        "{err}"
    );

    let key = "0f".repeat(32);
    let daemon = start_with(
        &site,
        dir.path(),
        &checks,
        &webhook,
        &[],
        &[("OXWRIGHT_CHECKPOINT_KEY", key.as_str())],
    );
    let response = http()
        .post(format!("{}/v1/checks/members/runs?wait=true", daemon.base))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let run: Value = response.json().await.unwrap();
    assert_eq!(run["status"], "passed", "{run:#}");
    let login = site
        .requests()
        .into_iter()
        .filter(|r| r.path == "/members/login")
        .count();
    assert_eq!(login, 0, "the run started signed in");
    drop(daemon);
    // The session cookie is in nothing the run wrote, nor in any job kept.
    let token = members_token("ada");
    let mut texts = Vec::new();
    support::walk(&dir.path().join("out"), &mut texts);
    for (name, text) in &texts {
        assert!(!text.contains(&token), "the session cookie in {name}");
    }
    assert!(texts.len() > 3, "the run wrote its artefacts");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_checks_runs_state_and_alerts_reach_an_otlp_receiver_under_its_name() {
    use support::otlp::series;
    let otlp = oxwright_fixtures::OtlpReceiver::start()
        .await
        .expect("OTLP receiver");
    let site = FixtureServer::start().await.unwrap();
    let (webhook, seen) = receiver().await;
    let dir = tempfile::tempdir().unwrap();
    let checks = dir.path().join("checks");
    std::fs::create_dir(&checks).unwrap();
    write_check(&checks, &site, &webhook, "1h");
    let daemon = start_with(
        &site,
        dir.path(),
        &checks,
        &webhook,
        &[],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", otlp.endpoint()),
            ("OTEL_METRIC_EXPORT_INTERVAL", "300"),
        ],
    );
    let trigger = async || {
        let response = http()
            .post(format!("{}/v1/checks/account/runs?wait=true", daemon.base))
            .send()
            .await
            .unwrap();
        response.json::<Value>().await.unwrap()["status"].clone()
    };
    assert_eq!(trigger().await, "passed");
    site.set_health(SiteHealth::Broken);
    assert_eq!(trigger().await, "failed");
    assert_eq!(trigger().await, "failed");
    until(30, "the failed alert delivered", async || {
        seen.lock().unwrap().taken("check.failed") == 1
    })
    .await;
    let want = |metrics: &[opentelemetry_proto::tonic::metrics::v1::Metric]| {
        let runs = series(metrics, "oxwright.check.runs");
        runs.get("check=account,status=passed,trigger=api") == Some(&1.0)
            && runs.get("check=account,status=failed,trigger=api") == Some(&2.0)
            && series(metrics, "oxwright.check.failing").get("check=account") == Some(&1.0)
            && series(metrics, "oxwright.check.alerts").get("check=account,event=check.failed") == Some(&1.0)
    };
    let got = otlp
        .wait_for(Duration::from_secs(30), |o| want(&o.metrics()))
        .await;
    let metrics = otlp.metrics();
    assert!(
        got,
        "runs {:?}, failing {:?}, alerts {:?}",
        series(&metrics, "oxwright.check.runs"),
        series(&metrics, "oxwright.check.failing"),
        series(&metrics, "oxwright.check.alerts")
    );
    let durations = series(&metrics, "oxwright.check.duration");
    assert_eq!(
        durations.values().sum::<f64>(),
        3.0,
        "one duration a run: {durations:?}"
    );
}
