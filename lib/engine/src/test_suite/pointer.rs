//! Pointer cases: clicks with a button and keys, drags.

use super::*;
use crate::{Modifier, MouseButton};

/// A right click, a click with keys held, a middle click: the page sees
/// the button and the keys.
pub(super) async fn clicks_with_buttons_and_keys(page: &dyn Page, base: &url::Url) {
    page.goto(&url(base, "/suite/clicks"), &goto_opts())
        .await
        .expect("goto clicks");
    let button = Target::locator(Locator::role("button", Some("Press me")));
    let opts = ActOptions::default();
    let cases = [
        (MouseButton::Right, vec![], "Saw contextmenu of button 2"),
        (
            MouseButton::Left,
            vec![Modifier::Shift],
            "Saw click of button 0 with shift",
        ),
        (
            MouseButton::Middle,
            vec![Modifier::ControlOrMeta, Modifier::Alt],
            "Saw auxclick of button 1 with control with alt",
        ),
        (MouseButton::Left, vec![], "Saw click of button 0"),
    ];
    for (button_kind, modifiers, said) in cases {
        let act = Act::ClickWith {
            button: button_kind,
            modifiers: modifiers.clone(),
        };
        page.act(&button, &act, &opts)
            .await
            .unwrap_or_else(|e| panic!("{button_kind:?} {modifiers:?}: {e}"));
        shows(page, said, &format!("{button_kind:?} {modifiers:?}")).await;
    }
}

/// An HTML drag and drop gets its data to the drop zone; a pointer-driven
/// drag is pressed, moved and released over its target.
pub(super) async fn drags(page: &dyn Page, base: &url::Url) {
    page.goto(&url(base, "/suite/drag"), &goto_opts())
        .await
        .expect("goto drag");
    let css = |s: &str| {
        Target::locator(Locator::Css {
            selector: s.to_string(),
        })
    };
    let opts = ActOptions::default();
    for (from, to, said) in [
        ("#card", "#bin", "Dropped card-42"),
        ("#knob", "#end", "Released over end after moving"),
    ] {
        page.drag(&css(from), &css(to), &opts)
            .await
            .unwrap_or_else(|e| panic!("drag {from} to {to}: {e}"));
        shows(page, said, &format!("drag {from} to {to}")).await;
    }
    let gone = page.drag(&css("#card"), &css("#no-such-zone"), &opts).await;
    assert!(
        gone.as_ref().is_err_and(|e| e.kind == EngineErrorKind::NotFound),
        "a drag onto nothing is a not-found error: {gone:?}"
    );
}
