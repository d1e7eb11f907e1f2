//! What the interception of one tab saw of the main frame's document:
//! written by the interceptor, read by the navigation and the tab.

use crate::BrowserError;

/// What the interceptor saw of the main frame's document.
#[derive(Debug, Clone, Default)]
pub(crate) struct MainDocument {
    pub url: Option<String>,
    pub status: Option<u16>,
    pub content_type: Option<String>,
    /// The accepted main document's response headers.
    pub headers: Vec<(String, String)>,
    pub redirects: Vec<String>,
    pub blocked: usize,
    pub refused: Vec<String>,
    pub error: Option<BrowserError>,
    /// The network request id of the navigated document's response: a
    /// `Network.loadingFailed` of it (a reset or cut-short body) fails
    /// the navigation at once.
    pub request_id: Option<String>,
    /// The main frame reached `DOMContentLoaded` on the navigated
    /// document: later navigations that fail keep it.
    pub rendered: bool,
    /// The main document's bytes, taken instead of rendering it (a PDF,
    /// when the navigation asked for PDFs).
    pub document: Option<Vec<u8>>,
    /// Warnings for the fetch result (a later navigation abandoned, a
    /// `ready` wait cut short), taken by [`crate::Tab::take_notes`].
    pub notes: Vec<String>,
    /// The conditional request was answered `304 Not Modified`: nothing
    /// was rendered, and the navigation ends with that status.
    pub not_modified: bool,
    /// A navigation the page started before its document had loaded
    /// failed and was aborted: Chromium stopped parsing the document for
    /// it, so no `DOMContentLoaded` is coming and it is read as it stands.
    pub abandoned_early: bool,
}

impl MainDocument {
    /// Says whether the navigation's answer was taken instead of rendered
    /// (a PDF's bytes, or a 304 to a conditional request).
    pub(crate) fn taken(&self) -> bool {
        self.document.is_some() || self.not_modified
    }

    /// Notes a navigation to `url` that the page started before it had
    /// loaded (a script sending it to https, a JS redirect) and that
    /// failed: the document that arrived stays, and is read.
    pub(crate) fn abandon_early(&mut self, url: &str, reason: &str) {
        tracing::debug!(
            url,
            reason,
            "the page's own navigation failed; the document that arrived stays"
        );
        self.abandoned_early = true;
        self.notes.push(format!(
            "the page navigated itself to {url} before it had loaded, and that navigation failed \
             ({reason}); the document that arrived was read instead"
        ));
    }

    /// Notes a later navigation to `url` that was given up, and why.
    pub(crate) fn abandon(&mut self, url: &str, reason: &str) {
        tracing::debug!(
            url,
            reason,
            "later navigation abandoned; the rendered document stays"
        );
        self.notes.push(format!(
            "the page navigated itself to {url} after it had rendered, and that navigation failed \
             ({reason}); the document it had was read instead"
        ));
    }
}
