//! Resuming from the checkpoint the store holds, on Chromium against the
//! fixture ledger (whose request log counts every signature): through the
//! worker's `run_job`, a checkpoint set back in the store (its progress
//! fields edited, its seal untouched) or cut short is refused as
//! `invalid_input` and nothing is signed twice; a resume whose replay
//! fails still records its `resumed` entry in `result.json`.

mod wf;

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use oxwright_artifacts::ArtifactStore;
use oxwright_jobs::{ErrorKind, Job, JobSpec, ReportStatus, RunStatus, WorkflowSpec, keys};
use oxwright_secrets::MemorySecrets;
use oxwright_worker::{HandlerContext, run_job};
use oxwright_workflow::{Checkpoint, CheckpointKey, Checkpoints, Workflow, run_workflow};
use serde_json::{Value, json};
use wf::{KeepsCheckpoints, Wf};

const KEY: &str = "3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8091a2b";

/// Signs the ledger once; the click is step 3.
const SIGN_ONCE: &str = "goto: /app/ledger\nfill: textbox \"Entry\" = once\nclick: button \"Sign\"\n\
                         expect: text \"Signed: once\"\n";

/// The checkpoints `kept` saw, parsed, in the order they were written.
fn written(kept: &Mutex<Vec<String>>) -> Vec<Value> {
    kept.lock()
        .unwrap()
        .iter()
        .map(|text| serde_json::from_str(text).expect("a checkpoint is JSON"))
        .collect()
}

/// A worker's context with the checkpoint key, writing through `store`.
fn worker(wf: &Wf, store: Arc<dyn ArtifactStore>) -> HandlerContext {
    let mut ctx = HandlerContext::new(wf.pool.clone(), wf.policy.clone(), store);
    ctx.workflow.secrets = wf.secrets();
    ctx.workflow.checkpoint_key = Some(CheckpointKey::parse(KEY).unwrap());
    ctx
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_checkpoint_set_back_or_cut_short_in_the_store_is_refused_and_nothing_is_signed_twice() {
    let wf = Wf::start().await;
    let kept = Arc::new(Mutex::new(Vec::new()));
    let ctx = worker(
        &wf,
        Arc::new(KeepsCheckpoints {
            inner: Arc::new(wf.store.clone()),
            written: kept.clone(),
        }),
    );
    let mut spec = WorkflowSpec::new(SIGN_ONCE, wf.url("/app/ledger"));
    spec.session_id = Some("rewound".into());
    let job = Job::new(JobSpec::Workflow(Box::new(spec)), None);
    let report = run_job(&ctx, &job).await;
    assert_eq!(report.status, ReportStatus::Ok, "{report:?}");
    assert_eq!(wf.site.ledger_entries(), ["once"]);
    // The checkpoint written once the click had completed …
    let after_click = written(&kept)
        .into_iter()
        .find(|cp| cp["next_step"] == 3)
        .expect("a checkpoint after the click");
    assert!(after_click["sealed"].is_string(), "{after_click}");
    assert!(after_click.get("acting").is_none(), "{after_click}");
    // … set back to before it, its seal untouched, where the job's next
    // delivery looks.
    let mut rewound = after_click.clone();
    rewound["next_step"] = json!(2);
    rewound["document_step"] = json!(1);
    rewound["outcomes"].as_array_mut().unwrap().truncate(2);
    let at = keys::session_artifact("rewound", "checkpoint.json");
    let body = Bytes::from(serde_json::to_vec(&rewound).unwrap());
    wf.store.put(&at, body.clone(), "application/json").await.unwrap();
    let report = run_job(&ctx, &job).await;
    assert_eq!(
        wf.site.ledger_entries(),
        ["once"],
        "the click ran a second time: {report:?}"
    );
    assert_eq!(report.status, ReportStatus::Failed, "{report:?}");
    let err = report.error.expect("an error");
    assert_eq!(err.kind, ErrorKind::InvalidInput, "{err}");
    assert!(err.message.contains("edited"), "{err}");
    assert!(!err.is_retryable());
    // Kept as it was, for whoever looks into it.
    assert_eq!(wf.store.get(&at).await.unwrap(), body);

    // Cut short: the same kind, and again nothing signed.
    let whole = serde_json::to_vec(&after_click).unwrap();
    let cut = Bytes::from(whole[..whole.len() / 2].to_vec());
    wf.store.put(&at, cut, "application/json").await.unwrap();
    let report = run_job(&ctx, &job).await;
    let err = report.error.expect("an error");
    assert_eq!(err.kind, ErrorKind::InvalidInput, "{err}");
    assert!(err.message.contains("not a usable checkpoint"), "{err}");
    assert_eq!(wf.site.ledger_entries(), ["once"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resume_whose_replay_fails_still_records_it_in_the_result() {
    let wf = Wf::start().await;
    let kept = Arc::new(Mutex::new(Vec::new()));
    let key = CheckpointKey::parse(KEY).unwrap();
    let workflow = Workflow::parse(
        "goto: /app/ledger\nfill: textbox \"Entry\" = {{LOGIN_ID}}\nwait: 1s\nexpect: text \"Ledger\"\n",
    )
    .unwrap();
    let (on, workflow, keeps) = (&wf, &workflow, kept.clone());
    let run = move |secrets: Arc<dyn oxwright_secrets::SecretStore>, resume: Option<Checkpoint>| {
        let mut deps = on.deps(None, secrets);
        deps.store = Arc::new(KeepsCheckpoints {
            inner: deps.store.clone(),
            written: keeps.clone(),
        });
        let mut opts = on.options("replay-fails", "/app/ledger");
        let mut checkpoints = Checkpoints::new(Some(key.clone()), "test-worker");
        checkpoints.resume = resume.map(|cp| (cp, "by_hand".to_string()));
        opts.checkpoints = Some(checkpoints);
        async move {
            let page = on.page().await;
            run_workflow(page.as_ref(), workflow, deps, opts)
                .await
                .expect("the workflow runs")
        }
    };
    let first = run(wf.secrets(), None).await;
    assert_eq!(first.status, RunStatus::Completed, "{first:#?}");
    // After the pause: the fill (step 2) is replayed on the reopened page.
    let saved: Checkpoint = serde_json::from_value(
        written(&kept)
            .into_iter()
            .find(|cp| cp["next_step"] == 3)
            .expect("a checkpoint after the pause"),
    )
    .unwrap();
    assert_eq!(saved.document_step, 1);
    // Its secret is gone: the replay fails.
    let result = run(
        Arc::new(MemorySecrets::new(Vec::<(String, String)>::new())),
        Some(saved),
    )
    .await;
    assert_eq!(result.status, RunStatus::Failed, "{result:#?}");
    assert_eq!(result.resumed.len(), 1, "{result:#?}");
    assert_eq!(result.resumed[0].reason, "by_hand");
    assert_eq!(result.resumed[0].at_step, 4);
    assert!(result.resumed[0].state_restored, "{result:#?}");
    let stored: Value = serde_json::from_slice(
        &wf.store
            .get(&keys::session_artifact("replay-fails", "result.json"))
            .await
            .unwrap(),
    )
    .unwrap();
    assert_eq!(stored["resumed"][0]["at_step"], 4, "{stored:#}");
}
