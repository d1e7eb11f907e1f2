//! The end of a job on a tab: a held navigation let go, the job's tasks
//! stopped, and the reset that hands a fresh-looking context to the next
//! job (or the context disposed).

use super::*;

/// The JavaScript and DOM heap (MiB) a reset leaves to the renderer's own
/// collector; above it the reset has the renderer collect. A renderer on
/// `about:blank` holds 4–5 MiB of its own.
const COLLECT_ABOVE_MIB: f64 = 6.0;

const MIB: f64 = 1024.0 * 1024.0;

impl Tab {
    /// Whether the last `Page.navigate` is still unanswered.
    fn navigation_pending(&self) -> bool {
        self.nav_task
            .lock()
            .expect("nav task")
            .as_ref()
            .is_some_and(|t| !t.is_finished())
    }

    /// Lets the next `Page.navigate` go out at once. chromiumoxide holds a
    /// page's navigations in a queue until the one before reaches `load`
    /// (30 s at most): after a navigation that timed out, or a `ready`
    /// read before `load`, the next one would wait that out — and take the
    /// late response of the old one for its own document. So the old load
    /// is stopped and the frame given a new document (`about:blank`, from
    /// an isolated world, in place of the current history entry), whose
    /// `load` ends chromiumoxide's wait. A renderer too busy to run that
    /// leaves the queue as it is; the caller's deadline then says so.
    pub(crate) async fn unstick_navigation(&self) {
        if !self.navigation_pending() {
            return;
        }
        // A navigation not yet committed ends here (aborted), and a
        // document still loading usually fires `load` when stopped.
        let _ = self.call_unnoted(StopLoadingParams::default()).await;
        if self.navigation_ended_within(STOP_WAIT).await {
            return;
        }
        let frame = self.page.target_id().as_ref().to_string();
        if let Ok(world) = CreateIsolatedWorldParams::builder()
            .frame_id(frame)
            .world_name("oxwright-unstick")
            .build()
            && let Ok(out) = self.call_unnoted(world).await
        {
            let replace = EvaluateParams::builder()
                .expression("location.replace('about:blank')")
                .context_id(out.execution_context_id)
                .build();
            if let Ok(replace) = replace {
                let _ = self.call_unnoted(replace).await;
            }
        }
        if !self.navigation_ended_within(UNSTICK_WAIT).await {
            tracing::debug!("an earlier navigation still holds the page's navigation queue");
        }
    }

    /// Waits at most `limit` for the last `Page.navigate` to be answered.
    async fn navigation_ended_within(&self, limit: Duration) -> bool {
        let until = tokio::time::Instant::now() + limit;
        while self.navigation_pending() {
            if tokio::time::Instant::now() >= until {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        true
    }

    /// Stops the current job's background tasks.
    pub(super) fn stop_job_tasks(&self) {
        for task in self.tasks.lock().expect("tasks").drain(..) {
            task.abort();
        }
        self.job_doc.lock().expect("job doc").take();
    }

    /// Disposes the browser context (and so the page); in the default
    /// context, closes the page.
    pub(crate) async fn close(self) {
        self.stop_job_tasks();
        self.watcher.abort();
        if !self.browser.is_alive() {
            return;
        }
        match self.context.clone() {
            Some(context) => self.browser.dispose_context(context).await,
            None => {
                let closed = tokio::time::timeout(self.call_timeout, self.page.clone().close()).await;
                if !matches!(closed, Ok(Ok(()))) {
                    tracing::debug!("page close failed");
                }
            }
        }
    }

    /// Ends the job on a page of the browser's default context
    /// (`Isolation::Shared`): its interception and navigation tasks stop;
    /// the page, its document and everything it stored stay.
    pub(crate) fn end_shared_job(&self) {
        self.stop_job_tasks();
    }

    /// Returns the page to the state of a fresh context so the next job can
    /// use it: stops the document's scripts, clears its session storage,
    /// leaves it (so nothing of it runs or writes again), drops the history,
    /// then clears cookies, the HTTP cache, permissions and every storage
    /// (local, IndexedDB, Cache Storage, service workers, …) of each origin
    /// the page reached, and has the renderer collect the old documents'
    /// heap once it holds more than [`COLLECT_ABOVE_MIB`]. Any error means
    /// the tab must be disposed instead. See `design.md` beside this crate.
    pub(crate) async fn reset(&self) -> Result<(), BrowserError> {
        // Interception stays on: the next job's interceptor answers it, and
        // until then nothing the old document asks for is let through.
        self.stop_job_tasks();
        // The job's link to its out-of-process frames goes: dropping it
        // closes its connection, which detaches its frame sessions and the
        // auto-attachment it asked for.
        drop(self.frame_link.lock().await.take());
        // Its Page.navigate below must not queue behind the job's last one.
        self.unstick_navigation().await;
        if let Some(context) = &self.context {
            // Popups the job opened live in this context: they go with it.
            self.browser
                .close_other_pages(context, self.page.target_id())
                .await
                .inspect_err(|_| self.failed.store(true, Ordering::SeqCst))?;
        }
        if let Some(egress) = &self.egress {
            // Until the next job says otherwise, nothing non-public leaves,
            // and nothing through this job's proxy.
            egress.set_policy(Arc::new(UrlPolicy::default()));
            egress.set_upstream(None);
            egress.drain_refusals();
        }
        let mut origins = std::mem::take(&mut *self.origins.lock().expect("origins"));
        // What the page's session did not see: the requests of its frames
        // in other processes (site isolation) and of its workers. The
        // context's egress proxy saw them all.
        if let Some(egress) = &self.egress {
            origins.extend(egress.drain_origins());
        }
        // Session storage belongs to the tab, not to the storage partition,
        // and DevTools reaches it only through a live frame of its origin:
        // clear it before leaving, with scripts stopped so no unload handler
        // writes it again.
        self.call_own(SetScriptExecutionDisabledParams::new(true)).await?;
        let sessions = origins.iter().map(|origin| async move {
            let session = StorageId {
                security_origin: Some(origin.clone()),
                storage_key: None,
                is_local_storage: false,
            };
            match self.call_unnoted(ClearDomStorageParams::new(session)).await {
                Ok(_) => Ok(()),
                // No frame of this origin: it only served sub-resources.
                Err(BrowserError::Protocol { message, .. }) if message.contains("Frame not found") => Ok(()),
                Err(err) => self.note(Err(err)),
            }
        });
        futures::future::try_join_all(sessions).await?;
        // Page.navigate answers once about:blank has committed.
        self.call_own(NavigateParams::new("about:blank")).await?;
        self.call_own(SetScriptExecutionDisabledParams::new(false))
            .await?;
        // window.name survives same-site navigations (about:blank
        // inherits it): the next job must not read this one's.
        self.call_own(EvaluateParams::new("window.name = ''")).await?;
        // The rest is independent: the browser clears the context's data
        // while the renderer drops the history and collects the old
        // document's heap.
        let history = async {
            self.call_own(ResetNavigationHistoryParams::default()).await?;
            // The old document's objects are garbage now, but V8 collects
            // them only when its heuristics say so, and a parked renderer
            // carried them into the next job: four renderers each holding
            // one page's leftovers beside the next one's load. A full
            // collection (V8's low-memory GC, which also returns the freed
            // pages) took the Chromium PSS peak of a 200-page real-page
            // batch at 4 in flight from 746–756 to 574–584 MiB. But it
            // costs the renderer 15–60 ms whatever the heap holds, so it
            // runs only once the renderer holds more than
            // `COLLECT_ABOVE_MIB`: the garbage of a few small pages waits
            // for the collection a later job's reset runs, and no parked
            // renderer carries more than that into a job (BENCHMARKS §3).
            let heap = self.call_own(GetHeapUsageParams::default()).await?;
            let held_mib = (heap.used_size + heap.embedder_heap_used_size) / MIB;
            if held_mib > COLLECT_ABOVE_MIB {
                self.call_own(CollectGarbageParams::default()).await?;
            }
            Ok::<(), BrowserError>(())
        };
        let origins_data = futures::future::try_join_all(
            origins
                .iter()
                .map(|origin| self.call_own(ClearDataForOriginParams::new(origin.clone(), "all"))),
        );
        let permissions = async {
            match self.context.clone() {
                Some(context) => self.browser.reset_permissions(context).await,
                None => Ok(()),
            }
        };
        futures::future::try_join5(
            history,
            origins_data,
            self.call_own(ClearBrowserCookiesParams::default()),
            self.call_own(ClearBrowserCacheParams::default()),
            permissions,
        )
        .await?;
        Ok(())
    }
}
