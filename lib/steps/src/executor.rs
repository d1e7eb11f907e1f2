//! A run of steps' view of a page (a workflow's, or a fetch's actions'):
//! snapshots cleaned by the run's sanitiser, the exactly-one precheck with
//! auto-wait, and actions whose placeholders are resolved at the moment of
//! typing. Everything else is the engine's
//! ([`Page`]); nothing here knows which browser is underneath.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use oxwright_engine::{
    Act, ActOptions, Acted, ElementId, ElementState, EngineError, EngineErrorKind, GotoOptions, Page,
    ScreenshotOptions, Snapshot, SnapshotOptions, Target, WaitCondition,
};

use oxwright_engine::Locator;
use oxwright_secrets::{Sanitizer, SecretStore, resolve as resolve_secret};

use crate::closest::closest_names;
use crate::grammar::Assertion;
use crate::{Action, ActionValue, AttemptError, StepError};

/// Names listed when a locator matches nothing.
const CLOSEST_NAMES: usize = 3;

/// Poll interval of auto-waits.
const POLL: Duration = Duration::from_millis(50);
/// How long a custom dropdown opened by a click may show no choice before
/// a closed one (`aria-expanded="false"`) is clicked once more.
const REOPEN_AFTER: Duration = Duration::from_millis(400);

/// Share of the viewport a canvas must cover for a page to count as drawn
/// on a canvas (a target that matches nothing there is refused at once).
const CANVAS_SHARE: f64 = 0.5;

/// How long a target may be missing before a canvas page refuses it.
const CANVAS_GRACE: Duration = Duration::from_millis(750);

/// The largest share of the viewport one visible canvas covers.
const CANVAS_SHARE_JS: &str = "(() => { const vw = innerWidth, vh = innerHeight; let best = 0; \
    for (const c of document.querySelectorAll('canvas')) { const r = c.getBoundingClientRect(); \
    const st = getComputedStyle(c); if (st.visibility === 'hidden' || st.display === 'none') continue; \
    const w = Math.max(0, Math.min(r.right, vw) - Math.max(r.left, 0)); \
    const h = Math.max(0, Math.min(r.bottom, vh) - Math.max(r.top, 0)); \
    best = Math.max(best, (w * h) / (vw * vh || 1)); } return best; })()";

/// How long a target may be missing before scrollable lists are searched.
const LIST_GRACE: Duration = Duration::from_millis(300);

/// Searches the page's scrollable lists (an overflow container more than
/// twice its height, or a list/listbox/grid/table/tree that scrolls) for
/// a text, screen by screen from the top, until it is rendered or the
/// budget ends. Virtual lists render only the rows in view: the scroll
/// event is dispatched at once after each move, so a list that renders in
/// its handler is read within a task, not a frame; one that renders on the
/// next frame gets a frame. Loop detection: a position seen before, or a
/// move that did not move, ends that list. Resolves to whether it found it.
const LIST_SEARCH_JS: &str = r#"(async (needle, budgetMs) => {
  const norm = (s) => (s || '').replace(/\s+/g, ' ').trim().toLowerCase();
  const want = norm(needle);
  if (!want) return false;
  const roles = ['list', 'listbox', 'grid', 'table', 'tree', 'treegrid', 'feed'];
  const lists = [...document.querySelectorAll('*')].filter((el) => {
    if (el.clientHeight <= 0 || el.scrollHeight <= el.clientHeight) return false;
    const ov = getComputedStyle(el).overflowY;
    const scrolls = ov === 'auto' || ov === 'scroll';
    return scrolls && (el.scrollHeight / el.clientHeight > 2 || roles.includes(el.getAttribute('role')));
  }).slice(0, 5);
  const end = performance.now() + budgetMs;
  // A task, without the 4 ms clamp of nested timers.
  const tick = () => new Promise((r) => { const c = new MessageChannel(); c.port1.onmessage = () => r(); c.port2.postMessage(0); });
  const frame = () => new Promise((r) => requestAnimationFrame(() => tick().then(r)));
  const move = (el, top) => { el.scrollTop = top; el.dispatchEvent(new Event('scroll')); };
  for (const el of lists) {
    const has = () => norm(el.textContent).includes(want);
    // Found: the innermost element holding the text goes to the middle of
    // the list, so acting on it needs no further scroll (and no redraw).
    const found = async () => {
      let hit = null;
      for (const e of el.querySelectorAll('*')) if (norm(e.textContent).includes(want)) hit = e;
      if (hit) { hit.scrollIntoView({ block: 'center' }); el.dispatchEvent(new Event('scroll')); await frame(); }
      return true;
    };
    if (has()) return found();
    // From where the list stands (an earlier search may have got halfway)
    // to the bottom, then from the top back to there.
    const from = el.scrollTop;
    const seen = new Set();
    let wait = tick, wrapped = false, yielded = performance.now();
    while (performance.now() < end) {
      const before = el.scrollTop;
      const key = Math.round(before);
      if (seen.has(key)) break;
      seen.add(key);
      const shown = el.textContent;
      move(el, before + el.clientHeight * 0.9);
      // A list that drew its rows in the handler is read at once; the page
      // gets a task every 16 ms of that (a screen costs a layout, 1–4 ms).
      const drawn = el.textContent !== shown;
      if (!drawn || performance.now() - yielded > 16) { await wait(); yielded = performance.now(); }
      // Rows drawn on the next frame rather than in the handler: wait frames.
      if (!drawn && el.textContent === shown && wait === tick && Math.abs(el.scrollTop - before) >= 1) { await frame(); wait = frame; }
      if (has()) return found();
      if (Math.abs(el.scrollTop - before) < 1) {
        if (wrapped || from === 0) break;
        wrapped = true;
        move(el, 0);
        await frame();
        if (has()) return found();
      }
      if (wrapped && el.scrollTop >= from) break;
    }
    // Searched through and not there: the list is left as it was. (When
    // the budget ran out first, it stays where it got to: the next
    // attempt goes on from there.)
    if (performance.now() < end) move(el, from);
  }
  return false;
})"#;

/// Roles a custom dropdown's choices carry.
const OPTION_ROLES: &[&str] = &["option", "menuitem", "menuitemradio", "treeitem"];

/// Drives one page for a run of steps — and the tab a click opens, once
/// one does (`target=_blank`, `window.open`): the steps after it run there.
pub struct Executor<'a> {
    opener: &'a dyn Page,
    /// The tab an action opened, followed.
    popup: Option<Box<dyn Page>>,
    /// The URL of a tab the last action opened, until taken.
    opened: Option<String>,
    sanitizer: Sanitizer,
    secrets: Arc<dyn SecretStore>,
    timeout: Duration,
    max_chars: usize,
    /// What the run's `extract:` steps have read, by name.
    outputs: BTreeMap<String, serde_json::Value>,
}

impl std::fmt::Debug for Executor<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Executor")
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl<'a> Executor<'a> {
    /// Creates an executor on `page`; `timeout` bounds each action and settle.
    pub fn new(
        page: &'a dyn Page,
        sanitizer: Sanitizer,
        secrets: Arc<dyn SecretStore>,
        timeout: Duration,
        max_chars: usize,
    ) -> Self {
        Self {
            opener: page,
            popup: None,
            opened: None,
            sanitizer,
            secrets,
            timeout,
            max_chars,
            outputs: BTreeMap::new(),
        }
    }

    /// Keeps what an `extract:` step read, for the `expect: output` steps
    /// after it.
    pub fn keep_output(&mut self, name: &str, value: serde_json::Value) {
        self.outputs.insert(name.to_owned(), value);
    }

    /// Sets what the run has read so far (a run continued from its
    /// checkpoint brings what its earlier steps read).
    pub fn set_outputs(&mut self, outputs: BTreeMap<String, serde_json::Value>) {
        self.outputs = outputs;
    }

    /// What the run's `extract:` steps have read, by name.
    pub fn outputs(&self) -> &BTreeMap<String, serde_json::Value> {
        &self.outputs
    }

    /// Returns the page the run is on: the tab an action opened, once one
    /// did, else the run's page.
    pub fn page(&self) -> &dyn Page {
        self.popup.as_deref().unwrap_or(self.opener)
    }

    /// Returns the URL of the tab the last action opened (and now drives), once.
    pub fn take_opened(&mut self) -> Option<String> {
        self.opened.take()
    }

    /// The ids of the tabs the current page opened; `None` where the
    /// engine cannot list them.
    async fn opened_tabs(&self) -> Option<std::collections::BTreeSet<String>> {
        let tabs = self.page().tabs().await.ok()?;
        Some(tabs.into_iter().filter(|t| !t.current).map(|t| t.id).collect())
    }

    /// Performs `action` like [`Executor::act_here`]; when a click or key
    /// press opened a new tab, the run follows it: later steps act there.
    pub async fn perform(
        &mut self,
        target: &Target,
        action: Action,
        value: Option<&ActionValue>,
    ) -> Result<Acted, ActError> {
        let watch = matches!(action, Action::Click | Action::DoubleClick | Action::Press);
        let before = if watch { self.opened_tabs().await } else { None };
        let acted = self.act_here(target, action, value).await?;
        if let Some(before) = before {
            self.follow_new_tab(&before).await;
        }
        Ok(acted)
    }

    /// Switches to the newest tab not in `before`, if there is one, and waits
    /// (bounded) for its `load`.
    async fn follow_new_tab(&mut self, before: &std::collections::BTreeSet<String>) {
        let Some(now) = self.opened_tabs().await else {
            return;
        };
        let Some(id) = now.difference(before).last().cloned() else {
            return;
        };
        match self.page().popup(&id).await {
            Ok(tab) => {
                let load = WaitCondition::LoadState(oxwright_engine::WaitUntil::Load);
                if let Err(e) = tab.wait_for(&load, self.timeout).await {
                    tracing::debug!(error = %e, "the new tab did not reach load");
                }
                self.opened = Some(tab.url().await.unwrap_or_default());
                self.popup = Some(tab);
            }
            Err(e) => tracing::warn!(error = %e, "a new tab opened but cannot be driven"),
        }
    }

    /// Returns the action deadline.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Takes an accessibility snapshot whose text (every line) has passed the sanitiser.
    pub async fn snapshot(&self) -> Result<Snapshot, EngineError> {
        self.snapshot_with(&SnapshotOptions {
            max_chars: self.max_chars,
        })
        .await
    }

    /// [`Executor::snapshot`] with other options (a larger cap for an error artefact).
    pub async fn snapshot_with(&self, opts: &SnapshotOptions) -> Result<Snapshot, EngineError> {
        let mut snap = self.page().snapshot(opts).await?;
        for line in &mut snap.lines {
            line.text = self.sanitizer.clean_page_text(&line.text);
        }
        snap.text = self.clean_lines(&snap.text);
        snap.url = self.sanitizer.clean(&snap.url);
        Ok(snap)
    }

    /// Renders `snap` again under `max_chars` (its lines are already clean).
    pub fn within(&self, snap: &Snapshot, max_chars: usize) -> String {
        snap.within(max_chars).0
    }

    fn clean_lines(&self, text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        for line in text.split_inclusive('\n') {
            out.push_str(&self.sanitizer.clean_page_text(line));
        }
        out
    }

    /// Navigates to `url` and waits for `load`.
    pub async fn goto(&self, url: &url::Url) -> Result<(), EngineError> {
        let opts = GotoOptions::load(self.timeout.max(Duration::from_secs(15)));
        self.page().goto(url, &opts).await.map(|_| ())
    }

    /// Returns every element `locator` matches now (the precheck).
    pub async fn locate(&self, locator: &Locator) -> Result<Vec<ElementId>, EngineError> {
        Ok(self
            .page()
            .locate(locator)
            .await?
            .into_iter()
            .map(|e| e.id)
            .collect())
    }

    /// Polls `locator` until it matches exactly one element or `limit` passes.
    pub async fn wait_for_one(&self, locator: &Locator, limit: Duration) -> Result<ElementId, AttemptError> {
        self.wait_for_target(locator, None, limit).await
    }

    /// Polls `locator` until it matches exactly one element (with `nth`:
    /// until its `nth` match, 0-based or negative from the last, exists) or
    /// `limit` passes.
    pub async fn wait_for_target(
        &self,
        locator: &Locator,
        nth: Option<i64>,
        limit: Duration,
    ) -> Result<ElementId, AttemptError> {
        let started = Instant::now();
        let deadline = started + limit;
        let mut canvas_checked = false;
        let mut lists_searched = false;
        loop {
            let mut found = self
                .locate(locator)
                .await
                .map_err(|e| AttemptError::from_engine(&e, self.sanitizer.clean(&e.to_string())))?;
            // A target still missing after a moment on a page drawn on a
            // canvas is refused at once (late elements get that moment).
            if found.is_empty()
                && !canvas_checked
                && (started.elapsed() >= CANVAS_GRACE || Instant::now() >= deadline)
            {
                canvas_checked = true;
                if let Some(share) = self.canvas_share().await {
                    return Err(AttemptError::Canvas(format!(
                        "{locator} matched 0 elements and a canvas covers {:.0} % of the page: \
                         what is drawn on a canvas has no elements to act on",
                        share * 100.0
                    )));
                }
            }
            // Missing still: it may be a row a virtual list has not drawn.
            if found.is_empty() && !lists_searched && started.elapsed() >= LIST_GRACE {
                lists_searched = true;
                if let Some(needle) = list_needle(locator) {
                    let left = deadline.saturating_duration_since(Instant::now());
                    let script = format!(
                        "{LIST_SEARCH_JS}({}, {})",
                        serde_json::to_string(&needle).unwrap_or_default(),
                        left.as_millis()
                    );
                    let hit = self.page().evaluate(&script, left + Duration::from_secs(1)).await;
                    if matches!(hit, Ok(serde_json::Value::Bool(true))) {
                        // Drawn now: look again at once.
                        continue;
                    }
                }
            }
            match nth {
                Some(n) => {
                    if let Some(at) = crate::grammar::pick_nth(n, found.len()) {
                        return Ok(found.swap_remove(at));
                    }
                }
                None if found.len() == 1 => return Ok(found.into_iter().next().expect("one element")),
                None => {}
            }
            if Instant::now() >= deadline {
                if found.is_empty() {
                    return Err(self.no_match(locator).await);
                }
                if let Some(n) = nth {
                    return Err(AttemptError::Action(format!(
                        "{locator} matched {} elements, so it has no nth {n} (0 is the first, -1 the last)",
                        found.len()
                    )));
                }
                return Err(AttemptError::NotUnique {
                    locator: locator.to_string(),
                    count: found.len(),
                });
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// The share of the viewport a canvas covers, when it is at least
    /// [`CANVAS_SHARE`].
    async fn canvas_share(&self) -> Option<f64> {
        let share = self
            .page()
            .evaluate(CANVAS_SHARE_JS, Duration::from_secs(2))
            .await
            .ok()?
            .as_f64()?;
        (share >= CANVAS_SHARE).then_some(share)
    }

    /// Returns the error of `locator` matching nothing, with the page's
    /// accessible names nearest to it (sanitised like every snapshot line).
    pub async fn no_match(&self, locator: &Locator) -> AttemptError {
        let closest = match self.snapshot().await {
            Ok(snap) => closest_names(locator, &snap, CLOSEST_NAMES)
                .into_iter()
                .map(|n| self.sanitizer.clean(&n))
                .collect(),
            Err(e) => {
                tracing::debug!(error = %e, "no snapshot for the closest names");
                Vec::new()
            }
        };
        AttemptError::NoMatch {
            locator: locator.to_string(),
            closest,
        }
    }

    /// Performs `action` on `target` in the current page, then waits for the
    /// page to settle. Placeholders in `value` are resolved here, at the
    /// moment of typing.
    pub async fn act_here(
        &self,
        target: &Target,
        action: Action,
        value: Option<&ActionValue>,
    ) -> Result<Acted, ActError> {
        let text = value.map(ActionValue::text).unwrap_or_default();
        let act = match action {
            Action::Click => Act::Click,
            Action::DoubleClick => Act::DoubleClick,
            Action::Hover => Act::Hover,
            Action::Check => Act::Check,
            Action::Uncheck => Act::Uncheck,
            Action::Scroll => Act::ScrollIntoView,
            Action::Press => Act::Press {
                key: text.to_string(),
            },
            Action::Wait => return Ok(Acted::default()),
            Action::Fill | Action::Select => {
                let (value, secret) = resolve_secret(text, self.secrets.as_ref(), &self.sanitizer)
                    .await
                    .map_err(|e| ActError::Fatal(e.into()))?;
                let plain = value.expose().to_string();
                drop(value);
                if action == Action::Fill {
                    Act::Fill { value: plain, secret }
                } else {
                    Act::Select { values: vec![plain] }
                }
            }
        };
        let opts = ActOptions {
            timeout: self.timeout,
            // Scrolling and hovering seldom start work worth waiting for.
            settle: !matches!(action, Action::Scroll),
        };
        let result = self.page().act(target, &act, &opts).await;
        let result = match result {
            // Not a `<select>`: a custom dropdown (click, pick, verify).
            Err(e) if action == Action::Select && e.message.contains("not a select element") => {
                let Act::Select { values } = &act else {
                    unreachable!("a select")
                };
                return self.custom_select(target, &values[0], text).await;
            }
            other => other,
        };
        result.map_err(|e| {
            if e.is_fatal() {
                ActError::Engine(e)
            } else {
                // The engine never repeats a typed value, but the
                // sanitiser still sees every message that leaves.
                let detail = self.sanitizer.clean(&e.message);
                let detail = if action == Action::Select {
                    format!("{detail} (wanted {text:?})")
                } else {
                    detail
                };
                match e.kind {
                    EngineErrorKind::Timeout | EngineErrorKind::WaitForTimeout => ActError::Timeout(detail),
                    _ => ActError::Page(detail),
                }
            }
        })
    }

    /// Waits up to `limit` for `assertion` to hold.
    pub async fn check(&self, assertion: &Assertion, limit: Duration) -> Result<(), ActError> {
        let deadline = Instant::now() + limit;
        if let Assertion::Output(output) = assertion {
            // What was read does not change while waiting.
            return match output.verdict(&self.outputs) {
                None => Ok(()),
                Some(why) => Err(ActError::Attempt(AttemptError::Assertion(format!(
                    "expect output: {}",
                    self.sanitizer.clean(&why)
                )))),
            };
        }
        if let Assertion::Visible { locator, nth } = assertion {
            return self
                .wait_for_target(locator, *nth, limit)
                .await
                .map(|_| ())
                .map_err(ActError::Attempt);
        }
        loop {
            let why = match self.check_once(assertion).await {
                Ok(None) => return Ok(()),
                Ok(Some(why)) => why,
                Err(e) if e.is_fatal() => return Err(ActError::Engine(e)),
                Err(e) if e.kind == EngineErrorKind::Unsupported => {
                    return Err(ActError::Page(self.sanitizer.clean(&e.message)));
                }
                Err(e) => self.sanitizer.clean(&e.message),
            };
            if Instant::now() >= deadline {
                return Err(ActError::Attempt(AttemptError::Assertion(format!(
                    "expect {}: {why} (after {} ms)",
                    assertion.name(),
                    limit.as_millis()
                ))));
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Checks `assertion` once: `None` when it holds, else why not.
    async fn check_once(&self, assertion: &Assertion) -> Result<Option<String>, EngineError> {
        let one = |locator: &Locator, nth: Option<i64>, found: usize| -> Option<String> {
            match nth {
                Some(n) if crate::grammar::pick_nth(n, found).is_some() => None,
                Some(n) => Some(format!(
                    "{locator} matched {found} elements, so it has no nth {n}"
                )),
                None if found == 1 => None,
                None => Some(format!("{locator} matched {found} elements, not exactly one")),
            }
        };
        let pick = |found: &[ElementId], nth: Option<i64>| {
            crate::grammar::pick_nth(nth.unwrap_or(0), found.len()).and_then(|at| found.get(at).cloned())
        };
        Ok(match assertion {
            Assertion::Visible { locator, nth } => one(locator, *nth, self.locate(locator).await?.len()),
            Assertion::Hidden(locator) => {
                let n = self.locate(locator).await?.len();
                (n > 0).then(|| format!("{locator} still matches {n} visible element(s)"))
            }
            Assertion::Count { locator, expected } => {
                let n = self.locate(locator).await?.len();
                (n != *expected).then(|| format!("{locator} matched {n} elements, expected {expected}"))
            }
            Assertion::UrlIncludes(text) => {
                let url = self.page().url().await?;
                (!url.contains(text.as_str())).then(|| format!("the page is at {url}"))
            }
            Assertion::Output(output) => output.verdict(&self.outputs),
            Assertion::Text { locator, nth, .. }
            | Assertion::Value { locator, nth, .. }
            | Assertion::Checked { locator, nth, .. } => {
                let found = self.locate(locator).await?;
                if let Some(why) = one(locator, *nth, found.len()) {
                    return Ok(Some(why));
                }
                let Some(id) = pick(&found, *nth) else {
                    return Ok(Some(format!("{locator} matched nothing")));
                };
                let state = self.page().inspect(&Target::Element(id)).await?;
                self.compare(assertion, &state).await.map_err(|e| match e {
                    ActError::Engine(e) => e,
                    other => EngineError::new(EngineErrorKind::InvalidInput, other.to_string()),
                })?
            }
        })
    }

    /// Compares an element's state with a text, value or checked assertion.
    async fn compare(&self, assertion: &Assertion, state: &ElementState) -> Result<Option<String>, ActError> {
        let shown = |s: &str| {
            let s = self.sanitizer.clean(s);
            let mut cut: String = s.chars().take(200).collect();
            if cut.len() < s.len() {
                cut.push('…');
            }
            format!("{cut:?}")
        };
        Ok(match assertion {
            Assertion::Text { expected, .. } => {
                let have = oxwright_engine::normalize(&state.text).to_lowercase();
                let want = oxwright_engine::normalize(expected).to_lowercase();
                (!have.contains(&want)).then(|| format!("its text is {}", shown(&state.text)))
            }
            Assertion::Checked { checked, .. } => match state.checked {
                None => Some("it is not a checkbox, radio or aria-checked element".into()),
                Some(c) if c == *checked => None,
                Some(c) => Some(format!("it is {}", if c { "checked" } else { "unchecked" })),
            },
            Assertion::Value { expected, .. } => {
                let (want, secret) = resolve_secret(expected.text(), self.secrets.as_ref(), &self.sanitizer)
                    .await
                    .map_err(|e| ActError::Fatal(e.into()))?;
                let want = want.expose().to_string();
                match &state.value {
                    None if state.secret => (!want.is_empty())
                        .then(|| "it is a password field, whose value is never read".to_string()),
                    None => Some("it is not a form control".into()),
                    Some(v) if *v == want => None,
                    // A value the secret store supplied is never shown, nor what differs from it.
                    Some(_) if secret => Some(format!("its value is not {}", expected.text())),
                    Some(v) => Some(format!("its value is {}", shown(v))),
                }
            }
            _ => None,
        })
    }

    /// Selects `value` in a dropdown that is not a `<select>`: clicks it
    /// open, clicks the one choice (option, menu item) named `value`, and
    /// checks that the dropdown then shows it. `shown` is the value as
    /// written (a placeholder), for messages.
    async fn custom_select(&self, target: &Target, value: &str, shown: &str) -> Result<Acted, ActError> {
        let opts = ActOptions {
            timeout: self.timeout,
            settle: true,
        };
        let engine = |e: EngineError| {
            if e.is_fatal() {
                ActError::Engine(e)
            } else {
                ActError::Page(self.sanitizer.clean(&e.message))
            }
        };
        let opened = self
            .page()
            .act(target, &Act::Click, &opts)
            .await
            .map_err(engine)?;
        let opened_at = Instant::now();
        let deadline = opened_at + self.timeout;
        let mut reopened = None;
        let choice = loop {
            let mut exact = Vec::new();
            let mut loose = Vec::new();
            for role in OPTION_ROLES {
                let loc = Locator::Role {
                    role: (*role).to_string(),
                    name: Some(value.to_string()),
                    exact: false,
                };
                for e in self.page().locate(&loc).await.map_err(engine)? {
                    if e.name.as_deref().is_some_and(|n| {
                        oxwright_engine::normalize(n).eq_ignore_ascii_case(&oxwright_engine::normalize(value))
                    }) {
                        exact.push(e.id);
                    } else {
                        loose.push(e.id);
                    }
                }
            }
            match (exact.len(), loose.len()) {
                (1, _) => break exact.swap_remove(0),
                (0, 1) => break loose.swap_remove(0),
                _ => {}
            }
            // A widget that opens on focus and toggles on click was opened by
            // the click's mousedown and closed by the click: it says it is
            // closed and shows no choice. One more click opens it.
            if exact.len() + loose.len() == 0 && reopened.is_none() && opened_at.elapsed() >= REOPEN_AFTER {
                let state = self.page().inspect(target).await.map_err(engine)?;
                if state.expanded == Some(false) {
                    reopened = Some(
                        self.page()
                            .act(target, &Act::Click, &opts)
                            .await
                            .map_err(engine)?,
                    );
                    continue;
                }
            }
            if Instant::now() >= deadline {
                let why = if exact.len() + loose.len() == 0 {
                    "no choice with that name appeared after opening it".to_string()
                } else {
                    format!("{} choices match that name", exact.len() + loose.len())
                };
                return Err(ActError::Page(format!(
                    "custom dropdown: {why} (wanted {shown:?})"
                )));
            }
            tokio::time::sleep(POLL).await;
        };
        let picked = self
            .page()
            .act(&Target::Element(choice), &Act::Click, &opts)
            .await
            .map_err(engine)?;
        // The dropdown must now show the choice (a widget may ignore the click).
        let want = oxwright_engine::normalize(value).to_lowercase();
        let state = self.page().inspect(target).await.map_err(engine)?;
        let text = oxwright_engine::normalize(&format!("{} {}", state.text, state.value.unwrap_or_default()))
            .to_lowercase();
        if !text.contains(&want) {
            return Err(ActError::Page(format!(
                "custom dropdown: after picking {shown:?} it does not show it"
            )));
        }
        let again = reopened.unwrap_or_default();
        Ok(Acted {
            action: opened.action + again.action + picked.action,
            settle: opened.settle + again.settle + picked.settle,
            navigated: opened.navigated || again.navigated || picked.navigated,
        })
    }

    /// Takes a PNG of the viewport with every secret-filled field blacked
    /// out; a page that cannot do that refuses (`unsupported`).
    pub async fn screenshot(&self) -> Result<Vec<u8>, EngineError> {
        self.page()
            .screenshot(&ScreenshotOptions {
                mask_secrets: true,
                ..ScreenshotOptions::default()
            })
            .await
    }
}

/// The text a scrollable list would show for `locator`'s element, if it names one.
fn list_needle(locator: &Locator) -> Option<String> {
    match locator {
        Locator::Role { name: Some(name), .. } => Some(name.clone()),
        Locator::Text { text, .. } | Locator::Label { text, .. } => Some(text.clone()),
        _ => None,
    }
    .filter(|n| !n.trim().is_empty())
}

/// Why an action failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ActError {
    /// The page refused (hidden, disabled, not a select, stale …); the next attempt may do better.
    #[error("{0}")]
    Page(String),
    /// The action's deadline ran out.
    #[error("{0}")]
    Timeout(String),
    /// The engine failed for good (crash, browser gone).
    #[error(transparent)]
    Engine(EngineError),
    /// An error that ends the steps (a secret with no value).
    #[error(transparent)]
    Fatal(StepError),
    /// The attempt failed for a typed reason (a precheck, an assertion).
    #[error(transparent)]
    Attempt(AttemptError),
}

impl ActError {
    /// The attempt failure of an error that does not end the run.
    pub fn attempt(&self) -> AttemptError {
        match self {
            ActError::Timeout(m) => AttemptError::Timeout(m.clone()),
            ActError::Attempt(e) => e.clone(),
            other => AttemptError::Action(other.to_string()),
        }
    }
}
