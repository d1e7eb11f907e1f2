//! The browser tools: navigation, snapshots, actions, waits, evaluation,
//! screenshots, console, network, dialogs, uploads and tabs.

use std::time::Duration;

use oxwright_engine::{
    Act, ActOptions, DialogAction, EngineError, EngineErrorKind, GotoOptions, MouseButton, ScreenshotOptions,
    SnapshotOptions, Target, WaitCondition,
};
use oxwright_jobs::Locator;
use serde_json::Value;

use super::OxwrightMcp;
use super::util::*;
use super::views::{full_view, partial_view};
use crate::args::*;
use crate::errors::explain;

/// Opens `url` in `tab`; a tab's first navigation starts from the saved
/// login `state`, when the server has one.
async fn open_url(
    tab: &mut crate::session::Tab,
    url: &url::Url,
    timeout: Duration,
    state: Option<&oxwright_engine::StorageState>,
) -> Result<oxwright_engine::Navigated, EngineError> {
    let opts = GotoOptions::load(timeout);
    let fresh = std::mem::replace(&mut tab.fresh, false);
    match state {
        Some(state) if fresh => tab.page.restore_state(state, url, &opts).await,
        _ => tab.page.goto(url, &opts).await,
    }
}

impl OxwrightMcp {
    pub(super) async fn navigate(&self, raw: &str, snapshot: bool) -> Result<Reply, String> {
        let url = parse_url(raw)?;
        let t = self.config().navigation_timeout;
        let state = self.config().storage_state.clone();
        self.with_tab(snapshot, move |tab| {
            Box::pin(async move {
                let nav = open_url(tab, &url, t, state.as_deref()).await?;
                tab.last_snapshot = None;
                let mut s = format!("Navigated to {}", nav.final_url);
                if nav.status != 0 {
                    s.push_str(&format!(" (HTTP {})", nav.status));
                }
                s.push('.');
                Ok(s)
            })
        })
        .await
    }

    pub(super) async fn snapshot(&self, a: SnapshotArgs) -> Result<Reply, String> {
        let cap = a
            .max_chars
            .unwrap_or(self.config().snapshot_max_chars)
            .clamp(500, 200_000);
        let diff = a.diff;
        let target: Option<String> = a
            .target
            .as_deref()
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(str::to_owned);
        if diff && (a.scope.is_some() || a.find.is_some() || target.is_some() || a.depth.is_some()) {
            return Err("diff takes no scope, target, find or depth".into());
        }
        if a.depth == Some(0) {
            return Err("depth counts levels from 1 (the top level only)".into());
        }
        // A selector target is found first, then shown as its ref's region.
        let located = match target.as_deref() {
            Some(t) if !is_ref(t) => Some(Target::locator(Locator::parse_selector(t))),
            _ => None,
        };
        let mut a = a;
        if a.scope.is_none() && located.is_none() {
            a.scope = target
                .as_deref()
                .map(|t| t.strip_prefix("ref=").unwrap_or(t).to_string());
        }
        self.with_tab_raw(move |tab| {
            Box::pin(async move {
                let found = match &located {
                    Some(t) => {
                        let Target::Locator { locator, .. } = t else { unreachable!() };
                        let hits = tab.page.locate(locator).await?;
                        match hits.len() {
                            0 => return Err(EngineError::not_found(t)),
                            1 => Some(hits[0].id.clone()),
                            n => return Err(EngineError::not_unique(t, n)),
                        }
                    }
                    None => None,
                };
                let snap = tab.page.snapshot(&SnapshotOptions { max_chars: cap }).await?;
                if let Some(id) = found {
                    match snap.elements.iter().find(|e| e.id == id) {
                        Some(e) => a.scope = Some(e.ref_id.clone()),
                        None => {
                            return Ok(Reply::text(format!(
                                "- Page URL: {}\n- Page Title: {}\nThe element {} matches is not in the snapshot \
                                 (it has no role of its own); take a full snapshot.\n",
                                snap.url,
                                snap.title,
                                target.as_deref().unwrap_or_default()
                            )));
                        }
                    }
                }
                let mut text = format!("- Page URL: {}\n- Page Title: {}\n", snap.url, snap.title);
                // A region or a search answers from this snapshot and
                // leaves the tab's last full snapshot (for diff) alone.
                if let Some(view) = partial_view(&snap, &a, cap) {
                    text.push_str(&view);
                    return Ok(Reply::text(text));
                }
                let lines = rendered_lines(&snap);
                text.push_str(&full_view(&snap, &lines, diff, tab.last_snapshot.as_deref(), cap));
                tab.last_snapshot = Some(lines);
                Ok(Reply::text(text))
            })
        })
        .await
    }

    pub(super) async fn act(&self, el: &ElementArgs, act: Act, snapshot: bool) -> Result<Reply, String> {
        let target = target_of(el)?;
        let opts = ActOptions {
            timeout: self.config().action_timeout,
            // Filling and hovering seldom start work worth waiting for;
            // clicks, keys and selections do (navigations, fetches).
            settle: !matches!(act, Act::Fill { .. } | Act::Hover),
        };
        let label = describe(el, &target);
        self.with_tab(snapshot, move |tab| {
            Box::pin(async move {
                let done = tab.page.act(&target, &act, &opts).await?;
                let verb = match &act {
                    Act::Click => "Clicked",
                    Act::DoubleClick => "Double-clicked",
                    Act::ClickWith { button, .. } if *button == MouseButton::Right => "Right-clicked",
                    Act::ClickWith { button, .. } if *button == MouseButton::Middle => "Middle-clicked",
                    Act::ClickWith { .. } => "Clicked",
                    Act::Fill { .. } => "Filled",
                    Act::Type { .. } => "Typed into",
                    Act::Press { .. } => "Pressed a key on",
                    Act::Select { .. } => "Selected options of",
                    Act::Check => "Checked",
                    Act::Uncheck => "Unchecked",
                    Act::Hover => "Hovered over",
                    Act::ScrollIntoView => "Scrolled to",
                    Act::Focus => "Focused",
                };
                let nav = if done.navigated {
                    " The page navigated."
                } else {
                    ""
                };
                Ok(format!("{verb} {label}.{nav}"))
            })
        })
        .await
    }

    pub(super) async fn drag(&self, a: &DragArgs) -> Result<Reply, String> {
        let (start, end) = a.ends();
        let from = target_of(&start).map_err(|e| format!("startTarget: {e}"))?;
        let to = target_of(&end).map_err(|e| format!("endTarget: {e}"))?;
        let opts = ActOptions {
            timeout: self.config().action_timeout,
            settle: true,
        };
        let label = format!("{} onto {}", describe(&start, &from), describe(&end, &to));
        self.with_tab(a.snap.snapshot, move |tab| {
            Box::pin(async move {
                let done = tab.page.drag(&from, &to, &opts).await?;
                let nav = if done.navigated {
                    " The page navigated."
                } else {
                    ""
                };
                Ok(format!("Dragged {label}.{nav}"))
            })
        })
        .await
    }

    pub(super) async fn resolve_secrets(&self, text: &str) -> Result<(String, bool), String> {
        let (value, had) = oxwright_secrets::resolve(
            text,
            self.shared.services.secrets.as_ref(),
            &self.shared.sanitizer,
        )
        .await
        .map_err(|e| {
            format!("{e}; the server's secrets file names the secrets `{{{{NAME}}}}` can stand for")
        })?;
        Ok((value.expose().to_string(), had))
    }

    pub(super) async fn type_text(&self, a: &TypeArgs) -> Result<Reply, String> {
        let (value, secret) = self.resolve_secrets(&a.text).await?;
        let target = target_of(&a.el)?;
        let label = describe(&a.el, &target);
        let opts = ActOptions {
            timeout: self.config().action_timeout,
            settle: true,
        };
        let (slowly, submit) = (a.slowly, a.submit);
        let quiet = ActOptions {
            settle: false,
            ..opts.clone()
        };
        self.with_tab(a.snap.snapshot, move |tab| {
            Box::pin(async move {
                let act = if slowly {
                    tab.page.act(&target, &Act::Focus, &quiet).await?;
                    Act::Type { text: value }
                } else {
                    Act::Fill { value, secret }
                };
                tab.page
                    .act(&target, &act, if slowly { &opts } else { &quiet })
                    .await?;
                let mut s = format!("Typed into {label}.");
                if submit {
                    let done = tab
                        .page
                        .act(&target, &Act::Press { key: "Enter".into() }, &opts)
                        .await?;
                    s.push_str(" Pressed Enter.");
                    if done.navigated {
                        s.push_str(" The page navigated.");
                    }
                }
                Ok(s)
            })
        })
        .await
    }

    pub(super) async fn fill_form(&self, a: FillFormArgs) -> Result<Reply, String> {
        let mut steps = Vec::new();
        for f in a.fields {
            let target = target_of(&ElementArgs {
                element: f.name.clone(),
                target: Some(f.target.clone()),
                ref_: None,
            })?;
            let kind = f.kind.as_deref().unwrap_or("textbox").to_ascii_lowercase();
            let act = match kind.as_str() {
                "checkbox" | "radio" => match f.value.trim().to_ascii_lowercase().as_str() {
                    "true" | "on" | "yes" | "1" | "checked" => Act::Check,
                    "false" | "off" | "no" | "0" | "unchecked" => Act::Uncheck,
                    other => {
                        return Err(format!(
                            "field {}: a {kind} takes true or false, not {other:?}",
                            f.name.as_deref().unwrap_or(&f.target)
                        ));
                    }
                },
                "combobox" | "select" => Act::Select {
                    values: vec![f.value.clone()],
                },
                "textbox" | "slider" | "text" | "" => {
                    let (value, secret) = self.resolve_secrets(&f.value).await?;
                    Act::Fill { value, secret }
                }
                other => {
                    return Err(format!(
                        "field {}: unknown type {other:?}; use textbox, checkbox, radio, combobox or slider",
                        f.name.as_deref().unwrap_or(&f.target)
                    ));
                }
            };
            let label = f.name.clone().unwrap_or_else(|| f.target.clone());
            steps.push((target, act, label));
        }
        let opts = ActOptions {
            timeout: self.config().action_timeout,
            settle: true,
        };
        self.with_tab(a.snap.snapshot, move |tab| {
            Box::pin(async move {
                let mut done = Vec::new();
                for (target, act, label) in &steps {
                    tab.page.act(target, act, &opts).await.map_err(|mut e| {
                        e.message = format!("field {label}: {} (fields before it were filled)", e.message);
                        e
                    })?;
                    done.push(label.clone());
                }
                Ok(format!("Filled {} field(s): {}.", done.len(), done.join(", ")))
            })
        })
        .await
    }

    pub(super) async fn press_key(&self, key: String, snapshot: bool) -> Result<Reply, String> {
        let opts = ActOptions {
            timeout: self.config().action_timeout,
            settle: true,
        };
        self.with_tab(snapshot, move |tab| {
            Box::pin(async move {
                // The focused element takes the key; with none, the body does.
                let focused = Target::locator(Locator::css(":focus"));
                let target = match tab.page.locate(&Locator::css(":focus")).await {
                    Ok(found) if found.len() == 1 => focused,
                    _ => Target::locator(Locator::css("body")),
                };
                let done = tab
                    .page
                    .act(&target, &Act::Press { key: key.clone() }, &opts)
                    .await?;
                let nav = if done.navigated {
                    " The page navigated."
                } else {
                    ""
                };
                Ok(format!("Pressed {key}.{nav}"))
            })
        })
        .await
    }

    pub(super) async fn wait_for(&self, a: WaitForArgs) -> Result<Reply, String> {
        let t = self.config().navigation_timeout;
        let mut conditions = Vec::new();
        if let Some(secs) = a.time {
            if !(0.0..=60.0).contains(&secs) || secs.is_nan() {
                return Err(format!("time {secs} is outside 0..=60 seconds"));
            }
            conditions.push(WaitCondition::Time(Duration::from_secs_f64(secs)));
        }
        if let Some(text) = a.text {
            conditions.push(WaitCondition::Text(text));
        }
        if let Some(text) = a.text_gone {
            conditions.push(WaitCondition::TextGone(text));
        }
        if conditions.is_empty() {
            return Err("give time (seconds), text or textGone".into());
        }
        self.with_tab(a.snap.snapshot, move |tab| {
            Box::pin(async move {
                let mut said = Vec::new();
                for c in &conditions {
                    tab.page.wait_for(c, t).await?;
                    said.push(match c {
                        WaitCondition::Time(d) => format!("waited {} ms", d.as_millis()),
                        WaitCondition::Text(s) => format!("\"{s}\" appeared"),
                        WaitCondition::TextGone(s) => format!("\"{s}\" is gone"),
                        other => format!("{other:?}"),
                    });
                }
                Ok(format!("Done: {}.", said.join(", ")))
            })
        })
        .await
    }

    pub(super) async fn evaluate(&self, a: EvaluateArgs) -> Result<Reply, String> {
        let f = a.function.trim().to_string();
        let is_function = f.starts_with("function") || f.starts_with("async") || f.contains("=>");
        let expression = match (a.el.target(), is_function) {
            (Some(t), true) => {
                let t = t.trim();
                if is_ref(t) {
                    return Err(
                        "browser_evaluate on an element takes a CSS selector as target, not a snapshot ref"
                            .into(),
                    );
                }
                let sel = serde_json::to_string(t).unwrap_or_default();
                format!(
                    "(() => {{ const __el = document.querySelectorAll({sel}); \
                     if (__el.length !== 1) throw new Error(`${{__el.length}} elements match {}`); \
                     return ({f})(__el[0]); }})()",
                    t.replace('`', "'")
                )
            }
            (None, true) => format!("({f})()"),
            (_, false) => f,
        };
        let t = self.config().action_timeout;
        self.with_tab_raw(move |tab| {
            Box::pin(async move {
                let value = tab.page.evaluate(&expression, t).await?;
                let text = match &value {
                    Value::String(s) => s.clone(),
                    other => serde_json::to_string_pretty(other).unwrap_or_default(),
                };
                let (text, _) = cap_text(&text, 100_000);
                Ok(Reply::text(format!("### Result\n{text}\n")))
            })
        })
        .await
    }

    pub(super) async fn screenshot(&self, a: ScreenshotArgs) -> Result<Reply, String> {
        if let Some(kind) = a.kind.as_deref().filter(|k| !k.eq_ignore_ascii_case("png")) {
            return Err(format!("type {kind:?} is not taken; screenshots are PNG"));
        }
        let element = match a.el.target() {
            Some(_) => Some(target_of(&a.el)?),
            None => None,
        };
        let viewport = match (a.width, a.height) {
            (Some(w), Some(h)) => Some((w, h)),
            (None, None) => None,
            _ => return Err("give both width and height, or neither".into()),
        };
        let opts = ScreenshotOptions {
            full_page: a.full_page,
            element,
            mask_secrets: false,
        };
        let shared = self.shared.clone();
        let filename = a.filename.clone();
        self.with_tab_raw(move |tab| {
            Box::pin(async move {
                if let Some((w, h)) = viewport {
                    tab.page.set_viewport(w, h).await?;
                }
                let png = tab.page.screenshot(&opts).await?;
                let path = shared
                    .screenshots
                    .save(filename.as_deref(), &png)
                    .map_err(|e| EngineError::new(EngineErrorKind::InvalidInput, e.to_string()))?;
                Ok(Reply {
                    text: format!(
                        "Took a screenshot ({} bytes), saved to {}.",
                        png.len(),
                        path.display()
                    ),
                    images: vec![png],
                    structured: None,
                })
            })
        })
        .await
    }

    pub(super) async fn find(&self, a: FindArgs) -> Result<Reply, String> {
        let cap = a
            .max_chars
            .unwrap_or(self.config().snapshot_max_chars)
            .clamp(500, 200_000);
        let text = a.text.as_deref().map(str::trim).filter(|t| !t.is_empty());
        let regex = a.regex.as_deref().map(str::trim).filter(|t| !t.is_empty());
        let (label, regex) = match (text, regex) {
            (Some(_), Some(_)) | (None, None) => return Err("give text or regex, one of them".into()),
            (Some(t), None) => (format!("{t:?}"), None),
            (None, Some(r)) => (format!("/{}/", r.trim_matches('/')), Some(pattern(r)?)),
        };
        let text = text.map(str::to_owned);
        self.with_tab_raw(move |tab| {
            Box::pin(async move {
                let snap = tab.page.snapshot(&SnapshotOptions { max_chars: cap }).await?;
                let (body, hits) = match (&text, &regex) {
                    (Some(t), _) => snap.find(t, cap),
                    (None, Some(re)) => snap.find_by(|line| re.is_match(line), cap),
                    (None, None) => (String::new(), 0),
                };
                let mut out = format!("- Page URL: {}\n- Page Title: {}\n", snap.url, snap.title);
                if hits == 0 {
                    out.push_str(&format!("Nothing on the page matches {label}.\n"));
                } else {
                    out.push_str(&format!(
                        "### {hits} line(s) matching {label}\n```yaml\n{body}```\n"
                    ));
                }
                Ok(Reply::text(out))
            })
        })
        .await
    }

    pub(super) async fn console(&self, least: ConsoleLevel) -> Result<Reply, String> {
        self.with_tab_raw(move |tab| {
            Box::pin(async move {
                drain_console(tab).await;
                let lines: Vec<String> = tab
                    .console
                    .iter()
                    .filter(|m| ConsoleLevel::of(&m.level) <= least)
                    .map(|m| match &m.url {
                        Some(u) => format!("- [{}] {} ({u})", m.level, m.text),
                        None => format!("- [{}] {}", m.level, m.text),
                    })
                    .collect();
                if lines.is_empty() {
                    return Ok(Reply::text("No console messages."));
                }
                let (text, _) = cap_text(&lines.join("\n"), 50_000);
                Ok(Reply::text(text))
            })
        })
        .await
    }

    pub(super) async fn network(
        &self,
        include_static: bool,
        filter: Option<regex::Regex>,
    ) -> Result<Reply, String> {
        const SCRIPT: &str = "(() => performance.getEntriesByType('navigation').concat(performance.getEntriesByType('resource')).map(e => ({ url: e.name, type: e.entryType === 'navigation' ? 'document' : e.initiatorType, status: e.responseStatus || 0, ms: Math.round(e.duration), bytes: e.transferSize || 0 })))()";
        let t = self.config().action_timeout;
        self.with_tab_raw(move |tab| {
            Box::pin(async move {
                let refused = tab.page.policy_refusals().await;
                tab.refused.extend(refused);
                let mut lines = Vec::new();
                // What the engine saw on the wire, numbered for
                // browser_network_request; else the page's Resource Timing.
                let recorded = tab.page.requests().await;
                let entries = match &recorded {
                    Ok(_) => Value::Null,
                    Err(_) => tab.page.evaluate(SCRIPT, t).await?,
                };
                for (n, r) in recorded.iter().flatten().enumerate() {
                    if (r.is_static() && r.failure.is_none() && !include_static)
                        || filter.as_ref().is_some_and(|f| !f.is_match(&r.url))
                    {
                        continue;
                    }
                    lines.push(format!("{}. {}", n + 1, request_line(r)));
                }
                for e in entries.as_array().into_iter().flatten() {
                    let kind = e["type"].as_str().unwrap_or("other");
                    let is_static = matches!(
                        kind,
                        "img" | "image" | "css" | "link" | "font" | "video" | "audio"
                    );
                    let url = e["url"].as_str().unwrap_or("");
                    if (is_static && !include_static) || filter.as_ref().is_some_and(|f| !f.is_match(url)) {
                        continue;
                    }
                    let status = match e["status"].as_u64() {
                        Some(0) | None => String::new(),
                        Some(s) => format!(" => [{s}]"),
                    };
                    lines.push(format!(
                        "- [{kind}] {}{status} {} ms, {} bytes",
                        e["url"].as_str().unwrap_or(""),
                        e["ms"],
                        e["bytes"]
                    ));
                }
                for r in &tab.refused {
                    if filter.as_ref().is_none_or(|f| f.is_match(r)) {
                        lines.push(format!("- [refused by the URL policy] {r}"));
                    }
                }
                if lines.is_empty() {
                    return Ok(Reply::text("No requests recorded for this page."));
                }
                let (text, _) = cap_text(&lines.join("\n"), 50_000);
                Ok(Reply::text(text))
            })
        })
        .await
    }

    pub(super) async fn network_request(&self, a: RequestArgs) -> Result<Reply, String> {
        if a.index == 0 {
            return Err("index counts from 1, as browser_network_requests numbers them".into());
        }
        self.with_tab_raw(move |tab| {
            Box::pin(async move {
                let records = tab.page.requests().await?;
                let Some(r) = records.get(a.index - 1) else {
                    return Ok(Reply::text(format!(
                        "No request {} on this page ({} recorded); list them with browser_network_requests.",
                        a.index,
                        records.len()
                    )));
                };
                let heads = |h: &[(String, String)]| -> String {
                    if h.is_empty() {
                        return "(none)\n".into();
                    }
                    h.iter().map(|(k, v)| format!("{k}: {v}\n")).collect()
                };
                let mut out = format!("- Request {}: {}\n", a.index, request_line(r));
                let want = |p: RequestPart| a.part.is_none_or(|x| x == p);
                if want(RequestPart::RequestHeaders) {
                    out.push_str(&format!("### Request headers\n{}", heads(&r.request_headers)));
                }
                if want(RequestPart::RequestBody) {
                    let body = r.request_body.as_deref().unwrap_or("(none)");
                    out.push_str(&format!("### Request body\n{body}\n"));
                }
                if want(RequestPart::ResponseHeaders) {
                    out.push_str(&format!("### Response headers\n{}", heads(&r.response_headers)));
                }
                if want(RequestPart::ResponseBody) {
                    let body = if r.failure.is_some() || r.status == 0 {
                        "(none: no response came)".to_string()
                    } else {
                        match tab.page.response_body(&r.id).await {
                            Ok(Some(b)) => cap_text(&b, 100_000).0,
                            Ok(None) => format!("(binary, {})", r.mime),
                            Err(_) if r.ms.is_none() => "(not read by the page yet: its load has not \
                                 finished, and Chromium holds a body only once it has)"
                                .to_string(),
                            Err(_)
                                if r.response_headers.iter().any(|(k, v)| {
                                    k.eq_ignore_ascii_case("cache-control") && v.contains("no-store")
                                }) =>
                            {
                                "(not kept: the response says Cache-Control: no-store, and Chromium keeps no \
                                 copy of such a body)"
                                    .to_string()
                            }
                            Err(e) => format!("({})", e.message),
                        }
                    };
                    out.push_str(&format!("### Response body\n{body}\n"));
                }
                Ok(Reply::text(out))
            })
        })
        .await
    }

    pub(super) async fn handle_dialog(&self, a: DialogArgs) -> Result<Reply, String> {
        let action = if a.accept {
            DialogAction::Accept
        } else {
            DialogAction::Dismiss
        };
        self.with_tab(false, move |tab| {
            Box::pin(async move {
                tab.page.answer_dialogs(action, a.prompt_text.clone()).await?;
                let how = if a.accept { "accepted" } else { "dismissed" };
                let prompt = a
                    .prompt_text
                    .map(|t| format!(" (prompts answer \"{t}\")"))
                    .unwrap_or_default();
                Ok(format!(
                    "Dialogs of this tab are {how} from now on{prompt}. Dialogs never block the page: each is answered as it opens and listed in the next result."
                ))
            })
        })
        .await
    }

    pub(super) async fn upload(&self, a: UploadArgs) -> Result<Reply, String> {
        let Some(root) = self.config().upload_dir.clone() else {
            return Err("file uploads are off on this server; start it with --upload-dir DIR".into());
        };
        let root = root
            .canonicalize()
            .map_err(|e| format!("the upload directory {} is unusable: {e}", root.display()))?;
        let mut paths = Vec::new();
        for p in &a.paths {
            let real = std::path::Path::new(p)
                .canonicalize()
                .map_err(|e| format!("{p}: {e}"))?;
            if !real.starts_with(&root) || !real.is_file() {
                return Err(format!(
                    "{p} is not a file under the upload directory {}",
                    root.display()
                ));
            }
            paths.push(real);
        }
        let target = match a.el.target() {
            Some(_) => target_of(&a.el)?,
            None => Target::locator(Locator::css("input[type=file]")),
        };
        let n = paths.len();
        self.with_tab(false, move |tab| {
            Box::pin(async move {
                tab.page.set_input_files(&target, &paths).await?;
                Ok(format!("Set {n} file(s) on {target}."))
            })
        })
        .await
    }

    pub(super) async fn tabs(&self, a: TabsArgs) -> Result<Reply, String> {
        let open = self.open_options();
        let engine = self.shared.services.engine.clone();
        let mut session = self.session.lock().await;
        // Tabs the pages opened become tabs of the session first, so an
        // index names the same tab in the list and in select.
        session.adopt_popups().await;
        let summary = match a.action.as_str() {
            "list" => String::new(),
            "new" => {
                let i = session.open_tab(&engine, &open).await.map_err(|e| explain(&e))?;
                if let Some(raw) = &a.url {
                    let url = parse_url(raw)?;
                    let t = self.config().navigation_timeout;
                    let tab = session.existing().ok_or("no tab")?;
                    let state = self.config().storage_state.clone();
                    if let Err(e) = open_url(tab, &url, t, state.as_deref()).await {
                        return Err(self.fail(&mut session, e).await);
                    }
                }
                format!("Opened tab {i}.\n")
            }
            "select" => {
                let i = a.index.ok_or("select takes index")?;
                if !session.select(i) {
                    return Err(format!("no tab {i}; browser_tabs list shows the tabs"));
                }
                format!("Selected tab {i}.\n")
            }
            "close" => {
                let i = a.index.unwrap_or(session.tabs().1);
                if !session.close(i) {
                    return Err(format!("no tab {i}; browser_tabs list shows the tabs"));
                }
                format!("Closed tab {i}.\n")
            }
            other => {
                return Err(format!(
                    "unknown action {other:?}; use list, new, select or close"
                ));
            }
        };
        if a.action != "list"
            && let Some(tab) = session.existing()
        {
            // The current tab is the one in front, as in a browser window.
            tab.page.bring_to_front().await.map_err(|e| explain(&e))?;
        }
        let (tabs, current) = session.tabs();
        let mut out = summary;
        if tabs.is_empty() {
            out.push_str("No tabs open; the next tool opens one.\n");
        }
        for (i, tab) in tabs.iter().enumerate() {
            let (url, title) = tab.page.location().await.unwrap_or_default();
            let mark = if i == current { " (current)" } else { "" };
            out.push_str(&format!("- {i}:{mark} [{title}] ({url})\n"));
            if tab.opened_as.is_some() {
                out.push_str("  (opened by another tab)\n");
            }
        }
        Ok(Reply::text(out))
    }
}

/// One request as the lists show it: type, method, URL, outcome, time, size.
fn request_line(r: &oxwright_engine::RequestRecord) -> String {
    let outcome = match (&r.failure, r.status) {
        (Some(why), _) => format!(" => failed: {why}"),
        (None, 0) => " => (no response yet)".to_string(),
        (None, status) => format!(" => [{status}] {}", r.status_text).trim_end().to_string(),
    };
    let ms = r.ms.map(|ms| format!(", {ms} ms")).unwrap_or_default();
    let bytes = r.bytes.map(|b| format!(", {b} bytes")).unwrap_or_default();
    format!("[{}] {} {}{outcome}{ms}{bytes}", r.kind, r.method, r.url)
}
