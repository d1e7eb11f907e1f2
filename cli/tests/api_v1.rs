//! The v1 HTTP API of `oxwright scheduler`, embedded (no broker: the daemon
//! runs the jobs on its own Chromium), against the fixture site: a
//! synchronous fetch, a batch of 50 URLs whose webhook events a local
//! receiver checks (signature, every `page` once, `completed` last),
//! paging, artefacts, cancelling mid-batch, the token off loopback, 413 on
//! an oversized body, and every response checked against the OpenAPI
//! document the daemon serves.

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hmac::{Hmac, Mac};
use oxwright_fixtures::{ARTICLE_PATHS, ARTICLE_PHRASES, FixtureServer};
use serde_json::{Value, json};
use sha2::Sha256;

const SIGNING_SECRET: &str = "whsec-test-0123456789";
const API_TOKEN: &str = "api-token-abcdef";

/// A running `oxwright scheduler`, killed on drop.
struct Daemon {
    child: Child,
    base: String,
    dir: tempfile::TempDir,
}

impl Drop for Daemon {
    fn drop(&mut self) {
        // SIGTERM: the daemon drains and closes its browsers.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        for _ in 0..200 {
            if self.child.try_wait().ok().flatten().is_some() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn command(site: &FixtureServer, dir: &std::path::Path, config: &str, listen: &str) -> Command {
    let cfg = dir.join("oxwright.toml");
    std::fs::write(&cfg, config).unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_oxwright"));
    cmd.args(["--config", &cfg.display().to_string()])
        .args(["--out", &dir.join("out").display().to_string()])
        .args(["--allow-host", &site.addr().ip().to_string()])
        .args(["--browsers", "1", "--pages-per-browser", "4"])
        .args(["scheduler", "--listen", listen])
        .env_remove("OXWRIGHT_AMQP_URL")
        .env_remove("OXWRIGHT_S3")
        .env_remove("OXWRIGHT_API_TOKEN")
        .env("OXWRIGHT_WEBHOOK_SECRET", SIGNING_SECRET)
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    cmd
}

fn start(site: &FixtureServer, config: &str, listen: &str, token: Option<&str>) -> Daemon {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = command(site, dir.path(), config, listen);
    if let Some(token) = token {
        cmd.env("OXWRIGHT_API_TOKEN", token);
    }
    let mut child = cmd.spawn().expect("oxwright scheduler starts");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let line = lines.next().expect("the daemon prints its address").unwrap();
    let addr = line
        .strip_prefix("listening on http://")
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"));
    let port = addr.rsplit(':').next().unwrap();
    // Keep reading stdout so the daemon never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    Daemon {
        child,
        base: format!("http://127.0.0.1:{port}"),
        dir,
    }
}

/// The served OpenAPI document, compiled: validates a body against the
/// response schema of (path template, method, status).
struct OpenApi {
    doc: Value,
    schemas: boon::Schemas,
    compiled: HashMap<String, boon::SchemaIndex>,
    compiler: boon::Compiler,
}

const DOC_URL: &str = "http://oxwright.test/openapi.json";

impl OpenApi {
    fn new(doc: Value) -> Self {
        let mut compiler = boon::Compiler::new();
        compiler.add_resource(DOC_URL, doc.clone()).unwrap();
        Self {
            doc,
            schemas: boon::Schemas::new(),
            compiled: HashMap::new(),
            compiler,
        }
    }

    /// Validates `body` against the component schema `name`.
    fn validate(&mut self, name: &str, body: &Value) -> Result<(), String> {
        let schema = format!("{DOC_URL}#/components/schemas/{name}");
        let index = self
            .compiler
            .compile(&schema, &mut self.schemas)
            .unwrap_or_else(|e| panic!("schema {schema}: {e:#}"));
        self.schemas.validate(body, index).map_err(|e| format!("{e:#}"))
    }

    fn check(&mut self, path: &str, method: &str, status: u16, body: &Value) {
        let pointer = |p: &str| p.replace('~', "~0").replace('/', "~1");
        let operation = &self.doc["paths"][path][method];
        assert!(operation.is_object(), "the document has no {method} {path}");
        let mut response = &operation["responses"][status.to_string()];
        assert!(
            response.is_object(),
            "the document lists no {status} for {method} {path}; body: {body}"
        );
        let mut location = format!("{DOC_URL}#/paths/{}/{method}/responses/{status}", pointer(path));
        if let Some(reference) = response["$ref"].as_str() {
            location = format!("{DOC_URL}{reference}");
            response = self
                .doc
                .pointer(reference.trim_start_matches('#'))
                .expect("a response reference resolves");
        }
        let Some((media, _)) = response["content"].as_object().and_then(|c| c.iter().next()) else {
            return;
        };
        if !media.contains("json") {
            return;
        }
        let schema = format!("{location}/content/{}/schema", pointer(media));
        let index = match self.compiled.get(&schema) {
            Some(index) => *index,
            None => {
                let index = self
                    .compiler
                    .compile(&schema, &mut self.schemas)
                    .unwrap_or_else(|e| panic!("schema {schema}: {e:#}"));
                self.compiled.insert(schema.clone(), index);
                index
            }
        };
        if let Err(err) = self.schemas.validate(body, index) {
            panic!("{method} {path} → {status} does not match the OpenAPI document: {err:#}\nbody: {body}");
        }
    }
}

fn http_client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::new()
}

struct Client {
    http: reqwest::Client,
    base: String,
    token: Option<String>,
}

impl Client {
    async fn call(&self, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
        let method = reqwest::Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
        let mut request = self.http.request(method, format!("{}{path}", self.base));
        if let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        if let Some(body) = body {
            request = request
                .header("content-type", "application/json")
                .body(body.to_string());
        }
        let response = request.send().await.expect("the daemon answers");
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
    }
}

/// A webhook receiver: records every delivery with whether its signature
/// verified; answers 500 to the first delivery of each batch's `started`
/// (so retries are exercised).
#[derive(Default)]
struct Received {
    events: Vec<(String, Value, bool)>,
    refused_started: Vec<String>,
}

async fn receiver() -> (String, Arc<Mutex<Received>>) {
    let received = Arc::new(Mutex::new(Received::default()));
    let state = received.clone();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |headers: axum::http::HeaderMap, body: axum::body::Bytes| {
            let state = state.clone();
            async move {
                let signature = headers
                    .get("x-oxwright-signature")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("");
                let verified = verify(signature, &body);
                let event: Value = serde_json::from_slice(&body).unwrap();
                let name = event["event"].as_str().unwrap_or("").to_owned();
                let batch = event["batch_id"].as_str().unwrap_or("").to_owned();
                let mut state = state.lock().unwrap();
                if name == "started" && !state.refused_started.contains(&batch) {
                    state.refused_started.push(batch);
                    return axum::http::StatusCode::INTERNAL_SERVER_ERROR;
                }
                assert_eq!(
                    headers.get("x-oxwright-event").and_then(|v| v.to_str().ok()),
                    Some(name.as_str())
                );
                state.events.push((name, event, verified));
                axum::http::StatusCode::NO_CONTENT
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}/hook"), received)
}

/// Checks `t=<unix>,v1=<hex>` against HMAC-SHA256("<t>.<body>").
fn verify(header: &str, body: &[u8]) -> bool {
    let fields: BTreeMap<&str, &str> = header.split(',').filter_map(|kv| kv.split_once('=')).collect();
    let (Some(t), Some(v1)) = (fields.get("t"), fields.get("v1")) else {
        return false;
    };
    let age = chrono::Utc::now().timestamp() - t.parse::<i64>().unwrap_or(0);
    let mut mac = Hmac::<Sha256>::new_from_slice(SIGNING_SECRET.as_bytes()).unwrap();
    mac.update(t.as_bytes());
    mac.update(b".");
    mac.update(body);
    let want: String = mac
        .finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    (0..300).contains(&age) && want == *v1
}

async fn wait_complete(client: &Client, api: &mut OpenApi, batch_id: &str) -> Value {
    for _ in 0..1200 {
        let (status, body) = client
            .call("get", &format!("/v1/batches/{batch_id}?limit=1"), None)
            .await;
        api.check("/v1/batches/{id}", "get", status, &body);
        assert_eq!(status, 200, "{body}");
        if body["complete"] == true {
            return body;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("batch {batch_id} did not complete in 120 s");
}

async fn wait_event(received: &Mutex<Received>, batch_id: &str, names: &[&str]) -> Value {
    for _ in 0..300 {
        if let Some((_, event, _)) = received
            .lock()
            .unwrap()
            .events
            .iter()
            .find(|(n, e, _)| names.contains(&n.as_str()) && e["batch_id"] == batch_id)
        {
            return event.clone();
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("no {names:?} event for {batch_id} in 30 s");
}

const CONFIG: &str = "[scheduler]\nmax_body_bytes = 65536\nflush_interval_ms = 100\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_v1_api_fetches_runs_batches_with_webhooks_and_cancels() {
    let site = FixtureServer::start().await.unwrap();
    let (hook_url, received) = receiver().await;
    let daemon = start(&site, CONFIG, "127.0.0.1:0", None);
    let client = Client {
        http: http_client(),
        base: daemon.base.clone(),
        token: None,
    };
    let (status, doc) = client.call("get", "/v1/openapi.json", None).await;
    assert_eq!(status, 200);
    assert_eq!(doc["openapi"], "3.1.0");
    let mut api = OpenApi::new(doc);
    // The fetch options in the document are the job's own: a client that
    // validates against it accepts what the server accepts.
    let request =
        json!({ "url": site.url("/"), "render": "auto", "timeout_ms": 5000, "actions": ["wait: 10ms"] });
    api.validate("FetchRequest", &request).unwrap();
    let wrong = json!({ "url": site.url("/"), "render": "sometimes" });
    assert!(
        api.validate("FetchRequest", &wrong).is_err(),
        "an unknown render mode is refused"
    );
    // So is a job of any kind: each spec is its declaration's schema.
    let workflow = json!({ "kind": "workflow", "spec": {
        "workflow": "click: button \"Go\"", "start_url": site.url("/"), "action_timeout_ms": 5000,
        "llm": { "base_url": "http://127.0.0.1:1/v1", "model": "m" }, "sitemap_hints": true } });
    api.validate("JobRequest", &workflow).unwrap();
    api.validate(
        "JobRequest",
        &json!({ "kind": "sitemap", "spec": { "target": "example.com" } }),
    )
    .unwrap();
    api.validate(
        "JobRequest",
        &json!({ "kind": "fetch", "spec": { "url": site.url("/"), "content": "full" } }),
    )
    .unwrap();
    for wrong in [
        json!({ "kind": "workflow", "spec": { "workflow": "x", "start_url": site.url("/"), "colour": 1 } }),
        json!({ "kind": "workflow", "spec": { "start_url": site.url("/") } }),
        json!({ "kind": "sitemap", "spec": { "url": "example.com" } }),
        json!({ "kind": "crawl", "spec": { "target": "example.com" } }),
    ] {
        assert!(api.validate("JobRequest", &wrong).is_err(), "{wrong} is refused");
    }

    // A synchronous fetch: the page's Markdown in the answer.
    let (path, phrase) = ARTICLE_PHRASES[0];
    let (status, body) = client
        .call(
            "post",
            "/v1/fetch",
            Some(&json!({ "url": site.url(path), "content": "main" })),
        )
        .await;
    api.check("/v1/fetch", "post", status, &body);
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "ok");
    let markdown = body["result"]["markdown"].as_str().unwrap();
    assert!(markdown.contains(phrase), "{markdown}");
    // Its artefacts are served.
    let md = body["artifacts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["key"].as_str().unwrap().ends_with("page.md"))
        .expect("page.md listed")["url"]
        .as_str()
        .unwrap()
        .to_owned();
    let response = client
        .http
        .get(format!("{}{md}", daemon.base))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/markdown")
    );
    assert!(response.text().await.unwrap().contains(phrase));

    // A page that fails: 502 with the typed error.
    let (status, body) = client
        .call(
            "post",
            "/v1/fetch",
            Some(&json!({ "url": site.url("/status/404") })),
        )
        .await;
    api.check("/v1/fetch", "post", status, &body);
    assert_eq!(status, 502, "{body}");
    assert_eq!(body["status"], "failed");
    assert_eq!(body["error"]["kind"], "http_status", "{body}");

    // Bad input, before any job: typed 400s.
    for bad in [
        json!({ "url": "ftp://example.com/" }),
        json!({ "url": site.url("/"), "content": "everything" }),
        json!({ "url": site.url("/"), "deadline_ms": 0 }),
        json!({ "url": site.url("/"), "no_such_option": true }),
        json!(["not", "an", "object"]),
    ] {
        let (status, body) = client.call("post", "/v1/fetch", Some(&bad)).await;
        api.check("/v1/fetch", "post", status, &body);
        assert_eq!(status, 400, "{bad} → {body}");
    }
    // Not JSON: 415.
    let response = client
        .http
        .post(format!("{}/v1/fetch", daemon.base))
        .header("content-type", "text/plain")
        .body("url=http://example.com/")
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let body: Value = serde_json::from_str(&response.text().await.unwrap()).unwrap();
    api.check("/v1/fetch", "post", status, &body);
    assert_eq!(
        (status, body["error"].as_str()),
        (415, Some("unsupported_media_type"))
    );
    // A host the policy does not allow.
    let (status, body) = client
        .call(
            "post",
            "/v1/fetch",
            Some(&json!({ "url": "http://10.255.255.1/" })),
        )
        .await;
    api.check("/v1/fetch", "post", status, &body);
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("policy_denied")),
        "{body}"
    );

    // Past its deadline: 504, and the answer says where to look.
    let (status, body) = client
        .call(
            "post",
            "/v1/fetch",
            Some(&json!({ "url": site.url("/slow?ms=4000"), "deadline_ms": 500 })),
        )
        .await;
    api.check("/v1/fetch", "post", status, &body);
    assert_eq!((status, body["error"].as_str()), (504, Some("timeout")), "{body}");
    assert!(
        body["message"].as_str().unwrap().contains("/v1/batches/"),
        "{body}"
    );

    // A batch of 50 with a webhook.
    let urls: Vec<String> = (0..50)
        .map(|i| site.url(&format!("{}?copy={i}", ARTICLE_PATHS[i % ARTICLE_PATHS.len()])))
        .collect();
    let request = json!({
        "urls": urls,
        "options": { "content": "main" },
        "webhook": { "url": hook_url, "metadata": { "run": "api-test" } },
    });
    let (status, accepted) = client.call("post", "/v1/batches", Some(&request)).await;
    api.check("/v1/batches", "post", status, &accepted);
    assert_eq!(status, 202, "{accepted}");
    assert_eq!(accepted["total"], 50);
    let batch_id = accepted["batch_id"].as_str().unwrap().to_owned();
    let done = wait_complete(&client, &mut api, &batch_id).await;
    assert_eq!(
        (done["ok"].as_u64(), done["state"].as_str()),
        (Some(50), Some("completed")),
        "{done}"
    );
    // Paged results, in manifest order, every job once.
    let mut seen = Vec::new();
    let mut offset = Some(0);
    while let Some(at) = offset {
        let (status, page) = client
            .call(
                "get",
                &format!("/v1/batches/{batch_id}?offset={at}&limit=20&markdown=true"),
                None,
            )
            .await;
        api.check("/v1/batches/{id}", "get", status, &page);
        assert_eq!(status, 200, "{page}");
        for result in page["results"].as_array().unwrap() {
            assert_eq!(result["status"], "ok", "{result}");
            assert!(!result["markdown"].as_str().unwrap().is_empty(), "{result}");
            seen.push(result["job_id"].as_str().unwrap().to_owned());
        }
        offset = page["next_offset"].as_u64().map(|o| o as usize);
    }
    let unique: std::collections::BTreeSet<_> = seen.iter().cloned().collect();
    assert_eq!((seen.len(), unique.len()), (50, 50));
    // The webhook: `started` (after a refused first try), every `page` once,
    // then `completed`, all signed, with the metadata.
    wait_event(&received, &batch_id, &["completed"]).await;
    {
        let state = received.lock().unwrap();
        let events: Vec<&(String, Value, bool)> = state
            .events
            .iter()
            .filter(|(_, e, _)| e["batch_id"] == batch_id)
            .collect();
        assert!(
            events.iter().all(|(_, _, verified)| *verified),
            "every event is signed"
        );
        assert!(events.iter().all(|(_, e, _)| e["metadata"]["run"] == "api-test"));
        assert_eq!(events.first().unwrap().0, "started");
        assert_eq!(events.last().unwrap().0, "completed");
        let pages: Vec<&str> = events
            .iter()
            .filter(|(n, _, _)| n == "page")
            .map(|(_, e, _)| e["data"]["job_id"].as_str().unwrap())
            .collect();
        let distinct: std::collections::BTreeSet<&str> = pages.iter().copied().collect();
        assert_eq!((pages.len(), distinct.len()), (50, 50), "every page event once");
        assert_eq!(distinct, unique.iter().map(String::as_str).collect());
        assert!(state.refused_started.contains(&batch_id));
    }

    // Cancelling mid-batch: jobs not started get a `cancelled` line.
    let urls: Vec<String> = (0..40)
        .map(|i| site.url(&format!("/slow?ms=1000&n={i}")))
        .collect();
    let request = json!({ "urls": urls, "webhook": { "url": hook_url, "events": ["failed", "completed"] } });
    let (status, accepted) = client.call("post", "/v1/batches", Some(&request)).await;
    assert_eq!(status, 202, "{accepted}");
    let slow_id = accepted["batch_id"].as_str().unwrap().to_owned();
    let (status, body) = client
        .call("delete", &format!("/v1/batches/{slow_id}"), None)
        .await;
    api.check("/v1/batches/{id}", "delete", status, &body);
    assert_eq!(status, 202, "{body}");
    let done = wait_complete(&client, &mut api, &slow_id).await;
    assert_eq!(done["state"], "cancelled", "{done}");
    assert_eq!(done["total"], 40);
    let cancelled = done["failed_by_kind"]["cancelled"].as_u64().unwrap_or(0);
    assert!(cancelled >= 30, "most jobs were skipped: {done}");
    let last = wait_event(&received, &slow_id, &["failed", "completed"]).await;
    assert_eq!(
        (last["event"].as_str(), last["data"]["cancelled"].as_bool()),
        (Some("failed"), Some(true))
    );
    // The `events` filter held: nothing but the last event.
    assert!(
        received
            .lock()
            .unwrap()
            .events
            .iter()
            .filter(|(_, e, _)| e["batch_id"] == slow_id)
            .all(|(n, _, _)| n == "failed")
    );
    let (status, body) = client
        .call("delete", &format!("/v1/batches/{slow_id}"), None)
        .await;
    api.check("/v1/batches/{id}", "delete", status, &body);
    assert_eq!(status, 409, "{body}");

    // Unknown batch, bad paging, no such route.
    let (status, body) = client.call("get", "/v1/batches/no-such-batch", None).await;
    api.check("/v1/batches/{id}", "get", status, &body);
    assert_eq!(status, 404);
    let (status, body) = client
        .call("get", &format!("/v1/batches/{batch_id}?limit=0"), None)
        .await;
    api.check("/v1/batches/{id}", "get", status, &body);
    assert_eq!(status, 400);
    let (status, body) = client.call("get", "/v1/nothing-here", None).await;
    assert_eq!((status, body["error"].as_str()), (404, Some("not_found")));

    // A body over `max_body_bytes` (64 KiB here): 413.
    let huge: Vec<String> = (0..2_000).map(|i| site.url(&format!("/page-{i:050}"))).collect();
    let (status, body) = client
        .call("post", "/v1/batches", Some(&json!({ "urls": huge })))
        .await;
    api.check("/v1/batches", "post", status, &body);
    assert_eq!(
        (status, body["error"].as_str()),
        (413, Some("too_large")),
        "{body}"
    );
    drop(daemon);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn off_loopback_the_api_needs_its_token() {
    let site = FixtureServer::start().await.unwrap();
    // No token: the daemon refuses to listen off loopback.
    let dir = tempfile::tempdir().unwrap();
    let out = command(&site, dir.path(), CONFIG, "0.0.0.0:0")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("OXWRIGHT_API_TOKEN"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let daemon = start(&site, CONFIG, "0.0.0.0:0", Some(API_TOKEN));
    let anonymous = Client {
        http: http_client(),
        base: daemon.base.clone(),
        token: None,
    };
    let (status, doc) = anonymous.call("get", "/v1/openapi.json", None).await;
    assert_eq!(status, 200, "the document is public");
    let mut api = OpenApi::new(doc);
    let fetch = json!({ "url": site.url("/") });
    for (client_token, want) in [(None, 401), (Some("wrong"), 401)] {
        let client = Client {
            http: http_client(),
            base: daemon.base.clone(),
            token: client_token.map(str::to_owned),
        };
        let (status, body) = client.call("post", "/v1/fetch", Some(&fetch)).await;
        api.check("/v1/fetch", "post", status, &body);
        assert_eq!(
            (status, body["error"].as_str()),
            (want, Some("unauthorized")),
            "{body}"
        );
        let (status, _) = client.call("get", "/v1/batches/x", None).await;
        assert_eq!(status, 401);
        let (status, _) = client.call("post", "/jobs", Some(&json!({}))).await;
        assert_eq!(status, 401, "the older routes too");
    }
    let (status, body) = anonymous.call("get", "/healthz", None).await;
    assert_eq!((status, body), (200, Value::String("ok".into())));
    let authorised = Client {
        http: http_client(),
        base: daemon.base.clone(),
        token: Some(API_TOKEN.into()),
    };
    let (status, body) = authorised.call("post", "/v1/fetch", Some(&fetch)).await;
    api.check("/v1/fetch", "post", status, &body);
    assert_eq!(status, 200, "{body}");
    assert!(site.hits("/") >= 1);
    drop(daemon);
}

/// An embedded daemon stopped mid-batch: what ran keeps its line, and the
/// jobs it never started get a `cancelled` line, so the manifest still has
/// one line per job and the batch its summary.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_embedded_daemon_stopped_mid_batch_leaves_a_complete_manifest() {
    let site = FixtureServer::start().await.unwrap();
    let mut daemon = start(&site, CONFIG, "127.0.0.1:0", None);
    let client = Client {
        http: http_client(),
        base: daemon.base.clone(),
        token: None,
    };
    let urls: Vec<String> = (0..30)
        .map(|i| site.url(&format!("/slow?ms=1500&n={i}")))
        .collect();
    let (status, accepted) = client
        .call("post", "/v1/batches", Some(&json!({ "urls": urls })))
        .await;
    assert_eq!(status, 202, "{accepted}");
    let batch_id = accepted["batch_id"].as_str().unwrap().to_owned();
    for _ in 0..300 {
        let (_, view) = client
            .call("get", &format!("/v1/batches/{batch_id}?limit=1"), None)
            .await;
        if view["done"].as_u64().unwrap_or(0) >= 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    unsafe { libc::kill(daemon.child.id() as i32, libc::SIGTERM) };
    let status = tokio::task::spawn_blocking({
        let mut child = std::mem::replace(&mut daemon.child, Command::new("true").spawn().unwrap());
        move || child.wait().unwrap()
    })
    .await
    .unwrap();
    assert!(status.success(), "{status:?}");
    let batch = daemon.dir.path().join("out/batches").join(&batch_id);
    let manifest = std::fs::read_to_string(batch.join("manifest.jsonl")).unwrap();
    let lines: Vec<Value> = manifest
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let ids: std::collections::BTreeSet<&str> = lines.iter().map(|l| l["job_id"].as_str().unwrap()).collect();
    assert_eq!(
        (lines.len(), ids.len()),
        (30, 30),
        "one line per job:\n{manifest}"
    );
    let ok = lines.iter().filter(|l| l["status"] == "ok").count();
    let cancelled = lines.iter().filter(|l| l["error"]["kind"] == "cancelled").count();
    assert!(
        ok >= 1 && cancelled >= 5 && ok + cancelled == 30,
        "ok {ok}, cancelled {cancelled}:\n{manifest}"
    );
    assert!(batch.join("summary.json").exists(), "the batch is complete");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crawl_through_the_api_follows_links_and_rel_next_within_its_patterns() {
    let site = FixtureServer::start().await.unwrap();
    let (hook_url, received) = receiver().await;
    let daemon = start(&site, CONFIG, "127.0.0.1:0", None);
    let client = Client {
        http: http_client(),
        base: daemon.base.clone(),
        token: None,
    };
    let (_, doc) = client.call("get", "/v1/openapi.json", None).await;
    let mut api = OpenApi::new(doc);

    let (status, refused) = client
        .call(
            "post",
            "/v1/crawls",
            Some(&json!({ "url": site.url("/listing"), "crawl": { "include": ["re:("] } })),
        )
        .await;
    api.check("/v1/crawls", "post", status, &refused);
    assert_eq!(
        status, 400,
        "a pattern that does not compile is refused: {refused}"
    );

    // The listing links its items and, by a link and by rel=next, its
    // second page; only the two listing pages match the patterns.
    let body = json!({
        "url": site.url("/listing"),
        "crawl": { "include": ["/listing", "/listing/2"], "per_host_delay_ms": 0 },
        "webhook": { "url": hook_url, "events": ["completed"] },
    });
    let (status, accepted) = client.call("post", "/v1/crawls", Some(&body)).await;
    api.check("/v1/crawls", "post", status, &accepted);
    assert_eq!(status, 202, "{accepted}");
    let batch_id = accepted["batch_id"].as_str().unwrap().to_owned();
    let done = wait_complete(&client, &mut api, &batch_id).await;
    assert_eq!(
        (done["total"].as_u64(), done["ok"].as_u64()),
        (Some(2), Some(2)),
        "{done}"
    );
    let event = wait_event(&received, &batch_id, &["completed"]).await;
    assert_eq!(event["data"]["total"], 2, "{event}");

    let batch = daemon.dir.path().join("out/batches").join(&batch_id);
    let manifest = std::fs::read_to_string(batch.join("manifest.jsonl")).unwrap();
    let lines: Vec<(String, u64, Option<String>)> = manifest
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|l| {
            (
                l["url"].as_str().unwrap().to_owned(),
                l["depth"].as_u64().unwrap(),
                l["parent"].as_str().map(str::to_owned),
            )
        })
        .collect();
    assert_eq!(
        lines,
        vec![
            (site.url("/listing"), 0, None),
            (site.url("/listing/2"), 1, Some(site.url("/listing"))),
        ],
        "{manifest}"
    );
    let skipped = std::fs::read_to_string(batch.join("skipped.jsonl")).unwrap();
    let reasons: BTreeMap<String, String> = skipped
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|l| {
            (
                l["url"].as_str().unwrap().to_owned(),
                l["reason"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    for item in ["/listing/item/k-100", "/listing/item/p-400", "/"] {
        assert_eq!(
            reasons.get(&site.url(item)).map(String::as_str),
            Some("excluded"),
            "{item}: {skipped}"
        );
    }
}
