use super::*;
use oxwright_artifacts::MemoryStore;
use oxwright_queue::MemoryQueue;

fn runner(dir: &std::path::Path, grace: Duration) -> CheckRunner {
    let path = dir.join("login.check.toml");
    std::fs::write(
        &path,
        "url = \"http://a.test/app/login\"\nsteps = \"expect: text main = Pro\"\ntimeout = \"1s\"\n",
    )
    .unwrap();
    let check = oxwright_checks::load(&path).unwrap();
    let mut runner = CheckRunner::new(
        vec![check],
        Arc::new(MemoryStore::new()),
        Arc::new(MemoryQueue::new()),
        None,
    );
    runner.overdue_grace = grace;
    runner
}

#[tokio::test]
async fn a_run_whose_report_never_comes_is_closed_after_its_deadline_and_the_check_runs_again() {
    let dir = tempfile::tempdir().unwrap();
    let runner = runner(dir.path(), Duration::from_millis(200));
    let first = runner
        .trigger("login", Trigger::Schedule, None, BTreeMap::new(), true)
        .await
        .unwrap();
    // Its report is lost: a tick while it is young is skipped and counted.
    let again = runner
        .trigger("login", Trigger::Schedule, None, BTreeMap::new(), false)
        .await;
    assert!(matches!(again, Err(TriggerError::Running(_))), "{again:?}");
    assert_eq!(runner.state("login").await.skipped_ticks, 1);
    tokio::time::sleep(Duration::from_millis(1300)).await;
    let second = runner
        .trigger("login", Trigger::Schedule, None, BTreeMap::new(), false)
        .await
        .expect("an overdue run no longer holds the check");
    assert_ne!(second.run_id, first.run_id);
    let record = first
        .done
        .unwrap()
        .await
        .expect("the waiter hears of the closed run");
    assert_eq!(record.run_id, first.run_id);
    assert!(!record.status.is_pass());
    let error = record.error.as_ref().expect("the run says why it failed");
    assert_eq!(error.kind, oxwright_jobs::ErrorKind::Timeout);
    assert!(
        error.message.contains("no report of attempt 1"),
        "{}",
        error.message
    );
    assert_eq!(runner.runs("login", 10).await.unwrap().len(), 1);
    assert!(runner.running("login").await);
    let state = runner.state("login").await;
    assert_eq!((state.runs, state.consecutive_failures), (1, 1));
    assert_eq!(state.skipped_ticks, 1);
}

#[tokio::test]
async fn two_schedulers_over_one_store_run_a_check_once_at_a_time_and_count_every_skipped_tick() {
    let dir = tempfile::tempdir().unwrap();
    // Writes that take a while, so the read-change-write steps of the two
    // schedulers overlap.
    let store: Arc<dyn ArtifactStore> = Arc::new(
        oxwright_artifacts::test_suite::FaultyStore::new(Arc::new(MemoryStore::new()))
            .with_slow_writes(Duration::from_millis(5)),
    );
    let queue = Arc::new(MemoryQueue::new());
    let scheduler = |store: &Arc<dyn ArtifactStore>| {
        let check = runner(dir.path(), OVERDUE_GRACE)
            .checks
            .into_values()
            .next()
            .unwrap();
        CheckRunner::new(vec![check], store.clone(), queue.clone(), None)
    };
    let (a, b) = (scheduler(&store), scheduler(&store));
    fn tick(r: &CheckRunner) -> impl Future<Output = Result<Started, TriggerError>> + '_ {
        r.trigger("login", Trigger::Schedule, None, BTreeMap::new(), false)
    }
    let (ta, tb) = tokio::join!(tick(&a), tick(&b));
    assert!(
        ta.is_ok() != tb.is_ok(),
        "exactly one starts the run: {ta:?} {tb:?}"
    );
    let started = ta.or(tb).unwrap();
    assert_eq!(
        queue.depth(JobKind::Workflow).await.unwrap(),
        1,
        "one job published"
    );
    assert!(a.running("login").await && b.running("login").await);

    // Ticks on both while it runs: each one counted, none lost.
    for _ in 0..10 {
        let (sa, sb) = tokio::join!(tick(&a), tick(&b));
        for skipped in [sa, sb] {
            assert!(matches!(skipped, Err(TriggerError::Running(_))), "{skipped:?}");
        }
    }
    assert_eq!(a.state("login").await.skipped_ticks, 21);

    // The run's report reaches one of them; the other starts the next run.
    let report = JobReport {
        job_id: started.job_id,
        kind: JobKind::Workflow,
        batch_id: None,
        url: "http://a.test/app/login".into(),
        status: ReportStatus::Failed,
        error: Some(JobError::new(oxwright_jobs::ErrorKind::Internal, "broken")),
        artifacts: Vec::new(),
        attempt: 1,
        duration_ms: 1.0,
        finished_at: Utc::now(),
    };
    let (took_a, took_b) = tokio::join!(a.take(&report), b.take(&report));
    assert!(took_a && took_b, "both had it in flight");
    let state = a.state("login").await;
    assert_eq!(
        (state.runs, state.consecutive_failures, state.skipped_ticks),
        (1, 1, 21)
    );
    assert_eq!(a.runs("login", 10).await.unwrap().len(), 1);
    let next = tick(&b).await.expect("the closed run no longer holds the check");
    assert_ne!(next.run_id, started.run_id);
    assert!(matches!(tick(&a).await, Err(TriggerError::Running(_))));
}

#[tokio::test]
async fn a_run_within_its_deadline_keeps_the_check() {
    let dir = tempfile::tempdir().unwrap();
    let runner = runner(dir.path(), Duration::from_secs(300));
    runner
        .trigger("login", Trigger::Schedule, None, BTreeMap::new(), false)
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(1300)).await;
    let again = runner
        .trigger("login", Trigger::Schedule, None, BTreeMap::new(), false)
        .await;
    assert!(matches!(again, Err(TriggerError::Running(_))), "{again:?}");
    assert!(runner.runs("login", 10).await.unwrap().is_empty());
}
