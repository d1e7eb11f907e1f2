//! `oxwright batch --sitemap` expands a site's sitemap into fetch jobs, and
//! `oxwright sitemap` prints the URLs.

use std::process::Command;

use oxwright_fixtures::FixtureServer;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batch_from_a_sitemap_fetches_every_listed_page() {
    let site = FixtureServer::start().await.unwrap();
    let out = tempfile::tempdir().unwrap();
    let bin = env!("CARGO_BIN_EXE_oxwright");
    let addr = site.addr().to_string();
    let listed = tokio::task::spawn_blocking({
        let (bin, addr, root) = (bin.to_string(), addr.clone(), site.url("/"));
        move || {
            Command::new(bin)
                .args(["--allow-host", &addr, "sitemap", &root])
                .output()
                .unwrap()
        }
    })
    .await
    .unwrap();
    assert!(
        listed.status.success(),
        "{}",
        String::from_utf8_lossy(&listed.stderr)
    );
    let urls: Vec<String> = String::from_utf8(listed.stdout)
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    assert!(urls.len() > oxwright_fixtures::ARTICLE_PATHS.len(), "{urls:?}");

    let store = out.path().to_path_buf();
    let run = tokio::task::spawn_blocking({
        let (bin, addr, root, store) = (bin.to_string(), addr, site.url("/"), store.clone());
        move || {
            Command::new(bin)
                .args(["--allow-host", &addr, "--out"])
                .arg(&store)
                .args(["batch", "--json", "--sitemap", &root])
                .output()
                .unwrap()
        }
    })
    .await
    .unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let summary: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
    assert_eq!(summary["total"], urls.len());
    assert_eq!(summary["ok"], urls.len(), "{summary}");
    let manifest = std::fs::read_to_string(store.join(summary["manifest"].as_str().unwrap())).unwrap();
    assert_eq!(manifest.lines().count(), urls.len());
}
