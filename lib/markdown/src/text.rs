//! Plain text out of our Markdown: the `text` format of a fetch.

/// Reduces Markdown (as this crate writes it) to plain text: links keep
/// their text, images their alt text, headings, emphasis, code fences,
/// quote and list markers and table rules go; blocks stay separated by a
/// blank line.
pub fn markdown_to_text(markdown: &str) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut in_fence = false;
    for line in markdown.lines() {
        let t = line.trim_start();
        if t.starts_with("```") || t.starts_with("~~~") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            out.push(line.to_string());
            continue;
        }
        if t.starts_with('|') && t.trim_end().ends_with('|') {
            let cells = cells(t.trim());
            if cells
                .iter()
                .all(|c| !c.is_empty() && c.chars().all(|ch| matches!(ch, '-' | ':')))
            {
                continue;
            }
            out.push(inline(&cells.join("\t")));
            continue;
        }
        let mut t = t.trim_start_matches('#').trim_start();
        while let Some(rest) = t.strip_prefix("> ").or_else(|| t.strip_prefix('>')) {
            t = rest.trim_start();
        }
        for marker in ["- ", "* ", "+ "] {
            if let Some(rest) = t.strip_prefix(marker) {
                t = rest;
            }
        }
        if t == "---" || t == "***" {
            continue;
        }
        out.push(inline(t));
    }
    let mut text = out.join("\n");
    while text.contains("\n\n\n") {
        text = text.replace("\n\n\n", "\n\n");
    }
    text.trim().to_string()
}

/// Inline markup: `![alt](src)` → alt, `[text](url)` → text, emphasis,
/// code spans and backslash escapes → their text.
fn inline(line: &str) -> String {
    let chars: Vec<char> = line.chars().collect();
    let mut out = String::with_capacity(line.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let image = c == '!' && chars.get(i + 1) == Some(&'[');
        if c == '[' || image {
            let open = if image { i + 1 } else { i };
            if let Some(close) = find(&chars, open + 1, ']')
                && chars.get(close + 1) == Some(&'(')
                && let Some(end) = find(&chars, close + 2, ')')
            {
                out.push_str(&inline(&chars[open + 1..close].iter().collect::<String>()));
                i = end + 1;
                continue;
            }
        }
        match c {
            '\\' if i + 1 < chars.len() => {
                out.push(chars[i + 1]);
                i += 2;
                continue;
            }
            '*' | '_' | '`' => {}
            _ => out.push(c),
        }
        i += 1;
    }
    out
}

/// The cells of a table row, split at pipes that are not escaped.
fn cells(row: &str) -> Vec<String> {
    let inner = row.strip_prefix('|').unwrap_or(row);
    let inner = inner.strip_suffix('|').unwrap_or(inner);
    let mut out = vec![String::new()];
    let mut escaped = false;
    for c in inner.chars() {
        if c == '|' && !escaped {
            out.push(String::new());
        } else {
            out.last_mut().expect("one cell").push(c);
        }
        escaped = c == '\\' && !escaped;
    }
    out.into_iter().map(|c| c.trim().to_string()).collect()
}

fn find(chars: &[char], from: usize, what: char) -> Option<usize> {
    (from..chars.len()).find(|&j| chars[j] == what)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_goes_text_stays() {
        let md = "# Title\n\nSome **bold** and `code`, a [link](https://a.example/x) and ![a cat](c.png).\n\n\
                  - one\n- two\n\n| a | b |\n| --- | --- |\n| 1 | x\\|y |\n\n```rust\nlet *p = 1;\n```\n\n> quoted _text_";
        assert_eq!(
            markdown_to_text(md),
            "Title\n\nSome bold and code, a link and a cat.\n\none\ntwo\n\na\tb\n1\tx|y\n\nlet *p = 1;\n\nquoted text"
        );
    }
}
