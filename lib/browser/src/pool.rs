//! The warm browser pool: N browsers, each serving a few pages at once in
//! their own browser contexts; dead browsers are replaced, busy ones
//! recycled.
//!
//! A context (with its page) serves up to `context_reuse` jobs: when a job
//! ends well its page is reset ([`Tab::reset`]) in the background and parked
//! on its browser's slot, and the next lease there takes it instead of
//! creating a context and page, which is most of Chromium's work per page.
//! The lease's capacity returns only once the page is parked or disposed, so
//! a browser never holds more pages than the admission limit (see
//! `admission.rs`: between `pages_per_browser` and
//! `max_pages_per_browser`, moved with the CPU).
//!
//! With [`Isolation::Shared`] the pages live in the browser's default
//! context and are parked without a reset: jobs share cookies and storage.

use std::ops::Deref;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

use tokio::sync::{Mutex, OwnedSemaphorePermit, Semaphore};

use crate::handle::BrowserHandle;
use crate::tab::Tab;
use crate::{BrowserError, Isolation, PoolConfig};

/// Counters describing the pool's life so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// Browsers launched (initial, replacements, recycles).
    pub launched: u64,
    /// Browsers replaced because they died.
    pub replaced: u64,
    /// Browsers replaced after `recycle_after` jobs.
    pub recycled: u64,
    /// Leases handed out.
    pub leases: u64,
    /// Pages opened, each in a new browser context unless isolation is
    /// shared (one per lease when `context_reuse` is 1).
    pub contexts: u64,
    /// Leases served by a reset, reused context.
    pub reused: u64,
}

#[derive(Debug, Default)]
struct Slot {
    handle: Option<Arc<BrowserHandle>>,
    jobs: u32,
    /// Reset pages of `handle`, ready for the next lease.
    idle: Vec<Tab>,
}

#[derive(Debug)]
struct Group {
    headless: bool,
    slots: Vec<Mutex<Slot>>,
    active: std::sync::Mutex<Vec<usize>>,
    /// `max` permits; those in `reserve` are not admitted right now.
    permits: Arc<Semaphore>,
    /// Capacity held back by adaptive admission (see `admission.rs`).
    reserve: std::sync::Mutex<Vec<OwnedSemaphorePermit>>,
    /// Pages taken back while every admitted one was on loan: the next
    /// ones returned go to `reserve` instead of the next lease.
    owed: AtomicUsize,
    /// Leases waiting for a permit.
    waiting: AtomicUsize,
    /// Pages handed out (what adaptive admission's trials count).
    granted: AtomicU64,
    /// The fewest and the most pages admitted at once.
    min: usize,
    max: usize,
}

/// Counts a lease waiting for a permit while it waits (cancel-safe).
struct Waiting<'a>(&'a AtomicUsize);

impl<'a> Waiting<'a> {
    fn new(n: &'a AtomicUsize) -> Self {
        n.fetch_add(1, Ordering::SeqCst);
        Self(n)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

#[derive(Debug)]
struct Inner {
    cfg: PoolConfig,
    main: Group,
    other: tokio::sync::OnceCell<Group>,
    launched: AtomicU64,
    replaced: AtomicU64,
    recycled: AtomicU64,
    leases: AtomicU64,
    contexts: AtomicU64,
    reused: AtomicU64,
}

/// A pool of warm browsers.
#[derive(Debug, Clone)]
pub struct BrowserPool {
    inner: Arc<Inner>,
}

/// A page on loan from the pool, in its own browser context. Dropping it
/// resets the page for the next job or disposes its context, then returns
/// the capacity.
#[derive(Debug)]
pub struct Lease {
    tab: Option<Tab>,
    pool: BrowserPool,
    group_headless: bool,
    slot: usize,
    permit: Option<OwnedSemaphorePermit>,
    /// Time spent waiting for and preparing the page.
    pub waited: std::time::Duration,
}

impl Deref for Lease {
    type Target = Tab;

    fn deref(&self) -> &Tab {
        self.tab.as_ref().expect("tab present until drop")
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        let Some(tab) = self.tab.take() else { return };
        let pool = self.pool.clone();
        let (headless, slot) = (self.group_headless, self.slot);
        let permit = self.permit.take();
        let release = async move {
            pool.release(headless, slot, tab).await;
            if let Some(permit) = permit {
                pool.group(headless).await.give_back(permit);
            }
        };
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => {
                rt.spawn(release);
            }
            Err(_) => tracing::debug!("lease dropped outside a runtime"),
        }
    }
}

impl Group {
    /// `pages` per browser admitted to begin with, `max_pages` at most.
    fn new(headless: bool, browsers: usize, pages: usize, max_pages: usize) -> Self {
        let browsers = browsers.max(1);
        let start = browsers * pages.max(1);
        let max = (browsers * max_pages).max(start);
        let permits = Arc::new(Semaphore::new(max));
        let reserve = (start..max)
            .map(|_| {
                permits
                    .clone()
                    .try_acquire_owned()
                    .expect("a new semaphore has its permits")
            })
            .collect();
        Self {
            headless,
            slots: (0..browsers).map(|_| Mutex::new(Slot::default())).collect(),
            active: std::sync::Mutex::new(vec![0; browsers]),
            permits,
            reserve: std::sync::Mutex::new(reserve),
            waiting: AtomicUsize::new(0),
            granted: AtomicU64::new(0),
            owed: AtomicUsize::new(0),
            // Never below the start: a lease may be held for long (an MCP
            // tab, a workflow), and a limit taken below it could starve
            // the next one while the CPU is busy.
            min: start,
            max,
        }
    }

    /// Permits not held back: pages on loan plus free ones.
    fn admitted(&self) -> usize {
        self.max - self.reserve.lock().expect("reserve").len()
    }

    /// Pages admitted at once right now (those taken back but still on
    /// loan no longer count).
    fn limit(&self) -> usize {
        self.admitted().saturating_sub(self.owed.load(Ordering::SeqCst))
    }

    /// Pages on loan.
    fn in_use(&self) -> usize {
        self.admitted().saturating_sub(self.permits.available_permits())
    }

    /// Moves the limit one page toward `to`. A page taken back is a free
    /// permit when there is one, else the next one returned.
    fn set_limit(&self, to: usize) {
        let mut reserve = self.reserve.lock().expect("reserve");
        let owed = self.owed.load(Ordering::SeqCst);
        let limit = (self.max - reserve.len()).saturating_sub(owed);
        if to > limit {
            if owed > 0 {
                self.owed.fetch_sub(1, Ordering::SeqCst);
            } else {
                reserve.pop();
            }
        } else if to < limit {
            match self.permits.clone().try_acquire_owned() {
                Ok(permit) => reserve.push(permit),
                Err(_) => {
                    self.owed.fetch_add(1, Ordering::SeqCst);
                }
            }
        }
    }

    /// A lease's permit coming back: held back when a page is owed,
    /// otherwise free for the next lease.
    fn give_back(&self, permit: OwnedSemaphorePermit) {
        let mut reserve = self.reserve.lock().expect("reserve");
        let owed = self.owed.load(Ordering::SeqCst);
        if owed > 0 {
            self.owed.store(owed - 1, Ordering::SeqCst);
            reserve.push(permit);
        }
    }
}

impl BrowserPool {
    /// Builds the pool and launches its browsers (warm start).
    pub async fn start(cfg: PoolConfig) -> Result<Self, BrowserError> {
        Self::launch(cfg, true).await
    }

    /// Builds the pool without launching a browser: the first page that
    /// needs one launches it. For work that may need none (fetches with
    /// `render: never` or `auto`); a browser that cannot start then fails
    /// that page, not the start.
    pub async fn start_cold(cfg: PoolConfig) -> Result<Self, BrowserError> {
        Self::launch(cfg, false).await
    }

    async fn launch(cfg: PoolConfig, warm: bool) -> Result<Self, BrowserError> {
        let main = Group::new(cfg.headless, cfg.browsers, cfg.pages_per_browser, cfg.max_pages());
        let pool = Self {
            inner: Arc::new(Inner {
                cfg,
                main,
                other: tokio::sync::OnceCell::new(),
                launched: AtomicU64::new(0),
                replaced: AtomicU64::new(0),
                recycled: AtomicU64::new(0),
                leases: AtomicU64::new(0),
                contexts: AtomicU64::new(0),
                reused: AtomicU64::new(0),
            }),
        };
        if warm {
            let launches = (0..pool.inner.main.slots.len()).map(|i| pool.ensure_browser(&pool.inner.main, i));
            for result in futures::future::join_all(launches).await {
                result?;
            }
        }
        pool.spawn_health_monitor();
        if pool.inner.main.max > pool.inner.main.min {
            pool.spawn_admission();
        }
        Ok(pool)
    }

    /// Moves the main group's limit (see `admission.rs`). Stops when the
    /// pool is dropped or shut down.
    fn spawn_admission(&self) {
        let weak = Arc::downgrade(&self.inner);
        let mut controller = crate::admission::Controller::new(self.inner.cfg.admission.clone());
        let interval = self.inner.cfg.admission.interval;
        tokio::spawn(async move {
            loop {
                let Some(inner) = weak.upgrade() else { return };
                let group = &inner.main;
                if group.permits.is_closed() {
                    return;
                }
                let reading = crate::admission::Reading {
                    cpu: crate::admission::cpu_jiffies(),
                    free_mib: crate::admission::free_mib(),
                    waiting: group.waiting.load(Ordering::SeqCst),
                    in_use: group.in_use(),
                    granted: group.granted.load(Ordering::Relaxed),
                };
                let limit = group.limit();
                // Every reading, for a soak to read pages in flight over time
                // (`RUST_LOG=oxwright_browser::pool=trace`).
                tracing::trace!(
                    limit,
                    in_use = reading.in_use,
                    waiting = reading.waiting,
                    "admission sample"
                );
                let next = controller.step(limit, group.min, group.max, reading);
                if next != limit {
                    // Taking a page back waits for a free one: logged when it moved.
                    group.set_limit(next);
                    let moved = group.limit();
                    if moved != limit {
                        tracing::debug!(from = limit, to = moved, ?reading, "admission limit moved");
                    }
                }
                drop(inner);
                tokio::time::sleep(interval).await;
            }
        });
    }

    /// Pings every browser every `health_interval`; dead ones are replaced
    /// on their next lease. Stops when the pool is dropped or shut down.
    fn spawn_health_monitor(&self) {
        let weak = Arc::downgrade(&self.inner);
        let interval = self.inner.cfg.health_interval;
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(interval).await;
                let Some(inner) = weak.upgrade() else { return };
                if inner.main.permits.is_closed() {
                    return;
                }
                BrowserPool { inner }.health_check().await;
            }
        });
    }

    /// Returns the configuration.
    pub fn config(&self) -> &PoolConfig {
        &self.inner.cfg
    }

    /// Returns the most pages the pool serves at once (adaptive admission
    /// admits between `PoolConfig::capacity` and this).
    pub fn capacity(&self) -> usize {
        self.inner.main.max
    }

    /// Returns how many pages the pool admits at once right now.
    pub fn limit(&self) -> usize {
        self.inner.main.limit()
    }

    /// Returns the pool's counters.
    pub fn stats(&self) -> PoolStats {
        PoolStats {
            launched: self.inner.launched.load(Ordering::Relaxed),
            replaced: self.inner.replaced.load(Ordering::Relaxed),
            recycled: self.inner.recycled.load(Ordering::Relaxed),
            leases: self.inner.leases.load(Ordering::Relaxed),
            contexts: self.inner.contexts.load(Ordering::Relaxed),
            reused: self.inner.reused.load(Ordering::Relaxed),
        }
    }

    /// Returns how many pages are on loan right now.
    pub fn in_use(&self) -> usize {
        self.inner.main.in_use()
    }

    /// Returns the process ids of the browsers launched by this pool.
    pub async fn pids(&self) -> Vec<i32> {
        let mut out = Vec::new();
        for group in std::iter::once(&self.inner.main).chain(self.inner.other.get()) {
            for slot in &group.slots {
                if let Some(pid) = slot.lock().await.handle.as_ref().and_then(|h| h.pid()) {
                    out.push(pid);
                }
            }
        }
        out
    }

    async fn group(&self, headless: bool) -> &Group {
        if headless == self.inner.cfg.headless {
            return &self.inner.main;
        }
        // The other mode gets one browser, created on first use.
        self.inner
            .other
            .get_or_init(|| async {
                let pages = self.inner.cfg.pages_per_browser;
                Group::new(headless, 1, pages, pages)
            })
            .await
    }

    /// Waits for capacity and returns a page in its own context: a new one,
    /// or one reset after an earlier job (see `PoolConfig::context_reuse`).
    pub async fn acquire(&self, headless: bool) -> Result<Lease, BrowserError> {
        let started = Instant::now();
        let group = self.group(headless).await;
        let permit = {
            let _waiting = Waiting::new(&group.waiting);
            group
                .permits
                .clone()
                .acquire_owned()
                .await
                .map_err(|_| BrowserError::Unavailable("pool is shut down".into()))?
        };
        let slot = {
            let mut active = group.active.lock().expect("active counts");
            let (idx, _) = active
                .iter()
                .enumerate()
                .min_by_key(|(_, n)| **n)
                .expect("at least one slot");
            active[idx] += 1;
            idx
        };
        let tab = match self.open_tab(group, slot).await {
            Ok(tab) => tab,
            Err(err) => {
                group.active.lock().expect("active counts")[slot] -= 1;
                return Err(err);
            }
        };
        self.inner.leases.fetch_add(1, Ordering::Relaxed);
        group.granted.fetch_add(1, Ordering::Relaxed);
        Ok(Lease {
            tab: Some(tab),
            pool: self.clone(),
            group_headless: group.headless,
            slot,
            permit: Some(permit),
            waited: started.elapsed(),
        })
    }

    /// Opens a tab on slot `idx` (a parked one when there is one),
    /// replacing its browser once if it is dead.
    async fn open_tab(&self, group: &Group, idx: usize) -> Result<Tab, BrowserError> {
        let mut last = None;
        for _ in 0..2 {
            let handle = self.ensure_browser(group, idx).await?;
            {
                let mut slot = group.slots[idx].lock().await;
                if slot.handle.as_ref().is_some_and(|h| Arc::ptr_eq(h, &handle)) {
                    while let Some(tab) = slot.idle.pop() {
                        // A renderer may have crashed while the page was parked.
                        if tab.reusable() && Arc::ptr_eq(tab.browser(), &handle) {
                            slot.jobs += 1;
                            tab.jobs.fetch_add(1, Ordering::Relaxed);
                            self.inner.reused.fetch_add(1, Ordering::Relaxed);
                            return Ok(tab);
                        }
                        tokio::spawn(tab.close());
                    }
                }
            }
            match Tab::open(&handle, self.inner.cfg.isolation == Isolation::Shared).await {
                Ok(tab) => {
                    self.inner.contexts.fetch_add(1, Ordering::Relaxed);
                    tab.jobs.fetch_add(1, Ordering::Relaxed);
                    // Count the job when its page is handed out: counted at
                    // release (a background task) a quick next acquire could
                    // miss the recycle.
                    let mut slot = group.slots[idx].lock().await;
                    if slot.handle.as_ref().is_some_and(|h| Arc::ptr_eq(h, &handle)) {
                        slot.jobs += 1;
                    }
                    return Ok(tab);
                }
                Err(err) => {
                    tracing::warn!(error = %err, "opening a page failed; replacing the browser");
                    handle.mark_dead();
                    last = Some(err);
                }
            }
        }
        Err(last.unwrap_or_else(|| BrowserError::Unavailable("no browser".into())))
    }

    /// Returns slot `idx`'s browser, launching a new one when it is missing,
    /// dead or due for recycling.
    async fn ensure_browser(&self, group: &Group, idx: usize) -> Result<Arc<BrowserHandle>, BrowserError> {
        let mut slot = group.slots[idx].lock().await;
        let recycle = slot.jobs >= self.inner.cfg.recycle_after;
        if let Some(handle) = &slot.handle {
            if handle.is_alive() && !recycle {
                return Ok(handle.clone());
            }
            if recycle && handle.is_alive() {
                self.inner.recycled.fetch_add(1, Ordering::Relaxed);
                tracing::debug!(slot = idx, jobs = slot.jobs, "recycling browser");
            } else {
                self.inner.replaced.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(slot = idx, "browser died; replacing it");
            }
        }
        // Pages still open on the old browser keep it alive until they end;
        // parked ones must not.
        slot.handle = None;
        slot.idle.clear();
        let handle = BrowserHandle::start(&self.inner.cfg, group.headless).await?;
        self.inner.launched.fetch_add(1, Ordering::Relaxed);
        slot.handle = Some(handle.clone());
        slot.jobs = 0;
        Ok(handle)
    }

    /// Takes a page back: resets and parks it for the next job when it
    /// may serve another, disposes its context otherwise.
    async fn release(&self, headless: bool, idx: usize, tab: Tab) {
        let group = self.group(headless).await;
        let crashed = tab.crashed();
        let current = |slot: &Slot| {
            slot.handle
                .as_ref()
                .is_some_and(|h| Arc::ptr_eq(h, tab.browser()) && h.is_alive())
                && slot.jobs < self.inner.cfg.recycle_after
        };
        let unfit = tab.not_reusable_because();
        if let Some(why) = unfit {
            tracing::debug!(why, "the context is disposed, not reused");
        }
        let keep = unfit.is_none() && tab.jobs.load(Ordering::Relaxed) < self.inner.cfg.context_reuse && {
            let slot = group.slots[idx].lock().await;
            current(&slot)
        };
        let parked = if keep {
            let reset_started = Instant::now();
            let reset = match self.inner.cfg.isolation {
                Isolation::Context => {
                    let out = tab.reset().await;
                    tracing::debug!(ms = reset_started.elapsed().as_secs_f64() * 1e3, "page reset");
                    out
                }
                Isolation::Shared => {
                    tab.end_shared_job();
                    Ok(())
                }
            };
            match reset {
                Ok(()) => {
                    let mut slot = group.slots[idx].lock().await;
                    let room = slot.idle.len() < self.inner.cfg.pages_per_browser.max(1);
                    if current(&slot) && room && !group.permits.is_closed() {
                        slot.idle.push(tab);
                        None
                    } else {
                        Some(tab)
                    }
                }
                Err(err) => {
                    tracing::debug!(error = %err, "page reset failed; disposing its context");
                    Some(tab)
                }
            }
        } else {
            Some(tab)
        };
        if let Some(tab) = parked {
            tab.close().await;
        }
        group.active.lock().expect("active counts")[idx] -= 1;
        let mut slot = group.slots[idx].lock().await;
        // A renderer crash leaves the browser usable; a dead connection does not.
        if crashed && slot.handle.as_ref().is_some_and(|h| !h.is_alive()) {
            slot.handle = None;
            slot.idle.clear();
        }
    }

    /// Pings every browser; dead ones are marked and replaced on next use.
    /// Returns how many answered.
    pub async fn health_check(&self) -> usize {
        let mut healthy = 0;
        for slot in &self.inner.main.slots {
            let handle = slot.lock().await.handle.clone();
            if let Some(h) = handle {
                match h.ping().await {
                    Ok(()) => healthy += 1,
                    Err(err) => {
                        tracing::warn!(error = %err, "browser failed its health check");
                        h.mark_dead();
                    }
                }
            }
        }
        healthy
    }

    /// Closes every browser and refuses new leases.
    pub async fn shutdown(&self) {
        for group in std::iter::once(&self.inner.main).chain(self.inner.other.get()) {
            group.permits.close();
            for slot in &group.slots {
                let mut slot = slot.lock().await;
                slot.idle.clear();
                if let Some(handle) = slot.handle.take() {
                    handle.kill();
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A page taken back while every admitted page is on loan is the next
    /// one returned: the limit drops at once, the pages in flight as they
    /// finish, and a page given again cancels what is still owed.
    #[test]
    fn a_page_taken_back_while_all_are_on_loan_is_the_next_returned() {
        let group = Group::new(true, 1, 2, 4);
        group.set_limit(3);
        assert_eq!((group.limit(), group.in_use()), (3, 0));
        let mut loans: Vec<_> = (0..3)
            .map(|_| group.permits.clone().try_acquire_owned().expect("admitted"))
            .collect();
        assert!(
            group.permits.clone().try_acquire_owned().is_err(),
            "three at most"
        );
        group.set_limit(2);
        assert_eq!((group.limit(), group.in_use()), (2, 3));
        group.give_back(loans.pop().expect("loan"));
        assert_eq!((group.limit(), group.in_use()), (2, 2));
        assert!(
            group.permits.clone().try_acquire_owned().is_err(),
            "held back, not lent"
        );
        group.give_back(loans.pop().expect("loan"));
        assert_eq!((group.limit(), group.in_use()), (2, 1));
        let again = group.permits.clone().try_acquire_owned().expect("free again");
        // Owed, then given again before a page came back: nothing held.
        group.set_limit(1);
        assert_eq!(group.limit(), 1);
        group.set_limit(2);
        assert_eq!((group.limit(), group.in_use()), (2, 2));
        drop((again, loans));
    }
}
