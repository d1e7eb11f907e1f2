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
        self.find_by(
            |text| crate::normalize(text).to_lowercase().contains(&want),
            max_chars,
        )
    }

    /// The lines whose text `matches` says yes to, each with the lines it
    /// sits under, as [`Snapshot::find`] gives them (a regular expression,
    /// say).
    pub fn find_by(&self, matches: impl Fn(&str) -> bool, max_chars: usize) -> (String, usize) {
        let mut keep = vec![false; self.lines.len()];
        let mut hits = 0;
        for (i, l) in self.lines.iter().enumerate() {
            if !matches(&l.text) {
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

    /// The lines less than `depth` levels down (`depth` 1: the top level
    /// only), under `max_chars`; and how many deeper lines were left out.
    pub fn to_depth(&self, depth: usize, max_chars: usize) -> (String, usize) {
        let picked: Vec<SnapshotLine> = self.lines.iter().filter(|l| l.depth < depth).cloned().collect();
        let deeper = self.lines.len() - picked.len();
        (render_capped(&picked, max_chars).0, deeper)
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

/// Roles that say where an element is (landmarks, forms, menus, tab
/// lists): when the cap bites, such a line stays while anything under it
/// stays, so a kept control still shows the region it sits in.
fn scaffold_role(role: &str) -> bool {
    matches!(
        role,
        "banner"
            | "navigation"
            | "main"
            | "contentinfo"
            | "complementary"
            | "region"
            | "form"
            | "search"
            | "article"
            | "dialog"
            | "alertdialog"
            | "menu"
            | "menubar"
            | "tablist"
            | "tabpanel"
            | "toolbar"
            | "radiogroup"
    )
}

/// Whether a line ends with the `:` that opens a list of children
/// (`- list [ref=e3]:`, `- link "Help":`, `- listitem:`), not a colon of
/// the page's own text or value.
fn opens_children(text: &str) -> bool {
    let Some(head) = text.strip_suffix(':') else {
        return false;
    };
    if text.starts_with("- text:") || text.starts_with("- /url:") {
        return false;
    }
    head.ends_with(']') || head.ends_with('"') || !head.trim_start_matches("- ").contains([' ', ':'])
}

/// Joins lines under `max_chars`. What goes first when the cap bites, each
/// tier from the end of the page: text and unnamed lines, then named lines
/// that are not controls (paragraph-like elements, groups, regions), and
/// only then controls (buttons, links, fields, headings …); a note says how
/// many lines were pruned. Returns the text and the lines dropped.
///
/// What is left still reads as a tree: a landmark, form or menu line stays
/// while anything under it stays; a kept line whose other ancestors went is
/// shown under its nearest kept ancestor; a line whose children all went
/// loses its trailing `:`.
pub fn render_capped(lines: &[SnapshotLine], max_chars: usize) -> (String, usize) {
    let line_size = |l: &SnapshotLine| l.depth * 2 + l.text.len() + 1;
    let tier = |l: &SnapshotLine| match (l.keep, interactive_role(line_role(&l.text))) {
        (_, true) => 2,
        (true, false) => 1,
        (false, false) => 0,
    };
    // Each line's parent: the nearest earlier line that is shallower.
    let mut parent: Vec<Option<usize>> = Vec::with_capacity(lines.len());
    let mut open: Vec<usize> = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        while open.last().is_some_and(|&j| lines[j].depth >= l.depth) {
            open.pop();
        }
        parent.push(open.last().copied());
        open.push(i);
    }
    let mut pruned = 0;
    // Room for the note that says lines were pruned.
    let budget = max_chars.saturating_sub(40);
    let mut drop = vec![false; lines.len()];
    let mut total: usize = lines.iter().map(line_size).sum();
    if total > max_chars {
        // Kept lines under each line (a scaffold line stays while it has
        // any): every line below it, to start with.
        let mut kept_below = vec![0usize; lines.len()];
        for i in (0..lines.len()).rev() {
            if let Some(p) = parent[i] {
                kept_below[p] += kept_below[i] + 1;
            }
        }
        'tiers: for level in 0..2 {
            for i in (0..lines.len()).rev() {
                if total <= budget {
                    break 'tiers;
                }
                let l = &lines[i];
                if drop[i] || tier(l) != level || (kept_below[i] > 0 && scaffold_role(line_role(&l.text))) {
                    continue;
                }
                drop[i] = true;
                total -= line_size(l);
                pruned += 1;
                let mut up = parent[i];
                while let Some(j) = up {
                    kept_below[j] -= 1;
                    up = parent[j];
                }
            }
        }
    }
    // What is shown, at its depth under the kept ancestors.
    let mut shown_depth = vec![0usize; lines.len()];
    let mut shown: Vec<usize> = Vec::new();
    for i in 0..lines.len() {
        if drop[i] {
            continue;
        }
        let mut up = parent[i];
        while let Some(j) = up {
            if !drop[j] {
                break;
            }
            up = parent[j];
        }
        shown_depth[i] = up.map_or(0, |j| shown_depth[j] + 1);
        shown.push(i);
    }
    let over = total > max_chars;
    let mut size = 0;
    for (k, &i) in shown.iter().enumerate() {
        let piece = shown_depth[i] * 2 + lines[i].text.len() + 1;
        if size + piece > budget && (pruned > 0 || over) {
            pruned += shown.len() - k;
            shown.truncate(k);
            break;
        }
        size += piece;
    }
    let mut out = String::with_capacity(size + 48);
    for (k, &i) in shown.iter().enumerate() {
        let text = lines[i].text.as_str();
        let has_child = shown.get(k + 1).is_some_and(|&n| shown_depth[n] > shown_depth[i]);
        let text = if !has_child && opens_children(text) {
            &text[..text.len() - 1]
        } else {
            text
        };
        for _ in 0..shown_depth[i] {
            out.push_str("  ");
        }
        out.push_str(text);
        out.push('\n');
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
    fn what_the_cap_leaves_still_reads_as_a_tree() {
        // A news page in small: a banner whose links sit in list items,
        // then an article of paragraphs with a link in one of them.
        let mut lines = vec![
            line(0, "- banner [ref=e1]:", true),
            line(1, "- list [ref=e2]:", true),
        ];
        for i in 0..20 {
            lines.push(line(2, &format!("- listitem [ref=li{i}]:"), true));
            lines.push(line(3, &format!("- link \"Section {i}\" [ref=l{i}]:"), true));
            lines.push(line(4, &format!("- /url: /section/{i}"), false));
        }
        lines.push(line(0, "- main [ref=e3]:", true));
        lines.push(line(1, "- article [ref=e4]:", true));
        lines.push(line(2, "- heading \"Student dies\" [level=1] [ref=e5]", true));
        for i in 0..40 {
            lines.push(line(
                2,
                &format!("- paragraph [ref=p{i}]: paragraph {i} of the story, with words enough to weigh"),
                false,
            ));
        }
        lines.push(line(2, "- paragraph [ref=e6]:", false));
        lines.push(line(3, "- text: read the", false));
        lines.push(line(3, "- link \"statement\" [ref=e7]:", true));
        lines.push(line(4, "- /url: /statement", false));
        let full: usize = lines.iter().map(|l| l.depth * 2 + l.text.len() + 1).sum();
        let (text, pruned) = render_capped(&lines, 1_400);
        assert!(full > 3_000 && text.len() <= 1_400, "{}", text.len());
        assert!(pruned > 0);
        let shown: Vec<&str> = text.lines().collect();
        // Landmarks stay above what they hold; a link whose list item went
        // sits under the nearest line that stayed, one level down.
        assert_eq!(shown[0], "- banner [ref=e1]:", "{text}");
        assert!(shown.contains(&"    - link \"Section 19\" [ref=l19]"), "{text}");
        assert!(shown.contains(&"- main [ref=e3]:"), "{text}");
        assert!(shown.contains(&"  - article [ref=e4]:"), "{text}");
        assert!(
            shown.contains(&"    - heading \"Student dies\" [level=1] [ref=e5]"),
            "{text}"
        );
        assert!(shown.contains(&"    - link \"statement\" [ref=e7]"), "{text}");
        // No line opens children it no longer has, and depth never jumps.
        for (k, l) in shown.iter().enumerate() {
            let depth = (l.len() - l.trim_start().len()) / 2;
            let next = shown.get(k + 1).map(|n| (n.len() - n.trim_start().len()) / 2);
            if l.ends_with("]:") {
                assert!(next.is_some_and(|d| d == depth + 1), "{l} opens nothing:\n{text}");
            }
            if let Some(d) = next {
                assert!(d <= depth + 1, "a jump after {l}:\n{text}");
            }
        }
        // Uncapped, nothing changes.
        let (whole, none) = render_capped(&lines, 100_000);
        assert_eq!(none, 0);
        let expected: String = lines
            .iter()
            .map(|l| format!("{}{}\n", "  ".repeat(l.depth), l.text))
            .collect();
        assert_eq!(whole, expected);
        assert!(opens_children("- listitem:") && opens_children("- link \"Help\":"));
        assert!(!opens_children("- text: Contact:") && !opens_children("- paragraph [ref=e1]: Note:"));
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
