//! Frames taken out of the document as they are inserted (a fetch's
//! default, [`oxwright_engine::GotoOptions::skip_frames`]). A script registered
//! for every new document of the page watches it and removes each
//! `<iframe>` and `<frame>` element it sees added. The parser yields to
//! the observer between chunks, so a page's frames are taken out in
//! batches while it parses and few are alive at once: a page of 393 empty
//! `<iframe>`s that took Chromium to 686 MiB and 4.3 s with `oxwright
//! fetch` stays at 386 MiB and 2.4 s (BENCHMARKS.md §3). Frames in shadow
//! roots are not seen.

use chromiumoxide::cdp::browser_protocol::page::{
    AddScriptToEvaluateOnNewDocumentParams, RemoveScriptToEvaluateOnNewDocumentParams,
};

use crate::{BrowserError, Tab};

/// Removes frame elements as they are added to the document. It runs in
/// the page's own world, before any of the page's scripts, and holds the
/// functions it uses from then on, so a page that replaces them later
/// changes nothing (an isolated world would cost a V8 context per
/// document: +10–20 MiB of renderer PSS at 4 pages in flight).
const SKIP_FRAMES_JS: &str = r#"(() => {
  const Observer = MutationObserver;
  const observe = Observer.prototype.observe;
  const remove = Element.prototype.remove;
  const all = Element.prototype.querySelectorAll;
  const name = Object.getOwnPropertyDescriptor(Element.prototype, 'localName').get;
  const first = Object.getOwnPropertyDescriptor(Element.prototype, 'firstElementChild').get;
  const isFrame = (n) => { const t = name.call(n); return t === 'iframe' || t === 'frame'; };
  const take = (n) => {
    if (isFrame(n)) { remove.call(n); return; }
    if (first.call(n) === null) return;
    const inner = all.call(n, 'iframe, frame');
    for (let i = 0; i < inner.length; i++) remove.call(inner[i]);
  };
  observe.call(new Observer((records) => {
    for (let i = 0; i < records.length; i++) {
      const added = records[i].addedNodes;
      for (let j = 0; j < added.length; j++) if (added[j].nodeType === 1) take(added[j]);
    }
  }), document, { childList: true, subtree: true });
})()"#;

impl Tab {
    /// Registers the frame-removing script for the page's next documents,
    /// or takes it away (it stays registered across jobs until a
    /// navigation asks otherwise).
    pub(crate) async fn skip_frames(&self, skip: bool) -> Result<(), BrowserError> {
        let current = self.frames_script.lock().expect("frames script").clone();
        match (skip, current) {
            (true, None) => {
                let params = AddScriptToEvaluateOnNewDocumentParams::new(SKIP_FRAMES_JS);
                let out = self.call_own(params).await?;
                *self.frames_script.lock().expect("frames script") = Some(out.identifier);
            }
            (false, Some(id)) => {
                self.call_own(RemoveScriptToEvaluateOnNewDocumentParams::new(id))
                    .await?;
                *self.frames_script.lock().expect("frames script") = None;
            }
            _ => {}
        }
        Ok(())
    }
}
