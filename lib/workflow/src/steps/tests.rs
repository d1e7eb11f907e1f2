//! Parsing of structured workflow files.

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

fn step(line: &str) -> StepAction {
    parse_step(line).unwrap_or_else(|e| panic!("{line}: {e}"))
}

#[test]
fn quoted_values_after_a_nameless_target_parse() {
    // The value's quotes are not the target's.
    assert_eq!(
        step(r#"fill: textbox = "hello""#),
        StepAction::Act {
            locator: Locator::Role {
                role: "textbox".into(),
                name: None,
                exact: false
            },
            nth: None,
            action: Action::Fill,
            value: Some(ActionValue::Literal("hello".into())),
            if_present: false,
            each: false,
            then_stop: false,
        }
    );
    assert!(matches!(
        step(r#"fill: textbox "Say" = "a = b""#),
        StepAction::Act { value: Some(ActionValue::Literal(v)), .. } if v == "a = b"
    ));
    assert!(matches!(
        step(r#"select: listbox "Colours" = "Red, Blue""#),
        StepAction::Act { value: Some(ActionValue::Literal(v)), action: Action::Select, .. } if v == "Red, Blue"
    ));
}

#[test]
fn the_grown_grammar_parses() {
    assert_eq!(step("press: Enter"), StepAction::PressKey("Enter".into()));
    assert!(matches!(
        step(r#"press: textbox "Search" = Control+a"#),
        StepAction::Act { action: Action::Press, value: Some(ActionValue::Literal(k)), .. } if k == "Control+a"
    ));
    for (line, action) in [
        (r#"check: checkbox "Remember me""#, Action::Check),
        (r#"uncheck: checkbox "Remember me""#, Action::Uncheck),
        (r#"hover: menuitem "Account""#, Action::Hover),
        (r#"dblclick: text "Rename""#, Action::DoubleClick),
        (r#"scroll: button "Load more""#, Action::Scroll),
    ] {
        assert!(
            matches!(step(line), StepAction::Act { action: a, .. } if a == action),
            "{line}"
        );
    }
    assert_eq!(step("scroll: bottom"), StepAction::ScrollPage(ScrollTo::Bottom));
    assert_eq!(
        step(r#"click: button "Add to cart" nth 1"#),
        StepAction::Act {
            locator: Locator::Role {
                role: "button".into(),
                name: Some("Add to cart".into()),
                exact: false
            },
            nth: Some(1),
            action: Action::Click,
            value: None,
            if_present: false,
            each: false,
            then_stop: false,
        }
    );
    assert!(matches!(
        step(r#"click: button "Accept cookies" exact if present"#),
        StepAction::Act {
            if_present: true,
            locator: Locator::Role { exact: true, .. },
            ..
        }
    ));
    assert!(matches!(
        step(r#"fill: label "E-mail" = a@b.c"#),
        StepAction::Act {
            locator: Locator::Label { .. },
            ..
        }
    ));
    assert!(matches!(
        step(r#"fill: placeholder "Search" = rust"#),
        StepAction::Act {
            locator: Locator::Placeholder { .. },
            ..
        }
    ));
    assert!(matches!(
        step(r##"click: css "#go > span""##),
        StepAction::Act {
            locator: Locator::Css { .. },
            ..
        }
    ));
    assert!(matches!(
        step(r#"click: xpath "//button[2]""#),
        StepAction::Act {
            locator: Locator::XPath { .. },
            ..
        }
    ));
    assert_eq!(
        step("dialog: accept \"Bob\""),
        StepAction::Dialog {
            accept: true,
            text: Some("Bob".into())
        }
    );
    assert_eq!(
        step("dialog: dismiss"),
        StepAction::Dialog {
            accept: false,
            text: None
        }
    );
    for bad in [
        "click: button \"Go\" nth x",
        "click: button \"Go\" twice",
        "press: textbox \"Q\" =",
        "dialog: maybe",
        "scroll: sideways now",
        "expect: count listitem = many",
        "expect: url includes",
        "expect: text heading \"Cart\"",
    ] {
        assert!(parse_step(bad).is_err(), "{bad}");
    }
}

#[test]
fn assertions_parse() {
    let text = |l: &str| Locator::Text {
        text: l.into(),
        exact: false,
    };
    assert_eq!(
        step(r#"expect: text "Ships to Japan""#),
        StepAction::Expect(Assertion::Visible {
            locator: text("Ships to Japan"),
            nth: None
        })
    );
    assert_eq!(
        step(r#"expect: visible text "Ships" nth 0"#),
        StepAction::Expect(Assertion::Visible {
            locator: text("Ships"),
            nth: Some(0)
        })
    );
    assert!(matches!(
        step(r#"expect: hidden dialog "Added to cart""#),
        StepAction::Expect(Assertion::Hidden(Locator::Role { .. }))
    ));
    assert!(matches!(
        step(r#"expect: text heading "Cart" = "2 items""#),
        StepAction::Expect(Assertion::Text { expected, .. }) if expected == "2 items"
    ));
    assert!(matches!(
        step(r#"expect: value textbox "Username" = {{LOGIN_ID}}"#),
        StepAction::Expect(Assertion::Value {
            expected: ActionValue::Placeholder(_),
            ..
        })
    ));
    assert!(matches!(
        step(r#"expect: checked checkbox "Remember me""#),
        StepAction::Expect(Assertion::Checked { checked: true, .. })
    ));
    assert!(matches!(
        step("expect: count listitem = 3"),
        StepAction::Expect(Assertion::Count { expected: 3, .. })
    ));
    assert_eq!(
        step("expect: url includes /app/search"),
        StepAction::Expect(Assertion::UrlIncludes("/app/search".into()))
    );
    assert_eq!(
        step(r#"expect: url includes "?q=rust""#),
        StepAction::Expect(Assertion::UrlIncludes("?q=rust".into()))
    );
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
    assert_eq!(edit_distance("expct", "expect"), 1);
    assert_eq!(nearest_verb("clcik"), Some("click"));
    assert_eq!(nearest_verb("note"), None);
}

#[test]
fn the_last_match_every_match_a_stop_and_an_else() {
    assert!(matches!(
        step(r#"click: button "Delete" nth -1"#),
        StepAction::Act {
            nth: Some(-1),
            each: false,
            ..
        }
    ));
    assert!(matches!(
        step(r#"check: each checkbox "Done""#),
        StepAction::Act {
            action: Action::Check,
            each: true,
            nth: None,
            ..
        }
    ));
    assert!(matches!(
        step(r#"fill: each textbox "Note" = ok"#),
        StepAction::Act {
            action: Action::Fill,
            each: true,
            ..
        }
    ));
    assert!(matches!(
        step(r#"click: tab "Shipping" if present then stop"#),
        StepAction::Act {
            if_present: true,
            then_stop: true,
            ..
        }
    ));
    let StepAction::Else { first, otherwise } =
        step(r#"fill: textbox "Coupon" = SAVE10 else click: button "Cancel""#)
    else {
        panic!("an else step");
    };
    assert!(
        matches!(*first, StepAction::Act { action: Action::Fill, value: Some(ActionValue::Literal(ref v)), .. } if v == "SAVE10")
    );
    assert!(matches!(
        *otherwise,
        StepAction::Act {
            action: Action::Click,
            ..
        }
    ));
    // ` else ` inside quotes, or not followed by a step, is text.
    assert!(matches!(
        step(r#"click: button "Save or else" "#),
        StepAction::Act { .. }
    ));
    assert!(matches!(
        step(r#"fill: textbox "Note" = now or else later"#),
        StepAction::Act { value: Some(ActionValue::Literal(ref v)), .. } if v == "now or else later"
    ));
    for (line, why) in [
        (r#"click: each button "Go" nth 1"#, "takes no nth"),
        (r#"click: button "Go" nth last"#, "-1 the last"),
        (
            r#"click: button "A" else click: button "B" else click: button "C""#,
            "one `else`",
        ),
        (r#"click: button "A" else clack: button "B""#, "after `else`"),
        (r#"click: button "A" then stop"#, "unexpected"),
    ] {
        let err = parse_step(line).expect_err(line);
        assert!(err.contains(why), "{line}: {err}");
    }
}

#[test]
fn nth_counts_from_the_first_or_from_the_last() {
    use crate::steps::pick_nth;
    assert_eq!(pick_nth(0, 3), Some(0));
    assert_eq!(pick_nth(2, 3), Some(2));
    assert_eq!(pick_nth(3, 3), None);
    assert_eq!(pick_nth(-1, 3), Some(2));
    assert_eq!(pick_nth(-3, 3), Some(0));
    assert_eq!(pick_nth(-4, 3), None);
    assert_eq!(pick_nth(-1, 0), None);
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
