//! The `ready` wait: after `DOMContentLoaded`, the document counts as
//! ready once its text has stopped changing for [`QUIET`], whether or not
//! `load` has fired, and at the latest at the soft deadline [`SOFT`]. A
//! `MutationObserver` watches `childList` and `characterData` changes
//! (attribute-only animations do not count) from an isolated world, so the
//! page's scripts neither see it nor can break it by replacing `setTimeout`
//! or `MutationObserver`. A document without executable scripts cannot
//! change itself and is ready at once.

use std::time::Duration;

use chromiumoxide::cdp::browser_protocol::page::CreateIsolatedWorldParams;
use chromiumoxide::cdp::js_protocol::runtime::EvaluateParams;

use crate::error::cdp;
use crate::{BrowserError, Tab};

/// Quiet time after which the DOM counts as ready. `/js-rendered` of the
/// fixture site renders 500 ms after its script starts: anything shorter
/// would read before it.
pub(crate) const QUIET: Duration = Duration::from_millis(500);
/// Longest wait for quiet after `DOMContentLoaded`; then the page is read as it stands.
pub(crate) const SOFT: Duration = Duration::from_secs(5);

/// Runs in an isolated world of the main frame; resolves with whether the
/// text went quiet and whether `load` had fired.
const READY_JS: &str = r#"(async (quiet, soft) => {
  const start = performance.now();
  const loaded = () => document.readyState === 'complete';
  const executable = (s) => {
    const t = (s.getAttribute('type') || '').trim().toLowerCase();
    return t === '' || t === 'module' || /^(text|application)\/(x-)?(java|ecma)script$/.test(t);
  };
  const scripted = [...document.scripts].some(executable)
    || document.querySelector('[onload],[onerror],[onpageshow]') !== null;
  if (!scripted) return { quiet: true, loaded: loaded(), waited: 0 };
  let last = start;
  const observer = new MutationObserver(() => { last = performance.now(); });
  observer.observe(document, { subtree: true, childList: true, characterData: true });
  return await new Promise((resolve) => {
    const tick = () => {
      const now = performance.now();
      const quietFor = now - last, waited = now - start;
      if (quietFor >= quiet || waited >= soft) {
        observer.disconnect();
        return resolve({ quiet: quietFor >= quiet, loaded: loaded(), waited });
      }
      setTimeout(tick, Math.max(10, Math.min(quiet - quietFor, soft - waited)));
    };
    setTimeout(tick, Math.min(quiet, soft));
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
        let expression = format!("{READY_JS}({}, {})", QUIET.as_millis(), soft.as_millis());
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
