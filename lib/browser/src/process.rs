//! Chromium processes that oxwright owns: spawned from one long-lived
//! launcher thread with a parent-death signal and their own process group,
//! killed as a group and reaped when dropped.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use crate::BrowserError;

/// What to launch.
#[derive(Debug, Clone)]
pub struct LaunchOptions {
    /// The Chromium executable.
    pub executable: PathBuf,
    /// Headless (`true`) or headed on `$DISPLAY`.
    pub headless: bool,
    /// Extra command-line flags.
    pub extra_args: Vec<String>,
    /// How long to wait for "DevTools listening".
    pub launch_timeout: Duration,
    /// Window size in CSS pixels.
    pub window: (u32, u32),
    /// X display for headed mode (falls back to `$DISPLAY`).
    pub display: Option<String>,
    /// Runs Chromium in its sandbox; `false` adds `--no-sandbox`.
    pub sandbox: bool,
}

/// The flags every oxwright Chromium runs with. The networking ones matter:
/// without them Chromium stalls on refused background connections.
const BASE_FLAGS: &[&str] = &[
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-default-apps",
    "--disable-breakpad",
    "--disable-crash-reporter",
    "--disable-domain-reliability",
    "--disable-client-side-phishing-detection",
    "--disable-hang-monitor",
    // Popups open (a fetch should see what a person would), and they are
    // held to the job's policy anyway: they live in the job's context,
    // whose every byte leaves through the job's egress proxy, and a reset
    // closes them.
    "--disable-popup-blocking",
    "--disable-prompt-on-repost",
    // Chromium's IPC flooding protection stays on (automation tools often
    // turn it off): it holds a page to 200 history.pushState/replaceState
    // calls per 10 s, and a page calling them thousands of times a second
    // otherwise keeps its renderer and the browser so busy that no
    // DevTools call is answered for a minute.
    "--disable-background-timer-throttling",
    "--disable-backgrounding-occluded-windows",
    "--disable-renderer-backgrounding",
    "--disable-dev-shm-usage",
    // SpareRendererForSitePerProcess: Chromium keeps one spare renderer
    // for the browser context that navigated last; with a context per
    // concurrent job, every navigation discarded the spare made for another
    // context and forked a new one (0.35 renderer starts per page, ~40 % of
    // the warm pool's Chromium CPU; BENCHMARKS.md §1).
    //
    // Speculative and background loads (speculation-rules prefetch and
    // prerender, NoState prefetch, the loading and navigation predictors'
    // preconnects and prefetches) are off: they do not pass through a
    // page's Fetch domain, and prefetches may run in isolated network
    // contexts. On Chromium 156 what stops speculation rules is the
    // "no preloading" preference (`write_preferences`); without it these
    // features disabled still let prefetch and prerender run (measured by
    // tests/tests/policy_boundary.rs). They stay as a second lock.
    // Everything else goes through the egress proxy (`--proxy-server`, set
    // per browser and per context in handle.rs).
    //
    // Site isolation stays on (Chromium's default): a frame of another
    // site renders in a process of its own, so a renderer a hostile page
    // compromised holds that site's documents only. Snapshots and actions
    // reach such frames through their own DevTools sessions (`frame_link`).
    //
    // The omnibox's WebUI popups (WebUIOmniboxPopup, -AimPopup, -FullPopup)
    // and top-chrome WebUI preloading: Chromium 156's headless mode opens a
    // window per browser context, and each window preloaded its omnibox
    // popup (`chrome://omnibox-popup.top-chrome/`) in a WebUI renderer of its
    // own: 4 pages in flight in 4 contexts ran 9 renderers, not 4, ~200 MiB
    // of Chromium's median PSS on real pages (BENCHMARKS.md §3).
    "--disable-features=Translate,MediaRouter,OptimizationHints,AutofillServerCommunication,InterestFeedContentSuggestions,CalculateNativeWinOcclusion,HttpsUpgrades,DialMediaRouteProvider,BackForwardCache,SpareRendererForSitePerProcess,Prerender2,SpeculationRules,SpeculationRulesPrefetchFuture,PrefetchProxy,NoStatePrefetch,LoadingPredictorPrefetch,LoadingPredictorUseLocalPredictions,LoadingPredictorUseOptimizationGuide,NavigationPredictor,PreconnectToSearch,SearchEnginePreconnector,WebUIOmniboxPopup,WebUIOmniboxAimPopup,WebUIOmniboxFullPopup,PreloadTopChromeWebUI",
    "--dns-prefetch-disable",
    "--metrics-recording-only",
    "--password-store=basic",
    "--use-mock-keychain",
    "--mute-audio",
    "--hide-scrollbars",
    "--enable-automation",
    "--remote-debugging-address=127.0.0.1",
    "--remote-debugging-port=0",
];

/// Profile directories are named `<prefix><owner-pid>-<random>`.
const PROFILE_PREFIX: &str = "oxwright-chromium-";

/// Where a profile goes when `$TMPDIR` is too long for Chromium's socket
/// paths, in order: the first that fits and takes a directory.
const SHORT_PROFILE_BASES: &[&str] = &["/tmp", "/dev/shm"];

/// The longest Unix socket path Linux takes (`sun_path` is 108 bytes with
/// its terminating NUL).
const MAX_SOCKET_PATH: usize = 107;

/// What Chromium puts under `$TMPDIR` for its process-singleton socket,
/// its longest socket path: `org.chromium.Chromium.XXXXXX/SingletonSocket`
/// (a longer one kills it at start: "Socket path too long").
const SINGLETON_SOCKET: &str = "/org.chromium.Chromium.XXXXXX/SingletonSocket";

/// Returns the `$TMPDIR` a profile under `base` gives Chromium
/// (`<base>/oxwright-chromium-<pid>-XXXXXX/tmp`, the random part as long as
/// tempfile makes it), for its length.
fn profile_tmp_len(base: &Path, pid: u32) -> usize {
    base.as_os_str().len() + 1 + PROFILE_PREFIX.len() + pid.to_string().len() + 1 + 6 + "/tmp".len()
}

/// Says whether Chromium's socket paths fit under a profile in `base`.
fn fits(base: &Path, pid: u32) -> bool {
    profile_tmp_len(base, pid) + SINGLETON_SOCKET.len() <= MAX_SOCKET_PATH
}

/// Creates the profile directory: under `temp` (`$TMPDIR`) when Chromium's
/// socket paths fit there, else under the first of
/// [`SHORT_PROFILE_BASES`] that fits and is writable. Fails, saying why,
/// when none is.
fn create_profile(temp: &Path, pid: u32) -> Result<tempfile::TempDir, BrowserError> {
    let prefix = format!("{PROFILE_PREFIX}{pid}-");
    let mut last_error = None;
    let bases = std::iter::once(temp).chain(SHORT_PROFILE_BASES.iter().map(Path::new));
    for base in bases.filter(|b| fits(b, pid)) {
        match tempfile::Builder::new().prefix(&prefix).tempdir_in(base) {
            Ok(dir) => {
                if base != temp {
                    static SAID: OnceLock<()> = OnceLock::new();
                    SAID.get_or_init(|| {
                        tracing::info!(
                            tmpdir = %temp.display(), profiles = %base.display(),
                            "TMPDIR is too long for Chromium's socket paths; its profiles go elsewhere"
                        );
                    });
                }
                return Ok(dir);
            }
            Err(err) => last_error = Some(format!("{}: {err}", base.display())),
        }
    }
    let limit = MAX_SOCKET_PATH - SINGLETON_SOCKET.len() - (profile_tmp_len(Path::new(""), pid));
    Err(BrowserError::Misconfigured(format!(
        "no directory for Chromium's profile: TMPDIR {} is too long for its socket paths (at most {limit} \
         characters fit) and {} {}; set TMPDIR to a shorter writable directory",
        temp.display(),
        SHORT_PROFILE_BASES.join(" and "),
        match last_error {
            Some(err) => format!("failed ({err})"),
            None => "do not fit either".to_owned(),
        }
    )))
}

/// Removes, once per process, the profile directories of oxwright processes
/// that died without cleaning up (SIGKILL leaves them behind), under
/// `$TMPDIR` and the short bases profiles may go to.
fn sweep_stale_profiles() {
    static SWEPT: OnceLock<()> = OnceLock::new();
    SWEPT.get_or_init(|| {
        let temp = std::env::temp_dir();
        let mut bases = vec![temp.clone()];
        bases.extend(
            SHORT_PROFILE_BASES
                .iter()
                .map(PathBuf::from)
                .filter(|b| *b != temp),
        );
        for base in bases {
            sweep_stale_profiles_in(&base);
        }
    });
}

fn sweep_stale_profiles_in(base: &Path) {
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(PROFILE_PREFIX)) else {
            continue;
        };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// Writes the profile's preferences before Chromium first reads them.
/// `net.network_prediction_options = 2` ("no preloading") is the setting
/// speculation-rules prefetch and prerender honour: the feature flags
/// alone left both running (tests/tests/policy_boundary.rs).
fn write_preferences(profile: &Path) -> std::io::Result<()> {
    let dir = profile.join("Default");
    std::fs::create_dir_all(&dir)?;
    std::fs::write(
        dir.join("Preferences"),
        br#"{"net":{"network_prediction_options":2}}"#,
    )
}

/// Returns the X display a launch uses: none when headless, else the
/// configured one or `env_display` (`$DISPLAY`). Headed mode without any
/// is a setup error, not a transient one.
fn headed_display(opts: &LaunchOptions, env_display: Option<String>) -> Result<Option<String>, BrowserError> {
    if opts.headless {
        return Ok(None);
    }
    match opts.display.clone().or(env_display).filter(|d| !d.is_empty()) {
        Some(display) => Ok(Some(display)),
        None => Err(BrowserError::Misconfigured(
            "headed mode needs an X display and DISPLAY is not set; run headless, or start one \
             (e.g. `Xvfb :99 &` then DISPLAY=:99)"
                .into(),
        )),
    }
}

/// A running Chromium and its process group. Dropping it kills the group.
#[derive(Debug)]
pub struct ChromiumProcess {
    child: Child,
    pgid: i32,
    _profile: tempfile::TempDir,
    /// When a renderer last reported running out of V8 heap (Unix ms; 0: never).
    oom: Arc<AtomicU64>,
}

/// Now, in milliseconds since the Unix epoch.
pub(crate) fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

impl ChromiumProcess {
    /// When a renderer of this browser last ran out of V8 heap (Unix ms; 0: never).
    pub(crate) fn oom_marker(&self) -> Arc<AtomicU64> {
        self.oom.clone()
    }

    /// Starts Chromium and returns it with its DevTools websocket URL.
    /// Blocking: call it from `spawn_blocking`.
    pub fn launch(opts: &LaunchOptions) -> Result<(Self, String), BrowserError> {
        let display = headed_display(opts, std::env::var("DISPLAY").ok())?;
        if !Path::new(&opts.executable).exists() {
            return Err(BrowserError::Misconfigured(format!(
                "no Chromium at {} (install it with `apt-get install chromium` or set CHROME_PATH)",
                opts.executable.display()
            )));
        }
        sweep_stale_profiles();
        let profile = create_profile(&std::env::temp_dir(), std::process::id())?;
        // With --disable-dev-shm-usage Chromium keeps shared memory under
        // $TMPDIR; inside the profile it goes away with the profile. Its
        // socket paths live there too, which is why the profile's place is
        // chosen for their length.
        let tmp = profile.path().join("tmp");
        std::fs::create_dir_all(&tmp)
            .map_err(|e| BrowserError::Unavailable(format!("profile tmp dir: {e}")))?;
        write_preferences(profile.path())
            .map_err(|e| BrowserError::Unavailable(format!("profile preferences: {e}")))?;
        let mut cmd = Command::new(&opts.executable);
        cmd.env("TMPDIR", &tmp);
        cmd.args(BASE_FLAGS)
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg(format!("--window-size={},{}", opts.window.0, opts.window.1))
            .args(&opts.extra_args)
            .args((!opts.sandbox).then_some("--no-sandbox"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        if opts.headless {
            // No first tab: the pool makes its own pages, and the startup
            // tab's renderer (~18 MiB) served nothing.
            cmd.args(["--headless", "--no-startup-window"]);
        } else {
            if let Some(display) = display {
                cmd.env("DISPLAY", display);
            }
            cmd.arg("about:blank");
        }
        let mut child = oxwright_owned::spawn_owned(cmd)
            .map_err(|e| BrowserError::Unavailable(format!("spawn {}: {e}", opts.executable.display())))?;
        let pgid = child.id() as i32;
        let stderr = child.stderr.take().expect("stderr is piped");
        let (url_tx, url_rx) = mpsc::channel::<Result<String, String>>();
        let oom = Arc::new(AtomicU64::new(0));
        let seen = oom.clone();
        std::thread::Builder::new()
            .name(format!("chromium-stderr-{pgid}"))
            .spawn(move || drain_stderr(stderr, url_tx, &seen))
            .map_err(|e| BrowserError::Unavailable(format!("stderr thread: {e}")))?;
        let mut process = Self {
            child,
            pgid,
            _profile: profile,
            oom,
        };
        match url_rx.recv_timeout(opts.launch_timeout) {
            Ok(Ok(url)) => Ok((process, url)),
            Ok(Err(tail)) => {
                process.kill();
                // Headed Chromium on a display nobody serves fails the same way every time.
                if tail.contains("Missing X server") || tail.contains("cannot open display") {
                    Err(BrowserError::Misconfigured(format!(
                        "headed mode found no X server on the display: {tail}"
                    )))
                } else {
                    Err(BrowserError::Unavailable(format!(
                        "chromium exited at start: {tail}"
                    )))
                }
            }
            Err(_) => {
                process.kill();
                Err(BrowserError::Unavailable(format!(
                    "chromium did not report a DevTools URL within {} ms",
                    opts.launch_timeout.as_millis()
                )))
            }
        }
    }

    /// Returns the browser's process id (also its process group id).
    pub fn pid(&self) -> i32 {
        self.pgid
    }

    /// Kills the whole process group and reaps the browser process.
    pub fn kill(&mut self) {
        // SAFETY: plain syscall on a process group we created.
        unsafe {
            libc::killpg(self.pgid, libc::SIGKILL);
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for ChromiumProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Reads Chromium's stderr: reports the DevTools URL once, then keeps
/// draining so Chromium never blocks on a full pipe, noting when a
/// renderer says V8 ran out of heap (`oom`, Unix ms).
fn drain_stderr(
    stderr: std::process::ChildStderr,
    url_tx: mpsc::Sender<Result<String, String>>,
    oom: &AtomicU64,
) {
    let mut reader = BufReader::new(stderr);
    let mut line = String::new();
    let mut tail: Vec<String> = Vec::new();
    let mut reported = false;
    loop {
        line.clear();
        match reader.read_line(&mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let text = line.trim_end();
        if !reported {
            if let Some(pos) = text.find("ws://")
                && text.contains("DevTools listening on")
            {
                reported = true;
                let _ = url_tx.send(Ok(text[pos..].to_string()));
                continue;
            }
            tail.push(text.to_string());
            if tail.len() > 8 {
                tail.remove(0);
            }
        } else {
            if text.contains("V8 javascript OOM") || text.contains("JavaScript heap out of memory") {
                oom.store(unix_ms(), Ordering::SeqCst);
            }
            tracing::trace!(target: "chromium", line = text, "stderr");
        }
    }
    if !reported {
        let _ = url_tx.send(Err(tail.join(" | ")));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(headless: bool, display: Option<&str>) -> LaunchOptions {
        LaunchOptions {
            executable: PathBuf::from("/usr/bin/chromium"),
            headless,
            extra_args: Vec::new(),
            sandbox: false,
            launch_timeout: Duration::from_secs(1),
            window: (1280, 800),
            display: display.map(str::to_owned),
        }
    }

    #[test]
    fn profiles_go_where_chromium_socket_paths_fit() {
        let long = Path::new("/tmp/some-service/run-20261123T100623Z/tmp");
        assert!(!fits(long, 4_194_304), "the issue's TMPDIR");
        assert!(fits(Path::new("/tmp"), 4_194_304));
        let dir = tempfile::tempdir_in("/tmp").unwrap();
        let deep = dir.path().join("a".repeat(60));
        std::fs::create_dir_all(&deep).unwrap();
        let profile = create_profile(&deep, std::process::id()).unwrap();
        assert!(profile.path().starts_with("/tmp"), "{}", profile.path().display());
        assert!(!profile.path().starts_with(&deep), "{}", profile.path().display());
        let tmp = profile.path().join("tmp");
        assert!(
            tmp.as_os_str().len() + SINGLETON_SOCKET.len() <= MAX_SOCKET_PATH,
            "{}",
            tmp.display()
        );
        let short = create_profile(dir.path(), std::process::id()).unwrap();
        assert!(short.path().starts_with(dir.path()), "a TMPDIR that fits is kept");
    }

    #[test]
    fn headed_mode_without_a_display_is_a_setup_error() {
        let err = headed_display(&opts(false, None), None).unwrap_err();
        assert!(matches!(err, BrowserError::Misconfigured(_)), "{err}");
        let job = oxwright_jobs::JobError::from(err);
        assert!(!job.is_retryable(), "{job}");
        assert!(job.message.contains("DISPLAY"), "{job}");
        assert!(headed_display(&opts(false, None), Some(String::new())).is_err());
    }

    #[test]
    fn the_configured_display_wins_and_headless_needs_none() {
        assert_eq!(
            headed_display(&opts(false, Some(":5")), Some(":1".into())).unwrap(),
            Some(":5".into())
        );
        assert_eq!(
            headed_display(&opts(false, None), Some(":1".into())).unwrap(),
            Some(":1".into())
        );
        assert_eq!(headed_display(&opts(true, None), None).unwrap(), None);
    }
}
