//! The `workflow` job kind through the worker's `run_job`: artefacts under
//! `sessions/<id>/` and `jobs/workflow/<job-id>/`, typed failures.

mod wf;

use std::sync::Arc;

use oxwright_artifacts::ArtifactStore;
use oxwright_jobs::{ErrorKind, Job, JobSpec, ReportStatus, WorkflowSpec, keys};
use oxwright_worker::{HandlerContext, run_job};
use wf::Wf;

fn context(wf: &Wf) -> HandlerContext {
    let mut ctx = HandlerContext::new(wf.pool.clone(), wf.policy.clone(), Arc::new(wf.store.clone()));
    ctx.workflow.secrets = wf.secrets();
    ctx
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workflow_job_writes_session_artifacts() {
    let wf = Wf::start().await;
    let ctx = context(&wf);
    let text = "fill: textbox \"Username\" = {{LOGIN_ID}}\nfill: textbox \"Password\" = {{PASSWORD}}\nclick: button \"Sign in\"\nexpect: text \"Signed in as\"";
    let spec = WorkflowSpec::new(text, wf.url("/app/login"));
    let job = Job::new(JobSpec::Workflow(Box::new(spec)), None);
    // The job survives the queue's JSON.
    let job: Job = serde_json::from_str(&serde_json::to_string(&job).unwrap()).unwrap();
    assert_eq!(job.kind().as_str(), "workflow");
    let report = run_job(&ctx, &job).await;
    assert_eq!(report.status, ReportStatus::Ok, "{report:?}");
    let session = job.id.to_string();
    for key in [
        keys::session_steps(&session),
        keys::session_artifact(&session, "result.json"),
        keys::job_result(job.kind(), job.id),
    ] {
        assert!(
            report.artifacts.contains(&key),
            "{key} not in {:?}",
            report.artifacts
        );
        assert!(wf.store.exists(&key).await.unwrap(), "{key}");
    }
    let result: oxwright_jobs::WorkflowResult =
        serde_json::from_slice(&wf.store.get(&keys::job_result(job.kind(), job.id)).await.unwrap()).unwrap();
    assert_eq!(result.totals.steps_ok, 4);
    assert_eq!(result.session_id, session);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failing_workflow_job_reports_a_typed_error() {
    let wf = Wf::start().await;
    let ctx = context(&wf);
    let mut spec = WorkflowSpec::new("click: button \"Add to cart\"", wf.url("/app/item?id=1"));
    spec.action_timeout_ms = 1_000;
    spec.session_id = Some("job-twins".into());
    let job = Job::new(JobSpec::Workflow(Box::new(spec)), None);
    let report = run_job(&ctx, &job).await;
    assert_eq!(report.status, ReportStatus::Failed);
    let err = report.error.unwrap();
    assert_eq!(err.kind, ErrorKind::StepFailed);
    assert!(err.message.contains("sessions/job-twins/"), "{}", err.message);
    assert!(wf.store.exists("sessions/job-twins/steps.jsonl").await.unwrap());

    // Plain language without an LLM, and a bad session id, are invalid input.
    let plain = Job::new(
        JobSpec::Workflow(Box::new(WorkflowSpec::new("Log in", wf.url("/app/login")))),
        None,
    );
    assert_eq!(
        run_job(&ctx, &plain).await.error.unwrap().kind,
        ErrorKind::InvalidInput
    );
    let mut bad = WorkflowSpec::new("click: button \"x\"", wf.url("/app/login"));
    bad.session_id = Some("../up".into());
    let bad = Job::new(JobSpec::Workflow(Box::new(bad)), None);
    assert_eq!(
        run_job(&ctx, &bad).await.error.unwrap().kind,
        ErrorKind::InvalidInput
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replay_job_reruns_a_recorded_workflow_with_no_llm() {
    use oxwright_fixtures::llm::{Reply, ScriptedLlm};
    let wf = Wf::start().await;
    let ctx = context(&wf);
    let llm = ScriptedLlm::start().await.unwrap();
    llm.push(wf::checklist(&["Type Ada into Display name", "Save the profile"]));
    llm.push(wf::role(
        "textbox",
        "Display name",
        "fill",
        Some(wf::literal("Ada")),
    ));
    llm.push(Reply::text("true"));
    llm.push(wf::role("button", "Save", "click", None));
    llm.push(Reply::text("true"));
    let mut spec = WorkflowSpec::new("Type Ada into Display name, then save", wf.url("/app/profile"));
    spec.name = Some("profile job".into());
    spec.llm = Some(oxwright_jobs::LlmSpec {
        base_url: llm.base_url(),
        model: "scripted".into(),
        api_key_env: None,
        large_model: None,
    });
    let recorded = Job::new(JobSpec::Workflow(Box::new(spec)), None);
    let report = run_job(&ctx, &recorded).await;
    assert_eq!(report.status, ReportStatus::Ok, "{report:?}");
    assert!(
        wf.store
            .exists("workflows/profile-job/actions.json")
            .await
            .unwrap()
    );

    // A replay job names the workflow; its checklist comes from the cache.
    let mut spec = WorkflowSpec::new("", wf.url("/app/profile"));
    spec.workflow_id = Some("profile-job".into());
    spec.replay = true;
    spec.trust_after = Some(1);
    let job = Job::new(JobSpec::Workflow(Box::new(spec)), None);
    let job: Job = serde_json::from_str(&serde_json::to_string(&job).unwrap()).unwrap();
    let report = run_job(&ctx, &job).await;
    assert_eq!(report.status, ReportStatus::Ok, "{report:?}");
    assert_eq!(llm.received().len(), 5, "the replay job asked the LLM");
    let result: oxwright_jobs::WorkflowResult =
        serde_json::from_slice(&wf.store.get(&keys::job_result(job.kind(), job.id)).await.unwrap()).unwrap();
    assert_eq!(result.totals.cache_hits, 2);
    assert!(result.final_url.unwrap().contains("/app/profile/saved?name=Ada"));

    // Nothing recorded under that id: a typed refusal, not a run.
    let mut spec = WorkflowSpec::new("", wf.url("/app/profile"));
    spec.workflow_id = Some("never-ran".into());
    spec.replay = true;
    let report = run_job(&ctx, &Job::new(JobSpec::Workflow(Box::new(spec)), None)).await;
    assert_eq!(report.error.unwrap().kind, ErrorKind::InvalidInput);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workflow_job_takes_site_profiles_and_sitemap_hints() {
    use oxwright_fixtures::llm::{Reply, ScriptedLlm};
    let wf = Wf::start().await;
    let ctx = context(&wf);
    let origin = format!("http://{}", wf.site.addr());
    let llm = ScriptedLlm::start().await.unwrap();
    llm.push(wf::checklist(&["Type rust into the search box"]));
    llm.push(wf::role(
        "searchbox",
        "Search products",
        "fill",
        Some(wf::literal("rust")),
    ));
    llm.push(Reply::text("true"));
    let mut spec = WorkflowSpec::new("Type rust into the search box", wf.url("/app/search"));
    spec.llm = Some(oxwright_jobs::LlmSpec {
        base_url: llm.base_url(),
        model: "scripted".into(),
        api_key_env: None,
        large_model: None,
    });
    // As a submitter writes them: JSON fields of the job's spec.
    let mut value = serde_json::to_value(&spec).unwrap();
    value["sites"] = serde_json::json!([{
        "url": format!("{origin}/app"),
        "name": "Shop fixture",
        "login_hints": ["any username works"],
        "common_selectors": {"search_box": "input[type=search]"}
    }]);
    value["sitemap_hints"] = serde_json::json!(true);
    let spec: WorkflowSpec = serde_json::from_value(value).unwrap();
    let job = Job::new(JobSpec::Workflow(Box::new(spec.clone())), None);
    let job: Job = serde_json::from_str(&serde_json::to_string(&job).unwrap()).unwrap();
    let report = run_job(&ctx, &job).await;
    assert_eq!(report.status, ReportStatus::Ok, "{report:?}");
    let prompt = llm.received()[1].prompt();
    assert!(
        prompt.contains("Shop fixture") && prompt.contains("any username works"),
        "{prompt}"
    );
    assert!(prompt.contains("input[type=search]"), "{prompt}");
    // The fixture site's own sitemap, found through robots.txt.
    assert!(prompt.contains("The site's sitemap"), "{prompt}");
    assert!(prompt.contains(&format!("{origin}/articles/")), "{prompt}");

    // A profile that is not an absolute http(s) URL is refused before a run.
    let mut bad = spec;
    bad.sites[0].url = "shop.example".into();
    let report = run_job(&ctx, &Job::new(JobSpec::Workflow(Box::new(bad)), None)).await;
    let err = report.error.unwrap();
    assert_eq!(err.kind, ErrorKind::InvalidInput);
    assert!(err.message.contains("absolute http(s) URL"), "{}", err.message);
}
