use serde_json::json;

use super::*;

fn session() -> SessionArtefacts {
    let record = json!({
        "sessionId": "s1", "stepNumber": 1, "stepId": "step_1_1", "attempt": 1,
        "originalInstruction": "Type <b>x</b>", "currentStepMeta": {}, "metadataPresent": false,
        "metadataMissing": true, "metadataKeys": [],
        "decision": {"locator": {"method": "getByRole", "role": "textbox", "name": "Pass\"word"},
                     "action": "fill", "value": {"kind": "placeholder", "value": "{{PASSWORD}}"},
                     "rationale": "<img src=x onerror=alert(1)>"},
        "precheckCount": 1, "result": {"success": true}, "completed": true, "reason": null,
        "tokens": {"prompt": 10, "completion": 2}, "durations": {"snapshotMs": 1.0, "decisionMs": 2.0,
        "precheckMs": 3.0, "actionMs": 4.0, "settleMs": 5.0, "judgeMs": 6.0, "totalMs": 21.0},
        "snapshotBytes": 5, "url": "http://a/", "timestamp": "2026-01-01T00:00:00Z"
    });
    SessionArtefacts {
        session_id: "s1".into(),
        result: Some(json!({
            "status": "completed", "name": "<script>alert(1)</script>", "start_url": "http://a/?q=hunter2-secret",
            "checklist": ["[] Type <b>x</b>"],
            "steps": [{"step_number": 1, "instruction": "[] Type <b>x</b>", "status": "completed",
                       "attempts": 1, "prompt_tokens": 10, "completion_tokens": 2, "duration_ms": 21.0,
                       "source": "cache"}],
            "totals": {"steps": 1, "steps_ok": 1, "cache_hits": 1}
        })),
        records: vec![serde_json::from_value(record).unwrap()],
        files: vec!["screenshots/start.png".into(), "screenshots/step_1.png".into()],
    }
}

#[test]
fn escapes_everything_and_hides_registered_secrets() {
    let sanitizer = Sanitizer::new();
    sanitizer.register("PASSWORD", "hunter2-secret");
    let html = render_report(&session(), &sanitizer);
    assert!(!html.contains("<script>alert"), "{html}");
    assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(!html.contains("<img src=x"), "{html}");
    assert!(!html.contains("<b>x</b>"));
    assert!(!html.contains("hunter2-secret"));
    assert!(html.contains("{{PASSWORD}}"));
    assert!(!html.contains("<script"), "no script of its own either");
    assert!(html.contains("cache hit"));
    assert!(html.contains("1 cache hits"));
}

#[test]
fn links_screenshots_relative_to_the_session_folder() {
    let html = render_report(&session(), &Sanitizer::new());
    assert!(
        html.contains("<a href=\"screenshots/start.png\"><img class=\"thumb\" src=\"screenshots/start.png\"")
    );
    assert!(html.contains("src=\"screenshots/step_1.png\""));
    assert!(!html.contains("href=\"http"), "nothing links out");
}

#[test]
fn a_missing_result_still_reports_the_records() {
    let mut s = session();
    s.result = None;
    let html = render_report(&s, &Sanitizer::new());
    assert!(html.contains("id=\"step-1\""));
    assert!(html.contains("Type &lt;b&gt;x&lt;/b&gt;"));
}

#[test]
fn a_continued_run_says_where_it_moved_on() {
    let mut s = session();
    s.result.as_mut().unwrap()["resumed"] = json!([
        {"at_step": 8, "reason": "redelivered", "worker": "host-b:42", "state_restored": true,
         "in_flight": "step 8 was in flight and counts as done: its effect is visible", "at": "2026-01-01T00:00:00Z"},
        {"at_step": 12, "reason": "handed_over", "worker": "host-c:7", "state_restored": false, "at": "2026-01-01T00:01:00Z"}
    ]);
    let html = render_report(&s, &Sanitizer::new());
    assert!(
        html.contains("at step 8 (redelivered) on host-b:42; step 8 was in flight"),
        "{html}"
    );
    assert!(
        html.contains("at step 12 (handed_over) on host-c:7; cookies and storage not carried over"),
        "{html}"
    );
}
