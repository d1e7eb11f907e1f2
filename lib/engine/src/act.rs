//! What an action is aimed at and how it runs: elements, targets, the
//! actions, their options and what they did.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::Locator;
/// An engine's handle of one element: opaque above the seam (a DevTools
/// backend node id, a Playwright MCP ref …), valid while its document lives.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ElementId(pub String);

impl std::fmt::Display for ElementId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// One element a locator found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Element {
    /// The engine's handle.
    pub id: ElementId,
    /// Its ARIA role, when the engine knows it.
    pub role: Option<String>,
    /// Its accessible name, when the engine knows it.
    pub name: Option<String>,
}

/// What an action is aimed at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// An element a locator returned.
    Element(ElementId),
    /// A ref (`e5`) from the page's last snapshot; a ref of an earlier
    /// document is refused as stale, never resolved to another element.
    Ref(String),
    /// A locator that must match exactly one element (or the `nth`, 0-based).
    Locator {
        /// The locator.
        locator: Locator,
        /// Which match, when several are expected.
        nth: Option<usize>,
    },
}

impl Target {
    /// A locator target that must match exactly one element.
    pub fn locator(locator: Locator) -> Self {
        Target::Locator { locator, nth: None }
    }
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Target::Element(id) => write!(f, "element {id}"),
            Target::Ref(r) => write!(f, "ref {r}"),
            Target::Locator { locator, nth: None } => write!(f, "{locator}"),
            Target::Locator {
                locator,
                nth: Some(n),
            } => write!(f, "{locator}.nth({n})"),
        }
    }
}

/// An action on an element.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum Act {
    /// A left click at the element's centre.
    Click,
    /// A double click.
    DoubleClick,
    /// A click with another mouse button, or with modifier keys held
    /// (a context menu, a new-tab click, a range selection).
    ClickWith {
        /// The button (left when not given).
        #[serde(default)]
        button: MouseButton,
        /// Keys held during the click.
        #[serde(default)]
        modifiers: Vec<Modifier>,
    },
    /// Replaces the field's content with `value` (one `input`, then `change`).
    Fill {
        /// The text.
        value: String,
        /// The value is a secret: the engine masks the field in later snapshots.
        #[serde(default)]
        secret: bool,
    },
    /// Types `text` key by key into the focused element.
    Type {
        /// The text.
        text: String,
    },
    /// Presses a key (`Enter`, `Tab`, `ArrowDown`, `Control+a` …) on the element.
    Press {
        /// The key.
        key: String,
    },
    /// Selects options of a `<select>` by value or label, replacing the selection.
    Select {
        /// Values or labels.
        values: Vec<String>,
    },
    /// Checks a checkbox or radio.
    Check,
    /// Unchecks a checkbox.
    Uncheck,
    /// Moves the mouse over the element.
    Hover,
    /// Scrolls the element into view.
    ScrollIntoView,
    /// Focuses the element.
    Focus,
}

impl Act {
    /// The action's name.
    pub fn name(&self) -> &'static str {
        match self {
            Act::Click => "click",
            Act::DoubleClick => "double_click",
            Act::ClickWith { .. } => "click_with",
            Act::Fill { .. } => "fill",
            Act::Type { .. } => "type",
            Act::Press { .. } => "press",
            Act::Select { .. } => "select",
            Act::Check => "check",
            Act::Uncheck => "uncheck",
            Act::Hover => "hover",
            Act::ScrollIntoView => "scroll_into_view",
            Act::Focus => "focus",
        }
    }
}

/// A mouse button.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MouseButton {
    /// The primary button.
    #[default]
    Left,
    /// The secondary button (a context menu).
    Right,
    /// The middle button (a link in a new tab).
    Middle,
}

impl MouseButton {
    /// The name DevTools and Playwright use.
    pub fn as_str(self) -> &'static str {
        match self {
            MouseButton::Left => "left",
            MouseButton::Right => "right",
            MouseButton::Middle => "middle",
        }
    }
}

/// A modifier key held during a click (Playwright's names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Modifier {
    /// Alt (Option).
    Alt,
    /// Control.
    Control,
    /// Control, or Meta on macOS: the platform's shortcut key (Control here).
    ControlOrMeta,
    /// Meta (Command, Windows key).
    Meta,
    /// Shift.
    Shift,
}

impl Modifier {
    /// The name Playwright uses.
    pub fn as_str(self) -> &'static str {
        match self {
            Modifier::Alt => "Alt",
            Modifier::Control => "Control",
            Modifier::ControlOrMeta => "ControlOrMeta",
            Modifier::Meta => "Meta",
            Modifier::Shift => "Shift",
        }
    }
}

/// How an action runs.
#[derive(Debug, Clone)]
pub struct ActOptions {
    /// Deadline of the action (auto-wait for actionability and input).
    pub timeout: Duration,
    /// Wait for the page to settle afterwards (navigation, network quiet).
    pub settle: bool,
}

impl Default for ActOptions {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(10),
            settle: true,
        }
    }
}

/// What an action did.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Acted {
    /// Time in the action itself.
    pub action: Duration,
    /// Time waiting for the page to settle.
    pub settle: Duration,
    /// The action started a navigation.
    pub navigated: bool,
}

/// What an element shows now, for assertions and for checking that an
/// action had its effect.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ElementState {
    /// Its rendered text (`innerText`), whitespace-normalised.
    pub text: String,
    /// The value of a form control (a `<select>`: the selected options'
    /// labels joined by `, `); `None` for other elements. A password
    /// field's value is never read: `Some("")` when empty, else `None`
    /// with [`ElementState::secret`] set.
    pub value: Option<String>,
    /// Checked state of a checkbox, radio or `aria-checked` element.
    pub checked: Option<bool>,
    /// The element is a password field (its value is not read).
    pub secret: bool,
    /// Its ARIA role (explicit, else implied by the tag), when it has one.
    pub role: Option<String>,
    /// Whether a control that opens a popup (a combobox, a menu button)
    /// says it is open (`aria-expanded`); `None` when it says nothing.
    pub expanded: Option<bool>,
    /// Its accessible name, whitespace-normalised (label, `aria-label`,
    /// text, `alt`, `title`, `placeholder`); empty when it has none. A
    /// field's value is never part of it.
    pub name: String,
    /// The landmarks it sits in, innermost first, as `role` or
    /// `role "name"` (`form "Profile"`, `main`, `complementary
    /// "Newsletter"`): where on the page the element is, for telling two
    /// look-alike controls apart.
    pub landmarks: Vec<String>,
}
