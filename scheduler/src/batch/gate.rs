//! The scheduler's per-host release of batches submitted with host limits:
//! their jobs are not all published at once but held here and published
//! host by host (at most `concurrency` in flight at a host, at least its
//! delay between two starts, robots.txt's `Crawl-delay` when longer), as
//! the workers' reports free each host's slots. The scheduler is the only
//! publisher, so the limits hold whatever the number of workers.
//!
//! What survives a restart: the batch is listed under `gated/` until it
//! completes, and each round of jobs published is logged under
//! `batches/<id>/released/` once the broker confirmed it. A restarted
//! scheduler rebuilds the waiting jobs from `jobs.jsonl` (less those
//! released or with a manifest line) and counts the released ones without
//! a line as in flight. A job whose credentials were withheld from
//! `jobs.jsonl` cannot be rebuilt; it gets a failed line saying so.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use oxwright_artifacts::{ArtifactError, ArtifactStore};
use oxwright_jobs::{ErrorKind, HostLimits, Job, JobError, JobId, JobReport, JobSpec, keys};
use oxwright_queue::JobQueue;
use oxwright_robots::RobotsCache;

use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use url::Url;

use super::ManifestWriter;
use super::input::failed_report;
use crate::politeness::{Hosts, host_key, robots_allow};
use crate::submit::{StoredJob, SubmitReceipt, publish_job, read_batch_record};

struct Gated {
    hosts: Hosts<Job>,
    /// The next `released/` round's number.
    seq: u64,
}

#[derive(Default)]
struct State {
    batches: HashMap<String, Gated>,
    /// Batches being submitted or taken up, not yet held: no one else
    /// takes them up meanwhile.
    claimed: HashSet<String>,
    /// Jobs published and not yet reported: their batch and host key.
    in_flight: HashMap<JobId, (String, String)>,
}

/// A batch's jobs sorted for release ([`Gate::screen`]).
pub struct Screened {
    hosts: Hosts<Job>,
    held: Vec<(String, Job)>,
    /// The jobs robots.txt disallows, with their errors: not held.
    pub refused: Vec<(Job, JobError)>,
}

/// A batch claimed by one submission or take-up ([`Gate::claim`]).
struct Claim<'a> {
    gate: &'a Gate,
    batch_id: String,
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        self.gate.lock().claimed.remove(&self.batch_id);
    }
}

/// One round of jobs of one batch that may be published now.
struct Round {
    batch_id: String,
    seq: u64,
    jobs: Vec<(String, Job)>,
}

/// The batches released host by host, and what wakes their release.
pub struct Gate {
    state: Mutex<State>,
    wake: Notify,
    robots: RobotsCache,
}

impl std::fmt::Debug for Gate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gate").finish_non_exhaustive()
    }
}

/// How long a release that could not publish waits before trying again.
const PUBLISH_RETRY: Duration = Duration::from_secs(1);

impl Gate {
    /// A gate asking `robots` for the batches that respect robots.txt.
    pub fn new(robots: RobotsCache) -> Self {
        Self {
            state: Mutex::new(State::default()),
            wake: Notify::new(),
            robots,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().expect("gate lock")
    }

    /// Sorts `jobs` for release under `limits`: those robots.txt
    /// disallows (when the limits respect it) come out with their errors,
    /// and the hosts' `Crawl-delay`s are noted. Nothing is held yet.
    pub async fn screen(&self, limits: HostLimits, jobs: Vec<Job>) -> Screened {
        let mut screened = Screened {
            hosts: Hosts::new(limits.concurrency, Duration::from_millis(limits.delay_ms)),
            held: Vec::new(),
            refused: Vec::new(),
        };
        for job in jobs {
            let url = job_url(&job);
            if limits.respect_robots
                && let Some(url) = &url
                && let Err(err) = robots_allow(&self.robots, &mut screened.hosts, url).await
            {
                screened.refused.push((job, err));
                continue;
            }
            screened
                .held
                .push((url.as_ref().map(host_key).unwrap_or_default(), job));
        }
        screened
    }

    /// Holds the jobs `screened` kept for `batch_id`, with the jobs in
    /// `in_flight` (published already, not yet reported) counted at their
    /// hosts; `seq` numbers its next `released/` round.
    pub fn admit(&self, batch_id: &str, screened: Screened, in_flight: Vec<(JobId, String)>, seq: u64) {
        let Screened { mut hosts, held, .. } = screened;
        let now = Instant::now();
        let mut state = self.lock();
        for (job_id, key) in in_flight {
            hosts.occupy(&key, now);
            state.in_flight.insert(job_id, (batch_id.to_owned(), key));
        }
        for (key, job) in held {
            hosts.push(&key, job, now);
        }
        state.batches.insert(batch_id.to_owned(), Gated { hosts, seq });
        drop(state);
        self.wake.notify_one();
    }

    /// Frees the slot of the job `report` ends, if the gate released it:
    /// a 429, a 503 or a timeout slows its host down.
    pub fn finished(&self, report: &JobReport) {
        let mut state = self.lock();
        let Some((batch_id, key)) = state.in_flight.remove(&report.job_id) else {
            return;
        };
        if let Some(batch) = state.batches.get_mut(&batch_id) {
            batch.hosts.answered(&key, report, Instant::now());
        }
        drop(state);
        self.wake.notify_one();
    }

    /// Whether the gate holds `batch_id`.
    pub fn holds(&self, batch_id: &str) -> bool {
        self.lock().batches.contains_key(batch_id)
    }

    /// Claims `batch_id` for one submission or take-up until the claim is
    /// dropped; `None` when the gate holds it or another has claimed it.
    fn claim(&self, batch_id: &str) -> Option<Claim<'_>> {
        let mut state = self.lock();
        (!state.batches.contains_key(batch_id) && state.claimed.insert(batch_id.to_owned())).then(|| Claim {
            gate: self,
            batch_id: batch_id.to_owned(),
        })
    }

    /// Lets go of a completed batch.
    pub fn forget(&self, batch_id: &str) {
        let mut state = self.lock();
        state.batches.remove(batch_id);
        state.in_flight.retain(|_, (b, _)| b != batch_id);
    }

    /// Takes every job of `batch_id` still waiting (the batch was
    /// cancelled: they are published at once, and workers skip them).
    pub fn cancel(&self, batch_id: &str) -> Vec<Job> {
        self.lock()
            .batches
            .get_mut(batch_id)
            .map(|b| b.hosts.drain())
            .unwrap_or_default()
    }

    /// The jobs that may be published now, a round per batch, and when
    /// the next may.
    fn take_ready(&self, now: Instant) -> (Vec<Round>, Option<Instant>) {
        let mut state = self.lock();
        let State {
            batches, in_flight, ..
        } = &mut *state;
        let mut rounds = Vec::new();
        let mut wake: Option<Instant> = None;
        for (batch_id, batch) in batches.iter_mut() {
            let mut jobs = Vec::new();
            while let Some((key, job)) = batch.hosts.release(now) {
                in_flight.insert(job.id, (batch_id.clone(), key.clone()));
                jobs.push((key, job));
            }
            if let Some(at) = batch.hosts.next_release() {
                wake = Some(wake.map_or(at, |w| w.min(at)));
            }
            if !jobs.is_empty() {
                rounds.push(Round {
                    batch_id: batch_id.clone(),
                    seq: batch.seq,
                    jobs,
                });
                batch.seq += 1;
            }
        }
        (rounds, wake)
    }

    /// Puts back a job that could not be published.
    fn put_back(&self, batch_id: &str, key: &str, job: Job) {
        let mut state = self.lock();
        state.in_flight.remove(&job.id);
        if let Some(batch) = state.batches.get_mut(batch_id) {
            let now = Instant::now();
            batch.hosts.finished(key, false, now);
            batch.hosts.push(key, job, now);
        }
    }
}

fn job_url(job: &Job) -> Option<Url> {
    match &job.spec {
        JobSpec::Fetch(spec) => Some(spec.url.clone()),
        _ => Url::parse(job.url()).ok(),
    }
}

/// Publishes what the gate releases until `shutdown`: each round of a
/// batch is published job by job (each confirmed by the broker), then
/// logged under `released/`.
pub async fn run_gate(
    gate: Arc<Gate>,
    queue: Arc<dyn JobQueue>,
    store: Arc<dyn ArtifactStore>,
    shutdown: CancellationToken,
) {
    loop {
        let (rounds, mut wake) = gate.take_ready(Instant::now());
        for round in rounds {
            let mut published = Vec::new();
            for (key, job) in round.jobs {
                match publish_job(queue.as_ref(), &job).await {
                    Ok(()) => published.push(job.id),
                    Err(err) => {
                        tracing::warn!(batch_id = %round.batch_id, job_id = %job.id, error = %err, "a held job could not be published; tried again");
                        gate.put_back(&round.batch_id, &key, job);
                        let retry = Instant::now() + PUBLISH_RETRY;
                        wake = Some(wake.map_or(retry, |w| w.min(retry)));
                    }
                }
            }
            log_released(store.as_ref(), &round.batch_id, round.seq, &published).await;
        }
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = gate.wake.notified() => {}
            _ = tokio::time::sleep_until(wake.unwrap_or_else(Instant::now)), if wake.is_some() => {}
        }
    }
}

/// Writes one round of published jobs to the batch's `released/` log,
/// trying a few times: a round left unlogged may be published again by a
/// scheduler that restarts before the batch ends.
pub(crate) async fn log_released(store: &dyn ArtifactStore, batch_id: &str, seq: u64, published: &[JobId]) {
    if published.is_empty() {
        return;
    }
    let body: String = published.iter().map(|id| format!("{id}\n")).collect();
    let key = keys::batch_released(batch_id, seq);
    for attempt in 0..5u32 {
        match store
            .put(&key, Bytes::from(body.clone()), "application/x-ndjson")
            .await
        {
            Ok(()) => return,
            Err(err) => {
                tracing::warn!(batch_id, error = %err, attempt, "logging released jobs failed");
                tokio::time::sleep(Duration::from_millis(200 << attempt)).await;
            }
        }
    }
}

/// Submits a batch whose jobs the scheduler's `gate` releases host by
/// host under `limits`, rather than publishing them all now: the record
/// and `jobs.jsonl` are written, the batch listed under `gated/`, and the
/// jobs handed to the gate. Lines robots.txt disallows (when `limits`
/// respects it) get failed reports.
#[allow(clippy::too_many_arguments)]
pub async fn submit_gated(
    queue: &dyn JobQueue,
    store: &dyn ArtifactStore,
    gate: &Gate,
    batch_id: &str,
    jobs: Vec<Job>,
    refused: Vec<(String, JobError)>,
    source: &str,
    webhook: Option<crate::hooks::BatchWebhook>,
    limits: HostLimits,
) -> Result<SubmitReceipt, super::BatchError> {
    // Listed under `gated/` before it is held: a take-up pass meanwhile
    // leaves it alone.
    let _claim = gate
        .claim(batch_id)
        .ok_or_else(|| super::BatchError::Duplicate(batch_id.to_owned()))?;
    let submission = crate::submit::Submission {
        batch_id,
        source,
        webhook,
        per_host: Some(limits),
    };
    let (jobs, refused, record) =
        crate::submit::record_batch(queue, store, submission, jobs, refused).await?;
    let held = jobs.len();
    let mut screened = gate.screen(limits, jobs).await;
    let disallowed = std::mem::take(&mut screened.refused);
    for (job, error) in &disallowed {
        let report = failed_report(job.id, batch_id, job.url(), error.clone());
        queue.publish_report(&report).await?;
    }
    crate::submit::publish_refused(queue, batch_id, &refused).await?;
    gate.admit(batch_id, screened, Vec::new(), 0);
    tracing::info!(
        batch_id,
        jobs = held,
        refused = refused.len(),
        disallowed = disallowed.len(),
        source,
        "batch submitted, released host by host"
    );
    Ok(crate::submit::receipt(&record, held - disallowed.len()))
}

/// Submits a batch for the scheduler daemon to release host by host under
/// `limits`, from outside it (`oxwright submit`): the record and
/// `jobs.jsonl` are written and the batch listed under `gated/`, where the
/// daemon's next take-up pass finds it; only the refused lines' reports
/// are published. robots.txt is read by the daemon as it takes it up.
pub async fn submit_for_release(
    queue: &dyn JobQueue,
    store: &dyn ArtifactStore,
    batch_id: &str,
    jobs: Vec<Job>,
    refused: Vec<(String, JobError)>,
    source: &str,
    limits: HostLimits,
) -> Result<SubmitReceipt, super::BatchError> {
    let submission = crate::submit::Submission {
        batch_id,
        source,
        webhook: None,
        per_host: Some(limits),
    };
    let (jobs, refused, record) =
        crate::submit::record_batch(queue, store, submission, jobs, refused).await?;
    crate::submit::publish_refused(queue, batch_id, &refused).await?;
    tracing::info!(
        batch_id,
        jobs = jobs.len(),
        refused = refused.len(),
        source,
        "batch listed for the scheduler to release host by host"
    );
    Ok(crate::submit::receipt(&record, jobs.len()))
}

/// Takes up every batch listed under `gated/` that the gate does not hold
/// and that has not completed: one an earlier scheduler left running, or
/// one submitted from outside ([`submit_for_release`]). Its waiting jobs
/// are held, its released jobs without a manifest line counted in flight. Jobs that cannot be rebuilt from
/// `jobs.jsonl` (their credentials were withheld) and jobs robots.txt
/// disallows get failed reports on `queue`.
pub async fn recover(
    gate: &Gate,
    queue: &dyn JobQueue,
    store: &Arc<dyn ArtifactStore>,
) -> Result<usize, super::BatchError> {
    let mut taken = 0;
    for key in store.list(keys::GATED_PREFIX).await? {
        let Some(batch_id) = key
            .strip_prefix(keys::GATED_PREFIX)
            .and_then(|k| k.strip_suffix(".json"))
            .map(str::to_owned)
        else {
            continue;
        };
        let Some(_claim) = gate.claim(&batch_id) else {
            continue;
        };
        let limits: HostLimits = match store.get(&key).await.map(|b| serde_json::from_slice(&b)) {
            Ok(Ok(limits)) => limits,
            Ok(Err(err)) => {
                tracing::warn!(%batch_id, error = %err, "unreadable gated batch entry left alone");
                continue;
            }
            Err(ArtifactError::NotFound { .. }) => continue,
            Err(err) => return Err(err.into()),
        };
        if store.exists(&keys::batch_summary(&batch_id)).await? {
            store.delete(&key).await?;
            continue;
        }
        // Listed before its record is written: a submission still under
        // way, taken up by a later pass.
        let Some(record) = read_batch_record(store.as_ref(), &batch_id).await? else {
            continue;
        };
        let manifest = ManifestWriter::resume(store.clone(), &batch_id, record.total).await?;
        let (released, seq) = read_released(store.as_ref(), &batch_id).await?;
        let store_id = oxwright_artifacts::store_id(store.as_ref()).await?;
        let mut waiting = Vec::new();
        let mut in_flight = Vec::new();
        let mut lost = Vec::new();
        for line in read_jobs(store.as_ref(), &batch_id).await? {
            if manifest.has(&line.job_id) {
                continue;
            }
            let url = line.spec["spec"]["url"].as_str().unwrap_or_default().to_owned();
            if released.contains(&line.job_id) {
                let key = Url::parse(&url).map(|u| host_key(&u)).unwrap_or_default();
                in_flight.push((line.job_id, key));
                continue;
            }
            match rebuild(&line, &batch_id, &store_id) {
                Some(job) => waiting.push(job),
                None => lost.push((line.job_id, url)),
            }
        }
        // Every report is out before the batch is held: a failure here
        // leaves it to be taken up again whole.
        let mut screened = gate.screen(limits, waiting).await;
        for (job_id, url) in lost {
            let error = JobError::new(
                ErrorKind::Cancelled,
                format!(
                    "not run: the scheduler restarted before releasing it, and its credentials ({}) are not kept in the store; submit it again",
                    crate::submit::WITHHELD_FIELDS.join(", ")
                ),
            );
            queue
                .publish_report(&failed_report(job_id, &batch_id, &url, error))
                .await?;
        }
        for (job, error) in std::mem::take(&mut screened.refused) {
            queue
                .publish_report(&failed_report(job.id, &batch_id, job.url(), error))
                .await?;
        }
        gate.admit(&batch_id, screened, in_flight, seq);
        tracing::info!(%batch_id, "a batch released host by host taken up");
        taken += 1;
    }
    Ok(taken)
}

/// A waiting job rebuilt from its `jobs.jsonl` line; `None` when its
/// credentials were withheld or the line cannot be read.
fn rebuild(line: &StoredJob, batch_id: &str, store_id: &str) -> Option<Job> {
    if !line.withheld.is_empty() {
        return None;
    }
    let spec: JobSpec = serde_json::from_value(line.spec.clone()).ok()?;
    let mut job = Job::new(spec, Some(batch_id.to_owned()));
    job.id = line.job_id;
    job.store_id = Some(store_id.to_owned());
    Some(job)
}

async fn read_jobs(store: &dyn ArtifactStore, batch_id: &str) -> Result<Vec<StoredJob>, ArtifactError> {
    let body = match store.get(&keys::batch_jobs(batch_id)).await {
        Ok(body) => body,
        Err(ArtifactError::NotFound { .. }) => return Ok(Vec::new()),
        Err(err) => return Err(err),
    };
    Ok(body
        .split(|b| *b == b'\n')
        .filter_map(|l| serde_json::from_slice(l).ok())
        .collect())
}

/// The jobs logged as released, and the next round's number.
pub(crate) async fn read_released(
    store: &dyn ArtifactStore,
    batch_id: &str,
) -> Result<(HashSet<JobId>, u64), ArtifactError> {
    let mut released = HashSet::new();
    let mut seq = 0;
    for key in store.list(&keys::batch_released_prefix(batch_id)).await? {
        let round = key
            .rsplit('/')
            .next()
            .and_then(|n| n.strip_suffix(".jsonl"))
            .and_then(|n| n.parse::<u64>().ok());
        if let Some(round) = round {
            seq = seq.max(round + 1);
        }
        let body = match store.get(&key).await {
            Ok(body) => body,
            Err(ArtifactError::NotFound { .. }) => continue,
            Err(err) => return Err(err),
        };
        released.extend(
            String::from_utf8_lossy(&body)
                .lines()
                .filter_map(|l| l.trim().parse::<uuid::Uuid>().ok().map(JobId)),
        );
    }
    Ok((released, seq))
}
