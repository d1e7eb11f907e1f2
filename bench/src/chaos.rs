//! The distributed mode under chaos: N fetch jobs (fixture pages, some
//! slow, some missing, some running their renderer out of memory) through
//! an `oxwright scheduler` and several `oxwright worker` processes on a
//! private RabbitMQ and S3 server, while a random worker is SIGKILLed and
//! restarted every few seconds and the broker, the S3 server and the
//! scheduler are each stopped (the scheduler SIGKILLed) and started again
//! once. It ends when the batch's summary is written, then checks: one
//! manifest line per job; every ok line's `result.json` and `page.md` in
//! the store; every failed line a typed error with its `error.json`; no
//! Chromium of a killed worker left; no job left in a queue. With
//! `--crawl` the work is a crawl of a site of N pages through the
//! scheduler's API instead (see `chaos_crawl`).

use std::collections::{BTreeMap, HashSet};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use clap::Args;
use oxwright_artifacts::{ArtifactStore, S3Config, S3Credentials, S3Store};
use oxwright_fixtures::{
    ARTICLE_PATHS, FixtureServer, PRIVATE_S3_ACCESS_KEY, PRIVATE_S3_SECRET_KEY, PrivateBroker, PrivateS3,
};
use oxwright_jobs::{FetchSpec, keys};
use oxwright_policy::{HostRule, UrlPolicy};
use oxwright_queue::{AmqpOptions, AmqpQueue};
use oxwright_scheduler::{fetch_jobs, parse_url_list, submit_batch};
use serde::Serialize;

/// Arguments of `chaos`.
#[derive(Debug, Args)]
pub struct ChaosArgs {
    /// Fetch jobs in the batch (with `--crawl`: pages of the site).
    #[arg(long, default_value_t = 10_000)]
    pub jobs: usize,
    /// Crawl a site of `--jobs` pages through `POST /v1/crawls` instead
    /// of submitting a batch.
    #[arg(long)]
    pub crawl: bool,
    /// Worker processes.
    #[arg(long, default_value_t = 3)]
    pub workers: usize,
    /// Pages each worker's browser serves at once.
    #[arg(long, default_value_t = 2)]
    pub pages_per_browser: usize,
    /// Seconds between two worker kills; the broker, S3 and scheduler
    /// outages come at 1.5, 2.5 and 3.5 times this after the start.
    #[arg(long, default_value_t = 20)]
    pub kill_every_s: u64,
    /// Seed of the choice of the worker to kill.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Give up after this many seconds.
    #[arg(long, default_value_t = 3600)]
    pub timeout_s: u64,
    /// The `oxwright` binary (default: next to this one).
    #[arg(long)]
    pub oxwright: Option<PathBuf>,
}

/// What a chaos run did and found.
#[derive(Debug, Serialize)]
pub struct ChaosReport {
    /// Whether the work was a crawl.
    pub crawl: bool,
    pub jobs: usize,
    pub ok: usize,
    pub failed: usize,
    pub failed_by_kind: BTreeMap<String, usize>,
    pub worker_kills: usize,
    pub broker_restarts: usize,
    pub s3_restarts: usize,
    pub scheduler_kills: usize,
    /// Manifest lines of jobs that needed more than one delivery.
    pub redelivered: usize,
    /// Crawl pages the site served more than once.
    pub loaded_twice: usize,
    pub wall_s: f64,
    pub pages_per_s: f64,
    /// Every check passed; `problems` says what did not.
    pub passed: bool,
    pub problems: Vec<String>,
}

/// The page of job `i`: mostly articles, some slow, some missing, some
/// that run their renderer out of memory.
fn page(i: usize) -> String {
    match i % 100 {
        13 => format!("/slow?ms=1500&n={i}"),
        29 | 71 => format!("/no-such-page?n={i}"),
        47 if i % 300 == 47 => format!("/crash?n={i}"),
        _ => format!("{}?n={i}", ARTICLE_PATHS[i % ARTICLE_PATHS.len()]),
    }
}

struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        (x % n.max(1) as u64) as usize
    }
}

/// The `oxwright` processes of the run, started alike and SIGKILLed on drop.
struct Cast {
    binary: PathBuf,
    common: Vec<String>,
    env: Vec<(String, String)>,
    dir: tempfile::TempDir,
    workers: Vec<Child>,
    scheduler: Option<Child>,
    started: usize,
    /// Where the scheduler's API listens, when it serves one (a crawl's).
    api: Option<std::net::SocketAddr>,
}

impl Cast {
    /// The command line and environment every process of the run shares;
    /// the memory hog ends at a small heap limit in moments.
    fn new(
        binary: PathBuf,
        site: &FixtureServer,
        broker: &PrivateBroker,
        s3: &PrivateS3,
        prefix: &str,
    ) -> Result<Self> {
        let dir = tempfile::tempdir()?;
        let config = dir.path().join("oxwright.toml");
        std::fs::write(&config, "[browser]\njob_memory_mb = 256\n")?;
        Ok(Cast {
            binary,
            common: vec![
                "--config".into(),
                config.display().to_string(),
                "--amqp".into(),
                broker.url().into(),
                "--queue-prefix".into(),
                prefix.to_owned(),
                "--s3".into(),
                format!("s3://{prefix}"),
                "--s3-endpoint".into(),
                s3.endpoint().into(),
                "--allow-host".into(),
                site.addr().to_string(),
            ],
            env: vec![
                ("AWS_ACCESS_KEY_ID".into(), PRIVATE_S3_ACCESS_KEY.into()),
                ("AWS_SECRET_ACCESS_KEY".into(), PRIVATE_S3_SECRET_KEY.into()),
                ("AWS_REGION".into(), "us-east-1".into()),
                ("RUST_LOG".into(), "warn".into()),
            ],
            dir,
            workers: Vec::new(),
            scheduler: None,
            started: 0,
            api: None,
        })
    }

    fn spawn(&mut self, args: &[String], log: &str) -> Result<Child> {
        self.started += 1;
        let log = std::fs::File::create(self.dir.path().join(format!("{log}-{}.log", self.started)))?;
        let mut cmd = Command::new(&self.binary);
        cmd.args(&self.common)
            .args(args)
            .envs(self.env.iter().cloned())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log);
        // SAFETY: prctl is async-signal-safe and touches only the child.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        Ok(cmd.spawn()?)
    }

    fn worker(&mut self, pages: usize) -> Result<Child> {
        let args: Vec<String> = [
            "--browsers",
            "1",
            "--pages-per-browser",
            &pages.to_string(),
            "worker",
            "--kinds",
            "fetch",
            "--max-attempts",
            "3",
            "--retry-delay-ms",
            "500",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        self.spawn(&args, "worker")
    }

    fn start_scheduler(&mut self) -> Result<()> {
        let api = match self.api {
            Some(addr) => vec!["--listen".to_owned(), addr.to_string()],
            None => vec!["--no-api".to_owned()],
        };
        let args: Vec<String> = std::iter::once("scheduler".to_owned()).chain(api).collect();
        let child = self.spawn(&args, "scheduler")?;
        self.scheduler = Some(child);
        Ok(())
    }
}

impl Drop for Cast {
    fn drop(&mut self) {
        for child in self.workers.iter_mut().chain(self.scheduler.iter_mut()) {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The main processes of the Chromiums `parent` launched.
fn browsers_of(parent: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_string_lossy().parse::<u32>().ok())
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let ppid = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().nth(1))
                .and_then(|p| p.parse::<u32>().ok());
            ppid == Some(parent)
                && std::fs::read_to_string(format!("/proc/{pid}/cmdline"))
                    .is_ok_and(|c| c.contains("oxwright-chromium-"))
        })
        .collect()
}

/// Says whether `pid` is a live process (not gone, not a zombie).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X")
    })
}

/// Runs the chaos batch and checks what it left.
pub async fn run(args: &ChaosArgs) -> Result<ChaosReport> {
    let mut stage = Stage::start(args).await?;
    let (batch_id, started, jobs) = if let Some(api) = stage.cast.api {
        let started = Instant::now();
        let batch_id = crate::chaos_crawl::submit(api, &stage.site, args.jobs).await?;
        eprintln!(
            "chaos: crawl {batch_id} of {} pages, prefix {}",
            args.jobs, stage.prefix
        );
        (batch_id, started, crate::chaos_crawl::expected(args.jobs))
    } else {
        let batch_id = oxwright_scheduler::new_batch_id();
        let started = stage.submit(args, &batch_id).await?;
        (batch_id, started, args.jobs)
    };
    let done = stage.disrupt(args, &batch_id, started).await?;
    let wall_s = started.elapsed().as_secs_f64();
    for task in done.outage_tasks {
        task.await?;
    }
    let mut tally = stage.tally(jobs, &batch_id).await?;
    let crawled = if args.crawl {
        crate::chaos_crawl::check(
            stage.store.as_ref(),
            &stage.site,
            &batch_id,
            args.jobs,
            &mut tally.problems,
        )
        .await?
    } else {
        crate::chaos_crawl::CrawlTally::default()
    };
    tokio::time::sleep(Duration::from_secs(2)).await;
    let left: Vec<u32> = done
        .killed_browsers
        .iter()
        .copied()
        .filter(|p| alive(*p))
        .collect();
    if !left.is_empty() {
        tally
            .problems
            .push(format!("Chromium of killed workers still running: {left:?}"));
    }
    stage.check_queues(&mut tally.problems).await?;
    let report = ChaosReport {
        crawl: args.crawl,
        jobs,
        ok: tally.ok,
        failed: tally.failed,
        failed_by_kind: tally.failed_by_kind,
        worker_kills: done.worker_kills,
        broker_restarts: done.broker_restarts,
        s3_restarts: done.s3_restarts,
        scheduler_kills: done.scheduler_kills,
        redelivered: tally.redelivered,
        loaded_twice: crawled.loaded_twice,
        wall_s,
        pages_per_s: jobs as f64 / wall_s,
        passed: tally.problems.is_empty(),
        problems: tally.problems,
    };
    let Stage { cast, queue, .. } = stage;
    drop(cast);
    let _ = queue.delete_topology().await;
    Ok(report)
}

/// The services and processes of a chaos run.
struct Stage {
    site: FixtureServer,
    broker: Arc<PrivateBroker>,
    s3: Arc<PrivateS3>,
    store: Arc<S3Store>,
    queue: AmqpQueue,
    prefix: String,
    cast: Cast,
}

/// What the schedule did.
#[derive(Default)]
struct Disruptions {
    worker_kills: usize,
    broker_restarts: usize,
    s3_restarts: usize,
    scheduler_kills: usize,
    killed_browsers: Vec<u32>,
    outage_tasks: Vec<tokio::task::JoinHandle<()>>,
}

/// What the batch left in its manifest and the store.
struct Tally {
    ok: usize,
    failed: usize,
    redelivered: usize,
    failed_by_kind: BTreeMap<String, usize>,
    problems: Vec<String>,
}

impl Stage {
    /// Starts the fixture site, a private broker and S3 server, the
    /// scheduler and the workers.
    async fn start(args: &ChaosArgs) -> Result<Self> {
        let binary = crate::distributed::oxwright_binary(args.oxwright.as_ref())?;
        let site = FixtureServer::start().await?;
        let broker = Arc::new(tokio::task::spawn_blocking(PrivateBroker::start).await?);
        let s3 = Arc::new(tokio::task::spawn_blocking(PrivateS3::start).await?);
        let id = uuid::Uuid::new_v4().simple().to_string()[..10].to_owned();
        let prefix = format!("oxwright-chaos-{id}");
        let mut cfg = S3Config::new(&prefix);
        cfg.endpoint = Some(s3.endpoint().to_owned());
        cfg.region = Some("us-east-1".into());
        cfg.credentials = Some(S3Credentials {
            access_key_id: PRIVATE_S3_ACCESS_KEY.into(),
            secret_access_key: PRIVATE_S3_SECRET_KEY.into(),
        });
        let store = Arc::new(S3Store::new(cfg).await?);
        store.create_bucket().await?;
        let queue = AmqpQueue::connect(
            broker.url(),
            AmqpOptions {
                prefix: prefix.clone(),
                reconnect_timeout: Duration::from_secs(120),
                ..AmqpOptions::default()
            },
        )
        .await?;
        let mut cast = Cast::new(binary, &site, &broker, &s3, &prefix)?;
        if args.crawl {
            let free = std::net::TcpListener::bind("127.0.0.1:0")?;
            cast.api = Some(free.local_addr()?);
        }
        cast.start_scheduler()?;
        for _ in 0..args.workers {
            let w = cast.worker(args.pages_per_browser)?;
            cast.workers.push(w);
        }
        Ok(Self {
            site,
            broker,
            s3,
            store,
            queue,
            prefix,
            cast,
        })
    }

    /// Submits the batch; returns when it was submitted.
    async fn submit(&self, args: &ChaosArgs, batch_id: &str) -> Result<Instant> {
        let text: String = (0..args.jobs)
            .map(|i| format!("{}\n", self.site.url(&page(i))))
            .collect();
        let policy = UrlPolicy {
            allow_hosts: vec![self.site.addr().to_string().parse::<HostRule>()?],
            ..UrlPolicy::default()
        };
        let mut template = FetchSpec::new("http://template.invalid/".parse()?);
        template.retry_count = 0;
        template.timeout_ms = 10_000;
        let (jobs, refused) = fetch_jobs(batch_id, parse_url_list(&text, &policy), &template);
        let started = Instant::now();
        submit_batch(&self.queue, self.store.as_ref(), batch_id, jobs, refused, "chaos").await?;
        eprintln!(
            "chaos: batch {batch_id}, {} jobs, prefix {}",
            args.jobs, self.prefix
        );
        Ok(started)
    }

    /// Kills a random worker every `kill_every_s` and stops the broker, S3
    /// and the scheduler once each, until the batch's summary is written.
    async fn disrupt(&mut self, args: &ChaosArgs, batch_id: &str, started: Instant) -> Result<Disruptions> {
        let every = Duration::from_secs(args.kill_every_s.max(1));
        let mut rng = Rng(args.seed | 1);
        let mut next_kill = started + every;
        let mut outages = vec![
            (started + every.mul_f64(1.5), "broker"),
            (started + every.mul_f64(2.5), "s3"),
            (started + every.mul_f64(3.5), "scheduler"),
        ];
        let mut done = Disruptions::default();
        let summary_key = keys::batch_summary(batch_id);
        loop {
            if matches!(self.store.exists(&summary_key).await, Ok(true)) {
                return Ok(done);
            }
            if started.elapsed() > Duration::from_secs(args.timeout_s) {
                bail!(
                    "batch {batch_id} not complete after {} s; logs in {}",
                    args.timeout_s,
                    self.cast.dir.path().display()
                );
            }
            let now = Instant::now();
            if now >= next_kill {
                next_kill = now + every;
                let i = rng.below(self.cast.workers.len());
                let pid = self.cast.workers[i].id();
                done.killed_browsers.extend(browsers_of(pid));
                let _ = self.cast.workers[i].kill();
                let _ = self.cast.workers[i].wait();
                done.worker_kills += 1;
                self.cast.workers[i] = self.cast.worker(args.pages_per_browser)?;
                eprintln!(
                    "chaos: {:>5.1} s: worker {i} SIGKILLed and restarted",
                    started.elapsed().as_secs_f64()
                );
            }
            if let Some(pos) = outages.iter().position(|(at, _)| now >= *at) {
                let (_, what) = outages.remove(pos);
                self.outage(what, started.elapsed().as_secs_f64(), &mut done)?;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    /// Stops `what` (the broker and S3 for a few seconds, beside the worker
    /// kills: a broker restart takes seconds to tens of seconds) or
    /// SIGKILLs the scheduler and starts it again.
    fn outage(&mut self, what: &str, at: f64, done: &mut Disruptions) -> Result<()> {
        match what {
            "broker" => {
                let b = self.broker.clone();
                done.outage_tasks.push(tokio::task::spawn_blocking(move || {
                    b.stop();
                    std::thread::sleep(Duration::from_secs(3));
                    b.start_again();
                    eprintln!("chaos: broker stopped at {at:.1} s is back");
                }));
                done.broker_restarts += 1;
            }
            "s3" => {
                let s = self.s3.clone();
                done.outage_tasks.push(tokio::task::spawn_blocking(move || {
                    s.stop();
                    std::thread::sleep(Duration::from_secs(5));
                    s.start_again();
                    eprintln!("chaos: S3 stopped at {at:.1} s is back");
                }));
                done.s3_restarts += 1;
            }
            _ => {
                if let Some(mut child) = self.cast.scheduler.take() {
                    let _ = child.kill();
                    let _ = child.wait();
                }
                self.cast.start_scheduler()?;
                done.scheduler_kills += 1;
                eprintln!("chaos: {at:>5.1} s: scheduler SIGKILLed and restarted");
            }
        }
        Ok(())
    }

    /// Reads the batch's manifest and checks each line against the store.
    async fn tally(&self, jobs: usize, batch_id: &str) -> Result<Tally> {
        let body = self.store.get(&keys::batch_manifest(batch_id)).await?;
        let lines: Vec<serde_json::Value> = String::from_utf8(body.to_vec())?
            .lines()
            .map(serde_json::from_str)
            .collect::<Result<_, _>>()?;
        let ids: HashSet<&str> = lines.iter().filter_map(|l| l["job_id"].as_str()).collect();
        let mut t = Tally {
            ok: 0,
            failed: 0,
            redelivered: 0,
            failed_by_kind: BTreeMap::new(),
            problems: Vec::new(),
        };
        if lines.len() != jobs || ids.len() != jobs {
            t.problems.push(format!(
                "{} manifest lines, {} distinct jobs, for {jobs} jobs",
                lines.len(),
                ids.len(),
            ));
        }
        let stored: HashSet<String> = self.store.list("jobs/fetch/").await?.into_iter().collect();
        for line in &lines {
            let id = line["job_id"].as_str().unwrap_or_default();
            if line["attempt"].as_u64().unwrap_or(1) > 1 {
                t.redelivered += 1;
            }
            let has = |name: &str| stored.contains(&format!("jobs/fetch/{id}/{name}"));
            if line["status"] == "ok" {
                t.ok += 1;
                if !has("result.json") || !has("page.md") {
                    t.problems
                        .push(format!("ok job {id} lacks result.json or page.md"));
                }
            } else {
                t.failed += 1;
                let kind = line["error"]["kind"].as_str().unwrap_or_default().to_owned();
                if kind.is_empty() || !has("error.json") {
                    t.problems.push(format!(
                        "failed job {id} lacks a typed error or error.json: {line}"
                    ));
                }
                *t.failed_by_kind.entry(kind).or_default() += 1;
            }
        }
        Ok(t)
    }

    /// No queue but the dead letters may still hold a job.
    async fn check_queues(&self, problems: &mut Vec<String>) -> Result<()> {
        let b = self.broker.clone();
        let p = self.prefix.clone();
        let counts = tokio::task::spawn_blocking(move || b.queue_counts(&p)).await?;
        for (name, c) in &counts {
            if !name.contains("dead") && c.ready + c.unacked > 0 {
                problems.push(format!(
                    "queue {name} still holds {} ready, {} unacked",
                    c.ready, c.unacked
                ));
            }
        }
        Ok(())
    }
}

/// Renders the report as Markdown.
pub fn markdown(r: &ChaosReport) -> String {
    let kinds: Vec<String> = r.failed_by_kind.iter().map(|(k, n)| format!("{k} {n}")).collect();
    let mut out = format!(
        "| {} | ok | failed | worker kills | broker / S3 restarts | scheduler kills | redelivered | loaded twice | wall s | pages/s | checks |\n\
         |---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n\
         | {} | {} | {} ({}) | {} | {} / {} | {} | {} | {} | {:.0} | {:.2} | {} |\n",
        if r.crawl { "crawl pages" } else { "jobs" },
        r.jobs,
        r.ok,
        r.failed,
        kinds.join(", "),
        r.worker_kills,
        r.broker_restarts,
        r.s3_restarts,
        r.scheduler_kills,
        r.redelivered,
        r.loaded_twice,
        r.wall_s,
        r.pages_per_s,
        if r.passed { "passed" } else { "FAILED" }
    );
    for p in &r.problems {
        out.push_str(&format!("- {p}\n"));
    }
    out
}
