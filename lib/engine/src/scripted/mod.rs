//! A scripted, in-memory [`Page`]: a site of HTML documents parsed into a
//! small accessibility model (roles, names, values, visibility), with the
//! effects a page without scripts has — links navigate, forms submit with
//! GET, fields take values, boxes check, selects select. For unit tests of
//! everything above the seam (the workflow runner with virtual time, the
//! MCP tools) and as the second implementation the shared suite runs on.
//! Scripts never run: `evaluate` understands a few read-only expressions.

mod actions;
mod dom;
mod render;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;

use crate::{
    Act, ActOptions, Acted, BrowserEngine, ConsoleMessage, DialogRecord, Element, ElementId, EngineError,
    EngineErrorKind, GotoOptions, Locator, Navigated, OpenOptions, Page, ScreenshotOptions, Snapshot,
    SnapshotOptions, TabInfo, Target, UrlPolicy, WaitCondition, name_matches,
};
use dom::{Doc, Node};

/// The documents a scripted page can load, by absolute URL (query ignored).
#[derive(Debug, Clone, Default)]
pub struct ScriptedSite {
    pages: HashMap<String, (u16, String)>,
}

impl ScriptedSite {
    /// An empty site.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a document at `url` (absolute, without query).
    pub fn page(mut self, url: &str, html: &str) -> Self {
        self.pages.insert(url.to_string(), (200, html.to_string()));
        self
    }

    /// Adds a document answering with `status`.
    pub fn page_with_status(mut self, url: &str, status: u16, html: &str) -> Self {
        self.pages.insert(url.to_string(), (status, html.to_string()));
        self
    }

    fn get(&self, url: &url::Url) -> Option<&(u16, String)> {
        let mut bare = url.clone();
        bare.set_query(None);
        bare.set_fragment(None);
        self.pages.get(bare.as_str())
    }
}

/// An engine of scripted pages over one site.
#[derive(Debug, Clone)]
pub struct ScriptedEngine {
    site: Arc<ScriptedSite>,
}

impl ScriptedEngine {
    /// An engine serving `site`.
    pub fn new(site: ScriptedSite) -> Self {
        Self { site: Arc::new(site) }
    }
}

#[async_trait]
impl BrowserEngine for ScriptedEngine {
    async fn open(&self, opts: &OpenOptions) -> Result<Box<dyn Page>, EngineError> {
        if !opts.shape.is_empty() {
            return Err(EngineError::unsupported(
                "request shaping (headers, cookies, emulation)",
            ));
        }
        Ok(Box::new(ScriptedPage::with_policy(
            self.site.clone(),
            opts.policy.clone(),
        )))
    }

    fn capacity(&self) -> usize {
        usize::MAX
    }

    fn describe(&self) -> String {
        "scripted".into()
    }
}

#[derive(Debug, Default)]
struct State {
    doc: Option<Doc>,
    history: Vec<url::Url>,
    position: usize,
    generation: u64,
    /// Refs of the current document: ref → node index.
    refs: HashMap<String, usize>,
    ref_generation: u64,
    console: Vec<ConsoleMessage>,
    dialogs: Vec<DialogRecord>,
    /// Navigations started by actions, counted for tests.
    navigations: u64,
}

/// One scripted page.
#[derive(Debug, Clone)]
pub struct ScriptedPage {
    site: Arc<ScriptedSite>,
    policy: Arc<UrlPolicy>,
    state: Arc<Mutex<State>>,
}

impl ScriptedPage {
    /// A page over `site` that allows every URL the site serves.
    pub fn new(site: ScriptedSite) -> Self {
        Self::with_policy(
            Arc::new(site),
            Arc::new(UrlPolicy {
                allow_private: true,
                ..UrlPolicy::default()
            }),
        )
    }

    /// A page over `site` under `policy`.
    pub fn with_policy(site: Arc<ScriptedSite>, policy: Arc<UrlPolicy>) -> Self {
        Self {
            site,
            policy,
            state: Arc::new(Mutex::new(State::default())),
        }
    }

    /// Navigations so far (gotos and the ones actions started).
    pub fn navigations(&self) -> u64 {
        self.lock().navigations
    }

    /// Adds a console message, as a page script would.
    pub fn push_console(&self, level: &str, text: &str) {
        self.lock().console.push(ConsoleMessage {
            level: level.into(),
            text: text.into(),
            url: None,
            timestamp_ms: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .ok()
                .map(|d| d.as_millis() as i64),
        });
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn load(&self, st: &mut State, url: url::Url, push: bool) -> Result<Navigated, EngineError> {
        if let Err(e) = self.policy.check_static(&url) {
            return Err(
                EngineError::new(EngineErrorKind::PolicyDenied, format!("{url}: {e}")).with_url(url.as_str()),
            );
        }
        let Some((status, html)) = self.site.get(&url).cloned() else {
            return Err(EngineError::new(
                EngineErrorKind::Navigation,
                format!("navigation to {url} failed: net::ERR_CONNECTION_REFUSED"),
            )
            .with_url(url.as_str()));
        };
        if status >= 400 {
            return Err(
                EngineError::new(EngineErrorKind::HttpStatus, format!("HTTP {status} from {url}"))
                    .with_status(status)
                    .with_url(url.as_str()),
            );
        }
        st.generation += 1;
        st.navigations += 1;
        st.doc = Some(dom::parse(url.clone(), &html, st.generation));
        if push {
            st.history
                .truncate(st.position + usize::from(!st.history.is_empty()));
            st.history.push(url.clone());
            st.position = st.history.len() - 1;
        }
        Ok(Navigated {
            final_url: url.to_string(),
            status,
            content_type: Some("text/html".into()),
            ..Navigated::default()
        })
    }

    fn doc(st: &State) -> Result<&Doc, EngineError> {
        st.doc
            .as_ref()
            .ok_or_else(|| EngineError::new(EngineErrorKind::Navigation, "the page has no document yet"))
    }

    fn find(doc: &Doc, locator: &Locator) -> Result<Vec<usize>, EngineError> {
        let visible = |i: &usize| doc.nodes[*i].visible;
        let all = 0..doc.nodes.len();
        let out: Vec<usize> = match locator {
            Locator::Role { role, name, exact } => all
                .filter(|i| doc.nodes[*i].role.as_deref() == Some(role.to_ascii_lowercase().as_str()))
                .filter(|i| {
                    name.as_deref()
                        .is_none_or(|n| name_matches(&doc.nodes[*i].name, n, *exact))
                })
                .filter(visible)
                .collect(),
            Locator::Text { text, exact } => {
                let hit = |n: &Node| {
                    let t = if n.tag == "input" { &n.value } else { &n.text };
                    name_matches(t, text, *exact) && !t.is_empty()
                };
                all.filter(|i| hit(&doc.nodes[*i]))
                    // The innermost element holding the text matches, not its ancestors.
                    .filter(|i| !doc.nodes.iter().any(|c| c.parent == Some(*i) && hit(c)))
                    .filter(visible)
                    .collect()
            }
            Locator::TestId { test_id } => all
                .filter(|i| doc.nodes[*i].attr("data-testid") == Some(test_id.as_str()))
                .filter(visible)
                .collect(),
            Locator::Label { text, exact } => all
                .filter(|i| {
                    let n = &doc.nodes[*i];
                    matches!(n.tag.as_str(), "input" | "select" | "textarea")
                        && name_matches(&n.name, text, *exact)
                })
                .filter(visible)
                .collect(),
            Locator::Placeholder { text, exact } => all
                .filter(|i| {
                    doc.nodes[*i]
                        .attr("placeholder")
                        .is_some_and(|p| name_matches(p, text, *exact))
                })
                .filter(visible)
                .collect(),
            Locator::Css { selector } => dom::css(doc, selector)
                .map_err(|m| EngineError::new(EngineErrorKind::InvalidInput, m))?
                .into_iter()
                .filter(visible)
                .collect(),
            Locator::XPath { .. } => return Err(EngineError::unsupported("XPath in the scripted page")),
        };
        Ok(out)
    }

    fn resolve(st: &State, target: &Target) -> Result<usize, EngineError> {
        let doc = Self::doc(st)?;
        match target {
            Target::Element(id) => {
                let (generation, index) =
                    id.0.split_once(':')
                        .and_then(|(g, i)| Some((g.parse::<u64>().ok()?, i.parse::<usize>().ok()?)))
                        .ok_or_else(|| {
                            EngineError::new(EngineErrorKind::InvalidInput, format!("bad element id {id}"))
                        })?;
                if generation != doc.generation || index >= doc.nodes.len() {
                    return Err(EngineError::new(
                        EngineErrorKind::Stale,
                        format!("element {id} belongs to a document that is gone"),
                    ));
                }
                Ok(index)
            }
            Target::Ref(r) => {
                if st.ref_generation != doc.generation {
                    return Err(EngineError::stale(r));
                }
                st.refs.get(r).copied().ok_or_else(|| EngineError::stale(r))
            }
            Target::Locator { locator, nth } => {
                let found = Self::find(doc, locator)?;
                match (nth, found.len()) {
                    (Some(n), len) if *n < len => Ok(found[*n]),
                    (Some(_), _) | (None, 0) => Err(EngineError::not_found(target)),
                    (None, 1) => Ok(found[0]),
                    (None, len) => Err(EngineError::not_unique(target, len)),
                }
            }
        }
    }

    fn element(doc: &Doc, i: usize) -> Element {
        let n = &doc.nodes[i];
        Element {
            id: ElementId(format!("{}:{i}", doc.generation)),
            role: n.role.clone(),
            name: Some(n.name.clone()),
        }
    }
}

#[async_trait]
impl Page for ScriptedPage {
    async fn goto(&self, url: &url::Url, _opts: &GotoOptions) -> Result<Navigated, EngineError> {
        let mut st = self.lock();
        self.load(&mut st, url.clone(), true)
    }

    async fn url(&self) -> Result<String, EngineError> {
        Ok(self
            .lock()
            .doc
            .as_ref()
            .map(|d| d.url.to_string())
            .unwrap_or_else(|| "about:blank".into()))
    }

    async fn title(&self) -> Result<String, EngineError> {
        Ok(self
            .lock()
            .doc
            .as_ref()
            .map(|d| d.title.clone())
            .unwrap_or_default())
    }

    async fn snapshot(&self, opts: &SnapshotOptions) -> Result<Snapshot, EngineError> {
        Self::render(&mut self.lock(), opts)
    }

    async fn locate(&self, locator: &Locator) -> Result<Vec<Element>, EngineError> {
        let st = self.lock();
        let doc = Self::doc(&st)?;
        Ok(Self::find(doc, locator)?
            .into_iter()
            .map(|i| Self::element(doc, i))
            .collect())
    }

    async fn act(&self, target: &Target, act: &Act, _opts: &ActOptions) -> Result<Acted, EngineError> {
        let mut st = self.lock();
        let i = Self::resolve(&st, target)?;
        let navigated = self.perform(&mut st, i, act)?;
        Ok(Acted {
            navigated,
            ..Acted::default()
        })
    }

    async fn evaluate(&self, expression: &str, _timeout: Duration) -> Result<Value, EngineError> {
        let st = self.lock();
        let doc = Self::doc(&st)?;
        match expression.trim() {
            "document.title" => Ok(Value::String(doc.title.clone())),
            "location.href" | "window.location.href" | "document.URL" => {
                Ok(Value::String(doc.url.to_string()))
            }
            "document.body.innerText" => Ok(Value::String(
                doc.nodes
                    .iter()
                    .filter(|n| n.visible)
                    .map(|n| n.own_text.clone())
                    .filter(|t| !t.is_empty())
                    .collect::<Vec<_>>()
                    .join("\n"),
            )),
            other => Err(EngineError::unsupported(format!(
                "evaluating {other:?} in the scripted page"
            ))),
        }
    }

    async fn html(&self) -> Result<String, EngineError> {
        Ok(Self::doc(&self.lock())?.html.clone())
    }

    async fn screenshot(&self, opts: &ScreenshotOptions) -> Result<Vec<u8>, EngineError> {
        if opts.mask_secrets {
            let st = self.lock();
            let secret = Self::doc(&st).is_ok_and(|doc| {
                doc.nodes
                    .iter()
                    .any(|n| n.masked || (n.input_type() == "password" && !n.value.is_empty()))
            });
            if secret {
                // It draws nothing, so it cannot draw over a secret either.
                return Err(EngineError::unsupported(
                    "masking secret fields in a screenshot of a scripted page",
                ));
            }
        }
        // A valid 1×1 PNG: callers store it like a real one.
        Ok(vec![
            0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d, 0x49, 0x48, 0x44, 0x52, 0, 0, 0,
            1, 0, 0, 0, 1, 8, 6, 0, 0, 0, 0x1f, 0x15, 0xc4, 0x89, 0, 0, 0, 0x0d, 0x49, 0x44, 0x41, 0x54,
            0x78, 0x9c, 0x63, 0, 1, 0, 0, 5, 0, 1, 0x0d, 0x0a, 0x2d, 0xb4, 0, 0, 0, 0, 0x49, 0x45, 0x4e,
            0x44, 0xae, 0x42, 0x60, 0x82,
        ])
    }

    async fn console(&self) -> Vec<ConsoleMessage> {
        std::mem::take(&mut self.lock().console)
    }

    async fn dialogs(&self) -> Vec<DialogRecord> {
        std::mem::take(&mut self.lock().dialogs)
    }

    async fn policy_refusals(&self) -> Vec<String> {
        // Nothing leaves a scripted page: only its own navigations, checked in `load`.
        Vec::new()
    }

    async fn wait_for(&self, condition: &WaitCondition, timeout: Duration) -> Result<(), EngineError> {
        let met = |st: &State| -> Result<bool, EngineError> {
            let doc = Self::doc(st)?;
            let text = || doc.nodes.iter().filter(|n| n.visible).any(|n| !n.text.is_empty());
            Ok(match condition {
                WaitCondition::Selector(s) => !Self::find(doc, &Locator::css(s))?.is_empty(),
                WaitCondition::Text(t) => !Self::find(doc, &Locator::text(t))?.is_empty(),
                WaitCondition::TextGone(t) => Self::find(doc, &Locator::text(t))?.is_empty(),
                WaitCondition::Url(u) => doc.url.as_str().contains(u.as_str()),
                WaitCondition::LoadState(_) => {
                    let _ = text();
                    true
                }
                WaitCondition::Time(_) => true,
            })
        };
        if let WaitCondition::Time(d) = condition {
            tokio::time::sleep(*d).await;
            return Ok(());
        }
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if met(&self.lock())? {
                return Ok(());
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(EngineError::new(
                    EngineErrorKind::Timeout,
                    format!(
                        "timed out after {} ms waiting for {condition:?}",
                        timeout.as_millis()
                    ),
                ));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    async fn back(&self, _timeout: Duration) -> Result<(), EngineError> {
        let mut st = self.lock();
        if st.position == 0 {
            return Ok(());
        }
        st.position -= 1;
        let url = st.history[st.position].clone();
        self.load(&mut st, url, false).map(|_| ())
    }

    async fn forward(&self, _timeout: Duration) -> Result<(), EngineError> {
        let mut st = self.lock();
        if st.position + 1 >= st.history.len() {
            return Ok(());
        }
        st.position += 1;
        let url = st.history[st.position].clone();
        self.load(&mut st, url, false).map(|_| ())
    }

    async fn reload(&self, _timeout: Duration) -> Result<(), EngineError> {
        let mut st = self.lock();
        let url = Self::doc(&st)?.url.clone();
        self.load(&mut st, url, false).map(|_| ())
    }

    async fn tabs(&self) -> Result<Vec<TabInfo>, EngineError> {
        let st = self.lock();
        Ok(vec![TabInfo {
            id: "scripted".into(),
            url: st
                .doc
                .as_ref()
                .map(|d| d.url.to_string())
                .unwrap_or_else(|| "about:blank".into()),
            title: st.doc.as_ref().map(|d| d.title.clone()).unwrap_or_default(),
            current: true,
        }])
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}
