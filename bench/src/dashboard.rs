//! The dashboard's cost: how long a batch page of a large batch takes to
//! answer (its first page of jobs, a filtered page, the batch list, the
//! live counts), and what the live view costs the scheduler while a batch
//! runs. The scheduler runs in this process on a file store and an
//! in-process queue; reports are published as workers would.
//!
//! The live view's cost is the difference in this process's CPU time
//! between a window with one open batch page (the page's script: the
//! counts every two seconds, the job table when they move) and the same
//! window without it, over the window's wall time. The bench's own HTTP
//! client is in the difference, so the figure is an upper bound.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use bytes::Bytes;
use clap::Args;
use oxwright_artifacts::{ArtifactStore, FsStore};
use oxwright_jobs::{ErrorKind, FetchSpec, Job, JobError, JobKind, JobReport, JobSpec, ReportStatus, keys};
use oxwright_queue::{JobQueue, MemoryQueue};
use oxwright_scheduler::{SchedulerOptions, run_scheduler, submit_batch};
use serde::Serialize;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

use crate::stats::{median, percentile};

/// Arguments of `dashboard`.
#[derive(Debug, Args)]
pub struct DashboardArgs {
    /// Jobs in the large batch whose pages are timed.
    #[arg(long, default_value_t = 10_000)]
    pub jobs: usize,
    /// Requests timed per page.
    #[arg(long, default_value_t = 30)]
    pub requests: usize,
    /// Length of each live-view window, seconds.
    #[arg(long, default_value_t = 20)]
    pub live_secs: u64,
    /// Reports per second while a batch runs.
    #[arg(long, default_value_t = 50)]
    pub rate: u64,
    /// Windows with and without the live view, interleaved (each).
    #[arg(long, default_value_t = 2)]
    pub rounds: usize,
}

/// Timings of one page.
#[derive(Debug, Serialize)]
pub struct PageTiming {
    pub path: String,
    pub bytes: usize,
    pub p50_ms: f64,
    pub p95_ms: f64,
}

/// What `dashboard` measured.
#[derive(Debug, Serialize)]
pub struct DashboardReport {
    pub jobs: usize,
    pub pages: Vec<PageTiming>,
    pub live_secs: u64,
    pub reports_per_s: u64,
    /// Process CPU per wall second, without a viewer (one per round).
    pub cpu_share_without_view: Vec<f64>,
    /// The same with one open batch page.
    pub cpu_share_with_view: Vec<f64>,
    /// Median with minus median without: the live view's share of a core.
    pub live_view_cpu_share: f64,
}

/// A GET over a fresh connection; returns the status and the body length.
async fn get(addr: std::net::SocketAddr, path: &str) -> Result<(u16, usize)> {
    let mut conn = tokio::net::TcpStream::connect(addr).await?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    conn.write_all(request.as_bytes()).await?;
    let mut answer = Vec::new();
    conn.read_to_end(&mut answer).await?;
    let head_end = answer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .context("an HTTP answer")?;
    let status = std::str::from_utf8(&answer[9..12])?.parse()?;
    Ok((status, answer.len() - head_end - 4))
}

/// CPU time of this process (user + system).
fn cpu_time() -> Duration {
    // SAFETY: getrusage writes into the struct it is given.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

fn job(batch: &str, n: usize) -> Job {
    let url = format!("https://example.com/articles/{n}")
        .parse()
        .expect("a URL");
    Job::new(JobSpec::Fetch(FetchSpec::new(url)), Some(batch.to_owned()))
}

/// One job's report: one in ten fails (timeouts, then DNS failures).
fn report(job: &Job, n: usize) -> JobReport {
    let error = match n % 10 {
        3 => Some(JobError::new(ErrorKind::Timeout, "timed out after 30000 ms")),
        7 if n % 20 == 7 => Some(JobError::new(ErrorKind::Dns, "no such host")),
        _ => None,
    };
    JobReport {
        job_id: job.id,
        kind: JobKind::Fetch,
        batch_id: job.batch_id.clone(),
        url: job.url().to_owned(),
        status: if error.is_some() {
            ReportStatus::Failed
        } else {
            ReportStatus::Ok
        },
        artifacts: if error.is_none() {
            vec![keys::job_result(JobKind::Fetch, job.id)]
        } else {
            Vec::new()
        },
        error,
        attempt: 1,
        duration_ms: 850.0,
        finished_at: chrono::Utc::now(),
    }
}

struct Daemon {
    addr: std::net::SocketAddr,
    queue: Arc<MemoryQueue>,
    store: Arc<dyn ArtifactStore>,
    stop: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

async fn start(dir: &std::path::Path) -> Result<Daemon> {
    let store: Arc<dyn ArtifactStore> = Arc::new(FsStore::new(dir));
    let queue = Arc::new(MemoryQueue::new());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let opts = SchedulerOptions {
        flush_interval: Duration::from_millis(500),
        ..SchedulerOptions::new(Arc::new(oxwright_policy::UrlPolicy::default()))
    };
    let stop = CancellationToken::new();
    let task = tokio::spawn({
        let (queue, store, stop) = (queue.clone(), store.clone(), stop.clone());
        async move {
            if let Err(err) = run_scheduler(queue, store, opts, Some(listener), stop).await {
                eprintln!("scheduler stopped: {err}");
            }
        }
    });
    Ok(Daemon {
        addr,
        queue,
        store,
        stop,
        task,
    })
}

/// Submits a batch of `n` jobs; returns its id and jobs.
async fn batch(daemon: &Daemon, name: &str, n: usize) -> Result<(String, Vec<Job>)> {
    let id = format!("{name}-{}", oxwright_scheduler::new_batch_id());
    let jobs: Vec<Job> = (0..n).map(|i| job(&id, i)).collect();
    submit_batch(
        daemon.queue.as_ref(),
        daemon.store.as_ref(),
        &id,
        jobs.clone(),
        Vec::new(),
        "bench",
    )
    .await?;
    Ok((id, jobs))
}

async fn publish(daemon: &Daemon, jobs: &[Job], from: usize) -> Result<()> {
    for (i, job) in jobs.iter().enumerate() {
        let report = report(job, from + i);
        if report.status == ReportStatus::Ok {
            let result = serde_json::json!({
                "url": job.url(), "final_url": job.url(), "title": "An article", "warnings": [],
                "markdown": "# An article\n\nText.",
            });
            daemon
                .store
                .put(
                    &report.artifacts[0],
                    Bytes::from(result.to_string()),
                    "application/json",
                )
                .await?;
        }
        daemon.queue.publish_report(&report).await?;
    }
    Ok(())
}

async fn complete(daemon: &Daemon, id: &str) -> Result<()> {
    let started = Instant::now();
    while !daemon.store.exists(&keys::batch_summary(id)).await? {
        anyhow::ensure!(
            started.elapsed() < Duration::from_secs(300),
            "batch {id} did not complete"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(())
}

async fn time_page(addr: std::net::SocketAddr, path: &str, requests: usize) -> Result<PageTiming> {
    let mut times = Vec::with_capacity(requests);
    let mut bytes = 0;
    for _ in 0..requests {
        let started = Instant::now();
        let (status, len) = get(addr, path).await?;
        times.push(started.elapsed().as_secs_f64() * 1000.0);
        anyhow::ensure!(status == 200, "{path}: HTTP {status}");
        bytes = len;
    }
    Ok(PageTiming {
        path: path.to_owned(),
        bytes,
        p50_ms: median(&times),
        p95_ms: percentile(&times, 0.95),
    })
}

/// One live window: a batch running at `rate` reports/s for `secs`, with
/// or without a viewer; returns the process's CPU per wall second.
async fn live_window(daemon: &Daemon, args: &DashboardArgs, view: bool, round: usize) -> Result<f64> {
    let n = (args.rate * args.live_secs) as usize;
    let (id, jobs) = batch(daemon, &format!("live{round}{}", if view { "v" } else { "n" }), n).await?;
    let viewer = view.then(|| {
        let (addr, id) = (daemon.addr, id.clone());
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(2));
            loop {
                tick.tick().await;
                // What the page's script asks for each tick while counts move.
                let _ = get(addr, &format!("/ui/progress?ids={id}")).await;
                let _ = get(addr, &format!("/ui/batches/{id}/rows?status=&kind=&page=0")).await;
            }
        })
    });
    let started = Instant::now();
    let cpu = cpu_time();
    let period = Duration::from_secs_f64(1.0 / args.rate as f64);
    let mut next = tokio::time::Instant::now();
    for (i, job) in jobs.iter().enumerate() {
        publish(daemon, std::slice::from_ref(job), i).await?;
        next += period;
        tokio::time::sleep_until(next).await;
    }
    let share = (cpu_time() - cpu).as_secs_f64() / started.elapsed().as_secs_f64();
    if let Some(viewer) = viewer {
        viewer.abort();
    }
    complete(daemon, &id).await?;
    Ok(share)
}

/// Runs the measurements.
pub async fn run(args: &DashboardArgs) -> Result<DashboardReport> {
    let dir = tempfile::tempdir()?;
    let daemon = start(dir.path()).await?;
    eprintln!("seeding a batch of {} jobs", args.jobs);
    let (id, jobs) = batch(&daemon, "large", args.jobs).await?;
    publish(&daemon, &jobs, 0).await?;
    complete(&daemon, &id).await?;
    let mut pages = Vec::new();
    for path in [
        format!("/ui/batches/{id}"),
        format!("/ui/batches/{id}?status=failed&kind=timeout"),
        format!("/ui/batches/{id}?status=ok&kind=&page=50"),
        "/ui".to_owned(),
        format!("/ui/progress?ids={id}"),
    ] {
        let mut timing = time_page(daemon.addr, &path, args.requests).await?;
        timing.path = path.replace(&id, "{id}");
        eprintln!(
            "{path}: p50 {:.1} ms, p95 {:.1} ms, {} bytes",
            timing.p50_ms, timing.p95_ms, timing.bytes
        );
        pages.push(timing);
    }
    let (mut without, mut with) = (Vec::new(), Vec::new());
    for round in 0..args.rounds {
        without.push(live_window(&daemon, args, false, round).await?);
        with.push(live_window(&daemon, args, true, round).await?);
        eprintln!(
            "round {round}: CPU share without the view {:.4}, with {:.4}",
            without[round], with[round]
        );
    }
    daemon.stop.cancel();
    let _ = daemon.task.await;
    Ok(DashboardReport {
        jobs: args.jobs,
        pages,
        live_secs: args.live_secs,
        reports_per_s: args.rate,
        live_view_cpu_share: median(&with) - median(&without),
        cpu_share_without_view: without,
        cpu_share_with_view: with,
    })
}

/// The report as Markdown.
pub fn markdown(report: &DashboardReport) -> String {
    let mut out = format!(
        "Batch of {} jobs:\n\n| page | bytes | p50 ms | p95 ms |\n|---|---|---|---|\n",
        report.jobs
    );
    for p in &report.pages {
        out.push_str(&format!(
            "| `{}` | {} | {:.1} | {:.1} |\n",
            p.path, p.bytes, p.p50_ms, p.p95_ms
        ));
    }
    out.push_str(&format!(
        "\nLive view while {} reports/s arrive: {:.2} % of a core (process CPU with a viewer minus without)\n",
        report.reports_per_s,
        report.live_view_cpu_share * 100.0
    ));
    out
}
