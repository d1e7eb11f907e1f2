use std::time::Duration;

use oxwright_secrets::Sanitizer;
use quick_junit::{NonSuccessKind, Report, TestCaseStatus};

use super::*;
use crate::record::tests::{check, ctx, outcome};

fn run_of(name: &str, tags: &[&str], attempts: &[crate::AttemptOutcome]) -> CheckRun {
    let mut run = CheckRun::from_attempts(&check(tags), ctx(), attempts, Duration::from_millis(2345));
    run.check = name.into();
    run
}

/// Reads `xml` with a JUnit reader, failing on anything it cannot read.
fn read(xml: &str) -> Report {
    Report::deserialize_from_str(xml).unwrap_or_else(|e| panic!("{e}\n{xml}"))
}

#[test]
fn one_case_per_run_and_the_failure_names_the_step() {
    let runs = [
        run_of("home", &[], &[outcome("s0", true)]),
        run_of("login", &["smoke", "auth"], &[outcome("s1", false)]),
        run_of("cart", &[], &[outcome("s2", false), outcome("s3", true)]),
    ];
    let xml = report(&runs, &Sanitizer::new());
    let report = read(&xml);
    assert_eq!(report.test_suites.len(), 1, "{xml}");
    let suite = &report.test_suites[0];
    assert_eq!(suite.name.as_str(), SUITE);
    assert_eq!((suite.tests, suite.failures), (3, 1), "{xml}");
    let cases = &suite.test_cases;
    assert_eq!(cases.len(), 3);
    assert_eq!(cases[0].name.as_str(), "home");
    assert_eq!(cases[0].classname.as_ref().map(|c| c.as_str()), Some(SUITE));
    assert_eq!(cases[0].time, Some(Duration::from_millis(2345)));
    assert!(matches!(cases[0].status, TestCaseStatus::Success { .. }), "{xml}");
    assert_eq!(
        cases[1].classname.as_ref().map(|c| c.as_str()),
        Some("smoke.auth")
    );
    match &cases[1].status {
        TestCaseStatus::NonSuccess {
            kind: NonSuccessKind::Failure,
            message,
            ty,
            description,
            ..
        } => {
            let message = message.as_ref().map(|m| m.as_str()).unwrap_or_default();
            assert_eq!(
                message,
                "step 2 (expect: text \"Plan: Pro\") failed: text \"Plan: Pro\" is not on the page"
            );
            assert_eq!(ty.as_ref().map(|t| t.as_str()), Some("assertion_failed"));
            let body = description.as_ref().map(|d| d.as_str()).unwrap_or_default();
            assert!(body.contains("step 2: expect: text \"Plan: Pro\""), "{body}");
            assert!(body.contains("hint: Expected text"), "{body}");
            assert!(body.contains("sessions/s1/"), "{body}");
        }
        other => panic!("not a failure: {other:?}\n{xml}"),
    }
    // Flaky: a pass, with a note.
    assert!(matches!(cases[2].status, TestCaseStatus::Success { .. }), "{xml}");
    let out = cases[2]
        .system_out
        .as_ref()
        .map(|s| s.as_str())
        .unwrap_or_default();
    assert!(out.starts_with("flaky: passed on attempt 2 of 2"), "{out}");
    assert!(out.contains("step 2 (expect: text \"Plan: Pro\")"), "{out}");
}

#[test]
fn text_is_escaped_and_cleaned_of_secrets() {
    let sanitizer = Sanitizer::new();
    sanitizer.register("PASSWORD", "s3cret<&>\"'pw");
    let mut run = run_of("login", &["a<b"], &[outcome("s1", false)]);
    let step = run.failed_step.as_mut().unwrap();
    step.text = "click: button \"<Save & go>\"\u{1}".into();
    step.message = "typed s3cret<&>\"'pw then\nsaw ]]> and \u{0}".into();
    let xml = report(&[run], &sanitizer);
    assert!(!xml.contains("s3cret"), "{xml}");
    assert!(!xml.contains('\u{0}') && !xml.contains('\u{1}'), "{xml}");
    assert!(!xml.contains("<Save"), "{xml}");
    let report = read(&xml);
    let case = &report.test_suites[0].test_cases[0];
    assert_eq!(case.classname.as_ref().map(|c| c.as_str()), Some("a<b"));
    let TestCaseStatus::NonSuccess { message, .. } = &case.status else {
        panic!("{xml}");
    };
    let message = message.as_ref().map(|m| m.as_str()).unwrap_or_default();
    assert!(
        message.starts_with(
            "step 2 (click: button \"<Save & go>\"\u{FFFD}) failed: typed {{PASSWORD}} then\nsaw ]]> and"
        ),
        "{message}"
    );
}

#[test]
fn an_empty_run_list_is_an_empty_suite() {
    let xml = report(&[], &Sanitizer::new());
    let report = read(&xml);
    assert_eq!(report.test_suites[0].tests, 0);
}
