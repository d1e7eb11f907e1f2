//! Saved login states with real Chromium against the fixture's members'
//! area (a server-side session cookie, a theme in localStorage): `run
//! --save-storage-state` writes Playwright's `storageState` shape, mode
//! 0600; a check naming it with `storage_state` starts signed in, and the
//! site sees no login post; the same check without it fails; a state saved
//! by Playwright starts a check signed in, and Playwright opens the members'
//! page with one oxwright saved. The session cookie's value is in no output
//! or artefact of the check. `fetch --storage-state` sends the state's live
//! cookies on the served and the rendered path, an expired one left out.

use std::path::{Path, PathBuf};

use oxwright_fixtures::{
    FixtureServer, MEMBERS_COOKIE, MEMBERS_PASSWORD, MEMBERS_THEME, MEMBERS_WELCOME, members_token,
};
use support::{oxwright_output, show, walk};

mod support;

/// The login the saved state keeps.
const LOGIN: &str = r#"fill: textbox "Username" = ada
fill: textbox "Password" = {{MEMBERS_PASSWORD}}
click: button "Sign in"
expect: text main = "Welcome back, ada"
"#;

struct Workdir {
    dir: tempfile::TempDir,
}

impl Workdir {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("secrets.env"),
            format!("MEMBERS_PASSWORD={MEMBERS_PASSWORD}\n"),
        )
        .unwrap();
        std::fs::create_dir_all(dir.path().join("checks")).unwrap();
        Self { dir }
    }

    fn path(&self, p: &str) -> PathBuf {
        self.dir.path().join(p)
    }

    fn global(&self, site: &FixtureServer) -> Vec<String> {
        [
            "--allow-host",
            &site.addr().ip().to_string(),
            "--out",
            &self.path("out").display().to_string(),
            "--browsers",
            "1",
        ]
        .map(String::from)
        .to_vec()
    }

    /// `oxwright run` of the login, saving the state to `state`.
    async fn sign_in(&self, site: &FixtureServer, state: &Path) -> std::process::Output {
        std::fs::write(self.path("login.steps"), LOGIN).unwrap();
        let mut args = self.global(site);
        args.extend(
            [
                "run",
                &self.path("login.steps").display().to_string(),
                "--url",
                &site.url("/members/login"),
                "--secrets",
                &self.path("secrets.env").display().to_string(),
                "--save-storage-state",
                &state.display().to_string(),
            ]
            .map(String::from),
        );
        oxwright_output(args, &[]).await
    }

    /// `oxwright check run` of a check on the members' page, starting from
    /// `state` when given, expecting `user` to be greeted.
    async fn check(&self, site: &FixtureServer, user: &str, state: Option<&Path>) -> std::process::Output {
        let extra = state
            .map(|p| format!("storage_state = \"{}\"\n", p.display()))
            .unwrap_or_default();
        let path = self.path("checks/members.check.toml");
        std::fs::write(
            &path,
            format!(
                "url = \"{}\"\nsteps = '''\nexpect: text main = \"{MEMBERS_WELCOME}{user}\"\nexpect: text main = \"{MEMBERS_THEME}\"\n'''\n{extra}",
                site.url("/members/home")
            ),
        )
        .unwrap();
        let mut args = self.global(site);
        args.extend(
            [
                "check",
                "run",
                &path.display().to_string(),
                "--action-timeout-ms",
                "2000",
            ]
            .map(String::from),
        );
        oxwright_output(args, &["CI"]).await
    }
}

fn login_posts(site: &FixtureServer) -> usize {
    site.requests()
        .into_iter()
        .filter(|r| r.method == "POST" && r.path == "/members/login")
        .count()
}

/// Fails if `needle` is in the output or any file under `dir`.
fn assert_nowhere(needle: &str, out: &std::process::Output, dir: &Path) {
    let mut texts = vec![
        (
            "stdout".to_string(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        ),
        (
            "stderr".to_string(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        ),
    ];
    walk(dir, &mut texts);
    assert!(texts.len() > 3, "nothing written: {texts:?}");
    for (name, text) in &texts {
        assert!(!text.contains(needle), "the session cookie in {name}:\n{text}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_saved_login_starts_a_check_signed_in_with_no_login_post() {
    use std::os::unix::fs::PermissionsExt as _;
    let site = FixtureServer::start().await.unwrap();
    let work = Workdir::new();
    let state = work.path("state/ada.json");
    std::fs::create_dir_all(state.parent().unwrap()).unwrap();
    let out = work.sign_in(&site, &state).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert_eq!(login_posts(&site), 1, "the login posted once");

    let mode = std::fs::metadata(&state).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "the state holds credentials");
    let saved: serde_json::Value = serde_json::from_slice(&std::fs::read(&state).unwrap()).unwrap();
    let cookie = saved["cookies"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == MEMBERS_COOKIE)
        .unwrap_or_else(|| panic!("no session cookie in {saved:#}"));
    assert_eq!(cookie["value"], members_token("ada"));
    assert_eq!(cookie["httpOnly"], true);
    assert_eq!(
        cookie["expires"], -1,
        "a session cookie, as Playwright writes one"
    );
    assert_eq!(cookie["sameSite"], "Lax");
    let origin = site.url("/").trim_end_matches('/').to_string();
    assert_eq!(saved["origins"][0]["origin"], origin.as_str(), "{saved:#}");
    assert_eq!(
        saved["origins"][0]["localStorage"],
        serde_json::json!([{ "name": "members.theme", "value": "dark" }])
    );

    // Signed in from the state: the page greets ada, with her theme.
    std::fs::remove_dir_all(work.path("out")).unwrap();
    let out = work.check(&site, "ada", Some(&state)).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert_eq!(
        login_posts(&site),
        1,
        "the check started signed in: no login post"
    );
    assert_nowhere(&members_token("ada"), &out, &work.path("out"));

    // The same check with no state lands on the login page and fails.
    let out = work.check(&site, "ada", None).await;
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert_eq!(login_posts(&site), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn playwright_and_oxwright_read_each_others_saved_login() {
    let site = FixtureServer::start().await.unwrap();
    let work = Workdir::new();
    let node = |args: Vec<String>| {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/state/playwright.cjs");
        tokio::task::spawn_blocking(move || {
            std::process::Command::new("node")
                .arg(script)
                .args(args)
                .output()
                .expect("node runs")
        })
    };
    let base = site.url("/").trim_end_matches('/').to_string();

    // Playwright signs in and saves; a check starts from its file.
    let theirs = work.path("playwright.json");
    let out = node(vec![
        "save".into(),
        base.clone(),
        MEMBERS_PASSWORD.into(),
        theirs.display().to_string(),
    ])
    .await
    .unwrap();
    assert!(out.status.success(), "{}", show(&out));
    assert_eq!(login_posts(&site), 1);
    let out = work.check(&site, "grace", Some(&theirs)).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert_eq!(
        login_posts(&site),
        1,
        "started from Playwright's state: no login post"
    );

    // oxwright signs in and saves; Playwright opens the members' page with it.
    let ours = work.path("oxwright.json");
    let out = work.sign_in(&site, &ours).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert_eq!(login_posts(&site), 2);
    let out = node(vec!["load".into(), base.clone(), ours.display().to_string()])
        .await
        .unwrap();
    assert!(out.status.success(), "{}", show(&out));
    let seen: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", show(&out)));
    assert_eq!(seen["greet"], format!("{MEMBERS_WELCOME}ada"), "{seen}");
    assert_eq!(seen["theme"], MEMBERS_THEME, "{seen}");
    assert_eq!(login_posts(&site), 2, "Playwright started signed in");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_check_whose_state_is_missing_or_malformed_exits_2_naming_the_key_and_line() {
    let site = FixtureServer::start().await.unwrap();
    let work = Workdir::new();
    let out = work.check(&site, "ada", Some(&work.path("absent.json"))).await;
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("storage_state") && err.contains("members.check.toml:6:"),
        "{err}"
    );
    std::fs::write(
        work.path("bad.json"),
        r#"{"cookies": [{"name": "a", "value": "b"}]}"#,
    )
    .unwrap();
    let out = work.check(&site, "ada", Some(&work.path("bad.json"))).await;
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cookie 1 has no `domain`"), "{err}");
    assert!(site.requests().is_empty(), "no check ran");
}

/// A storage state holding `ada`'s session cookie for the fixture's host,
/// `secure` as given, beside an expired cookie.
fn members_state(site: &FixtureServer, path: &Path, secure: bool) {
    let host = site.addr().ip().to_string();
    let state = serde_json::json!({
        "cookies": [
            {"name": MEMBERS_COOKIE, "value": members_token("ada"), "domain": host, "path": "/",
             "expires": -1, "httpOnly": true, "secure": secure, "sameSite": "Lax"},
            {"name": "stale", "value": "expired-long-ago", "domain": host, "path": "/",
             "expires": 1_000_000, "httpOnly": false, "secure": false, "sameSite": "Lax"}
        ],
        "origins": []
    });
    std::fs::write(path, serde_json::to_vec(&state).unwrap()).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_saved_login_signs_in_a_fetch_served_and_rendered_leaving_expired_cookies_out() {
    let site = FixtureServer::start().await.unwrap();
    let work = Workdir::new();
    let state = work.path("ada.json");
    let fetch = |render: &'static str| {
        let mut args = work.global(&site);
        args.extend(
            [
                "fetch",
                "--render",
                render,
                // The greeting is a line of its own, which main mode may drop.
                "--content",
                "full",
                "--storage-state",
                &state.display().to_string(),
                &site.url("/members/home"),
            ]
            .map(String::from),
        );
        oxwright_output(args, &[])
    };
    let greeted = |out: &std::process::Output| {
        assert_eq!(out.status.code(), Some(0), "{}", show(out));
        String::from_utf8_lossy(&out.stdout).contains(&format!("{MEMBERS_WELCOME}ada"))
    };
    let sent_stale = |site: &FixtureServer| {
        site.requests().iter().any(|r| {
            r.headers
                .iter()
                .any(|(n, v)| n == "cookie" && v.contains("stale"))
        })
    };

    members_state(&site, &state, false);
    for render in ["never", "always"] {
        let out = fetch(render).await;
        assert!(greeted(&out), "--render {render} is signed in: {}", show(&out));
    }
    assert!(!sent_stale(&site), "the expired cookie was sent");
    assert_eq!(login_posts(&site), 0);

    // A Secure cookie goes to the loopback fixture over plain HTTP on both
    // paths, as a browser counts loopback a secure context (over HTTP to
    // any other host neither sends it; the served path's unit test).
    members_state(&site, &state, true);
    for render in ["never", "always"] {
        let out = fetch(render).await;
        assert!(
            greeted(&out),
            "--render {render} kept a Secure cookie from loopback: {}",
            show(&out)
        );
    }

    // A malformed state is a usage error before anything is fetched.
    std::fs::write(&state, b"[1, 2]").unwrap();
    let before = site.requests().len();
    let out = fetch("never").await;
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("storage state"),
        "{}",
        show(&out)
    );
    assert_eq!(site.requests().len(), before);
}
