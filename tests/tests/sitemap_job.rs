//! The sitemap job kind through the worker's dispatch: discovery from the
//! fixture site's robots.txt, artefacts `result.json` and `urls.txt`.

mod common;

use common::Env;
use oxwright_artifacts::ArtifactStore;
use oxwright_jobs::{Job, JobSpec, ReportStatus, SitemapSpec, keys};
use oxwright_worker::run_job;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sitemap_job_writes_the_url_list() {
    let env = Env::start().await;
    let (ctx, store) = env.handler();
    let job = Job::new(
        JobSpec::Sitemap(SitemapSpec {
            target: env.site.url("/"),
        }),
        None,
    );
    let report = run_job(&ctx, &job).await;
    assert_eq!(report.status, ReportStatus::Ok, "{:?}", report.error);
    let urls = store
        .get(&keys::job_artifact(job.kind(), job.id, "urls.txt"))
        .await
        .unwrap();
    let urls: Vec<&str> = std::str::from_utf8(&urls).unwrap().lines().collect();
    for path in oxwright_fixtures::ARTICLE_PATHS {
        assert!(
            urls.contains(&env.site.url(path).as_str()),
            "{path} missing from {urls:?}"
        );
    }
    let result: serde_json::Value =
        serde_json::from_slice(&store.get(&keys::job_result(job.kind(), job.id)).await.unwrap()).unwrap();
    assert_eq!(result["urls"].as_array().unwrap().len(), urls.len());
    assert!(env.site.hits("/robots.txt") >= 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sitemap_job_refuses_private_targets() {
    let env = Env::start().await;
    let (ctx, _store) = env.handler();
    let job = Job::new(
        JobSpec::Sitemap(SitemapSpec {
            target: "http://169.254.169.254/sitemap.xml".into(),
        }),
        None,
    );
    let report = run_job(&ctx, &job).await;
    assert_eq!(report.status, ReportStatus::Failed);
    assert_eq!(report.error.unwrap().kind, oxwright_jobs::ErrorKind::PolicyDenied);
}
