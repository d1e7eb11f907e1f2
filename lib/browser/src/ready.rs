//! The `ready` wait: after `DOMContentLoaded`, the document counts as
//! ready once the work it has scheduled is done and its text has stopped
//! changing, and at the latest at the soft deadline [`SOFT`].
//!
//! Two scripts share the work. [`WORK_JS`] runs in the page's own world
//! before any of its scripts (registered for every new document of the
//! tab) and counts what the page has scheduled that may still change it:
//! timers of up to [`HORIZON`] (a chain of timers set from timers counts
//! for [`DEPTH`] links, so a poll does not hold the page forever),
//! animation frames likewise, and `fetch`/`XMLHttpRequest` requests until
//! their bodies are read. [`READY_JS`] runs in an isolated world, so the
//! page's scripts neither see it nor can break it by replacing
//! `setTimeout` or `MutationObserver`: a `MutationObserver` watches
//! `childList` and `characterData` changes (attribute-only animations do
//! not count), and it asks the tracker for its count through a DOM event,
//! which both worlds see.
//!
//! The document is ready when `load` has fired, nothing tracked is
//! pending and neither the text nor the tracked work has moved for
//! [`SETTLE`]; before `load`, or without an answer from the tracker (a
//! document that predates it), when nothing is pending and the text has
//! been quiet for [`QUIET`]; while tracked work stays pending (a page that
//! polls), when the text has been quiet for [`LONG_QUIET`]. A document
//! without executable scripts cannot change itself and is ready at once.
//! A meta refresh to another URL due within the soft deadline holds the
//! wait until it fires; the wait then goes on on the next document.
//! A page can only fool the tracker into reading early or late, never
//! past the soft deadline.

use std::time::Duration;

use chromiumoxide::cdp::browser_protocol::page::{
    AddScriptToEvaluateOnNewDocumentParams, CreateIsolatedWorldParams,
};
use chromiumoxide::cdp::js_protocol::runtime::EvaluateParams;

use crate::error::cdp;
use crate::{BrowserError, Tab};

/// Quiet time after which the DOM counts as ready when the tracker cannot
/// vouch for the page (before `load`, or no tracker in the document).
pub(crate) const QUIET: Duration = Duration::from_millis(500);
/// Quiet time, of both the text and the tracked work, after which a loaded
/// page with nothing pending is ready: what a framework takes to render
/// after its data arrived (a task or two, a frame).
pub(crate) const SETTLE: Duration = Duration::from_millis(150);
/// Quiet time after which a page is ready although tracked work is still
/// pending (a poll, a request that never ends). Longer than [`HORIZON`],
/// so a timer the page set for its content fires first.
pub(crate) const LONG_QUIET: Duration = Duration::from_millis(2500);
/// Longest timer delay the tracker counts: later ones are the page's
/// business (a newsletter prompt, a refresh), not its content.
pub(crate) const HORIZON: Duration = Duration::from_millis(2000);
/// Links of a timer or animation-frame chain the tracker counts.
pub(crate) const DEPTH: u32 = 3;
/// Longest wait for quiet after `DOMContentLoaded`; then the page is read as it stands.
pub(crate) const SOFT: Duration = Duration::from_secs(5);

/// Counts the page's pending work, in its own world, before its scripts
/// run. It keeps the functions it needs from the start, so a page that
/// replaces them later changes nothing for it; the wrappers are proxies
/// of the originals and behave as they do. It answers an
/// `oxwright:work?` event on the document with an `oxwright:work` event
/// whose detail is `"<pending> <ms since tracked work last moved>"`.
const WORK_JS: &str = r#"(() => {
  const w = window, HORIZON = __HORIZON__, DEPTH = __DEPTH__;
  const P = Proxy, R = Reflect.apply, then = Promise.prototype.then;
  const now = performance.now.bind(performance);
  const Ev = CustomEvent, dispatch = EventTarget.prototype.dispatchEvent;
  const listen = EventTarget.prototype.addEventListener;
  const timers = new Set(), frames = new Set();
  let requests = 0, depth = 0, last = now();
  const moved = () => { last = now(); };
  // Every callback carries its depth in the chain; only the first links
  // of a chain are counted.
  const chain = (pending, cb, d, holder) => function (...a) {
    if (pending.delete(holder.id)) moved();
    const outer = depth; depth = d;
    try { return R(cb, this, a); } finally { depth = outer; if (holder.counted) moved(); }
  };
  const schedule = (pending, counted) => ({
    apply(target, self, args) {
      if (typeof args[0] !== 'function') return R(target, self, args);
      const holder = { id: undefined, counted: depth < DEPTH && counted(args) };
      args[0] = chain(pending, args[0], depth + 1, holder);
      holder.id = R(target, self, args);
      if (holder.counted) { pending.add(holder.id); moved(); }
      return holder.id;
    },
  });
  // What an interval's callback schedules is never counted: it repeats.
  const repeat = {
    apply(target, self, args) {
      if (typeof args[0] === 'function') {
        const cb = args[0];
        args[0] = function (...a) {
          const outer = depth; depth = DEPTH;
          try { return R(cb, this, a); } finally { depth = outer; }
        };
      }
      return R(target, self, args);
    },
  };
  const cancel = (pending) => ({
    apply(target, self, args) { if (pending.delete(args[0])) moved(); return R(target, self, args); },
  });
  w.setTimeout = new P(w.setTimeout, schedule(timers, (a) => (Number(a[1]) || 0) <= HORIZON));
  w.setInterval = new P(w.setInterval, repeat);
  w.clearTimeout = new P(w.clearTimeout, cancel(timers));
  w.clearInterval = new P(w.clearInterval, cancel(timers));
  if (w.requestAnimationFrame) {
    w.requestAnimationFrame = new P(w.requestAnimationFrame, schedule(frames, () => true));
    w.cancelAnimationFrame = new P(w.cancelAnimationFrame, cancel(frames));
  }
  const settle = (p) => {
    requests++; moved();
    const done = () => { requests--; moved(); };
    R(then, p, [done, done]);
    return p;
  };
  if (w.fetch) w.fetch = new P(w.fetch, { apply(t, s, a) { return settle(R(t, s, a)); } });
  if (w.Response) {
    for (const name of ['arrayBuffer', 'blob', 'formData', 'json', 'text']) {
      const f = Response.prototype[name];
      if (f) Response.prototype[name] = new P(f, { apply(t, s, a) { return settle(R(t, s, a)); } });
    }
  }
  if (w.XMLHttpRequest) {
    const send = XMLHttpRequest.prototype.send;
    XMLHttpRequest.prototype.send = new P(send, {
      apply(t, s, a) {
        const out = R(t, s, a);
        if (s.readyState !== 4) {
          requests++; moved();
          R(listen, s, ['loadend', () => { requests--; moved(); }, { once: true }]);
        }
        return out;
      },
    });
  }
  R(listen, document, ['oxwright:work?', () => {
    const detail = (timers.size + frames.size + requests) + ' ' + Math.round(now() - last);
    R(dispatch, document, [new Ev('oxwright:work', { detail })]);
  }]);
})()"#;

/// Runs in an isolated world of the main frame; resolves with whether the
/// page settled, whether `load` had fired, how long it waited and which
/// rule ended the wait.
const READY_JS: &str = r#"(async (quiet, settle, long, soft) => {
  const start = performance.now();
  const loaded = () => document.readyState === 'complete';
  const executable = (s) => {
    const t = (s.getAttribute('type') || '').trim().toLowerCase();
    return t === '' || t === 'module' || /^(text|application)\/(x-)?(java|ecma)script$/.test(t);
  };
  // A meta refresh to another URL within the soft deadline: the page is
  // about to go away, and the wait goes on on the next document. The
  // refresh timer starts when `load` has finished.
  const refresh = (() => {
    const m = document.querySelector('meta[http-equiv="refresh" i][content]');
    const r = m && /^\s*(\d+(?:\.\d*)?)\s*[;,]\s*(?:url\s*=\s*)?(\S.*)$/i.exec(m.getAttribute('content'));
    if (!r) return null;
    let target;
    try { target = new URL(r[2].trim().replace(/^['"]|['"]$/g, ''), document.baseURI).href; } catch { return null; }
    const delay = parseFloat(r[1]) * 1000;
    return target !== location.href && delay <= soft ? delay : null;
  })();
  const refreshing = () => {
    if (refresh === null) return false;
    if (!loaded()) return true;
    const nav = performance.getEntriesByType('navigation')[0];
    const loadEnd = nav && nav.loadEventEnd > 0 ? nav.loadEventEnd : 0;
    return performance.now() < loadEnd + refresh + 1000;
  };
  const scripted = [...document.scripts].some(executable)
    || document.querySelector('[onload],[onerror],[onpageshow]') !== null;
  if (!scripted && refresh === null) return { quiet: true, loaded: loaded(), waited: 0, rule: 'static' };
  let last = start;
  const observer = new MutationObserver(() => { last = performance.now(); });
  observer.observe(document, { subtree: true, childList: true, characterData: true });
  let answer = null;
  document.addEventListener('oxwright:work', (e) => { answer = String(e.detail); });
  const work = () => {
    answer = null;
    document.dispatchEvent(new Event('oxwright:work?'));
    if (answer === null) return null;
    const [pending, since] = answer.split(' ').map(Number);
    return { pending, since };
  };
  return await new Promise((resolve) => {
    const tick = () => {
      const now = performance.now();
      const quietFor = now - last, waited = now - start, w = work();
      const done = (rule) => {
        observer.disconnect();
        resolve({ quiet: rule !== 'soft', loaded: loaded(), waited, rule });
      };
      if (refreshing()) {
        if (waited >= soft) return done('soft');
        return setTimeout(tick, 50);
      }
      if (w !== null && loaded() && w.pending === 0 && w.since >= settle && quietFor >= settle) return done('settled');
      if ((w === null || w.pending === 0) && quietFor >= quiet) return done('quiet');
      if (quietFor >= long) return done('long');
      if (waited >= soft) return done('soft');
      setTimeout(tick, Math.max(10, Math.min(50, soft - waited)));
    };
    setTimeout(tick, Math.min(settle, soft));
  });
})"#;

/// How the `ready` wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Readiness {
    /// The text went quiet.
    Quiet {
        /// `load` had fired.
        loaded: bool,
    },
    /// The soft deadline (or the caller's limit) came first.
    StillChanging {
        /// `load` had fired.
        loaded: bool,
        /// How long the wait lasted.
        waited: Duration,
    },
    /// The document went away while waiting (the page navigated).
    Gone,
}

impl Readiness {
    /// The warnings this outcome deserves in a fetch result.
    pub(crate) fn notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        let loaded = match *self {
            Readiness::Quiet { loaded } => loaded,
            Readiness::StillChanging { loaded, waited } => {
                notes.push(format!(
                    "the page's text was still changing {:.1} s after DOMContentLoaded; it was read as it stood",
                    waited.as_secs_f64()
                ));
                loaded
            }
            Readiness::Gone => true,
        };
        if !loaded {
            notes.push(
                "the page was read before its load event fired (a sub-resource was still loading)".into(),
            );
        }
        notes
    }
}

impl Tab {
    /// Registers the work tracker ([`WORK_JS`]) for the tab's next
    /// documents (once per tab, by [`Tab::prepare`]: it stays for the
    /// tab's life, across jobs).
    pub(crate) async fn track_work(&self) -> Result<(), BrowserError> {
        let source = WORK_JS
            .replace("__HORIZON__", &HORIZON.as_millis().to_string())
            .replace("__DEPTH__", &DEPTH.to_string());
        self.call_own(AddScriptToEvaluateOnNewDocumentParams::new(source))
            .await?;
        Ok(())
    }

    /// Waits until the main frame's document is ready (see the module
    /// docs), at most `limit`. Its errors do not mark the tab failed: a
    /// document that went away is [`Readiness::Gone`], and a renderer too
    /// busy to answer is [`Readiness::StillChanging`].
    pub(crate) async fn wait_ready(&self, limit: Duration) -> Result<Readiness, BrowserError> {
        let soft = SOFT.min(limit);
        let frame = self.raw_page().target_id().as_ref().to_string();
        let world = CreateIsolatedWorldParams::builder()
            .frame_id(frame)
            .world_name("oxwright-ready")
            .build()
            .map_err(|e| BrowserError::Extraction(e.to_string()))?;
        let context = match self.call_unnoted(world).await {
            Ok(out) => out.execution_context_id,
            Err(BrowserError::Crashed(m)) => return Err(BrowserError::Crashed(m)),
            // The frame is between documents.
            Err(_) => return Ok(Readiness::Gone),
        };
        let expression = format!(
            "{READY_JS}({}, {}, {}, {})",
            QUIET.as_millis(),
            SETTLE.as_millis(),
            LONG_QUIET.as_millis(),
            soft.as_millis()
        );
        let params = EvaluateParams::builder()
            .expression(expression)
            .context_id(context)
            .return_by_value(true)
            .await_promise(true)
            .build()
            .map_err(|e| BrowserError::Extraction(e.to_string()))?;
        // The script resolves itself at the soft deadline; the margin covers a busy renderer.
        let bound = (soft + Duration::from_secs(1)).min(limit);
        let out = self
            .guard_unnoted("ready wait", bound, async {
                self.raw_page()
                    .execute(params)
                    .await
                    .map(|r| r.result)
                    .map_err(|e| cdp("Runtime.evaluate", e))
            })
            .await;
        let value = match out {
            Ok(out) if out.exception_details.is_none() => out.result.value.unwrap_or_default(),
            // The isolated world died with its document.
            Ok(_) => return Ok(Readiness::Gone),
            Err(BrowserError::Crashed(m)) => return Err(BrowserError::Crashed(m)),
            Err(BrowserError::Timeout { .. }) => {
                return Ok(Readiness::StillChanging {
                    loaded: false,
                    waited: bound,
                });
            }
            Err(_) => return Ok(Readiness::Gone),
        };
        let loaded = value["loaded"].as_bool().unwrap_or(false);
        tracing::debug!(
            rule = value["rule"].as_str().unwrap_or(""),
            waited_ms = value["waited"].as_f64().unwrap_or(0.0),
            "ready"
        );
        Ok(if value["quiet"].as_bool().unwrap_or(false) {
            Readiness::Quiet { loaded }
        } else {
            let waited = Duration::from_millis(value["waited"].as_f64().unwrap_or(0.0).max(0.0) as u64);
            Readiness::StillChanging { loaded, waited }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_unfinished_page_gets_warnings() {
        assert!(Readiness::Quiet { loaded: true }.notes().is_empty());
        assert!(Readiness::Gone.notes().is_empty());
        let notes = Readiness::Quiet { loaded: false }.notes();
        assert_eq!(notes.len(), 1);
        assert!(notes[0].contains("before its load event"), "{notes:?}");
        let notes = Readiness::StillChanging {
            loaded: true,
            waited: SOFT,
        }
        .notes();
        assert_eq!(notes.len(), 1);
        assert!(notes[0].contains("still changing 5.0 s"), "{notes:?}");
    }
}
