//! Owns the final Markdown clean-up: trailing spaces, blank-line runs,
//! dangling hard breaks, leading and trailing blank lines.

/// Tidies converter output; code fences keep their blank lines.
pub(crate) fn tidy(markdown: &str) -> String {
    let lines: Vec<&str> = markdown.lines().map(str::trim_end).collect();
    let mut out = String::with_capacity(markdown.len());
    let mut fence: Option<(char, usize)> = None;
    let mut pending_blank = false;
    for (i, line) in lines.iter().enumerate() {
        if let Some((ch, len)) = fence {
            if closes_fence(line, ch, len) {
                fence = None;
            }
            out.push_str(line);
            out.push('\n');
            continue;
        }
        // A bare hard break (a lone `<br>` between blocks) is an empty line.
        if is_blank(line) {
            pending_blank = !out.is_empty();
            continue;
        }
        if pending_blank {
            out.push('\n');
            pending_blank = false;
        }
        fence = opens_fence(line);
        let next_blank = lines.get(i + 1).is_none_or(|l| is_blank(l));
        if fence.is_none() && next_blank && ends_with_hard_break(line) {
            // A hard break before a blank line would print a literal backslash.
            out.push_str(line[..line.len() - 1].trim_end());
        } else {
            out.push_str(line);
        }
        out.push('\n');
    }
    let trimmed_len = out.trim_end().len();
    out.truncate(trimmed_len);
    out
}

/// Returns the fence character and length when `line` opens a code fence.
fn opens_fence(line: &str) -> Option<(char, usize)> {
    let body = line.trim_start();
    let ch = body.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let len = body.chars().take_while(|c| *c == ch).count();
    // A backtick fence's info string may not contain backticks.
    let info_ok = ch == '~' || !body[len..].contains('`');
    (len >= 3 && info_ok).then_some((ch, len))
}

fn closes_fence(line: &str, ch: char, len: usize) -> bool {
    let body = line.trim();
    body.chars().count() >= len && body.chars().all(|c| c == ch)
}

fn is_blank(line: &str) -> bool {
    line.is_empty() || line.trim_start() == "\\"
}

fn ends_with_hard_break(line: &str) -> bool {
    let trailing = line.bytes().rev().take_while(|b| *b == b'\\').count();
    trailing % 2 == 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collapses_blank_runs_and_trailing_spaces() {
        assert_eq!(tidy("\n\n# A  \n\n\n\n\ntext \t\n\n"), "# A\n\ntext");
    }

    #[test]
    fn keeps_blank_lines_inside_fences() {
        let md = "```rust\nfn a() {}\n\n\n\nfn b() {}\n```\n\n\n\nafter";
        assert_eq!(tidy(md), "```rust\nfn a() {}\n\n\n\nfn b() {}\n```\n\nafter");
    }

    #[test]
    fn drops_dangling_hard_breaks() {
        assert_eq!(tidy("line\\\n\nnext\\\nmore\\"), "line\n\nnext\\\nmore");
        assert_eq!(tidy("a\\\n\\\n\\\n\nb"), "a\n\nb");
        assert_eq!(tidy("```\n\\\n```"), "```\n\\\n```");
        assert_eq!(tidy("path C:\\\\\n\nx"), "path C:\\\\\n\nx");
    }
}
