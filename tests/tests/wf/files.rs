//! A file store for workflow runs and a loopback server over its folder,
//! so a session's report.html opens in Chromium with its relative links.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use oxwright_artifacts::FsStore;
use oxwright_fixtures::llm::ScriptedLlm;
use oxwright_jobs::WorkflowResult;
use oxwright_workflow::{RunDeps, Workflow, run_workflow};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use super::Wf;

/// Runs `text` from `path` with artefacts in a file store at `root`;
/// returns the result and the deps (their sanitiser knows the secrets).
pub async fn run_to_files(
    wf: &Wf,
    root: &Path,
    session: &str,
    path: &str,
    text: &str,
    llm: Option<&ScriptedLlm>,
) -> (WorkflowResult, RunDeps) {
    let page = wf.page().await;
    let mut deps = wf.deps(llm, wf.secrets());
    deps.store = Arc::new(FsStore::new(root.to_path_buf()));
    let workflow = Workflow::parse(text).expect("workflow parses");
    let result = run_workflow(page.as_ref(), &workflow, deps.clone(), wf.options(session, path))
        .await
        .expect("the workflow runs");
    (result, deps)
}

/// Serves the files under a folder on `127.0.0.1:0` (GET only, no listing).
pub struct FileServer {
    pub addr: std::net::SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FileServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn content_type(path: &Path) -> &'static str {
    match path.extension().and_then(|e| e.to_str()) {
        Some("html") => "text/html; charset=utf-8",
        Some("png") => "image/png",
        Some("json") | Some("jsonl") => "application/json",
        _ => "text/plain; charset=utf-8",
    }
}

impl FileServer {
    pub async fn start(root: PathBuf) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().unwrap();
        let task = tokio::spawn(async move {
            loop {
                let Ok((mut conn, _)) = listener.accept().await else {
                    return;
                };
                let root = root.clone();
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 8192];
                    let n = conn.read(&mut buf).await.unwrap_or(0);
                    let head = String::from_utf8_lossy(&buf[..n]).to_string();
                    let target = head.split_whitespace().nth(1).unwrap_or("/").to_string();
                    let rel = target.split('?').next().unwrap_or("").trim_start_matches('/');
                    let file = root.join(rel);
                    let safe = !rel.split('/').any(|s| s == "..");
                    let (status, body, ty) = match std::fs::read(&file) {
                        Ok(body) if safe => ("200 OK", body, content_type(&file)),
                        _ => ("404 Not Found", b"not found".to_vec(), "text/plain"),
                    };
                    let head = format!(
                        "HTTP/1.1 {status}\r\ncontent-type: {ty}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                        body.len()
                    );
                    let _ = conn.write_all(head.as_bytes()).await;
                    let _ = conn.write_all(&body).await;
                    let _ = conn.shutdown().await;
                });
            }
        });
        Self { addr, task }
    }
}
