//! Artefacts a fetch job writes through `run_job`: page.md, page.html,
//! screenshot.png and result.json on success, error.json on failure.

mod common;

use common::Env;
use oxwright_artifacts::ArtifactStore;
use oxwright_fixtures::ARTICLE_PATHS;
use oxwright_jobs::{ErrorKind, FetchResult, Job, JobSpec, ReportStatus, keys};
use oxwright_worker::run_job;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn successful_job_writes_markdown_html_screenshot_and_result() {
    let env = Env::start().await;
    let (ctx, store) = env.handler();
    let mut spec = env.spec(ARTICLE_PATHS[0]);
    spec.include_html = true;
    spec.screenshot = true;
    let job = Job::new(JobSpec::Fetch(spec), None);
    let report = run_job(&ctx, &job).await;
    assert_eq!(report.status, ReportStatus::Ok, "{:?}", report.error);
    assert!(report.error.is_none());

    let key = |name: &str| keys::job_artifact(job.kind(), job.id, name);
    assert_eq!(key("page.md"), format!("jobs/fetch/{}/page.md", job.id));
    let expected = [
        key("page.md"),
        key("page.html"),
        key("screenshot.png"),
        keys::job_result(job.kind(), job.id),
    ];
    for k in &expected {
        assert!(
            report.artifacts.contains(k),
            "report lacks {k}: {:?}",
            report.artifacts
        );
    }

    let md = store.get(&key("page.md")).await.expect("page.md stored");
    let md = std::str::from_utf8(&md).expect("page.md is utf-8");
    assert!(md.starts_with("# "), "{md}");

    let html = store.get(&key("page.html")).await.expect("page.html stored");
    let html = String::from_utf8_lossy(&html);
    assert!(html.contains("<html"), "{}", &html[..200.min(html.len())]);

    let png = store
        .get(&key("screenshot.png"))
        .await
        .expect("screenshot.png stored");
    assert!(png.starts_with(b"\x89PNG"), "screenshot is not a png");
    assert_eq!(
        store.content_type(&key("screenshot.png")).as_deref(),
        Some("image/png")
    );

    let body = store
        .get(&keys::job_result(job.kind(), job.id))
        .await
        .expect("result.json stored");
    let result: FetchResult = serde_json::from_slice(&body).expect("result.json is a FetchResult");
    assert_eq!(result.markdown, md);
    assert_eq!(result.status, 200);
    for k in &expected {
        assert!(
            result.artifacts.contains(k),
            "result lacks {k}: {:?}",
            result.artifacts
        );
    }
    assert_eq!(result.artifacts.len(), 4, "{:?}", result.artifacts);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_job_reports_a_typed_error_and_writes_error_json() {
    let env = Env::start().await;
    let (ctx, store) = env.handler();
    let job = Job::new(
        JobSpec::Fetch(env.spec("/status/404")),
        Some("b-artifacts".into()),
    );
    let report = run_job(&ctx, &job).await;
    assert_eq!(report.status, ReportStatus::Failed);
    let err = report.error.clone().expect("failed report carries its error");
    assert_eq!(err.kind, ErrorKind::HttpStatus);
    assert_eq!(err.status, Some(404));
    assert_eq!(report.batch_id.as_deref(), Some("b-artifacts"));

    let key = keys::job_artifact(job.kind(), job.id, "error.json");
    assert_eq!(report.artifacts, vec![key.clone()]);
    let body = store.get(&key).await.expect("error.json stored");
    let value: serde_json::Value = serde_json::from_slice(&body).expect("error.json is json");
    assert_eq!(value["error"]["kind"], "http_status", "{value}");
    assert_eq!(value["error"]["status"], 404, "{value}");
    assert_eq!(value["job_id"], job.id.to_string(), "{value}");
    assert!(
        !store.exists(&keys::job_result(job.kind(), job.id)).await.unwrap(),
        "a failed job wrote result.json"
    );
}
