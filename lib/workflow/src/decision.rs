//! The LLM's decision for one attempt (`ActionDecisionOutput` of the seed)
//! and its strict parsing: an unusable answer fails the attempt, there is no
//! heuristic fallback.

use oxwright_llm::extract_json_object;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::Locator;
use oxwright_steps::{Action, ActionValue};

/// Locator methods the LLM may use: the first three always, the rest only
/// in emergency mode (the seed's wider set for the light DOM).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Method {
    /// Role and accessible name.
    #[serde(rename = "getByRole")]
    GetByRole,
    /// Visible text.
    #[serde(rename = "getByText")]
    GetByText,
    /// `data-testid`.
    #[serde(rename = "getByTestId")]
    GetByTestId,
    /// A label's text (emergency mode).
    #[serde(rename = "getByLabel")]
    GetByLabel,
    /// A placeholder (emergency mode).
    #[serde(rename = "getByPlaceholder")]
    GetByPlaceholder,
    /// A CSS selector (emergency mode).
    #[serde(rename = "locator")]
    Locator,
    /// The control of `selector.role` nearest a text in reading order (emergency mode).
    #[serde(rename = "near")]
    Near,
}

impl Method {
    /// Whether the method is offered only in emergency mode.
    pub fn is_wide(self) -> bool {
        !matches!(self, Method::GetByRole | Method::GetByText | Method::GetByTestId)
    }
}

/// What the locator looks for.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Selector {
    /// ARIA role, for getByRole.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// Accessible name, for getByRole.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Text, for getByText.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Test id, for getByTestId.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test_id: Option<String>,
    /// Label text, for getByLabel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Placeholder, for getByPlaceholder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placeholder: Option<String>,
    /// CSS selector, for locator.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub locator: Option<String>,
    /// Exact, case-sensitive match instead of a case-insensitive substring.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exact: Option<bool>,
}

/// The decision for one attempt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ActionDecision {
    /// Locator method.
    pub method: Method,
    /// What it looks for.
    pub selector: Selector,
    /// What to do.
    pub action: Action,
    /// The value for fill and select.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<ActionValue>,
    /// The LLM's confidence, 0 to 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f64>,
    /// One line of reasoning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rationale: Option<String>,
}

impl ActionDecision {
    /// Returns the text and role of a `near` decision.
    pub fn near(&self) -> Option<(String, Option<String>)> {
        if self.method != Method::Near {
            return None;
        }
        let text = self
            .selector
            .text
            .clone()
            .or_else(|| self.selector.name.clone())?;
        Some((text, self.selector.role.clone()))
    }

    /// Returns the locator this decision names (a `near` decision has
    /// none: it resolves to a snapshot ref).
    pub fn locator(&self) -> Result<Locator, String> {
        let exact = self.selector.exact.unwrap_or(false);
        let nonempty = |v: &Option<String>| {
            v.as_deref()
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
        };
        match self.method {
            Method::GetByRole => Ok(Locator::Role {
                role: nonempty(&self.selector.role).ok_or("getByRole without selector.role")?,
                name: nonempty(&self.selector.name),
                exact,
            }),
            Method::GetByText => Ok(Locator::Text {
                text: nonempty(&self.selector.text)
                    .or_else(|| nonempty(&self.selector.name))
                    .ok_or("getByText without selector.text")?,
                exact,
            }),
            Method::GetByTestId => Ok(Locator::TestId {
                test_id: nonempty(&self.selector.test_id).ok_or("getByTestId without selector.testId")?,
            }),
            Method::GetByLabel => Ok(Locator::Label {
                text: nonempty(&self.selector.label)
                    .or_else(|| nonempty(&self.selector.text))
                    .ok_or("getByLabel without selector.label")?,
                exact,
            }),
            Method::GetByPlaceholder => Ok(Locator::Placeholder {
                text: nonempty(&self.selector.placeholder)
                    .or_else(|| nonempty(&self.selector.text))
                    .ok_or("getByPlaceholder without selector.placeholder")?,
                exact,
            }),
            Method::Locator => Ok(Locator::css(
                &nonempty(&self.selector.locator).ok_or("locator without selector.locator")?,
            )),
            Method::Near => Err("near resolves through the snapshot, not a locator".into()),
        }
    }
}

/// A parsed decision answer.
#[derive(Debug, Clone, PartialEq)]
pub enum DecisionAnswer {
    /// Act.
    Act(Box<ActionDecision>),
    /// `{ "error": "TARGET_NOT_FOUND" }`.
    TargetNotFound,
}

/// Parses the LLM's answer; the error says why it is unusable.
pub fn parse_decision(text: &str) -> Result<DecisionAnswer, String> {
    parse_decision_in(text, false)
}

/// Parses an answer; `wide` admits the emergency-mode methods.
pub fn parse_decision_in(text: &str, wide: bool) -> Result<DecisionAnswer, String> {
    let mut v = extract_json_object(text).map_err(|e| e.to_string())?;
    if let Some(err) = v.get("error") {
        return match err.as_str() {
            Some("TARGET_NOT_FOUND") => Ok(DecisionAnswer::TargetNotFound),
            _ => Err(format!("the LLM answered an error: {err}")),
        };
    }
    // A bare string value is accepted and classified by its placeholders.
    if let Some(Value::String(s)) = v.get("value").cloned() {
        v["value"] = serde_json::to_value(ActionValue::from_text(&s)).unwrap_or(Value::Null);
    }
    if v.get("value").is_some_and(Value::is_null) {
        v.as_object_mut().map(|o| o.remove("value"));
    }
    let decision: ActionDecision =
        serde_json::from_value(v).map_err(|e| format!("decision does not fit the schema: {e}"))?;
    if decision.method.is_wide() && !wide {
        return Err(format!(
            "method {:?} is offered only in emergency mode",
            decision.method
        ));
    }
    if decision.method == Method::Near {
        if decision.near().is_none_or(|(t, _)| t.trim().is_empty()) {
            return Err("near without selector.text".into());
        }
    } else {
        decision.locator()?;
    }
    if decision.action.takes_value() && decision.value.is_none() {
        return Err(format!("{} without a value", decision.action.as_str()));
    }
    Ok(DecisionAnswer::Act(Box::new(decision)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_decisions_with_fences_and_bare_values() {
        let text = "```json\n{\"method\":\"getByRole\",\"selector\":{\"role\":\"textbox\",\"name\":\"Password\"},\
                    \"action\":\"fill\",\"value\":\"{{PASSWORD}}\",\"confidence\":0.9}\n```";
        let DecisionAnswer::Act(d) = parse_decision(text).unwrap() else {
            panic!("not an action")
        };
        assert_eq!(d.value, Some(ActionValue::Placeholder("{{PASSWORD}}".into())));
        assert_eq!(
            d.locator().unwrap(),
            Locator::Role {
                role: "textbox".into(),
                name: Some("Password".into()),
                exact: false
            }
        );
    }

    #[test]
    fn refuses_unusable_answers() {
        assert_eq!(
            parse_decision("{\"error\":\"TARGET_NOT_FOUND\"}").unwrap(),
            DecisionAnswer::TargetNotFound
        );
        for bad in [
            "I would click the button",
            "{\"method\":\"locator\",\"selector\":{},\"action\":\"click\"}",
            "{\"method\":\"getByRole\",\"selector\":{\"name\":\"x\"},\"action\":\"click\"}",
            "{\"method\":\"getByText\",\"selector\":{\"text\":\"x\"},\"action\":\"fill\"}",
        ] {
            assert!(parse_decision(bad).is_err(), "{bad}");
        }
        let label = r#"{"method":"getByLabel","selector":{"label":"E-mail"},"action":"click"}"#;
        assert!(parse_decision(label).unwrap_err().contains("emergency mode"));
        let DecisionAnswer::Act(d) = parse_decision_in(label, true).unwrap() else {
            panic!("not an action")
        };
        assert_eq!(
            d.locator().unwrap(),
            Locator::Label {
                text: "E-mail".into(),
                exact: false
            }
        );
        let near = r#"{"method":"near","selector":{"text":"E-mail","role":"textbox"},"action":"click"}"#;
        assert!(parse_decision_in(near, true).is_ok());
        assert!(parse_decision_in(r#"{"method":"near","selector":{},"action":"click"}"#, true).is_err());
    }
}
