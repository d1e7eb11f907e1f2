//! The page's accessible names nearest to a locator that matched nothing,
//! for the `PRECHECK_NO_MATCH` error: a person reading the error (and the
//! LLM's next decision) sees what the page offers instead.

use oxwright_engine::Snapshot;

use oxwright_engine::Locator;

use crate::grammar::edit_distance;

/// Longest name compared (longer names are cut; they are rarely the target).
const MAX_NAME_CHARS: usize = 80;

/// Returns up to `n` `role "name"` pairs from `snap`, nearest to `locator` first.
pub(crate) fn closest_names(locator: &Locator, snap: &Snapshot, n: usize) -> Vec<String> {
    let (role, wanted) = match locator {
        Locator::Role { role, name, .. } => (Some(role.as_str()), name.as_deref()),
        Locator::Text { text, .. } | Locator::Label { text, .. } | Locator::Placeholder { text, .. } => {
            (None, Some(text.as_str()))
        }
        Locator::TestId { test_id } => (None, Some(test_id.as_str())),
        Locator::Css { .. } | Locator::XPath { .. } => (None, None),
    };
    let wanted = wanted.map(|w| w.trim().to_lowercase());
    let mut scored: Vec<(f64, String)> = Vec::new();
    for el in &snap.elements {
        let name = el.name.trim();
        if name.is_empty() {
            continue;
        }
        let label = format!("{} {}", el.role, serde_json::to_string(name).unwrap_or_default());
        if scored.iter().any(|(_, l)| *l == label) {
            continue;
        }
        let lower: String = name.to_lowercase().chars().take(MAX_NAME_CHARS).collect();
        let mut score = match &wanted {
            Some(w) if !w.is_empty() => {
                let longest = w.chars().count().max(lower.chars().count()).max(1);
                let mut s = edit_distance(w, &lower) as f64 / longest as f64;
                if lower.contains(w.as_str()) || w.contains(lower.as_str()) {
                    s -= 0.5;
                }
                s
            }
            _ => 1.0,
        };
        if role.is_some_and(|r| r.eq_ignore_ascii_case(&el.role)) {
            score -= 0.25;
        }
        scored.push((score, label));
    }
    // Stable: among equals, page order wins.
    scored.sort_by(|a, b| a.0.total_cmp(&b.0));
    scored.into_iter().take(n).map(|(_, l)| l).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxwright_engine::{ElementId, SnapshotElement};

    fn snap(pairs: &[(&str, &str)]) -> Snapshot {
        Snapshot {
            elements: pairs
                .iter()
                .enumerate()
                .map(|(i, (role, name))| SnapshotElement {
                    ref_id: format!("e{i}"),
                    role: role.to_string(),
                    name: name.to_string(),
                    id: ElementId(format!("n{i}")),
                })
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn nearest_names_come_first() {
        let page = snap(&[
            ("heading", "Sign in"),
            ("textbox", "Username"),
            ("textbox", "Password"),
            ("button", "Sign in"),
            ("link", "Browse without signing in"),
            ("generic", ""),
        ]);
        let wanted = Locator::Role {
            role: "button".into(),
            name: Some("Sign on".into()),
            exact: false,
        };
        let got = closest_names(&wanted, &page, 3);
        assert_eq!(got[0], "button \"Sign in\"", "{got:?}");
        assert_eq!(got[1], "heading \"Sign in\"", "{got:?}");
        let text = Locator::Text {
            text: "passwrd".into(),
            exact: false,
        };
        assert_eq!(closest_names(&text, &page, 1), vec!["textbox \"Password\""]);
        assert!(closest_names(&text, &snap(&[]), 3).is_empty());
    }
}
