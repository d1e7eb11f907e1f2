//! The accessibility snapshot every engine returns, in the compact form
//! Playwright's AI snapshots use:
//!
//! ```text
//! - heading "Sign in" [level=1] [ref=e2]
//! - textbox "Username" [ref=e3]: alice
//! - checkbox "Remember me" [checked] [ref=e5]
//! - link "Help" [ref=e7]:
//!   - /url: /app/help
//! ```
//!
//! Engines build the lines; the size cap and its pruning rule live here so
//! every engine shrinks a page the same way: text lines go first (from the
//! end of the page), interactive elements last, then a note says so.

use std::time::Duration;

use crate::ElementId;

/// Default cap on the snapshot text, in characters (about 2,000 tokens).
pub const DEFAULT_MAX_CHARS: usize = 8_000;

/// How to take a snapshot.
#[derive(Debug, Clone)]
pub struct SnapshotOptions {
    /// Cap on the text, in characters.
    pub max_chars: usize,
}

impl Default for SnapshotOptions {
    fn default() -> Self {
        Self {
            max_chars: DEFAULT_MAX_CHARS,
        }
    }
}

/// One element the snapshot shows with a ref.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotElement {
    /// `eN`: valid until the page's document changes.
    pub ref_id: String,
    /// ARIA role.
    pub role: String,
    /// Accessible name.
    pub name: String,
    /// The engine's handle of the element.
    pub id: ElementId,
}

/// One rendered line before the cap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotLine {
    /// Indentation level (two spaces each).
    pub depth: usize,
    /// `- role "name" [flags] [ref=eN]…`.
    pub text: String,
    /// Kept over text when the cap bites (interactive elements, short named ones).
    pub keep: bool,
}

/// A rendered snapshot.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// The capped text.
    pub text: String,
    /// Every element with a ref, pruned or not: locators see them all.
    pub elements: Vec<SnapshotElement>,
    /// The main document's URL.
    pub url: String,
    /// The page title.
    pub title: String,
    /// Lines pruned to fit the cap.
    pub pruned: usize,
    /// Time to read and render the tree.
    pub took: Duration,
    /// Every line, before the cap.
    pub lines: Vec<SnapshotLine>,
}

impl Snapshot {
    /// Builds a snapshot from its lines under `max_chars`.
    pub fn from_lines(
        lines: Vec<SnapshotLine>,
        elements: Vec<SnapshotElement>,
        url: String,
        title: String,
        max_chars: usize,
        took: Duration,
    ) -> Self {
        let (text, pruned) = render_capped(&lines, max_chars);
        Self {
            text,
            elements,
            url,
            title,
            pruned,
            took,
            lines,
        }
    }

    /// Renders the same tree again under another cap.
    pub fn within(&self, max_chars: usize) -> (String, usize) {
        render_capped(&self.lines, max_chars)
    }

    /// Returns the element a ref names.
    pub fn element(&self, ref_id: &str) -> Option<&SnapshotElement> {
        self.elements.iter().find(|e| e.ref_id == ref_id)
    }

    /// The region under the line holding `[ref=REF]`: that line and every
    /// line below it that is deeper, rendered under `max_chars` — what a
    /// page-wide cap cut can be read a region at a time. `None` when no
    /// line holds the ref.
    pub fn scoped(&self, ref_id: &str, max_chars: usize) -> Option<(String, usize)> {
        let marker = format!("[ref={ref_id}]");
        let start = self.lines.iter().position(|l| l.text.contains(&marker))?;
        let depth = self.lines[start].depth;
        let end = self.lines[start + 1..]
            .iter()
            .position(|l| l.depth <= depth)
            .map_or(self.lines.len(), |i| start + 1 + i);
        let region: Vec<SnapshotLine> = self.lines[start..end]
            .iter()
            .map(|l| SnapshotLine {
                depth: l.depth - depth,
                ..l.clone()
            })
            .collect();
        Some(render_capped(&region, max_chars))
    }

    /// The lines whose text contains `query` (case and spacing aside), each
    /// with the lines it sits under, in page order, under `max_chars`; and
    /// how many lines matched. Finds what the cap cut from the snapshot.
    pub fn find(&self, query: &str, max_chars: usize) -> (String, usize) {
        let want = crate::normalize(query).to_lowercase();
        if want.is_empty() {
            return (String::new(), 0);
        }
        let mut keep = vec![false; self.lines.len()];
        let mut hits = 0;
        for (i, l) in self.lines.iter().enumerate() {
            if !crate::normalize(&l.text).to_lowercase().contains(&want) {
                continue;
            }
            hits += 1;
            keep[i] = true;
            // Its ancestors: the nearest earlier line at each lower depth.
            let mut depth = l.depth;
            for j in (0..i).rev() {
                if depth == 0 {
                    break;
                }
                if self.lines[j].depth < depth {
                    keep[j] = true;
                    depth = self.lines[j].depth;
                }
            }
        }
        let picked: Vec<SnapshotLine> = self
            .lines
            .iter()
            .zip(&keep)
            .filter(|(_, k)| **k)
            .map(|(l, _)| l.clone())
            .collect();
        (render_capped(&picked, max_chars).0, hits)
    }
}

/// Roles a person or agent acts on (or that say where they are):
/// their lines are the last the cap removes.
pub fn interactive_role(role: &str) -> bool {
    matches!(
        role,
        "button"
            | "link"
            | "textbox"
            | "searchbox"
            | "combobox"
            | "checkbox"
            | "radio"
            | "option"
            | "switch"
            | "slider"
            | "spinbutton"
            | "tab"
            | "menuitem"
            | "menuitemcheckbox"
            | "menuitemradio"
            | "listbox"
            | "treeitem"
            | "iframe"
            | "dialog"
            | "alertdialog"
            | "heading"
    )
}

/// The role a rendered line shows (`- button "Go" [ref=e1]` → `button`).
fn line_role(text: &str) -> &str {
    let rest = text.trim_start_matches("- ");
    let end = rest.find([' ', ':', '"']).unwrap_or(rest.len());
    &rest[..end]
}

/// Joins lines under `max_chars`. What goes first when the cap bites, each
/// tier from the end of the page: text and unnamed lines, then named lines
/// that are not controls (paragraph-like elements, groups, regions), and
/// only then controls (buttons, links, fields, headings …); a note says how
/// many lines were pruned. Returns the text and the lines dropped.
pub fn render_capped(lines: &[SnapshotLine], max_chars: usize) -> (String, usize) {
    let line_size = |l: &SnapshotLine| l.depth * 2 + l.text.len() + 1;
    let tier = |l: &SnapshotLine| match (l.keep, interactive_role(line_role(&l.text))) {
        (_, true) => 2,
        (true, false) => 1,
        (false, false) => 0,
    };
    let mut pruned = 0;
    // Room for the note that says lines were pruned.
    let budget = max_chars.saturating_sub(40);
    let mut drop = vec![false; lines.len()];
    let mut total: usize = lines.iter().map(line_size).sum();
    if total > max_chars {
        'tiers: for level in 0..2 {
            for i in (0..lines.len()).rev() {
                if total <= budget {
                    break 'tiers;
                }
                if !drop[i] && tier(&lines[i]) == level {
                    drop[i] = true;
                    total -= line_size(&lines[i]);
                    pruned += 1;
                }
            }
        }
    }
    let kept: Vec<&SnapshotLine> = lines
        .iter()
        .zip(&drop)
        .filter(|(_, d)| !**d)
        .map(|(l, _)| l)
        .collect();
    let mut out = String::new();
    let over = total > max_chars;
    for (i, l) in kept.iter().enumerate() {
        let piece = format!("{}{}\n", "  ".repeat(l.depth), l.text);
        if out.len() + piece.len() > budget && (pruned > 0 || over) {
            pruned += kept.len() - i;
            break;
        }
        out.push_str(&piece);
    }
    if pruned > 0 {
        out.push_str(&format!("- note: {pruned} lines pruned to fit\n"));
    }
    (out, pruned)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(depth: usize, text: &str, keep: bool) -> SnapshotLine {
        SnapshotLine {
            depth,
            text: text.to_string(),
            keep,
        }
    }

    #[test]
    fn scope_and_find_reach_what_the_cap_cut() {
        let mut lines = vec![line(0, "- main [ref=e1]", true)];
        for i in 0..300 {
            lines.push(line(1, &format!("- text: filler paragraph number {i}"), false));
        }
        lines.push(line(1, "- form \"Newsletter\" [ref=e2]", true));
        lines.push(line(2, "- textbox \"Email\" [ref=e3]", true));
        lines.push(line(2, "- button \"Subscribe\" [ref=e4]", true));
        lines.push(line(0, "- contentinfo [ref=e5]", true));
        let snap = Snapshot::from_lines(lines, Vec::new(), "u".into(), "t".into(), 300, Duration::ZERO);
        assert!(!snap.text.contains("filler paragraph number 299"));
        let (region, pruned) = snap.scoped("e2", 10_000).unwrap();
        assert_eq!(pruned, 0);
        assert_eq!(
            region,
            "- form \"Newsletter\" [ref=e2]\n  - textbox \"Email\" [ref=e3]\n  - button \"Subscribe\" [ref=e4]\n"
        );
        assert!(snap.scoped("e99", 1000).is_none());
        let (found, hits) = snap.find("NUMBER  299", 10_000);
        assert_eq!(hits, 1);
        assert_eq!(found, "- main [ref=e1]\n  - text: filler paragraph number 299\n");
        let (found, hits) = snap.find("subscribe", 10_000);
        assert_eq!(hits, 1);
        assert!(
            found.contains("form \"Newsletter\"") && found.contains("[ref=e4]"),
            "{found}"
        );
        assert_eq!(snap.find("nothing like it", 1000).1, 0);
    }

    #[test]
    fn cap_prunes_text_before_elements() {
        let mut lines = vec![line(0, "- button \"Go\" [ref=e1]", true)];
        for i in 0..200 {
            lines.push(line(1, &format!("- text: filler paragraph number {i}"), false));
        }
        lines.push(line(0, "- link \"Last\" [ref=e2]", true));
        let (text, pruned) = render_capped(&lines, 400);
        assert!(text.len() <= 400, "{}", text.len());
        assert!(
            text.contains("button \"Go\"") && text.contains("link \"Last\""),
            "{text}"
        );
        assert!(pruned > 150);
        assert!(text.ends_with("lines pruned to fit\n"));
        let (small, _) = render_capped(&lines[..3], 10_000);
        assert!(!small.contains("pruned"));
    }

    #[test]
    fn named_prose_goes_before_controls_and_the_last_button_stays() {
        // A long page: headings' sections of named paragraphs-like groups
        // (kept lines that are no controls), then one button at the end.
        let mut lines = Vec::new();
        for i in 0..150 {
            lines.push(line(
                0,
                &format!("- heading \"Section {i}\" [level=2] [ref=h{i}]"),
                true,
            ));
            lines.push(line(
                1,
                &format!("- group \"A named block of prose number {i}, long enough\" [ref=g{i}]"),
                true,
            ));
            lines.push(line(
                1,
                &format!("- text: the paragraph under section {i} goes on and on"),
                false,
            ));
        }
        lines.push(line(0, "- button \"Load more\" [ref=e999]", true));
        let (text, pruned) = render_capped(&lines, 8_000);
        assert!(text.len() <= 8_000);
        assert!(text.contains("button \"Load more\""), "{text}");
        assert!(text.contains("heading \"Section 149\""), "{text}");
        assert!(
            !text.contains("group \"A named block of prose number 149"),
            "{text}"
        );
        // All the text, then named prose from the end; no control.
        assert!(pruned > 150, "{pruned}");
        assert!(text.contains("group \"A named block of prose number 0"), "{text}");
        assert_eq!(line_role("- button \"Go\" [ref=e1]"), "button");
        assert_eq!(line_role("- text: hello"), "text");
        assert_eq!(line_role("- listitem:"), "listitem");
    }
}
