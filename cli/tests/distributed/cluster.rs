//! The harness of the distributed tests: one isolated deployment (queue
//! prefix, bucket, fixture site, processes) on the shared services, and
//! the checks the tests share.

use std::collections::HashSet;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use oxwright_artifacts::{ArtifactStore, S3Config, S3Credentials, S3Store};
use oxwright_fixtures::FixtureServer;
use oxwright_jobs::keys;
use oxwright_queue::{AmqpOptions, AmqpQueue};

use crate::support::{chromium_groups, wait_until};

const ACCESS_KEY: &str = "oxwright";
const SECRET_KEY: &str = "oxwright-secret";

pub fn env_or(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_owned())
}

pub fn s3_endpoint() -> String {
    env_or("OXWRIGHT_TEST_S3_ENDPOINT", "http://127.0.0.1:9000")
}

/// Creates `bucket` on the S3 server at `endpoint`; returns a handle on it.
async fn bucket_store(endpoint: &str, keys: &(String, String), bucket: &str) -> S3Store {
    let mut s3 = S3Config::new(bucket);
    s3.endpoint = Some(endpoint.to_owned());
    s3.region = Some("us-east-1".into());
    s3.credentials = Some(S3Credentials {
        access_key_id: keys.0.clone(),
        secret_access_key: keys.1.clone(),
    });
    let store = S3Store::new(s3).await.expect("S3 config");
    if let Err(err) = store.create_bucket().await {
        panic!("S3 server not usable at {endpoint} ({err}); run `infra/services.sh start`");
    }
    store
}

/// One isolated deployment on the shared services: its own queue prefix,
/// bucket, fixture site and processes (killed on drop).
pub struct Cluster {
    pub site: FixtureServer,
    pub amqp_url: String,
    pub s3_endpoint: String,
    /// The S3 access key pair.
    pub s3_keys: (String, String),
    pub prefix: String,
    pub bucket: String,
    pub store: S3Store,
    pub queue: AmqpQueue,
    pub dir: tempfile::TempDir,
    pub children: Vec<Child>,
    pub config: Option<PathBuf>,
    /// Environment for every process started after it was set.
    pub env: Vec<(String, String)>,
}

impl Cluster {
    pub async fn start() -> Self {
        Self::start_on(env_or(
            "OXWRIGHT_TEST_AMQP_URL",
            "amqp://guest:guest@127.0.0.1:5672/%2f",
        ))
        .await
    }

    pub async fn start_on(amqp_url: String) -> Self {
        let keys = (
            env_or("AWS_ACCESS_KEY_ID", ACCESS_KEY),
            env_or("AWS_SECRET_ACCESS_KEY", SECRET_KEY),
        );
        Self::start_with(amqp_url, s3_endpoint(), keys).await
    }

    /// A cluster on the broker at `amqp_url` and the S3 server at
    /// `s3_endpoint` with `s3_keys` (a private one, for the tests that stop it).
    pub async fn start_with(amqp_url: String, s3_endpoint: String, s3_keys: (String, String)) -> Self {
        let id = uuid::Uuid::new_v4().simple().to_string();
        let prefix = format!("oxwright-e2e-{}", &id[..12]);
        let bucket = format!("oxwright-e2e-{}", &id[..12]);
        let store = bucket_store(&s3_endpoint, &s3_keys, &bucket).await;
        let options = AmqpOptions {
            prefix: prefix.clone(),
            reconnect_timeout: Duration::from_secs(120),
            ..AmqpOptions::default()
        };
        let queue = AmqpQueue::connect(&amqp_url, options).await.unwrap_or_else(|e| {
            panic!("RabbitMQ not reachable at {amqp_url} ({e}); run `infra/services.sh start`")
        });
        Self {
            site: FixtureServer::start().await.expect("fixture site"),
            amqp_url,
            s3_endpoint,
            s3_keys,
            prefix,
            bucket,
            store,
            queue,
            dir: tempfile::tempdir().unwrap(),
            children: Vec::new(),
            config: None,
            env: Vec::new(),
        }
    }

    /// Creates another bucket on this cluster's S3 server; returns its
    /// name (for `self.bucket`, which the processes started next use) and
    /// a handle on it.
    pub async fn another_bucket(&self) -> (String, S3Store) {
        let id = uuid::Uuid::new_v4().simple().to_string();
        let bucket = format!("oxwright-e2e-{}", &id[..12]);
        let store = bucket_store(&self.s3_endpoint, &self.s3_keys, &bucket).await;
        (bucket, store)
    }

    /// Uses a configuration file with `toml` for every process started
    /// after this call.
    pub fn with_config(&mut self, toml: &str) {
        let path = self.dir.path().join("oxwright.toml");
        std::fs::write(&path, toml).unwrap();
        self.config = Some(path);
    }

    /// Sets `name` to `value` in the environment of every process
    /// started after this call.
    pub fn with_env(&mut self, name: &str, value: &str) {
        self.env.push((name.to_owned(), value.to_owned()));
    }

    /// An `oxwright` command wired to this cluster.
    pub fn command(&self, log_name: &str) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_oxwright"));
        if let Some(config) = &self.config {
            cmd.arg("--config").arg(config);
        }
        cmd.args(["--amqp", &self.amqp_url, "--queue-prefix", &self.prefix])
            .args([
                "--s3",
                &format!("s3://{}", self.bucket),
                "--s3-endpoint",
                &self.s3_endpoint,
            ])
            .args(["--allow-host", &self.site.addr().to_string()])
            .env("AWS_ACCESS_KEY_ID", &self.s3_keys.0)
            .env("AWS_SECRET_ACCESS_KEY", &self.s3_keys.1)
            .env("AWS_REGION", "us-east-1")
            .env("RUST_LOG", "warn,oxwright=info")
            .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stderr(std::fs::File::create(self.dir.path().join(format!("{log_name}.log"))).unwrap());
        // A test killed by the harness takes its workers with it.
        // SAFETY: prctl is async-signal-safe and touches only the child.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        cmd
    }

    /// Starts a worker of fetches and sitemaps with `pages` pages in one
    /// browser; returns its index.
    pub fn worker(&mut self, pages: usize, extra: &[&str]) -> usize {
        self.worker_of("fetch,sitemap", pages, extra)
    }

    /// Starts a worker of `kinds` with `pages` pages in one browser;
    /// returns its index.
    pub fn worker_of(&mut self, kinds: &str, pages: usize, extra: &[&str]) -> usize {
        let name = format!("worker-{}", self.children.len());
        let child = self
            .command(&name)
            .args([
                "--browsers",
                "1",
                "--pages-per-browser",
                &pages.to_string(),
                "worker",
            ])
            .args(["--kinds", kinds])
            .args(extra)
            .stdout(Stdio::null())
            .spawn()
            .expect("oxwright worker starts");
        self.children.push(child);
        self.children.len() - 1
    }

    /// Starts the scheduler daemon without its HTTP API.
    pub fn scheduler(&mut self) -> usize {
        self.scheduler_logged("scheduler")
    }

    /// Starts the scheduler daemon without its HTTP API, logging to
    /// `<log_name>.log`.
    pub fn scheduler_logged(&mut self, log_name: &str) -> usize {
        let child = self
            .command(log_name)
            .args(["scheduler", "--no-api"])
            .stdout(Stdio::null())
            .spawn()
            .expect("oxwright scheduler starts");
        self.children.push(child);
        self.children.len() - 1
    }

    /// Starts the scheduler daemon with its HTTP API on a free loopback
    /// port; returns its index and the API's base URL.
    pub fn scheduler_api(&mut self) -> (usize, String) {
        use std::io::{BufRead, BufReader};
        let mut child = self
            .command("scheduler")
            .args(["scheduler", "--listen", "127.0.0.1:0"])
            .stdout(Stdio::piped())
            .spawn()
            .expect("oxwright scheduler starts");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let line = lines.next().expect("the scheduler prints its address").unwrap();
        let base = line
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
            .to_owned();
        std::thread::spawn(move || for _ in lines {});
        self.children.push(child);
        (self.children.len() - 1, base)
    }

    pub fn pid(&self, index: usize) -> u32 {
        self.children[index].id()
    }

    pub fn signal(&mut self, index: usize, signal: i32) {
        // SAFETY: plain syscall on our own child.
        unsafe { libc::kill(self.children[index].id() as i32, signal) };
    }

    pub fn wait(&mut self, index: usize) -> std::process::ExitStatus {
        self.children[index].wait().expect("wait for child")
    }

    /// Submits `paths` of the fixture site as one fetch batch; returns the
    /// batch id.
    pub fn submit(&self, paths: &[String], extra: &[&str]) -> String {
        let list: String = paths.iter().map(|p| format!("{}\n", self.site.url(p))).collect();
        let file = self
            .dir
            .path()
            .join(format!("urls-{}.txt", uuid::Uuid::new_v4().simple()));
        std::fs::write(&file, list).unwrap();
        let file = file.display().to_string();
        let mut args = vec!["fetch", "--file", file.as_str()];
        args.extend_from_slice(extra);
        self.submit_args(&args)
    }

    /// Runs `oxwright submit ARGS`; returns the batch id it prints.
    pub fn submit_args(&self, args: &[&str]) -> String {
        let out = self
            .command("submit")
            .arg("submit")
            .args(args)
            .stdout(Stdio::piped())
            .output()
            .expect("oxwright submit runs");
        assert!(out.status.success(), "submit failed: {}", self.log("submit"));
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    }

    /// Every worker's log, each under its name.
    pub fn worker_logs(&self) -> String {
        (0..self.children.len())
            .map(|i| format!("worker-{i}"))
            .map(|name| (self.log(&name), name))
            .filter(|(log, _)| !log.is_empty())
            .map(|(log, name)| format!("{name} log:\n{log}"))
            .collect::<Vec<_>>()
            .join("\n")
    }

    pub fn log(&self, name: &str) -> String {
        std::fs::read_to_string(self.dir.path().join(format!("{name}.log"))).unwrap_or_default()
    }

    /// Waits until the batch summary is in S3 and returns its manifest.
    pub async fn manifest(&self, batch_id: &str, limit: Duration) -> Vec<serde_json::Value> {
        let key = keys::batch_summary(batch_id);
        let started = std::time::Instant::now();
        while !self.store.exists(&key).await.unwrap() {
            assert!(
                started.elapsed() < limit,
                "batch {batch_id} not complete after {limit:?}; manifest bytes: {:?}\nscheduler log:\n{}\n{}",
                self.store
                    .get(&keys::batch_manifest(batch_id))
                    .await
                    .map(|b| b.len()),
                self.log("scheduler"),
                self.worker_logs()
            );
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        let body = self.store.get(&keys::batch_manifest(batch_id)).await.unwrap();
        String::from_utf8(body.to_vec())
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// The Chromium process groups `index` launched, once it has one.
    pub async fn browsers_of(&self, index: usize) -> Vec<i32> {
        let pid = self.pid(index) as i32;
        let mut groups = Vec::new();
        wait_until("the worker's browser", Duration::from_secs(60), || {
            groups = chromium_groups(pid);
            !groups.is_empty()
        })
        .await;
        groups
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for child in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Asserts one line per job, no duplicates, all ok; returns the job ids.
pub fn assert_complete(lines: &[serde_json::Value], expected: usize) -> HashSet<String> {
    assert_eq!(lines.len(), expected, "one manifest line per job");
    let ids: HashSet<String> = lines
        .iter()
        .map(|l| l["job_id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ids.len(), expected, "no duplicate manifest lines");
    let failed: Vec<_> = lines.iter().filter(|l| l["status"] != "ok").collect();
    assert!(failed.is_empty(), "failed jobs: {failed:?}");
    ids
}

/// Asserts every job of `ids` has its result and Markdown in S3.
pub async fn assert_results_in_s3(store: &S3Store, ids: &HashSet<String>) {
    let keys: HashSet<String> = store.list("jobs/fetch/").await.unwrap().into_iter().collect();
    for id in ids {
        assert!(
            keys.contains(&format!("jobs/fetch/{id}/result.json")),
            "no result.json for {id}"
        );
        assert!(
            keys.contains(&format!("jobs/fetch/{id}/page.md")),
            "no page.md for {id}"
        );
    }
}

/// Polls the async `check` until it holds.
pub async fn eventually<F, Fut>(what: &str, limit: Duration, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let started = std::time::Instant::now();
    while !check().await {
        assert!(started.elapsed() < limit, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

pub fn slow_pages(n: usize, ms: u64) -> Vec<String> {
    (0..n).map(|i| format!("/slow?ms={ms}&n={i}")).collect()
}

/// The default broker's URL.
pub fn amqp_url() -> String {
    env_or("OXWRIGHT_TEST_AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/%2f")
}
