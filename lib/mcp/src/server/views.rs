//! What the snapshot tool answers besides the page's URL and title: a
//! region, a search, the top levels, the whole snapshot or its diff.

use super::util::*;
use crate::args::SnapshotArgs;
use crate::diff::diff_lines;

/// A region (`scope`), a search (`find`) or the top levels (`depth`) of
/// `snap`, when one is asked for.
pub(super) fn partial_view(snap: &oxwright_engine::Snapshot, a: &SnapshotArgs, cap: usize) -> Option<String> {
    if let Some(r) = &a.scope {
        let body = match snap.scoped(r, cap) {
            Some((body, _)) => body,
            None => format!("No line holds ref {r}; take a full snapshot for fresh refs.\n"),
        };
        return Some(format!("### Snapshot of {r}\n```yaml\n{body}```\n"));
    }
    if let Some(q) = &a.find {
        let (body, hits) = snap.find(q, cap);
        let body = if hits == 0 {
            format!("Nothing on the page matches {q:?}.\n")
        } else {
            body
        };
        return Some(format!("### {hits} line(s) matching {q:?}\n```yaml\n{body}```\n"));
    }
    let depth = a.depth?;
    let (body, deeper) = snap.to_depth(depth as usize, cap);
    let mut text = format!("### Page snapshot (to depth {depth})\n```yaml\n{body}```\n");
    if deeper > 0 {
        text.push_str(&format!(
            "{deeper} deeper lines left out: `target` shows one region whole, `find` searches every line.\n"
        ));
    }
    Some(text)
}

/// The whole snapshot, or with `diff` what changed since `last`, and what
/// the cap left out.
pub(super) fn full_view(
    snap: &oxwright_engine::Snapshot,
    lines: &[String],
    diff: bool,
    last: Option<&[String]>,
    cap: usize,
) -> String {
    let mut text = String::new();
    match (diff, last) {
        (true, Some(prev)) => {
            let changes = diff_lines(prev, lines);
            if changes.is_empty() {
                text.push_str("### Snapshot diff\nNo change since the last snapshot.\n");
            } else {
                let body: String = changes.iter().map(|l| format!("{l}\n")).collect();
                let (body, _) = cap_text(&body, cap);
                text.push_str(&format!("### Snapshot diff\n```diff\n{body}```\n"));
            }
        }
        (true, None) => {
            text.push_str(&format!(
                "### Page snapshot (no earlier snapshot of this page to diff against)\n```yaml\n{}```\n",
                snap.text
            ));
        }
        _ => text.push_str(&format!("### Page snapshot\n```yaml\n{}```\n", snap.text)),
    }
    if snap.pruned > 0 && !(diff && last.is_some()) {
        text.push_str(&format!(
            "{} lines did not fit in {cap} characters: `scope` (a ref) shows one region whole, \
             `find` searches every line, `maxChars` raises the cap.\n",
            snap.pruned
        ));
    }
    text
}
