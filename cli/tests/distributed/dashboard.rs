//! The dashboard, driven in Chromium over a real scheduler, RabbitMQ, the
//! S3 server and workers: the login; a batch with failures whose counts
//! move live and complete with no reload; filtering by error kind; a job
//! whose page holds script payloads rendering as text with nothing run;
//! the failed jobs submitted again; a dead letter re-driven until it
//! completes; a workflow session with its steps and pictures; a batch
//! cancelled from its page; 401 without a login and 403 without the CSRF
//! token. With `OXWRIGHT_DASHBOARD_SHOTS=DIR` each page's screenshot is
//! written there (the manual's pictures).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use oxwright_artifacts::ArtifactStore;
use oxwright_browser::{BrowserPool, PoolConfig};
use oxwright_engine::{Act, ActOptions, BrowserEngine, GotoOptions, Locator, OpenOptions, Page, Target};
use oxwright_jobs::{JobKind, keys};
use oxwright_policy::UrlPolicy;
use serde_json::{Value, json};

use crate::cluster::{Cluster, eventually};

const TOKEN: &str = "dashboard-token-5d1c9a";
const WAIT: Duration = Duration::from_secs(60);

/// A listener that records every request line: what a payload that ran
/// would call.
struct Canary {
    addr: SocketAddr,
    hits: Arc<Mutex<Vec<String>>>,
}

async fn canary() -> Canary {
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
    Canary { addr, hits }
}

/// The API with the bearer token.
async fn api(base: &str, method: reqwest::Method, path: &str, body: Option<Value>) -> (u16, Value) {
    let mut request = reqwest::Client::new()
        .request(method, format!("{base}{path}"))
        .header("authorization", format!("Bearer {TOKEN}"));
    if let Some(body) = body {
        request = request
            .header("content-type", "application/json")
            .body(body.to_string());
    }
    let response = request.send().await.expect("the API answers");
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
}

struct Browser {
    pool: BrowserPool,
    page: Box<dyn Page>,
    base: String,
    shots: Option<std::path::PathBuf>,
}

impl Browser {
    async fn goto(&self, path: &str) -> u16 {
        let url = format!("{}{path}", self.base).parse().unwrap();
        match self
            .page
            .goto(&url, &GotoOptions::load(Duration::from_secs(30)))
            .await
        {
            Ok(navigated) => navigated.status,
            // The document of an error status is still shown.
            Err(e) if e.kind == oxwright_engine::EngineErrorKind::HttpStatus => e.status.unwrap_or(0),
            Err(e) => panic!("{path} opens: {e}"),
        }
    }

    async fn eval(&self, script: &str) -> Value {
        self.page
            .evaluate(script, Duration::from_secs(10))
            .await
            .unwrap_or_else(|e| panic!("{script}: {e}"))
    }

    async fn text(&self) -> String {
        self.eval("document.body ? document.body.innerText : ''")
            .await
            .as_str()
            .unwrap_or("")
            .to_owned()
    }

    async fn click(&self, role: &str, name: &str, nth: Option<usize>) {
        let target = Target::Locator {
            locator: Locator::Role {
                role: role.into(),
                name: Some(name.into()),
                exact: true,
            },
            nth,
        };
        let opts = ActOptions {
            timeout: Duration::from_secs(10),
            settle: true,
        };
        self.page
            .act(&target, &Act::Click, &opts)
            .await
            .unwrap_or_else(|e| panic!("click {role} {name:?}: {e}"));
    }

    async fn path(&self) -> String {
        self.eval("location.pathname + location.search")
            .await
            .as_str()
            .unwrap()
            .to_owned()
    }

    async fn wait_for(&self, what: &str, script: &str) {
        let started = std::time::Instant::now();
        while self.eval(script).await != Value::Bool(true) {
            assert!(
                started.elapsed() < WAIT,
                "timed out waiting for {what}: {}",
                self.text().await
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    async fn shot(&self, name: &str) {
        let Some(dir) = &self.shots else { return };
        let png = self
            .page
            .screenshot(&oxwright_engine::ScreenshotOptions::default())
            .await
            .expect("a screenshot");
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join(format!("dashboard-{name}.png")), png).unwrap();
    }
}

/// The rows of the job table, as `[status, error kind]` pairs.
const JOB_ROWS: &str = "Array.from(document.querySelectorAll('#jobs tbody tr')).map(r => [r.cells[3].textContent, r.cells[4].textContent])";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_shows_and_acts_on_batches_jobs_sessions_and_queues() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut cluster = Cluster::start().await;
    cluster.with_config("[queue]\nmax_attempts = 1\n");
    cluster.with_env("OXWRIGHT_API_TOKEN", TOKEN);
    let (_, base) = cluster.scheduler_api();
    cluster.worker(2, &[]);
    cluster.worker_of("workflow", 1, &[]);
    let canary = canary().await;
    let site = &cluster.site;
    let flaky = site.url(&format!("/flaky/dash-{}?fail=1&status=404", cluster.prefix));
    let hostile = site.url(&format!("/hostile/dashboard?canary=http://{}", canary.addr));
    let mut urls: Vec<String> = oxwright_fixtures::ARTICLE_PATHS[..4]
        .iter()
        .map(|p| site.url(p))
        .collect();
    urls.extend([
        site.url("/slow?ms=30000&n=1"),
        site.url("/slow?ms=30000&n=2"),
        site.url("/status/404"),
        flaky.clone(),
        hostile.clone(),
    ]);
    let (status, receipt) = api(
        &base,
        reqwest::Method::POST,
        "/v1/batches",
        Some(json!({"urls": urls, "options": {"timeout_ms": 6000, "retry_count": 0}})),
    )
    .await;
    assert_eq!(status, 202, "{receipt}");
    let batch = receipt["batch_id"].as_str().unwrap().to_owned();

    // Without a login: 401 and nothing of the batch.
    let anonymous = reqwest::get(format!("{base}/ui/batches/{batch}")).await.unwrap();
    assert_eq!(anonymous.status().as_u16(), 401);
    let body = anonymous.text().await.unwrap();
    assert!(!body.contains(&batch) && !body.contains("/slow"), "{body}");

    let pool = BrowserPool::start(PoolConfig {
        browsers: 1,
        pages_per_browser: 2,
        ..PoolConfig::default()
    })
    .await
    .expect("chromium starts");
    let addr = |url: &str| url.split('/').nth(2).unwrap().parse().unwrap();
    let policy = Arc::new(UrlPolicy::allowing([
        addr(&base),
        site.addr().to_string().parse().unwrap(),
        canary.addr.to_string().parse().unwrap(),
    ]));
    let page = pool.open(&OpenOptions::new(policy)).await.expect("a page");
    let browser = Browser {
        pool: pool.clone(),
        page,
        base: base.clone(),
        shots: std::env::var_os("OXWRIGHT_DASHBOARD_SHOTS").map(Into::into),
    };

    // The login form (the engine, built for fetching, does not render a
    // 401 document: the 401 itself was checked above).
    assert_eq!(browser.goto(&format!("/ui/batches/{batch}")).await, 401);
    assert_eq!(browser.goto("/ui/login").await, 200);
    assert!(!browser.text().await.contains(&batch));
    browser.shot("login").await;
    let field = Target::Locator {
        locator: Locator::Label {
            text: "API token".into(),
            exact: false,
        },
        nth: None,
    };
    let fill = Act::Fill {
        value: TOKEN.into(),
        secret: true,
    };
    browser
        .page
        .act(&field, &fill, &ActOptions::default())
        .await
        .expect("the token typed");
    browser.click("button", "Log in", None).await;
    browser
        .wait_for("the batch list", "location.pathname === '/ui'")
        .await;

    // Live progress: the batch completes on its page with no reload.
    assert_eq!(browser.goto(&format!("/ui/batches/{batch}")).await, 200);
    browser.eval("window.stillHere = 1").await;
    browser.shot("batch-running").await;
    browser
        .wait_for(
            "the batch to complete on its page",
            "document.querySelector('[data-batch] [data-f=state]').textContent === 'completed'",
        )
        .await;
    assert_eq!(
        browser.eval("window.stillHere === 1").await,
        json!(true),
        "no reload"
    );
    let counts = browser
        .eval("['done','total','ok','failed'].map(f => document.querySelector('[data-batch] [data-f=' + f + ']').textContent)")
        .await;
    assert_eq!(counts, json!(["9", "9", "5", "4"]));
    browser
        .wait_for(
            "the live table",
            "document.querySelectorAll('#jobs tbody tr').length === 9",
        )
        .await;

    // Filtering by timeout shows exactly the timed-out jobs.
    browser
        .goto(&format!("/ui/batches/{batch}?status=failed&kind=timeout"))
        .await;
    assert_eq!(
        browser.eval(JOB_ROWS).await,
        json!([["failed", "timeout"], ["failed", "timeout"]])
    );
    browser.shot("batch-filtered").await;
    browser.goto(&format!("/ui/batches/{batch}")).await;
    browser.shot("batch").await;

    // The hostile page's job: text everywhere, no script run.
    let (_, view) = api(&base, reqwest::Method::GET, &format!("/v1/batches/{batch}"), None).await;
    let job_of = |url: &str| {
        let found = view["results"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["url"] == url);
        found.unwrap_or_else(|| panic!("{url} in {view}"))["job_id"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let hostile_job = job_of(&hostile);
    canary.hits.lock().unwrap().clear();
    assert_eq!(browser.goto(&format!("/ui/jobs/fetch/{hostile_job}")).await, 200);
    let heading = browser.eval("document.querySelector('h1').textContent").await;
    assert!(heading.as_str().unwrap().contains("<script>"), "{heading}");
    assert_eq!(
        browser
            .eval("document.querySelectorAll('main script, main img[onerror], main [onmouseover]').length")
            .await,
        json!(0)
    );
    let hrefs = browser
        .eval("Array.from(document.querySelectorAll('main a')).map(a => a.getAttribute('href'))")
        .await;
    assert!(
        !hrefs.to_string().to_ascii_lowercase().contains("javascript:"),
        "{hrefs}"
    );
    let source_len = browser
        .eval("document.querySelector('pre.source').textContent.length")
        .await;
    assert!(
        source_len.as_u64().unwrap() > 900_000,
        "the 1 MB of text is there: {source_len}"
    );
    // Responsive: a script answers at once, and hovering the text runs nothing.
    let started = std::time::Instant::now();
    assert_eq!(browser.eval("1 + 1").await, json!(2));
    assert!(started.elapsed() < Duration::from_secs(2));
    browser.shot("job").await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        canary.hits.lock().unwrap().is_empty(),
        "{:?}",
        canary.hits.lock().unwrap()
    );
    let console = browser.page.console().await;
    assert!(console.iter().all(|m| !m.text.contains("pwned")), "{console:?}");

    // A failed job's page: the error, what to try, the attempts.
    let missing = job_of(&site.url("/status/404"));
    browser.goto(&format!("/ui/jobs/fetch/{missing}")).await;
    let text = browser.text().await;
    assert!(
        text.contains("http_status") && text.contains("attempts"),
        "{text}"
    );

    // Submitting the failed jobs again makes a new batch that names this one.
    browser.goto(&format!("/ui/batches/{batch}")).await;
    browser
        .click("button", "Submit the failed jobs again", None)
        .await;
    browser
        .wait_for(
            "the new batch's page",
            &format!(
                "location.pathname.startsWith('/ui/batches/') && !location.pathname.endsWith('{batch}')"
            ),
        )
        .await;
    let again = browser.path().await.rsplit('/').next().unwrap().to_owned();
    let record: Value =
        serde_json::from_slice(&cluster.store.get(&keys::batch_record(&again)).await.unwrap()).unwrap();
    assert_eq!(record["resubmit_of"], json!(batch));
    assert_eq!(record["jobs"].as_array().unwrap().len(), 4, "{record}");
    assert!(browser.text().await.contains(&batch), "the new batch links back");

    // Dead letters: the first run's four failures; the flaky one re-driven completes.
    let flaky_job = job_of(&flaky);
    browser.goto("/ui/queues").await;
    browser
        .wait_for(
            "the dead letters",
            "document.querySelectorAll('table.dead tbody tr').length >= 4",
        )
        .await;
    browser.shot("queues").await;
    let row = browser
        .eval(&format!(
            "Array.from(document.querySelectorAll('table.dead tbody tr')).findIndex(r => r.cells[2].textContent === '{flaky_job}')"
        ))
        .await;
    let row = row.as_u64().expect("the flaky job is dead-lettered") as usize;
    browser.click("button", "Re-drive", Some(row)).await;
    let result = keys::job_result(JobKind::Fetch, flaky_job.parse_via_json());
    eventually("the re-driven job's result", WAIT, || async {
        cluster.store.exists(&result).await.unwrap_or(false)
    })
    .await;
    browser.goto("/ui/queues").await;
    let left = browser
        .eval(&format!(
            "Array.from(document.querySelectorAll('table.dead tbody tr')).some(r => r.cells[2].textContent === '{flaky_job}')"
        ))
        .await;
    assert_eq!(
        left,
        json!(false),
        "the re-driven letter left the dead-letter queue"
    );

    // A workflow session: its steps and their pictures.
    let steps = "goto: /app/ledger?owner=dash\nfill: textbox \"Entry\" = alpha\nclick: button \"Sign\"\nexpect: text \"Signed: alpha\"\n";
    let spec = json!({"kind": "workflow", "spec": {"workflow": steps, "start_url": site.url("/app/ledger")}});
    let (status, accepted) = api(&base, reqwest::Method::POST, "/v1/jobs", Some(spec)).await;
    assert_eq!(status, 202, "{accepted}");
    let session = accepted["job_id"].as_str().unwrap().to_owned();
    let session_result = keys::session_artifact(&session, "result.json");
    eventually("the workflow's result", WAIT, || async {
        cluster.store.exists(&session_result).await.unwrap_or(false)
    })
    .await;
    browser.goto("/ui/sessions").await;
    assert!(browser.text().await.contains(&session));
    browser.shot("sessions").await;
    browser.goto(&format!("/ui/sessions/{session}")).await;
    assert_eq!(
        browser
            .eval("document.querySelectorAll('table.steps tbody tr').length")
            .await,
        json!(4)
    );
    browser
        .wait_for(
            "the step pictures",
            "Array.from(document.querySelectorAll('img.thumb')).every(i => i.complete && i.naturalWidth > 0) && document.querySelectorAll('img.thumb').length >= 4",
        )
        .await;
    browser.shot("session").await;

    // Cancelling from the batch page stops the batch.
    let slow: Vec<String> = (0..16)
        .map(|i| site.url(&format!("/slow?ms=1500&c={i}")))
        .collect();
    let (_, receipt) = api(
        &base,
        reqwest::Method::POST,
        "/v1/batches",
        Some(json!({"urls": slow})),
    )
    .await;
    let slow_batch = receipt["batch_id"].as_str().unwrap().to_owned();
    browser.goto(&format!("/ui/batches/{slow_batch}")).await;
    // An action without the CSRF token is refused.
    let refused = browser
        .eval(&format!(
            "fetch('/ui/batches/{slow_batch}/cancel', {{method: 'POST', body: new URLSearchParams({{csrf: 'forged'}})}}).then(r => r.status)"
        ))
        .await;
    assert_eq!(refused, json!(403));
    browser.click("button", "Cancel batch", None).await;
    browser
        .wait_for(
            "the cancelled state",
            "document.querySelector('[data-batch] [data-f=state]').textContent === 'cancelled'",
        )
        .await;
    eventually("the cancelled batch to complete", WAIT, || async {
        let (_, view) = api(
            &base,
            reqwest::Method::GET,
            &format!("/v1/batches/{slow_batch}"),
            None,
        )
        .await;
        view["complete"] == json!(true)
    })
    .await;
    let (_, view) = api(
        &base,
        reqwest::Method::GET,
        &format!("/v1/batches/{slow_batch}"),
        None,
    )
    .await;
    assert!(
        view["failed_by_kind"]["cancelled"].as_u64().unwrap_or(0) > 0,
        "{view}"
    );
    browser.goto("/ui").await;
    browser.shot("batches").await;
    drop(browser.page);
    browser.pool.shutdown().await;
}

trait ParseViaJson {
    fn parse_via_json(&self) -> oxwright_jobs::JobId;
}

impl ParseViaJson for String {
    fn parse_via_json(&self) -> oxwright_jobs::JobId {
        serde_json::from_value(Value::String(self.clone())).expect("a job id")
    }
}
