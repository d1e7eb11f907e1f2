//! Shared set-up for the workflow tests: the fixture app, a warm pool, the
//! scripted LLM server and a memory store, plus helpers to read a session.

#![allow(dead_code)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use oxwright_artifacts::{ArtifactError, ArtifactStore, MemoryStore};
use oxwright_browser::{BrowserPool, PoolConfig, UrlPolicy};
use oxwright_engine::{BrowserEngine, GotoOptions, OpenOptions, Page};
use oxwright_fixtures::FixtureServer;
use oxwright_fixtures::llm::{Reply, ScriptedLlm};
use oxwright_jobs::WorkflowResult;
use oxwright_llm::{LlmClient, LlmConfig};
use oxwright_secrets::{MemorySecrets, Sanitizer, SecretStore};
use oxwright_workflow::{ConsoleSink, RunDeps, Workflow, WorkflowOptions, run_workflow};
use serde_json::Value;

pub mod files;

/// The login the fixture app accepts with [`oxwright_fixtures::APP_PASSWORD`].
pub const LOGIN_ID: &str = "alice";

/// Fixture site, pool, store and console capture for one test.
pub struct Wf {
    pub site: FixtureServer,
    pub pool: BrowserPool,
    /// The engine pages come from: the pool, or the Playwright MCP backend.
    pub engine: Arc<dyn BrowserEngine>,
    pub policy: Arc<UrlPolicy>,
    pub store: MemoryStore,
    pub console: Arc<Mutex<Vec<String>>>,
}

impl Wf {
    pub async fn start() -> Self {
        let site = FixtureServer::start().await.expect("fixture server starts");
        let env = std::env::vars().collect();
        let cfg = PoolConfig {
            browsers: 1,
            pages_per_browser: 2,
            ..PoolConfig::default()
        }
        .with_env(&env);
        let pool = BrowserPool::start(cfg)
            .await
            .expect("chromium starts (apt-get install chromium)");
        let policy = Arc::new(UrlPolicy::allowing([site.addr().to_string().parse().unwrap()]));
        Self {
            site,
            engine: Arc::new(pool.clone()),
            pool,
            policy,
            store: MemoryStore::new(),
            console: Arc::new(Mutex::new(Vec::new())),
        }
    }

    /// The same, with pages from the Playwright MCP backend
    /// (`@playwright/mcp` from `infra/node`, Debian Chromium).
    pub async fn start_playwright_mcp() -> Self {
        let cfg = oxwright_playwright_mcp::PwMcpConfig::default();
        assert!(
            cfg.cli.exists(),
            "@playwright/mcp is not installed at {} (run bash infra/install.sh)",
            cfg.cli.display()
        );
        let mut wf = Self::start().await;
        wf.engine = Arc::new(oxwright_playwright_mcp::PlaywrightMcpEngine::new(cfg));
        wf
    }

    /// [`Wf::start_playwright_mcp`] when asked, else [`Wf::start`].
    pub async fn start_on(playwright_mcp: bool) -> Self {
        if playwright_mcp {
            Self::start_playwright_mcp().await
        } else {
            Self::start().await
        }
    }

    pub fn url(&self, path: &str) -> url::Url {
        self.site.url(path).parse().unwrap()
    }

    pub fn secrets(&self) -> Arc<dyn SecretStore> {
        Arc::new(MemorySecrets::new([
            ("LOGIN_ID", LOGIN_ID),
            ("PASSWORD", oxwright_fixtures::APP_PASSWORD),
        ]))
    }

    pub fn deps(&self, llm: Option<&ScriptedLlm>, secrets: Arc<dyn SecretStore>) -> RunDeps {
        RunDeps {
            llm: llm.map(|l| {
                let mut cfg = LlmConfig::new(l.base_url(), "scripted-small")
                    .with_large_model(Some("scripted-large".into()));
                cfg.backoff_ms = 10;
                Arc::new(LlmClient::new(cfg, &Default::default()).expect("llm client"))
                    as Arc<dyn oxwright_llm::ChatModel>
            }),
            secrets,
            store: Arc::new(self.store.clone()),
            sanitizer: Sanitizer::new(),
        }
    }

    pub fn options(&self, session: &str, path: &str) -> WorkflowOptions {
        let console = self.console.clone();
        let sink: ConsoleSink = Arc::new(move |line: &str| console.lock().unwrap().push(line.to_string()));
        let mut opts = WorkflowOptions::new(session, self.url(path));
        opts.action_timeout = Duration::from_secs(5);
        opts.console = Some(sink);
        opts
    }

    /// Opens a page of the engine under the fixture policy.
    /// Starts a second fixture server (another port of the fixture host:
    /// another origin of the same site) and lets pages reach it and the
    /// fixture site as `localhost` (another site).
    pub async fn second_origin(&mut self) -> oxwright_fixtures::FixtureServer {
        let second = oxwright_fixtures::FixtureServer::start()
            .await
            .expect("second fixture server");
        let port = self.site.addr().port();
        self.policy = Arc::new(UrlPolicy::allowing([
            self.site.addr().to_string().parse().unwrap(),
            format!("localhost:{port}").parse().unwrap(),
            second.addr().to_string().parse().unwrap(),
        ]));
        second
    }

    pub async fn page(&self) -> Box<dyn Page> {
        self.engine
            .open(&OpenOptions::new(self.policy.clone()))
            .await
            .expect("page")
    }

    /// Runs `text` from `path` in a fresh page and returns the result and the page.
    pub async fn run(
        &self,
        session: &str,
        path: &str,
        text: &str,
        llm: Option<&ScriptedLlm>,
    ) -> (WorkflowResult, Box<dyn Page>) {
        let page = self.page().await;
        let workflow = Workflow::parse(text).expect("workflow parses");
        let result = run_workflow(
            page.as_ref(),
            &workflow,
            self.deps(llm, self.secrets()),
            self.options(session, path),
        )
        .await
        .expect("the workflow runs");
        (result, page)
    }

    /// The one failure artefact of `session`, parsed.
    pub async fn only_error_artefact(&self, session: &str) -> Value {
        let prefix = format!("sessions/{session}/errors/");
        let errors: Vec<_> = self
            .all_artifacts()
            .await
            .into_iter()
            .filter(|(k, _)| k.starts_with(&prefix))
            .collect();
        assert_eq!(errors.len(), 1, "{errors:?}");
        serde_json::from_str(&errors[0].1).expect("an error artefact is JSON")
    }

    /// Returns the JSONL lines under `sessions/<session>/<name>`.
    pub async fn jsonl(&self, session: &str, name: &str) -> Vec<Value> {
        let body = self
            .store
            .get(&format!("sessions/{session}/{name}"))
            .await
            .unwrap_or_default();
        String::from_utf8_lossy(&body)
            .lines()
            .map(|l| serde_json::from_str(l).expect("a JSON line"))
            .collect()
    }

    /// Returns every artefact's text (lossy) with its key.
    pub async fn all_artifacts(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for key in self.store.list("").await.unwrap() {
            let body = self.store.get(&key).await.unwrap();
            out.push((key, String::from_utf8_lossy(&body).into_owned()));
        }
        out
    }

    pub fn console_text(&self) -> String {
        self.console.lock().unwrap().join("\n")
    }
}

/// Navigates `page` to `url` (for snapshot tests).
pub async fn goto(page: &dyn Page, url: &url::Url) {
    page.goto(url, &GotoOptions::load(Duration::from_secs(15)))
        .await
        .expect("navigates");
}

/// A decision answer for `getByRole(role, name)`.
pub fn role(role: &str, name: &str, action: &str, value: Option<Value>) -> Reply {
    let mut d = serde_json::json!({
        "method": "getByRole", "selector": {"role": role, "name": name}, "action": action,
        "confidence": 0.9, "rationale": "unique role and name in the snapshot",
    });
    if let Some(v) = value {
        d["value"] = v;
    }
    Reply::json(d)
}

pub fn placeholder(name: &str) -> Value {
    serde_json::json!({"kind": "placeholder", "value": format!("{{{{{name}}}}}")})
}

pub fn literal(v: &str) -> Value {
    serde_json::json!({"kind": "literal", "value": v})
}

/// The checklist answer, wrapped in prose and a fence as small models do.
pub fn checklist(items: &[&str]) -> Reply {
    Reply::text(format!(
        "Here is the checklist:\n```json\n{}\n```\n",
        serde_json::to_string(items).unwrap()
    ))
}

/// Reads a text of the page.
pub async fn page_text(page: &dyn Page, js: &str) -> Value {
    page.evaluate(js, Duration::from_secs(5)).await.expect("evaluate")
}

/// The login → search → select flow's checklist and decisions, the first
/// `steps` of them.
fn script_login_search(llm: &ScriptedLlm, steps: usize) {
    let checklist_items = [
        "Type {{LOGIN_ID}} into Username",
        "Type {{PASSWORD}} into Password",
        "Click Sign in",
        "Type rust into the search box",
        "Click Search",
        "Open Rust in Action",
        "Choose Japan as the shipping country",
    ];
    llm.push(checklist(&checklist_items[..steps]));
    let decisions = [
        role("textbox", "Username", "fill", Some(placeholder("LOGIN_ID"))),
        role("textbox", "Password", "fill", Some(placeholder("PASSWORD"))),
        role("button", "Sign in", "click", None),
        role("searchbox", "Search products", "fill", Some(literal("rust"))),
        role("button", "Search", "click", None),
        role("link", "Rust in Action", "click", None),
        role("combobox", "Shipping country", "select", Some(literal("Japan"))),
    ];
    for d in decisions.into_iter().take(steps) {
        llm.push(d);
        llm.push(Reply::text("true"));
    }
}

/// Scripts the whole login → search → select flow.
pub fn script_login_search_select(llm: &ScriptedLlm) {
    script_login_search(llm, 7);
}

/// The same flow, ending with the click that opens the product page.
pub fn script_login_search_open(llm: &ScriptedLlm) {
    script_login_search(llm, 6);
}

/// A store that keeps a copy of every checkpoint written to it (the run
/// deletes its checkpoint when it ends).
#[derive(Debug)]
pub struct KeepsCheckpoints {
    pub inner: Arc<dyn ArtifactStore>,
    pub written: Arc<Mutex<Vec<String>>>,
}

#[async_trait::async_trait]
impl ArtifactStore for KeepsCheckpoints {
    async fn put(&self, key: &str, body: bytes::Bytes, content_type: &str) -> Result<(), ArtifactError> {
        if key.ends_with("/checkpoint.json") {
            self.written
                .lock()
                .unwrap()
                .push(String::from_utf8_lossy(&body).into_owned());
        }
        self.inner.put(key, body, content_type).await
    }
    async fn get(&self, key: &str) -> Result<bytes::Bytes, ArtifactError> {
        self.inner.get(key).await
    }
    async fn append(&self, key: &str, line: bytes::Bytes) -> Result<(), ArtifactError> {
        self.inner.append(key, line).await
    }
    async fn get_versioned(
        &self,
        key: &str,
    ) -> Result<(bytes::Bytes, oxwright_artifacts::Version), ArtifactError> {
        self.inner.get_versioned(key).await
    }
    async fn put_if(
        &self,
        key: &str,
        body: bytes::Bytes,
        content_type: &str,
        expect: &oxwright_artifacts::Expect,
    ) -> Result<oxwright_artifacts::Version, ArtifactError> {
        self.inner.put_if(key, body, content_type, expect).await
    }
    async fn list(&self, prefix: &str) -> Result<Vec<String>, ArtifactError> {
        self.inner.list(prefix).await
    }
    async fn exists(&self, key: &str) -> Result<bool, ArtifactError> {
        self.inner.exists(key).await
    }
    async fn delete(&self, key: &str) -> Result<(), ArtifactError> {
        self.inner.delete(key).await
    }
    fn describe(&self) -> String {
        self.inner.describe()
    }
}
