//! Telling a structured workflow file from plain language, and parsing it.

use std::time::Duration;

use oxwright_engine::Locator;
use oxwright_steps::{Action, ActionValue, StepAction};

use super::*;

#[test]
fn parses_structured_files() {
    let wf = Workflow::parse(
        "# login\nfill: textbox \"Username\" = {{LOGIN_ID}}\nclick: button \"Sign in\" exact\n\
         select: combobox \"Country\" = \"Japan\"\nwait: 250ms\nclick: testid \"add-main\"\ngoto: /app/late\n\
         expect: text \"Ships to Japan\"",
    )
    .unwrap();
    let WorkflowBody::Structured(steps) = wf.body else {
        panic!("not structured")
    };
    assert_eq!(steps.len(), 7);
    assert_eq!(steps[0].line, 2);
    assert_eq!(
        steps[0].action,
        StepAction::Act {
            locator: Locator::Role {
                role: "textbox".into(),
                name: Some("Username".into()),
                exact: false
            },
            nth: None,
            action: Action::Fill,
            value: Some(ActionValue::Placeholder("{{LOGIN_ID}}".into())),
            if_present: false,
            each: false,
            then_stop: false,
        }
    );
    assert!(matches!(
        &steps[1].action,
        StepAction::Act {
            locator: Locator::Role { exact: true, .. },
            ..
        }
    ));
    assert!(
        matches!(&steps[2].action, StepAction::Act { value: Some(ActionValue::Literal(v)), .. } if v == "Japan")
    );
    assert_eq!(steps[3].action, StepAction::Sleep(Duration::from_millis(250)));
}

#[test]
fn plain_text_is_for_the_llm_and_bad_lines_are_typed_errors() {
    let wf = Workflow::parse("1. Log in\n2. Search for rust").unwrap();
    assert_eq!(
        wf.body,
        WorkflowBody::Plain("1. Log in\n2. Search for rust".into())
    );
    let err = Workflow::parse("click: button \"Sign in\"\nfill: textbox \"Name\"").unwrap_err();
    assert!(matches!(err, WorkflowError::Parse { line: 2, .. }), "{err}");
    assert!(Workflow::parse("  \n# only comments\n").is_err());
    assert!(Workflow::parse("click: button \"unterminated").is_err());
    // Words before a colon that are no verb's near miss stay plain language.
    let wf = Workflow::parse("Note: log in first\nExpected: the plan says Pro").unwrap();
    assert!(matches!(wf.body, WorkflowBody::Plain(_)));
}

#[test]
fn a_typo_in_the_first_verb_is_an_unknown_verb() {
    let err = Workflow::parse("clik: button \"Sign in\"\nexpect: text \"Welcome\"").unwrap_err();
    let WorkflowError::Parse { line, message } = &err else {
        panic!("{err}")
    };
    assert_eq!(*line, 1);
    assert!(message.contains("unknown verb \"clik\""), "{message}");
    assert!(message.contains("did you mean `click:`"), "{message}");
    // A near miss alone (no correct verb anywhere) is still structured.
    let err = Workflow::parse("slect: combobox \"Country\" = Japan").unwrap_err();
    assert!(err.to_string().contains("did you mean `select:`"), "{err}");
}

#[test]
fn once_marks_a_step_that_must_not_act_twice() {
    let wf = Workflow::parse(
        "goto: /shop\nonce: click: button \"Place order\"\nONCE: fill: textbox \"Note\" = hi\nclick: button \"More\"\nfill: textbox \"Q\" = x\nexpect: text \"Done\"",
    )
    .unwrap();
    let WorkflowBody::Structured(steps) = wf.body else {
        panic!("structured")
    };
    let once: Vec<bool> = steps.iter().map(|s| s.once).collect();
    assert_eq!(once, [false, true, true, false, false, false]);
    assert_eq!(steps[1].text, "once: click: button \"Place order\"");
    assert!(matches!(
        steps[1].action,
        StepAction::Act {
            action: Action::Click,
            ..
        }
    ));
    // What may act twice: clicks and key presses, and any step marked once.
    let twice: Vec<bool> = steps.iter().map(StructuredStep::may_act_twice).collect();
    assert_eq!(twice, [false, true, true, true, false, false]);
    // A file whose only verbs follow `once:` is still structured.
    assert!(matches!(
        Workflow::parse("once: click: button \"Pay\"").unwrap().body,
        WorkflowBody::Structured(_)
    ));
    assert!(Workflow::parse("once: clack: button \"Pay\"").is_err());
}
