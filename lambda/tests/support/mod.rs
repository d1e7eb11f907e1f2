//! A fake Lambda Runtime API on 127.0.0.1 and the `oxwright-lambda`
//! process it serves: events are queued by the test, `/next` hands them
//! out (and hangs when none is left, as the real one does), responses and
//! errors are recorded; the extensions API registers the graceful-shutdown
//! helper and never sends it an event.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::{Path as UrlPath, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::Value;
use tokio::sync::{Mutex, mpsc};

/// What the function answered to one invocation.
#[derive(Debug, Clone)]
pub enum Answer {
    /// `POST …/response`.
    Response(Value),
    /// `POST …/error`: the body (`errorType`, `errorMessage`).
    Error(Value),
}

struct Shared {
    events: Mutex<mpsc::UnboundedReceiver<(String, Value)>>,
    answers: mpsc::UnboundedSender<(String, Answer)>,
    /// How long each invocation may run (`Lambda-Runtime-Deadline-Ms`).
    deadline_ms: u128,
}

/// The fake Runtime API.
pub struct FakeRuntime {
    pub addr: std::net::SocketAddr,
    events: mpsc::UnboundedSender<(String, Value)>,
    answers: mpsc::UnboundedReceiver<(String, Answer)>,
    next_id: u64,
}

impl FakeRuntime {
    /// Starts the API on 127.0.0.1:0; each invocation may run 90 s.
    pub async fn start() -> Self {
        Self::start_with_deadline(Duration::from_secs(90)).await
    }

    /// Starts the API on 127.0.0.1:0; each invocation may run `deadline`.
    pub async fn start_with_deadline(deadline: Duration) -> Self {
        let (events_tx, events_rx) = mpsc::unbounded_channel();
        let (answers_tx, answers_rx) = mpsc::unbounded_channel();
        let shared = Arc::new(Shared {
            events: Mutex::new(events_rx),
            answers: answers_tx,
            deadline_ms: deadline.as_millis(),
        });
        let app = Router::new()
            .route("/2018-06-01/runtime/invocation/next", get(next))
            .route("/2018-06-01/runtime/invocation/{id}/response", post(response))
            .route("/2018-06-01/runtime/invocation/{id}/error", post(error))
            .route("/2018-06-01/runtime/init/error", post(init_error))
            .route("/2020-01-01/extension/register", post(register))
            .route("/2020-01-01/extension/event/next", get(hang))
            .with_state(shared);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        tokio::spawn(async move {
            axum::serve(listener, app).await.expect("fake runtime serves");
        });
        Self {
            addr,
            events: events_tx,
            answers: answers_rx,
            next_id: 0,
        }
    }

    /// Queues `event` and waits (bounded) for the function's answer.
    pub async fn invoke(&mut self, event: Value) -> Answer {
        self.next_id += 1;
        let id = format!("req-{}", self.next_id);
        self.events.send((id.clone(), event)).expect("queue event");
        let (got, answer) = tokio::time::timeout(Duration::from_secs(120), self.answers.recv())
            .await
            .expect("the function answers within 120 s")
            .expect("answers channel open");
        assert_eq!(got, id, "answers come in order");
        answer
    }
}

async fn next(State(shared): State<Arc<Shared>>) -> Response {
    let Some((id, event)) = shared.events.lock().await.recv().await else {
        return StatusCode::GONE.into_response();
    };
    let deadline = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis()
        + shared.deadline_ms;
    let mut headers = HeaderMap::new();
    let mut set = |k: &'static str, v: String| {
        headers.insert(k, HeaderValue::from_str(&v).unwrap());
    };
    set("lambda-runtime-aws-request-id", id);
    set("lambda-runtime-deadline-ms", deadline.to_string());
    set(
        "lambda-runtime-invoked-function-arn",
        "arn:aws:lambda:eu-west-1:111122223333:function:oxwright-worker".into(),
    );
    set(
        "lambda-runtime-trace-id",
        "Root=1-00000000-000000000000000000000000;Sampled=0".into(),
    );
    (StatusCode::OK, headers, event.to_string()).into_response()
}

async fn response(
    State(shared): State<Arc<Shared>>,
    UrlPath(id): UrlPath<String>,
    body: String,
) -> StatusCode {
    let value = serde_json::from_str(&body).unwrap_or(Value::String(body));
    let _ = shared.answers.send((id, Answer::Response(value)));
    StatusCode::ACCEPTED
}

async fn error(State(shared): State<Arc<Shared>>, UrlPath(id): UrlPath<String>, body: String) -> StatusCode {
    let value = serde_json::from_str(&body).unwrap_or(Value::String(body));
    let _ = shared.answers.send((id, Answer::Error(value)));
    StatusCode::ACCEPTED
}

async fn init_error(State(shared): State<Arc<Shared>>, body: String) -> StatusCode {
    let _ = shared
        .answers
        .send(("init".into(), Answer::Error(Value::String(body))));
    StatusCode::ACCEPTED
}

async fn register() -> Response {
    let mut headers = HeaderMap::new();
    headers.insert("lambda-extension-identifier", HeaderValue::from_static("ext-1"));
    let body = r#"{"functionName":"oxwright-worker","functionVersion":"$LATEST","handler":"bootstrap"}"#;
    (StatusCode::OK, headers, body).into_response()
}

async fn hang() -> StatusCode {
    std::future::pending::<()>().await;
    StatusCode::OK
}

/// One running `oxwright-lambda` and the directories it owns.
pub struct Function {
    pub child: Child,
    pub out: tempfile::TempDir,
    pub tmp: tempfile::TempDir,
    pub log: PathBuf,
}

impl Function {
    /// Starts the binary against `runtime` with `env` on top of the
    /// essentials (a file store in a fresh directory, its own `TMPDIR`).
    pub fn start(runtime: &FakeRuntime, env: &[(&str, String)]) -> Self {
        Self::start_bin(env!("CARGO_BIN_EXE_oxwright-lambda"), runtime, env)
    }

    /// Starts the function binary `bin` like [`Function::start`].
    pub fn start_bin(bin: &str, runtime: &FakeRuntime, env: &[(&str, String)]) -> Self {
        let out = tempfile::tempdir().expect("out dir");
        // Short: Chromium's socket paths live under it.
        let tmp = tempfile::Builder::new()
            .prefix("oxl")
            .tempdir_in("/tmp")
            .expect("tmp dir");
        let log = out.path().join("function.log");
        let mut cmd = Command::new(bin);
        cmd.env("AWS_LAMBDA_RUNTIME_API", runtime.addr.to_string())
            .env("AWS_LAMBDA_FUNCTION_NAME", "oxwright-worker")
            .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "2048")
            .env("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
            .env("OXWRIGHT_OUT", out.path())
            .env("TMPDIR", tmp.path())
            .env("RUST_LOG", "info,oxwright=debug")
            .env_remove("OXWRIGHT_AMQP_URL")
            .env_remove("OXWRIGHT_S3")
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&log).expect("log file"))
            .stderr(
                std::fs::File::options()
                    .append(true)
                    .open(&log)
                    .expect("log file"),
            );
        for (k, v) in env {
            cmd.env(k, v);
        }
        let child = cmd.spawn().expect("oxwright-lambda starts");
        Self { child, out, tmp, log }
    }

    /// Returns the function's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Sends SIGTERM (what the Lambda service sends at shutdown when an
    /// extension is registered) and waits for the exit.
    pub fn terminate(&mut self) -> std::process::ExitStatus {
        // SAFETY: kill(2) on the pid of a child this test spawned.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        for _ in 0..600 {
            if let Some(status) = self.child.try_wait().expect("wait") {
                return status;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!(
            "oxwright-lambda did not exit within 30 s of SIGTERM:\n{}",
            self.log()
        );
    }

    /// Returns the processes whose command line mentions this function's
    /// `TMPDIR` (its Chromium profiles live there).
    pub fn chromium_processes(&self) -> Vec<u32> {
        processes_mentioning(self.tmp.path())
    }
}

impl Drop for Function {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Returns the pids whose command line contains `path`.
pub fn processes_mentioning(path: &Path) -> Vec<u32> {
    let needle = path.to_string_lossy().to_string();
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if cmdline.contains(&needle) && cmdline.contains("--user-data-dir") {
            out.push(pid);
        }
    }
    out
}

/// Returns `fixture` (a file under tests/fixtures) with `replacements`.
pub fn fixture(name: &str, replacements: &[(&str, &str)]) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    let mut text = std::fs::read_to_string(&path).expect("fixture");
    for (from, to) in replacements {
        text = text.replace(from, to);
    }
    serde_json::from_str(&text).expect("fixture is JSON")
}

/// Lists the files under `dir`, relative, sorted.
pub fn files_under(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p.strip_prefix(dir).unwrap().to_string_lossy().to_string());
            }
        }
    }
    out.sort();
    out
}
