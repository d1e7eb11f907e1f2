//! URLs as a person types them: a bare host is fetched, and a refused
//! private address names the flag that allows it.

use std::process::Output;

use oxwright_fixtures::{ARTICLE_PATHS, FixtureServer};
use support::show;

mod support;

async fn oxwright(args: Vec<String>) -> Output {
    support::oxwright_output(args, &["OXWRIGHT_ALLOW_HOSTS"]).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_loopback_url_names_the_flag_to_type() {
    let site = FixtureServer::start().await.unwrap();
    let addr = site.addr().to_string();
    let out = oxwright(vec!["fetch".into(), format!("{addr}{}", ARTICLE_PATHS[0])]).await;
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("allow it with --allow-private or --allow-host {addr} ")),
        "{}",
        show(&out)
    );
    assert!(
        stderr.contains("(config: policy.allow_private / policy.allow_hosts)"),
        "{}",
        show(&out)
    );
    assert_eq!(site.hits("/"), 0, "nothing was fetched");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bare_loopback_host_is_fetched_over_http() {
    let site = FixtureServer::start().await.unwrap();
    let addr = site.addr().to_string();
    let dir = tempfile::tempdir().unwrap();
    let out = oxwright(vec![
        "--allow-host".into(),
        addr.clone(),
        "--out".into(),
        dir.path().display().to_string(),
        "fetch".into(),
        "--json".into(),
        format!("{addr}{}", ARTICLE_PATHS[0]),
    ])
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let result: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one FetchResult line");
    assert_eq!(
        result["url"],
        format!("http://{addr}{}", ARTICLE_PATHS[0]),
        "{result}"
    );
    assert_eq!(result["status"], 200, "{result}");
    assert_eq!(site.hits(ARTICLE_PATHS[0]), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fetch_writes_to_a_file_and_never_drops_a_screenshot() {
    let site = FixtureServer::start().await.unwrap();
    let addr = site.addr().to_string();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("page.md");
    let out = oxwright(vec![
        "--allow-host".into(),
        addr.clone(),
        "--out".into(),
        dir.path().join("out").display().to_string(),
        "fetch".into(),
        "-o".into(),
        file.display().to_string(),
        "--screenshot".into(),
        site.url(ARTICLE_PATHS[0]),
    ])
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(out.stdout.is_empty(), "{}", show(&out));
    let markdown = std::fs::read_to_string(&file).unwrap();
    assert!(markdown.starts_with('#') && markdown.len() > 200, "{markdown}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("wrote {}", file.display())),
        "{}",
        show(&out)
    );
    // The screenshot exists only as an artefact: kept, and said where.
    assert!(stderr.contains("screenshot.png"), "{}", show(&out));
    let shots: Vec<_> = walk(&dir.path().join("out"))
        .into_iter()
        .filter(|p| p.ends_with("screenshot.png"))
        .collect();
    assert_eq!(shots.len(), 1, "{shots:?}");

    // A file that cannot be written fails before any browser starts.
    let out = oxwright(vec![
        "--allow-host".into(),
        addr,
        "fetch".into(),
        "-o".into(),
        dir.path().join("no/such/dir/page.md").display().to_string(),
        site.url(ARTICLE_PATHS[0]),
    ])
    .await;
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("cannot write"),
        "{}",
        show(&out)
    );
}

fn walk(dir: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path.display().to_string());
        }
    }
    out
}
