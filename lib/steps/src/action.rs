//! What a step does to the element it found ([`Action`]) and the value it
//! types or selects ([`ActionValue`]): shared by structured steps and by
//! the decisions an LLM makes for a plain-language step.

use oxwright_secrets::placeholders;
use serde::{Deserialize, Serialize};

/// The action to take on the located element.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// Click it.
    Click,
    /// Clear it and type the value.
    Fill,
    /// Choose the option whose value or label is the value.
    Select,
    /// Wait until it is there (exactly one match).
    Wait,
    /// Press a key (the value: `Enter`, `Tab`, `Control+a` …) on it.
    Press,
    /// Check a checkbox or radio (no-op when checked).
    Check,
    /// Uncheck a checkbox (no-op when unchecked).
    Uncheck,
    /// Move the pointer over it.
    Hover,
    /// Double-click it.
    #[serde(rename = "dblclick")]
    DoubleClick,
    /// Scroll it into view.
    Scroll,
}

impl Action {
    /// Returns the lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Click => "click",
            Action::Fill => "fill",
            Action::Select => "select",
            Action::Wait => "wait",
            Action::Press => "press",
            Action::Check => "check",
            Action::Uncheck => "uncheck",
            Action::Hover => "hover",
            Action::DoubleClick => "dblclick",
            Action::Scroll => "scroll",
        }
    }

    /// Whether the action takes a value (`TARGET = VALUE`).
    pub fn takes_value(self) -> bool {
        matches!(self, Action::Fill | Action::Select | Action::Press)
    }
}

/// A value to type or select: a placeholder resolved at typing time, or a literal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "value", rename_all = "lowercase")]
pub enum ActionValue {
    /// `{{NAME}}`, resolved from the secret store when typed.
    Placeholder(String),
    /// A literal that may be logged (after sanitising).
    Literal(String),
}

impl From<&ActionValue> for oxwright_jobs::StepValue {
    fn from(v: &ActionValue) -> Self {
        match v {
            ActionValue::Placeholder(t) => oxwright_jobs::StepValue::Placeholder(t.clone()),
            ActionValue::Literal(t) => oxwright_jobs::StepValue::Literal(t.clone()),
        }
    }
}

impl ActionValue {
    /// Classifies a bare string: any `{{NAME}}` in it makes it a placeholder value.
    pub fn from_text(text: &str) -> Self {
        if placeholders(text).is_empty() {
            ActionValue::Literal(text.to_string())
        } else {
            ActionValue::Placeholder(text.to_string())
        }
    }

    /// Returns the text as written (placeholders unresolved).
    pub fn text(&self) -> &str {
        match self {
            ActionValue::Placeholder(t) | ActionValue::Literal(t) => t,
        }
    }
}
