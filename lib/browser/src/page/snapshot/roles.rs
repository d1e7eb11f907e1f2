//! Chromium's accessibility roles mapped to ARIA roles, and what the
//! snapshot does with each: print it, print its text, hoist its children or
//! drop it.

/// What a role becomes in the snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shape {
    /// An element line with this ARIA role.
    Role(&'static str),
    /// A text line.
    Text,
    /// No line; children take its place.
    Hoist,
    /// No line, no children.
    Drop,
}

/// Returns the shape of Chromium role `raw` for a node named `name`.
pub(crate) fn shape(raw: &str, named: bool) -> Shape {
    match raw {
        "StaticText" => Shape::Text,
        "InlineTextBox" | "LineBreak" | "ListMarker" | "Canvas" => Shape::Drop,
        "RootWebArea" | "WebArea" | "MenuListPopup" | "LabelText" | "none" | "presentation" | "Legend"
        | "Ruby" | "RubyAnnotation" | "Abbr" | "Mark" | "Time" | "Subscript" | "Superscript" | "Emphasis"
        | "Strong" | "emphasis" | "strong" | "subscript" | "superscript" | "mark" | "time" => Shape::Hoist,
        "generic"
        | "GenericContainer"
        | "Section"
        | "Div"
        | "Span"
        | "Pre"
        | "Iframe"
        | "IframePresentational"
            if !named && !raw.starts_with("Iframe") =>
        {
            Shape::Hoist
        }
        "Iframe" | "IframePresentational" => Shape::Role("iframe"),
        "generic" | "GenericContainer" | "Div" | "Span" | "Pre" => Shape::Role("generic"),
        "Section" => Shape::Role("region"),
        "MenuListOption" | "ListBoxOption" | "option" => Shape::Role("option"),
        "image" | "Image" | "img" => Shape::Role("img"),
        "PopUpButton" => Shape::Role("combobox"),
        "DescriptionList" => Shape::Role("list"),
        "DescriptionListTerm" | "DescriptionListDetail" | "Term" => Shape::Role("listitem"),
        "LayoutTable" => Shape::Role("table"),
        "LayoutTableRow" => Shape::Role("row"),
        "LayoutTableCell" => Shape::Role("cell"),
        "HeaderAsNonLandmark"
        | "FooterAsNonLandmark"
        | "Figcaption"
        | "Details"
        | "Summary"
        | "Video"
        | "Audio"
        | "Embed"
        | "PluginObject"
        | "Unknown" => {
            if named {
                Shape::Role("group")
            } else {
                Shape::Hoist
            }
        }
        "search" => Shape::Role("search"),
        // A `<summary>`: it opens and closes its details.
        "DisclosureTriangle" => Shape::Role("button"),
        // Date, time, month, week and datetime-local inputs: what
        // Playwright shows and `fill` takes (the value as YYYY-MM-DD …).
        "Date" | "DateTime" | "InputTime" => Shape::Role("textbox"),
        other => {
            // The rest are ARIA role names already ("button", "textbox", …).
            match ARIA.iter().find(|r| **r == other) {
                Some(r) => Shape::Role(r),
                None if named => Shape::Role("generic"),
                None => Shape::Hoist,
            }
        }
    }
}

/// The ARIA role named `token` (lower case), if there is one.
pub(crate) fn aria(token: &str) -> Option<&'static str> {
    ARIA.iter()
        .copied()
        .find(|r| *r == token)
        .or((token == "generic").then_some("generic"))
}

/// Chromium roles whose children the snapshot leaves out: a date or time
/// input's spin buttons and picker button are its own parts.
pub(crate) fn opaque(raw: &str) -> bool {
    matches!(raw, "Date" | "DateTime" | "InputTime")
}

/// Roles that take input or activation; their lines survive pruning first.
pub(crate) fn interactive(role: &str) -> bool {
    oxwright_engine::interactive_role(role)
}

/// Roles whose accessible value is shown after a colon.
pub(crate) fn shows_value(role: &str) -> bool {
    matches!(
        role,
        "textbox" | "searchbox" | "combobox" | "spinbutton" | "slider" | "progressbar" | "meter"
    )
}

const ARIA: &[&str] = &[
    "alert",
    "alertdialog",
    "application",
    "article",
    "banner",
    "blockquote",
    "button",
    "caption",
    "cell",
    "checkbox",
    "code",
    "columnheader",
    "combobox",
    "complementary",
    "contentinfo",
    "definition",
    "deletion",
    "dialog",
    "directory",
    "document",
    "feed",
    "figure",
    "form",
    "grid",
    "gridcell",
    "group",
    "heading",
    "img",
    "insertion",
    "link",
    "list",
    "listbox",
    "listitem",
    "log",
    "main",
    "marquee",
    "math",
    "menu",
    "menubar",
    "menuitem",
    "menuitemcheckbox",
    "menuitemradio",
    "meter",
    "navigation",
    "note",
    "option",
    "paragraph",
    "progressbar",
    "radio",
    "radiogroup",
    "region",
    "row",
    "rowgroup",
    "rowheader",
    "scrollbar",
    "search",
    "searchbox",
    "separator",
    "slider",
    "spinbutton",
    "status",
    "switch",
    "tab",
    "table",
    "tablist",
    "tabpanel",
    "term",
    "textbox",
    "timer",
    "toolbar",
    "tooltip",
    "tree",
    "treegrid",
    "treeitem",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_chromium_roles() {
        assert_eq!(shape("StaticText", true), Shape::Text);
        assert_eq!(shape("RootWebArea", true), Shape::Hoist);
        assert_eq!(shape("generic", false), Shape::Hoist);
        assert_eq!(shape("MenuListOption", true), Shape::Role("option"));
        assert_eq!(shape("Iframe", false), Shape::Role("iframe"));
        assert_eq!(shape("button", true), Shape::Role("button"));
        assert_eq!(shape("InlineTextBox", true), Shape::Drop);
        assert_eq!(shape("SomethingNew", false), Shape::Hoist);
    }
}
