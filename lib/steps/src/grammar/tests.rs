//! Parsing of structured steps.

use super::*;

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
    assert_eq!(step("scroll: through"), StepAction::ScrollPage(ScrollTo::Through));
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
    assert_eq!(pick_nth(0, 3), Some(0));
    assert_eq!(pick_nth(2, 3), Some(2));
    assert_eq!(pick_nth(3, 3), None);
    assert_eq!(pick_nth(-1, 3), Some(2));
    assert_eq!(pick_nth(-3, 3), Some(0));
    assert_eq!(pick_nth(-4, 3), None);
    assert_eq!(pick_nth(-1, 0), None);
}

#[test]
fn a_near_miss_of_a_verb_reads_as_a_step() {
    assert_eq!(edit_distance("expct", "expect"), 1);
    assert_eq!(nearest_verb("clcik"), Some("click"));
    assert_eq!(nearest_verb("note"), None);
    assert!(looks_structured("clik: button \"Sign in\""));
    assert!(looks_structured("once: click: button \"Pay\""));
    assert!(!looks_structured("Note: log in first"));
}
