//! The grammar of structured steps, one per line (the deterministic path,
//! no LLM), as workflow files and a fetch's actions write them:
//!
//! ```text
//! goto: /app/login
//! fill: textbox "Username" = {{LOGIN_ID}}
//! check: checkbox "Remember me"
//! press: textbox "Password" = Enter
//! click: button "Accept cookies" if present
//! select: combobox "Country" = Japan
//! click: button "Add to cart" nth 1
//! click: button "Delete" nth -1
//! check: each checkbox "Done"
//! click: tab "Shipping" if present then stop
//! fill: textbox "Coupon" = SAVE10 else click: button "Cancel"
//! once: click: button "Place order"
//! dblclick: text "Rename"
//! hover: menuitem "Account"
//! scroll: bottom
//! dialog: accept
//! wait: button "Download report"
//! wait: 500ms
//! expect: text "Ships to Japan"
//! expect: hidden dialog "Added to cart"
//! expect: value textbox "Username" = alice
//! expect: count listitem = 3
//! expect: url includes /app/search
//! expect: output orders count >= 1
//! extract: text heading "Order" as order_title
//! extract: table "Orders" as orders
//! extract: product.json as product
//! ```
//!
//! A target is `[each] KIND ["NAME"] [exact] [nth N]`: KIND is an ARIA role
//! (`button "Sign in"`) or `text`, `testid`, `label`, `placeholder`,
//! `css`, `xpath` with a quoted argument; `nth N` picks the N-th match
//! (0-based, as Playwright's `nth`; `nth -1` is the last) instead of
//! requiring exactly one, and `each` acts on every match in turn. A step
//! ending `if present` is skipped when nothing matches; `if present then
//! stop` ends the workflow (completed) once it ran. `STEP else STEP`
//! runs the second step when the first fails, and the step counts as done
//! when the second succeeds. `once:` before a step marks it as one that
//! must never act twice (see [`StructuredStep::may_act_twice`]). A
//! file is structured when any line starts with `word:` where the word is
//! a verb or a near miss of one (`clik:`), so a typo is reported as an
//! unknown verb instead of sending the file to the LLM as plain language;
//! then every line must parse.

use std::time::Duration;

use oxwright_engine::Locator;

use crate::{Action, ActionValue, ParseError};

/// Longest explicit `wait: N` accepted.
const MAX_SLEEP: Duration = Duration::from_secs(60);

const VERBS: &[&str] = &[
    "goto", "click", "dblclick", "fill", "select", "press", "check", "uncheck", "hover", "scroll", "wait",
    "expect", "dialog", "extract",
];

/// What one structured step does.
#[derive(Debug, Clone, PartialEq)]
pub enum StepAction {
    /// Act on one element: exactly one match, or the `nth`.
    Act {
        /// The target.
        locator: Locator,
        /// Which match (0-based; negative counts from the last) when
        /// several are expected.
        nth: Option<i64>,
        /// The action.
        action: Action,
        /// The value for fill, select and press.
        value: Option<ActionValue>,
        /// Skip the step when nothing matches (`if present`).
        if_present: bool,
        /// Act on every match in turn (`each`).
        each: bool,
        /// End the workflow once this step ran (`if present then stop`).
        then_stop: bool,
    },
    /// Run `first`; when it fails, run `otherwise` instead (`STEP else STEP`).
    Else {
        /// The step tried first.
        first: Box<StepAction>,
        /// The step run when it fails.
        otherwise: Box<StepAction>,
    },
    /// Press a key on the focused element (the page's body when none is).
    PressKey(String),
    /// Navigate (absolute URL, or relative to the start URL).
    Goto(String),
    /// Pause.
    Sleep(Duration),
    /// Check a condition, waiting for it up to the action deadline.
    Expect(Assertion),
    /// Answer the page's next dialogs (alert, confirm, prompt) this way.
    Dialog {
        /// Accept (OK) or dismiss (Cancel).
        accept: bool,
        /// The text a prompt gets when accepted.
        text: Option<String>,
    },
    /// Scroll the page.
    ScrollPage(ScrollTo),
    /// Read something off the page into the run's outputs.
    Extract(Extraction),
    /// Read the page through the workflow's LLM into a JSON Schema's shape.
    ExtractSchema(SchemaExtraction),
}

/// Where `scroll:` takes the page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScrollTo {
    /// The top.
    Top,
    /// The bottom.
    Bottom,
    /// One screen up.
    Up,
    /// One screen down.
    Down,
    /// Down a screen at a time to the bottom, waiting at each screen for
    /// what it set off (at most [`ScrollTo::MAX_SCREENS`] screens).
    Through,
}

impl ScrollTo {
    /// The most screens `scroll: through` goes down (an endless feed
    /// never ends).
    pub const MAX_SCREENS: usize = 30;

    /// What `scroll: through` evaluates at each screen: scrolls one screen
    /// down and says whether the page's bottom is now in view.
    pub const THROUGH_STEP: &str = "(() => { window.scrollBy(0, window.innerHeight * 0.9); \
        return window.scrollY + window.innerHeight >= document.documentElement.scrollHeight - 2; })()";

    /// The script that scrolls (one screen of it, for `through`).
    pub fn script(self) -> &'static str {
        match self {
            ScrollTo::Top => "window.scrollTo(0, 0)",
            ScrollTo::Bottom => "window.scrollTo(0, document.documentElement.scrollHeight)",
            ScrollTo::Up => "window.scrollBy(0, -window.innerHeight * 0.9)",
            ScrollTo::Down | ScrollTo::Through => "window.scrollBy(0, window.innerHeight * 0.9)",
        }
    }
}

/// What an `expect:` step checks.
#[derive(Debug, Clone, PartialEq)]
pub enum Assertion {
    /// One visible element matches (or the `nth` exists).
    Visible {
        /// The target.
        locator: Locator,
        /// Which match.
        nth: Option<i64>,
    },
    /// No visible element matches.
    Hidden(Locator),
    /// The element's text contains this (case- and whitespace-insensitive).
    Text {
        /// The target.
        locator: Locator,
        /// Which match.
        nth: Option<i64>,
        /// The text expected.
        expected: String,
    },
    /// The control's value is this (a placeholder is resolved, never shown).
    Value {
        /// The target.
        locator: Locator,
        /// Which match.
        nth: Option<i64>,
        /// The value expected.
        expected: ActionValue,
    },
    /// The box is checked (`true`) or unchecked.
    Checked {
        /// The target.
        locator: Locator,
        /// Which match.
        nth: Option<i64>,
        /// Checked or not.
        checked: bool,
    },
    /// Exactly this many visible elements match.
    Count {
        /// The target.
        locator: Locator,
        /// How many.
        expected: usize,
    },
    /// The page's URL contains this.
    UrlIncludes(String),
    /// What an `extract:` step read (not the page) is so.
    Output(OutputAssertion),
}

impl Assertion {
    /// The element the assertion is about, if any.
    pub fn locator(&self) -> Option<&Locator> {
        match self {
            Assertion::Visible { locator, .. }
            | Assertion::Hidden(locator)
            | Assertion::Text { locator, .. }
            | Assertion::Value { locator, .. }
            | Assertion::Checked { locator, .. }
            | Assertion::Count { locator, .. } => Some(locator),
            Assertion::UrlIncludes(_) | Assertion::Output(_) => None,
        }
    }

    /// The assertion's name as recorded (`visible`, `url includes` …).
    pub fn name(&self) -> &'static str {
        match self {
            Assertion::Visible { .. } => "visible",
            Assertion::Hidden(_) => "hidden",
            Assertion::Text { .. } => "text",
            Assertion::Value { .. } => "value",
            Assertion::Checked { checked: true, .. } => "checked",
            Assertion::Checked { checked: false, .. } => "unchecked",
            Assertion::Count { .. } => "count",
            Assertion::UrlIncludes(_) => "url includes",
            Assertion::Output(_) => "output",
        }
    }
}

/// One structured step with its source line.
#[derive(Debug, Clone, PartialEq)]
pub struct StructuredStep {
    /// 1-based line in the file.
    pub line: usize,
    /// The line as written (placeholders only).
    pub text: String,
    /// What it does.
    pub action: StepAction,
    /// Marked `once:`: it must never act twice, so a run resumed while it
    /// may have been in flight ends `resume_uncertain` unless its effect
    /// is visible.
    pub once: bool,
}

impl StructuredStep {
    /// Says whether running the step again could do something twice that
    /// the page cannot tell: a click, a key press (a submit), a step with
    /// an `else`, or any step marked `once:`. Navigation, fill, select,
    /// check, hover, scroll, waits and expectations can run again.
    pub fn may_act_twice(&self) -> bool {
        self.once
            || match &self.action {
                StepAction::Act { action, .. } => {
                    matches!(action, Action::Click | Action::DoubleClick | Action::Press)
                }
                StepAction::Else { .. } | StepAction::PressKey(_) => true,
                StepAction::Goto(_)
                | StepAction::Sleep(_)
                | StepAction::Expect(_)
                | StepAction::Dialog { .. }
                | StepAction::ScrollPage(_)
                | StepAction::Extract(_)
                | StepAction::ExtractSchema(_) => false,
            }
    }
}

impl StructuredStep {
    /// Parses one line of a file of steps (an optional `once:`, then the
    /// step) found at 1-based `line`.
    pub fn parse(line: usize, text: &str) -> Result<Self, ParseError> {
        let (once, rest) = once_prefix(text);
        let action = parse_step(rest).map_err(|message| ParseError { line, message })?;
        Ok(StructuredStep {
            line,
            text: text.to_string(),
            action,
            once,
        })
    }
}

/// Parses structured steps given one per item (a fetch's `actions`):
/// each must be a step line (`click: button "Load more"`); a `#` comment
/// or an empty item is refused. Errors name the 1-based item.
pub fn parse_steps(items: &[String]) -> Result<Vec<StructuredStep>, ParseError> {
    items
        .iter()
        .enumerate()
        .map(|(i, raw)| {
            let text = raw.trim();
            let bad = |message: String| ParseError { line: i + 1, message };
            if text.is_empty() || text.contains('\n') {
                return Err(bad("a step is one non-empty line".into()));
            }
            let action = parse_step(text).map_err(bad)?;
            if !oxwright_secrets::placeholders(text).is_empty() {
                return Err(bad(
                    "{{NAME}} placeholders need a secret store, which only workflow runs have".into(),
                ));
            }
            Ok(StructuredStep {
                line: i + 1,
                text: text.to_string(),
                action,
                once: false,
            })
        })
        .collect()
}

/// Splits a leading `once:` off `line`.
fn once_prefix(line: &str) -> (bool, &str) {
    match line.split_once(':') {
        Some((word, rest)) if word.trim().eq_ignore_ascii_case("once") => (true, rest.trim()),
        _ => (false, line),
    }
}

/// Tells whether `line` starts `word:` with a verb or a near miss of one.
pub fn looks_structured(line: &str) -> bool {
    let line = once_prefix(line).1;
    line.split_once(':').is_some_and(|(word, _)| {
        let word = word.trim().to_ascii_lowercase();
        !word.is_empty()
            && word.chars().all(|c| c.is_ascii_alphabetic())
            && (VERBS.contains(&word.as_str()) || nearest_verb(&word).is_some())
    })
}

/// Returns the verb `word` is a near miss of: one letter added, dropped,
/// changed or two neighbours swapped (`clik`, `clcik`, `slect`). Two edits
/// would catch words people write in plain language (`expected:`).
fn nearest_verb(word: &str) -> Option<&'static str> {
    VERBS.iter().copied().find(|v| edit_distance(word, v) == 1)
}

/// Returns the optimal-string-alignment distance between `a` and `b` (by
/// characters): insertions, deletions, substitutions and adjacent swaps.
pub(crate) fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[i - 1][j] + 1).min(d[i][j - 1] + 1).min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = best;
        }
    }
    d[a.len()][b.len()]
}

/// Parses one structured line.
pub(crate) fn parse_step(line: &str) -> Result<StepAction, String> {
    if let Some(at) = else_at(line).filter(|&at| looks_structured(&line[at + " else ".len()..])) {
        let first = parse_step(line[..at].trim())?;
        let second = line[at + " else ".len()..].trim();
        if else_at(second).is_some() {
            return Err("one `else` per step".into());
        }
        let otherwise = parse_step(second).map_err(|e| format!("after `else`: {e}"))?;
        return Ok(StepAction::Else {
            first: Box::new(first),
            otherwise: Box::new(otherwise),
        });
    }
    let (verb, rest) = line
        .split_once(':')
        .ok_or_else(|| format!("expected `verb: …`, one of {}", VERBS.join(", ")))?;
    let verb = verb.trim().to_ascii_lowercase();
    let rest = rest.trim();
    match verb.as_str() {
        "goto" => {
            if rest.is_empty() {
                return Err("goto needs a URL".into());
            }
            Ok(StepAction::Goto(rest.to_string()))
        }
        "click" => target_step(rest, Action::Click),
        "dblclick" => target_step(rest, Action::DoubleClick),
        "hover" => target_step(rest, Action::Hover),
        "check" => target_step(rest, Action::Check),
        "uncheck" => target_step(rest, Action::Uncheck),
        "scroll" => match rest.to_ascii_lowercase().as_str() {
            "top" => Ok(StepAction::ScrollPage(ScrollTo::Top)),
            "bottom" => Ok(StepAction::ScrollPage(ScrollTo::Bottom)),
            "up" => Ok(StepAction::ScrollPage(ScrollTo::Up)),
            "down" => Ok(StepAction::ScrollPage(ScrollTo::Down)),
            "through" => Ok(StepAction::ScrollPage(ScrollTo::Through)),
            _ => target_step(rest, Action::Scroll)
                .map_err(|e| format!("{e} (scroll takes a target or top, bottom, up, down, through)")),
        },
        "fill" => value_step(&verb, rest, Action::Fill),
        "select" => value_step(&verb, rest, Action::Select),
        "press" => value_step(&verb, rest, Action::Press),
        "wait" => {
            if let Some(d) = parse_duration(rest) {
                if d > MAX_SLEEP {
                    return Err(format!("wait longer than {} s", MAX_SLEEP.as_secs()));
                }
                return Ok(StepAction::Sleep(d));
            }
            target_step(rest, Action::Wait)
        }
        "expect" => parse_assertion(rest).map(StepAction::Expect),
        "dialog" => dialog_step(rest),
        "extract" => extract::extract_step(rest),
        other => Err(match nearest_verb(other) {
            Some(verb) => format!(
                "unknown verb {other:?}: did you mean `{verb}:`? (verbs: {})",
                VERBS.join(", ")
            ),
            None => format!("unknown verb {other:?}; expected one of {}", VERBS.join(", ")),
        }),
    }
}

/// `[each] TARGET [nth N]` and what may follow it: `if present`, `then stop`.
fn target_step(rest: &str, action: Action) -> Result<StepAction, String> {
    let (each, target) = match word_prefix(rest, "each") {
        Some(after) => (true, after),
        None => (false, rest),
    };
    let (locator, nth, tail) = parse_target(target)?;
    let (if_present, then_stop) = match tail.trim() {
        "" => (false, false),
        "if present" => (true, false),
        "if present then stop" => (true, true),
        other => return Err(format!("unexpected {other:?} after the target")),
    };
    if each && nth.is_some() {
        return Err("`each` acts on every match: it takes no nth".into());
    }
    Ok(StepAction::Act {
        locator,
        nth,
        action,
        value: None,
        if_present,
        each,
        then_stop,
    })
}

/// `fill:`, `select:`, `press:` — `[each] TARGET = VALUE` (and `press: KEY`
/// for the focused element).
fn value_step(verb: &str, rest: &str, action: Action) -> Result<StepAction, String> {
    if action == Action::Press && !rest.contains('=') {
        // `press: Enter`: the focused element takes the key.
        let key = unquote(rest);
        if key.is_empty() {
            return Err("press needs a key (Enter, Tab, Control+a …) or `TARGET = KEY`".into());
        }
        return Ok(StepAction::PressKey(key));
    }
    let (each, target) = match word_prefix(rest, "each") {
        Some(after) => (true, after),
        None => (false, rest),
    };
    let (locator, nth, tail) = parse_target(target)?;
    if each && nth.is_some() {
        return Err("`each` acts on every match: it takes no nth".into());
    }
    let value = tail
        .trim()
        .strip_prefix('=')
        .ok_or_else(|| format!("{verb} needs `TARGET = VALUE`"))?;
    let value = unquote(value);
    if action == Action::Press && value.is_empty() {
        return Err("press needs a key after `=`".into());
    }
    Ok(StepAction::Act {
        locator,
        nth,
        action,
        value: Some(ActionValue::from_text(&value)),
        if_present: false,
        each,
        then_stop: false,
    })
}

/// `dialog: accept [TEXT]` or `dialog: dismiss`.
fn dialog_step(rest: &str) -> Result<StepAction, String> {
    let (word, text) = match rest.split_once(char::is_whitespace) {
        Some((w, t)) => (w, Some(unquote(t)).filter(|t| !t.is_empty())),
        None => (rest, None),
    };
    match word.to_ascii_lowercase().as_str() {
        "accept" => Ok(StepAction::Dialog { accept: true, text }),
        "dismiss" if text.is_none() => Ok(StepAction::Dialog {
            accept: false,
            text: None,
        }),
        _ => Err("dialog takes `accept [TEXT]` or `dismiss`".into()),
    }
}

/// Parses what follows `expect:`.
fn parse_assertion(rest: &str) -> Result<Assertion, String> {
    let (word, after) = match rest.split_once(char::is_whitespace) {
        Some((w, a)) => (w.to_ascii_lowercase(), a.trim()),
        None => (rest.to_ascii_lowercase(), ""),
    };
    let no_tail = |tail: &str| -> Result<(), String> {
        if tail.trim().is_empty() {
            Ok(())
        } else {
            Err(format!("unexpected {:?} after the target", tail.trim()))
        }
    };
    let with_value = |what: &str| -> Result<(Locator, Option<i64>, String), String> {
        let (locator, nth, tail) = parse_target(after)?;
        let value = tail
            .trim()
            .strip_prefix('=')
            .ok_or_else(|| format!("expect: {what} needs `TARGET = …`"))?;
        Ok((locator, nth, unquote(value)))
    };
    match word.as_str() {
        "output" => output::output_assertion(after).map(Assertion::Output),
        "url" => {
            let text = after
                .strip_prefix("includes")
                .ok_or("expect: url needs `includes TEXT`")?;
            let text = unquote(text);
            if text.is_empty() {
                return Err("expect: url includes needs a text".into());
            }
            Ok(Assertion::UrlIncludes(text))
        }
        "visible" => {
            let (locator, nth, tail) = parse_target(after)?;
            no_tail(tail)?;
            Ok(Assertion::Visible { locator, nth })
        }
        "hidden" => {
            let (locator, nth, tail) = parse_target(after)?;
            no_tail(tail)?;
            if nth.is_some() {
                return Err("expect: hidden takes no nth".into());
            }
            Ok(Assertion::Hidden(locator))
        }
        "checked" | "unchecked" => {
            let (locator, nth, tail) = parse_target(after)?;
            no_tail(tail)?;
            Ok(Assertion::Checked {
                locator,
                nth,
                checked: word == "checked",
            })
        }
        "value" => {
            let (locator, nth, value) = with_value("value")?;
            Ok(Assertion::Value {
                locator,
                nth,
                expected: ActionValue::from_text(&value),
            })
        }
        "count" => {
            let (locator, nth, value) = with_value("count")?;
            if nth.is_some() {
                return Err("expect: count takes no nth".into());
            }
            let expected = value
                .parse()
                .map_err(|_| format!("expect: count needs a number after `=`, got {value:?}"))?;
            Ok(Assertion::Count { locator, expected })
        }
        // `expect: text "Ships"` is a text locator; `expect: text heading "Cart" = "…"`
        // is the text of a target.
        "text" if !after.starts_with('"') => {
            let (locator, nth, expected) = with_value("text")?;
            if expected.is_empty() {
                return Err("expect: text needs the text expected after `=`".into());
            }
            Ok(Assertion::Text {
                locator,
                nth,
                expected,
            })
        }
        _ => {
            let (locator, nth, tail) = parse_target(rest)?;
            no_tail(tail)?;
            Ok(Assertion::Visible { locator, nth })
        }
    }
}

fn unquote(v: &str) -> String {
    let v = v.trim();
    if v.len() >= 2 && v.starts_with('"') && v.ends_with('"') {
        serde_json::from_str::<String>(v).unwrap_or_else(|_| v[1..v.len() - 1].to_string())
    } else {
        v.to_string()
    }
}

fn parse_duration(s: &str) -> Option<Duration> {
    let s = s.trim();
    if let Some(ms) = s.strip_suffix("ms") {
        return ms.trim().parse().ok().map(Duration::from_millis);
    }
    if let Some(secs) = s.strip_suffix('s') {
        return secs
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|v| *v >= 0.0 && v.is_finite())
            .map(Duration::from_secs_f64);
    }
    None
}

/// Parses a target at the start of `s`: `KIND ["NAME"] [exact] [nth N]`.
/// Returns the locator, the `nth` and what follows the target.
fn parse_target(s: &str) -> Result<(Locator, Option<i64>, &str), String> {
    let s = s.trim();
    let kind_end = s
        .find(|c: char| c.is_whitespace() || c == '"' || c == '=')
        .unwrap_or(s.len());
    let kind = &s[..kind_end];
    if kind.is_empty() || !kind.chars().all(|c| c.is_ascii_alphabetic()) {
        return Err(format!("expected a target like button \"Sign in\", got {s:?}"));
    }
    let mut rest = s[kind_end..].trim_start();
    let name = if rest.starts_with('"') {
        let mut escaped = false;
        let mut end = None;
        for (i, c) in rest.char_indices().skip(1) {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => {
                    end = Some(i);
                    break;
                }
                _ => {}
            }
        }
        let end = end.ok_or("unterminated quote in target")?;
        let name =
            serde_json::from_str::<String>(&rest[..=end]).map_err(|e| format!("bad quoted name: {e}"))?;
        rest = rest[end + 1..].trim_start();
        Some(name)
    } else {
        None
    };
    let mut exact = false;
    let mut nth = None;
    loop {
        if let Some(after) = word_prefix(rest, "exact") {
            exact = true;
            rest = after;
        } else if let Some(after) = word_prefix(rest, "nth") {
            let end = after.find(char::is_whitespace).unwrap_or(after.len());
            let n = after[..end].parse::<i64>().map_err(|_| {
                format!(
                    "nth needs a number (0 is the first match, -1 the last), got {:?}",
                    &after[..end]
                )
            })?;
            nth = Some(n);
            rest = after[end..].trim_start();
        } else {
            break;
        }
    }
    let needs = |what: &str| format!("{kind} needs a quoted {what}");
    let locator = match kind.to_ascii_lowercase().as_str() {
        "text" => Locator::Text {
            text: name.ok_or_else(|| needs("text"))?,
            exact,
        },
        "testid" => Locator::TestId {
            test_id: name.ok_or_else(|| needs("id"))?,
        },
        "label" => Locator::Label {
            text: name.ok_or_else(|| needs("label text"))?,
            exact,
        },
        "placeholder" => Locator::Placeholder {
            text: name.ok_or_else(|| needs("placeholder"))?,
            exact,
        },
        "css" => Locator::css(&name.ok_or_else(|| needs("selector"))?),
        "xpath" => Locator::XPath {
            expression: name.ok_or_else(|| needs("expression"))?,
        },
        role => Locator::Role {
            role: role.to_string(),
            name,
            exact,
        },
    };
    Ok((locator, nth, rest))
}

/// Where ` else ` splits `line` into two steps, outside quotes.
fn else_at(line: &str) -> Option<usize> {
    let mut quoted = false;
    let mut escaped = false;
    for (i, c) in line.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if quoted => escaped = true,
            '"' => quoted = !quoted,
            ' ' if !quoted && line[i..].starts_with(" else ") => return Some(i),
            _ => {}
        }
    }
    None
}

/// Picks the `nth` of `len` matches: 0-based, negative from the last.
pub fn pick_nth(nth: i64, len: usize) -> Option<usize> {
    let len = i64::try_from(len).ok()?;
    let at = if nth < 0 { len + nth } else { nth };
    usize::try_from(at).ok().filter(|&i| (i as i64) < len)
}

/// Returns what follows `word` at the start of `s` when it is a whole word.
fn word_prefix<'a>(s: &'a str, word: &str) -> Option<&'a str> {
    let after = s.strip_prefix(word)?;
    (after.is_empty() || after.starts_with(char::is_whitespace)).then(|| after.trim_start())
}

mod extract;
mod output;

pub use extract::{ExtractKind, Extraction, SchemaExtraction, read_schemas};
pub use output::{Compare, OutputAssertion, OutputCheck, OutputPath, PathStep};

#[cfg(test)]
mod tests;
