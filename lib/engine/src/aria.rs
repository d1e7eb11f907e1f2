//! ARIA's presentational-role conflict rule (ARIA 1.2 §9.3): which
//! elements marked `role="presentation"` or `role="none"` keep their
//! implicit role. Every engine's role computation asks this one function,
//! so a locator means the same element in each, as Playwright's
//! `getByRole` does.

/// Global ARIA attributes (those ARIA 1.2 still calls global), each with
/// the implicit roles that prohibit it: a prohibited attribute gives the
/// element no reason to be kept.
const GLOBAL: &[(&str, &[&str])] = &[
    ("aria-atomic", &[]),
    ("aria-busy", &[]),
    ("aria-controls", &[]),
    ("aria-current", &[]),
    ("aria-describedby", &[]),
    ("aria-details", &[]),
    ("aria-dropeffect", &[]),
    ("aria-flowto", &[]),
    ("aria-grabbed", &[]),
    ("aria-hidden", &[]),
    ("aria-keyshortcuts", &[]),
    ("aria-label", NAME_PROHIBITED),
    ("aria-labelledby", NAME_PROHIBITED),
    ("aria-live", &[]),
    ("aria-owns", &[]),
    ("aria-relevant", &[]),
    ("aria-roledescription", &["generic"]),
];

/// Roles that cannot be named.
const NAME_PROHIBITED: &[&str] = &[
    "caption",
    "code",
    "deletion",
    "emphasis",
    "generic",
    "insertion",
    "paragraph",
    "presentation",
    "strong",
    "subscript",
    "superscript",
];

/// Says whether an element marked `presentation` or `none` keeps its
/// implicit role `implicit`: it is focusable (natively, or by any
/// `tabindex`, `-1` too) and not disabled, or it carries a global ARIA
/// attribute its role allows. Authors mark focusable widgets
/// presentational by mistake (jQuery UI writes `<a href role=presentation
/// tabindex=-1>` in its tabs), and browsers ignore the mark there, so
/// assistive technology still meets a link. `tag` is the element's tag
/// name in any case; `attr` reads an attribute.
pub fn keeps_implicit_role<'a>(tag: &str, implicit: &str, attr: impl Fn(&str) -> Option<&'a str>) -> bool {
    let tag = tag.to_ascii_lowercase();
    let disabled = matches!(
        tag.as_str(),
        "button" | "input" | "select" | "textarea" | "option" | "optgroup"
    ) && attr("disabled").is_some();
    let native = match tag.as_str() {
        "button" | "details" | "select" | "textarea" => true,
        "a" | "area" => attr("href").is_some(),
        "input" => {
            attr("hidden").is_none() && !attr("type").is_some_and(|t| t.trim().eq_ignore_ascii_case("hidden"))
        }
        _ => false,
    };
    // As the DOM reads `tabindex`: any number, an empty value counting as 0.
    let tabindex = attr("tabindex").is_some_and(|v| v.trim().is_empty() || v.trim().parse::<f64>().is_ok());
    if !disabled && (native || tabindex) {
        return true;
    }
    GLOBAL
        .iter()
        .any(|(name, prohibited)| !prohibited.contains(&implicit) && attr(name).is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keeps(tag: &str, implicit: &str, attrs: &[(&str, &str)]) -> bool {
        keeps_implicit_role(tag, implicit, |n| {
            attrs.iter().find(|(k, _)| *k == n).map(|(_, v)| *v)
        })
    }

    #[test]
    fn focusable_or_globally_annotated_elements_keep_their_role() {
        // jQuery UI's tab link.
        assert!(keeps("A", "link", &[("href", "#t1"), ("tabindex", "-1")]));
        assert!(keeps("a", "link", &[("href", "#t1")]));
        assert!(keeps("button", "button", &[]));
        assert!(keeps("span", "generic", &[("tabindex", "")]));
        assert!(keeps("h2", "heading", &[("aria-describedby", "d")]));
        assert!(keeps("h2", "heading", &[("aria-label", "Named")]));
        assert!(!keeps("span", "generic", &[]));
        assert!(!keeps("span", "generic", &[("tabindex", "x")]));
        assert!(!keeps("a", "generic", &[]));
        assert!(!keeps("button", "button", &[("disabled", "")]));
        assert!(!keeps("input", "none", &[("type", "hidden")]));
        // A paragraph cannot be named, so its label is no reason to keep it.
        assert!(!keeps("p", "paragraph", &[("aria-label", "x")]));
        assert!(!keeps("div", "generic", &[("aria-roledescription", "x")]));
    }
}
