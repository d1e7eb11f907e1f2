//! One MCP client's browser state: its tabs (pages from the engine, opened
//! on first use), the current tab, and each tab's last snapshot for `diff`.

use std::sync::Arc;

use oxwright_engine::{BrowserEngine, ConsoleMessage, EngineError, OpenOptions, Page};

/// A tab: an engine page, its last snapshot's lines, and what it logged.
#[derive(Debug)]
pub struct Tab {
    /// The page.
    pub page: Box<dyn Page>,
    /// The rendered lines of the last snapshot (for `diff`).
    pub last_snapshot: Option<Vec<String>>,
    /// Console messages so far (the last 1,000).
    pub console: Vec<ConsoleMessage>,
    /// Requests the URL policy refused so far.
    pub refused: Vec<String>,
    /// The engine's id of this tab when another tab opened it (a popup).
    pub opened_as: Option<String>,
    /// Not navigated yet: its first navigation starts from the server's
    /// saved login state, when it has one.
    pub fresh: bool,
}

impl Tab {
    fn new(page: Box<dyn Page>) -> Self {
        Self {
            page,
            last_snapshot: None,
            console: Vec::new(),
            refused: Vec::new(),
            opened_as: None,
            fresh: true,
        }
    }
}

/// A client's tabs. Pages go back to the engine when the session ends.
#[derive(Debug, Default)]
pub struct Session {
    tabs: Vec<Tab>,
    current: usize,
}

impl Session {
    /// The current tab, opening the first page when there is none.
    pub async fn current(
        &mut self,
        engine: &Arc<dyn BrowserEngine>,
        open: &OpenOptions,
    ) -> Result<&mut Tab, EngineError> {
        if self.tabs.is_empty() {
            let page = engine.open(open).await?;
            self.tabs.push(Tab::new(page));
            self.current = 0;
        }
        Ok(&mut self.tabs[self.current])
    }

    /// The current tab, if one is open.
    pub fn existing(&mut self) -> Option<&mut Tab> {
        self.tabs.get_mut(self.current)
    }

    /// Opens a new tab and makes it current.
    pub async fn open_tab(
        &mut self,
        engine: &Arc<dyn BrowserEngine>,
        open: &OpenOptions,
    ) -> Result<usize, EngineError> {
        let page = engine.open(open).await?;
        self.tabs.push(Tab::new(page));
        self.current = self.tabs.len() - 1;
        Ok(self.current)
    }

    /// Replaces the current tab's page by a new one (after a crash).
    pub async fn replace_current(
        &mut self,
        engine: &Arc<dyn BrowserEngine>,
        open: &OpenOptions,
    ) -> Result<(), EngineError> {
        if self.tabs.is_empty() {
            return self.open_tab(engine, open).await.map(|_| ());
        }
        // The crashed page goes back first: its capacity may be the only one.
        let i = self.current;
        let old = self.tabs.remove(i);
        drop(old);
        let page = engine.open(open).await?;
        self.tabs.insert(i, Tab::new(page));
        Ok(())
    }

    /// Adds the tabs the session's pages opened (popups, `target=_blank`
    /// links) as tabs of their own, after the others and not current, as a
    /// browser window shows them; returns how many were added.
    pub async fn adopt_popups(&mut self) -> usize {
        let mut added = 0;
        let mut i = 0;
        while i < self.tabs.len() {
            let Ok(opened) = self.tabs[i].page.tabs().await else {
                i += 1;
                continue;
            };
            for info in opened.into_iter().filter(|t| !t.current) {
                if self
                    .tabs
                    .iter()
                    .any(|t| t.opened_as.as_deref() == Some(info.id.as_str()))
                {
                    continue;
                }
                match self.tabs[i].page.popup(&info.id).await {
                    Ok(page) => {
                        let mut tab = Tab::new(page);
                        tab.opened_as = Some(info.id);
                        tab.fresh = false;
                        self.tabs.push(tab);
                        added += 1;
                    }
                    Err(e) => tracing::debug!(error = %e, "a popup cannot be driven"),
                }
            }
            i += 1;
        }
        added
    }

    /// Makes tab `index` current.
    pub fn select(&mut self, index: usize) -> bool {
        if index < self.tabs.len() {
            self.current = index;
            true
        } else {
            false
        }
    }

    /// Closes tab `index`; returns false when there is no such tab.
    pub fn close(&mut self, index: usize) -> bool {
        if index >= self.tabs.len() {
            return false;
        }
        drop(self.tabs.remove(index));
        if self.current >= self.tabs.len() {
            self.current = self.tabs.len().saturating_sub(1);
        } else if index < self.current {
            self.current -= 1;
        }
        true
    }

    /// Closes every tab.
    pub fn close_all(&mut self) {
        self.tabs.clear();
        self.current = 0;
    }

    /// The tabs and the current index.
    pub fn tabs(&self) -> (&[Tab], usize) {
        (&self.tabs, self.current)
    }
}
